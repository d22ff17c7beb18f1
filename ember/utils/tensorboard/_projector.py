"""The embedding projector's files, as PyTorch's ``add_embedding`` writes them: per
embedding a folder ``<step:05d>/<tag>`` under the log dir with ``tensors.tsv``,
``metadata.tsv`` and ``sprite.png``, and ``projector_config.pbtxt`` listing them all.

The config is protobuf text written here (the ``ProjectorConfig`` message's few fields),
so no TensorBoard package is needed to write it.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ._convert import encode_png, tile


def encode_tag(tag: str) -> str:
    """PyTorch's escaping of a tag used as a folder name (``%``, ``/`` and ``\\``)."""
    for ch in "%/\\":
        tag = tag.replace(ch, f"%{ord(ch):02x}")
    return tag


def write_tsv(metadata: list, save_path: str, metadata_header: list | None = None) -> None:
    """``metadata.tsv``: one label per line, or tab-separated columns under a header."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in "
                                 "metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header, *metadata]]
    with open(os.path.join(save_path, "metadata.tsv"), "wb") as f:
        f.write(("\n".join(lines) + "\n").encode())


def write_sprite(label_img: np.ndarray, save_path: str) -> None:
    """``sprite.png``: the NCHW images tiled into a square (PyTorch's make_sprite:
    ceil(sqrt(N)) per row, padded at the bottom; values in [0, 1])."""
    ncols = int(math.ceil(label_img.shape[0] ** 0.5))
    chw = tile(label_img.astype(np.float64), ncols=ncols)
    if chw.shape[0] == 1:  # grey shown as RGB
        chw = np.repeat(chw, 3, axis=0)
    square = np.zeros((chw.shape[2], chw.shape[2], 3))
    square[:chw.shape[1]] = chw.transpose(1, 2, 0)[:, :, :3]
    with open(os.path.join(save_path, "sprite.png"), "wb") as f:
        f.write(encode_png(np.uint8((square * 255).clip(0, 255))))


def write_mat(mat: np.ndarray, save_path: str) -> None:
    """``tensors.tsv``: one data point per line, its values tab-separated."""
    with open(os.path.join(save_path, "tensors.tsv"), "wb") as f:
        for row in mat:
            f.write(("\t".join(str(v.item()) for v in row) + "\n").encode())


def embedding_info(has_metadata: bool, label_img_shape: tuple | None, subdir: str,
                   global_step: int, tag: str) -> str:
    """One ``embeddings { ... }`` entry of the projector config, in protobuf text."""
    # (the fields in the order protobuf's text format prints ProjectorConfig's)
    lines = ["embeddings {", f'  tensor_name: "{tag}:{str(global_step).zfill(5)}"']
    if has_metadata:
        lines.append(f'  metadata_path: "{subdir}/metadata.tsv"')
    if label_img_shape is not None:
        lines += ["  sprite {", f'    image_path: "{subdir}/sprite.png"',
                  f"    single_image_dim: {label_img_shape[3]}",
                  f"    single_image_dim: {label_img_shape[2]}", "  }"]
    lines.append(f'  tensor_path: "{subdir}/tensors.tsv"')
    return "\n".join([*lines, "}"]) + "\n"


def write_config(log_dir: str, entries: list[str]) -> None:
    with open(os.path.join(log_dir, "projector_config.pbtxt"), "w") as f:
        f.write("".join(entries))

