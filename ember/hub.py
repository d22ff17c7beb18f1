"""`ember.hub`: pretrained weights from a URL, as `torch.hub` fetches them.

`load_state_dict_from_url` downloads a checkpoint once into the hub cache
(`$EMBER_HOME/hub/checkpoints`, `EMBER_HOME` defaulting to `$XDG_CACHE_HOME/ember`, i.e.
`~/.cache/ember`; `set_dir` moves it) and loads it with `ember.load`. Any URL urllib
opens works, `file://` included. The file may be an `ember.save` checkpoint or a PyTorch
`.pth`; `weights_only` defaults to False as in PyTorch (pass True to refuse pickled
objects).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import urllib.request
from typing import Any
from urllib.parse import urlparse

from ember.serialization import load

# a file name such as resnet18-f37072fd.pth carries the first digits of its SHA-256
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_hub_dir: str | None = None


def get_dir() -> str:
    """The hub cache folder: set by `set_dir`, else `$EMBER_HOME/hub`."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.environ.get("EMBER_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "ember")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Makes `d` the hub cache folder."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Downloads `url` to the file `dst`, atomically (a partial download never lands at
    `dst`); with `hash_prefix`, the file's SHA-256 must start with it."""
    dst = os.path.abspath(os.path.expanduser(dst))
    folder = os.path.dirname(dst)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(dst)}.", suffix=".partial",
                               dir=folder)
    sha256 = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url) as response:
            total = response.headers.get("Content-Length") if response.headers else None
            done = 0
            while chunk := response.read(1 << 20):
                out.write(chunk)
                sha256.update(chunk)
                done += len(chunk)
                if progress:
                    of = f" of {int(total)}" if total else ""
                    print(f"\rDownloading {url}: {done}{of} bytes", end="", file=sys.stderr)
        if progress:
            print(file=sys.stderr)
        if hash_prefix is not None:
            digest = sha256.hexdigest()
            if not digest.startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                   f'"{digest}")')
        shutil.move(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_state_dict_from_url(url: str, model_dir: str | None = None,
                             map_location: Any = None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False) -> Any:
    """Loads the checkpoint at `url` (a `torch.save` or `ember.save` file, or plain safetensors),
    downloading it first into `model_dir` (default: `<get_dir()>/checkpoints`) unless a
    file of that name is already there.

    Args:
        url: the checkpoint's URL.
        model_dir: the folder to keep it in.
        map_location: where to put the tensors, as for `ember.load`.
        progress: print the download's progress to stderr.
        check_hash: require the file's SHA-256 to start with the hex digits after the
            last `-` of its name (`resnet18-f37072fd.pth`).
        file_name: the name to keep it under (default: the URL's last path part).
        weights_only: passed to `ember.load`: only tensors, containers and numbers load,
            and no code from the file runs. Default: ``False``, as in PyTorch.
    """
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    if not filename:
        raise ValueError(f"load_state_dict_from_url: the URL {url!r} names no file; pass "
                         "file_name=")
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        hash_prefix = None
        if check_hash:
            found = HASH_REGEX.search(filename)
            hash_prefix = found.group(1) if found else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    return load(cached_file, map_location=map_location, weights_only=weights_only)
