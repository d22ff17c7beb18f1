"""`torch.distributed.fsdp.wrap`: which submodules an FSDP wrapper takes (the auto-wrap
policies, PyTorch's rules) and `enable_wrap`/`wrap` for wrapping by hand."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["CustomPolicy", "ModuleWrapPolicy", "always_wrap_policy", "enable_wrap",
           "lambda_auto_wrap_policy", "size_based_auto_wrap_policy",
           "transformer_auto_wrap_policy", "wrap"]


def always_wrap_policy(*args: Any, **kwargs: Any) -> bool:
    """Wrap every submodule."""
    return True


def _module_wrap_policy(module: Any, recurse: bool, nonwrapped_numel: int,
                        module_classes: Any) -> bool:
    return True if recurse else isinstance(module, tuple(module_classes))


def transformer_auto_wrap_policy(module: Any, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls: Any) -> bool:
    """Wrap the instances of `transformer_layer_cls` (a set of module classes)."""
    return _module_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls)


def lambda_auto_wrap_policy(module: Any, recurse: bool, nonwrapped_numel: int,
                            lambda_fn: Callable[[Any], bool]) -> bool:
    """Wrap the submodules for which `lambda_fn(module)` is true."""
    return True if recurse else lambda_fn(module)


def size_based_auto_wrap_policy(module: Any, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8),
                                force_leaf_modules: Any = None,
                                exclude_wrap_modules: Any = None) -> bool:
    """Wrap a module once it holds `min_num_params` parameter elements not yet wrapped;
    never recurse into `force_leaf_modules` (MultiheadAttention) nor wrap
    `exclude_wrap_modules` (ModuleList, ModuleDict)."""
    from ember import nn

    leaves = (nn.MultiheadAttention,) if force_leaf_modules is None else \
        tuple(force_leaf_modules)
    excluded = (nn.ModuleList, nn.ModuleDict) if exclude_wrap_modules is None else \
        tuple(exclude_wrap_modules)
    large = nonwrapped_numel >= min_num_params
    return large and not isinstance(module, leaves if recurse else excluded)


class ModuleWrapPolicy:
    """Wrap the instances of the given module classes."""

    def __init__(self, module_classes: Any) -> None:
        self._module_classes = frozenset(module_classes)

    def __call__(self, module: Any, recurse: bool, *args: Any, **kwargs: Any) -> bool:
        return _module_wrap_policy(module, recurse, 0, self._module_classes)

    def __repr__(self) -> str:
        return f"{super().__repr__()}({set(self._module_classes)})"


class CustomPolicy:
    """Wrap the submodules for which `lambda_fn` returns True (or a dict of wrapper
    arguments)."""

    def __init__(self, lambda_fn: Callable[[Any], bool | dict]) -> None:
        self._lambda_fn = lambda_fn


_wrap_config: list[tuple[Any, dict]] = []  # (wrapper_cls, kwargs) of each enable_wrap


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls: Any, **wrapper_kwargs: Any) -> Iterator[None]:
    """Within the block, `wrap(module)` wraps `module` in `wrapper_cls(module,
    **wrapper_kwargs)`."""
    if _wrap_config:
        raise NotImplementedError("You are already within an autowrap context and we "
                                  "currently do not supported nested autowrap.")
    _wrap_config.append((wrapper_cls, wrapper_kwargs))
    try:
        yield
    finally:
        _wrap_config.pop()


def wrap(module: Any, **wrap_overrides: Any) -> Any:
    """`module` wrapped as the enclosing `enable_wrap` says (its arguments overridden by
    `wrap_overrides`); outside one, `module` itself."""
    if not _wrap_config:
        return module
    wrapper_cls, kwargs = _wrap_config[-1]
    return wrapper_cls(module, **{**kwargs, **wrap_overrides})
