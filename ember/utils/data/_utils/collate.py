"""`torch.utils.data._utils.collate`: PyTorch's collate functions under PyTorch's module
path (the code is `ember.utils.data.collate`)."""

from ember.utils.data.collate import (
    _default_collate_err_msg_format as default_collate_err_msg_format,
)
from ember.utils.data.collate import _np_str_obj_array_pattern as np_str_obj_array_pattern
from ember.utils.data.collate import (
    collate,
    collate_float_fn,
    collate_int_fn,
    collate_numpy_array_fn,
    collate_numpy_scalar_fn,
    collate_str_fn,
    collate_tensor_fn,
    default_collate,
    default_collate_fn_map,
    default_convert,
)

__all__ = ["collate", "collate_float_fn", "collate_int_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_str_fn", "collate_tensor_fn", "default_collate",
           "default_collate_err_msg_format", "default_collate_fn_map", "default_convert",
           "np_str_obj_array_pattern"]
