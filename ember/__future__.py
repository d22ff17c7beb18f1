"""`torch.__future__`: switches for behaviour PyTorch plans to make the default.

`set_overwrite_module_params_on_conversion(True)` makes `Module.to()`, `.float()`,
`.cuda()` ... give a module new Parameter objects instead of changing the existing ones
in place (an optimizer built before the conversion then keeps the old ones, as in
PyTorch). The swap setting is recorded: ember's conversions keep each Parameter object
either way, which is what swapping achieves.
"""

from __future__ import annotations

_overwrite_module_params_on_conversion: bool = False
_swap_module_params_on_conversion: bool = False

__all__ = ["get_overwrite_module_params_on_conversion", "get_swap_module_params_on_conversion",
           "set_overwrite_module_params_on_conversion", "set_swap_module_params_on_conversion"]


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Whether `nn.Module` conversions assign new Parameters (True) or change the
    existing ones in place (False, the default)."""
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion() -> bool:
    """The setting of :func:`set_overwrite_module_params_on_conversion` (default False)."""
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Whether `nn.Module` conversions swap the Parameters' contents (default False)."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion() -> bool:
    """The setting of :func:`set_swap_module_params_on_conversion` (default False)."""
    return _swap_module_params_on_conversion
