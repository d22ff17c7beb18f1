"""Collation: turning a list of samples into a batch (`default_collate`), and converting
one sample's NumPy arrays to tensors (`default_convert`), as in
`torch.utils.data._utils.collate`.
"""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember.core.host import host_array

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

# NumPy dtypes that hold strings or objects: these never become tensors
_np_str_obj_array_pattern = re.compile(r"[SaUO]")

_default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                   "numbers, dicts or lists; found {}")

CollateFnMap = dict[type | tuple[type, ...], Callable]


def _numpy_to_tensor(arr: np.ndarray) -> ember.Tensor:
    # from_numpy keeps the array's exact dtype (np.float64 stays float64, np.int32 int32)
    # and shares memory, as torch.as_tensor does
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return ember.from_numpy(arr)


def default_convert(data: Any) -> Any:
    """Convert every NumPy array (and NumPy scalar) in `data` to a tensor, recursing into
    mappings, named tuples and sequences; anything else is returned unchanged.

    The DataLoader's collate function when automatic batching is off (``batch_size=None``).

    Example::

        >>> default_convert(np.array([0, 1]))
        tensor([0, 1])
        >>> default_convert((np.array(0), "a"))  # tuples become lists, as in PyTorch
        [tensor(0), 'a']
    """
    elem_type = type(data)
    if isinstance(data, ember.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "bytes_",
                                                                        "string_"):
        if isinstance(data, np.ndarray) and _np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return _numpy_to_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:  # the mapping type cannot be built from a dict
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # PyTorch's backward compatibility
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:  # the sequence type cannot be built from a list
            return [default_convert(d) for d in data]
    return data


def collate(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Collate a list of samples, dispatching on the type of the first sample.

    `collate_fn_map` maps a type (or tuple of types) to a function
    ``fn(batch, *, collate_fn_map)``; the exact type is looked up first, then each key in
    insertion order with ``isinstance``. Mappings, named tuples and sequences are collated
    field by field, recursively.

    Example::

        >>> def collate_tensor_fn(batch, *, collate_fn_map):
        ...     return ember.cat(batch)  # concatenate instead of stacking
        >>> my_map = {**default_collate_fn_map, ember.Tensor: collate_tensor_fn}
        >>> loader = DataLoader(ds, collate_fn=lambda b: collate(b, collate_fn_map=my_map))
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))  # read twice below: materialise it
        if isinstance(elem, tuple):
            # tuples become lists: PyTorch's backward compatibility
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map)
                              for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(_default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> ember.Tensor:
    """Tensors of one shape -> one tensor with a new leading batch dimension."""
    elem = batch[0]
    dtype, shape = elem.dtype, elem.shape
    if all(type(t) is ember.Tensor and t.device.type == "cpu" and t.dtype is dtype
           and not t.requires_grad and t.shape == shape for t in batch):
        # CPU tensors outside autograd: one host-side np.stack is several times faster
        # than stacking through the op dispatcher, and gives the same tensor
        return ember.from_numpy(np.stack([host_array(t) for t in batch]))
    return ember.stack(list(batch), 0)


def collate_numpy_array_fn(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """NumPy arrays -> a stacked tensor (string and object arrays are refused)."""
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(_default_collate_err_msg_format.format(elem.dtype))
    return collate([_numpy_to_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """NumPy scalars -> a 1-D tensor of their (promoted) NumPy dtype."""
    return _numpy_to_tensor(np.array(batch))


def collate_float_fn(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Python floats -> a float64 tensor (PyTorch's rule, whatever the default dtype)."""
    return ember.tensor(batch, dtype=ember.float64, device="cpu")


def collate_int_fn(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Python ints -> an int64 tensor (bools -> a bool tensor)."""
    return ember.tensor(batch, device="cpu")


def collate_str_fn(batch: list, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Strings and bytes are left as a list."""
    return batch


default_collate_fn_map: CollateFnMap = {
    ember.Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: list) -> Any:
    """Put a list of samples into a batch with a new leading dimension of size
    ``len(batch)``; the DataLoader's collate function when automatic batching is on.

    By the type of the samples:

    * ``Tensor`` -> ``Tensor`` (stacked with :func:`ember.stack`)
    * NumPy arrays -> ``Tensor``; NumPy scalars -> 1-D ``Tensor`` of their dtype
    * ``float`` -> float64 ``Tensor``; ``int`` -> int64 ``Tensor``; ``bool`` -> bool ``Tensor``
    * ``str``, ``bytes`` -> unchanged list
    * ``Mapping[K, V_i]`` -> ``Mapping[K, default_collate([V_1, V_2, ...])]``
    * ``NamedTuple[V1_i, V2_i, ...]`` -> ``NamedTuple[default_collate([V1_1, V1_2, ...]), ...]``
    * ``Sequence[V1_i, V2_i, ...]`` -> ``Sequence[default_collate([V1_1, V1_2, ...]), ...]``
      (a tuple becomes a list, as in PyTorch)

    Example::

        >>> default_collate([0, 1, 2, 3])
        tensor([0, 1, 2, 3])
        >>> default_collate([{"A": 0, "B": 1}, {"A": 100, "B": 100}])
        {'A': tensor([  0, 100]), 'B': tensor([  1, 100])}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
