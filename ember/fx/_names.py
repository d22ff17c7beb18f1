"""Names in generated code and printed graphs: torch.fx's unique-name allocation and the
torch-side qualified name of a traced target (`torch.relu`, `torch.nn.functional.relu`,
`operator.add`), as PyTorch prints them."""

from __future__ import annotations

import builtins
import importlib
import keyword
import math
import re
import sys
from types import ModuleType, SimpleNamespace
from typing import Any

_snake_case_sub = re.compile(r"(?<=[a-z])([A-Z])").sub
_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")

# names a generated value must not shadow (unless it is that very object)
_illegal_names: dict[str, object] = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)


_torch_namespace: ModuleType | None = None

# torch.linalg/special/fft's functions are C++ builtins named `torch._C._linalg.linalg_norm`
_C_SUBMODULES = ("linalg", "special", "fft")


class _CSubmodule:
    """`torch._C._linalg` in generated code: `linalg_norm` is ember.linalg.norm."""

    def __init__(self, sub: str) -> None:
        self._sub = sub

    def __getattr__(self, name: str) -> Any:
        prefix = self._sub + "_"
        if not name.startswith(prefix):
            raise AttributeError(name)
        return getattr(importlib.import_module(f"ember.{self._sub}"), name[len(prefix):])


def _c_submodule_path(fn: Any) -> str | None:
    """torch's path of a torch.linalg/special/fft function (`torch._C._linalg.linalg_norm`)."""
    for sub in _C_SUBMODULES:
        mod = sys.modules.get(f"ember.{sub}")
        if mod is None:
            continue
        for k, v in vars(mod).items():
            if v is fn and not k.startswith("_"):
                return f"torch._C._{sub}.{sub}_{k}"
    return None


def torch_namespace() -> ModuleType:
    """What `torch` is in generated code: ember, plus the paths under which torch names
    its C++ builtins (`torch._C._nn.gelu`, `torch.conv2d`), bound to ember's functions
    (ember has no `_C`: these exist for generated code only)."""
    global _torch_namespace
    if _torch_namespace is None:
        import ember
        import ember.nn.functional as F
        from ember.fx._functional import BUILTIN

        ns = ModuleType("torch")
        ns.__dict__.update(vars(ember))  # (ember's lazy __getattr__ comes along)
        nn_ns = SimpleNamespace()
        for name, path in BUILTIN.items():
            fn = getattr(F, name, None)
            if fn is None:
                continue
            fn = getattr(fn, "__fx_orig__", fn)
            *_, short = path.split(".")
            if path.startswith("torch._C._nn."):
                setattr(nn_ns, short, fn)
            elif not hasattr(ember, short):
                setattr(ns, short, fn)
        ns._C = SimpleNamespace(_nn=nn_ns, **{f"_{sub}": _CSubmodule(sub)
                                              for sub in _C_SUBMODULES})
        _torch_namespace = ns
    return _torch_namespace


def custom_builtins() -> dict[str, object]:
    """The globals every generated forward sees (torch's `_custom_builtins`)."""
    import ember

    # (`ember`: dtypes, devices, memory formats print as `ember.float64` unless run as torch)
    names = {"inf": math.inf, "nan": math.nan, "NoneType": type(None),
             "torch": torch_namespace(), "device": ember.device, "ember": torch_namespace()}
    _illegal_names.update(names)  # a node may not shadow them; the globals take them
    return names


for _name in ("inf", "nan", "NoneType", "torch", "device", "ember"):
    _illegal_names[_name] = object()  # until custom_builtins() puts the objects


def snake_case(s: str) -> str:
    """``mod.pascalCase`` -> ``mod.pascal_case``, ``ALL_CAPS`` -> ``all_caps``."""
    return _snake_case_sub(r"_\1", s).lower()


class Namespace:
    """Unique names for objects: each object one name, no name twice, no builtin shadowed."""

    def __init__(self) -> None:
        self._obj_to_name: dict[int, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: object | None) -> str:
        """A fresh name based on `candidate` (`add`, `add_1` ...), remembered for `obj`."""
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if candidate in _illegal_names and not (
                    obj is not None and _illegal_names[candidate] is obj):
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = candidate
        return candidate

    def reserve(self, name: str, obj: object) -> None:
        """Take `name` for `obj` as it is (a global of the generated code)."""
        self._used_names.add(name)
        self._obj_to_name.setdefault(id(obj), name)

    def associate_name_with_obj(self, name: str, obj: object) -> None:
        self._obj_to_name[id(obj)] = name


_public_names: dict[int, str] | None = None


def _public() -> dict[int, str]:
    """id(function) -> its torch name, for ember's public functions and Tensor methods."""
    global _public_names
    if _public_names is None:
        import ember
        import ember.nn.functional as F

        names: dict[int, str] = {}
        for prefix, mod in (("torch.nn.functional.", F), ("torch.", ember)):
            for k, v in list(vars(mod).items()):
                v = getattr(v, "__fx_orig__", v)  # (a trace may have wrapped it)
                if callable(v) and not isinstance(v, type) and not k.startswith("_"):
                    names.setdefault(id(v), prefix + k)
        from ember.fx._functional import BUILTIN

        for name, path in BUILTIN.items():  # torch's C++ builtins keep their own paths
            fn = getattr(F, name, None)
            if callable(fn):
                names[id(getattr(fn, "__fx_orig__", fn))] = path
        _public_names = names
    return _public_names


def qualified_name(fn: Any) -> str:
    """`fn` as PyTorch names it: ``torch.relu``, ``torch.nn.functional.relu``,
    ``getattr`` (a builtin), ``_operator.add``, ``__main__.my_fn``."""
    name = getattr(fn, "__name__", None)
    if name is not None and getattr(builtins, name, None) is fn:
        return name
    known = _public().get(id(fn))
    if known is not None:
        return known
    import ember

    if name is not None and getattr(ember, name, None) is fn:  # exported on first use
        return f"torch.{name}"
    in_submodule = _c_submodule_path(fn)
    if in_submodule is not None:
        return in_submodule
    if name is not None and getattr(ember.Tensor, name, None) is fn:
        return f"torch.Tensor.{name}"
    module = getattr(fn, "__module__", None) or ""
    if module == "ember" or module.startswith("ember."):
        module = "torch" + module[len("ember"):]
    return f"{module}.{name}"


def is_from_torch(fn: Any) -> bool:
    """Whether generated code names `fn` by its path under `torch` (no global of its own)."""
    return qualified_name(fn).startswith("torch.")


SIDE_EFFECTFUL: set[Any] = set()
"""Functions whose calls `eliminate_dead_code` keeps although nothing reads their result
(`torch.fx.node.has_side_effect` adds to it)."""


# torch functions that draw random numbers: a call stays (it advances the generator)
_RANDOM = frozenset(("torch.bernoulli", "torch.multinomial", "torch.normal", "torch.poisson",
                     "torch.rand", "torch.rand_like", "torch.randint", "torch.randint_like",
                     "torch.randn", "torch.randn_like", "torch.randperm"))


def is_side_effectful(fn: Any, impure_random: bool = True) -> bool:
    """Whether a call of `fn` must stay: asserts, functions marked `has_side_effect`, and
    torch's random-number functions (as torch.fx's purity check has them)."""
    from ember.fx._symbolic_trace import _assert_is_none

    try:
        if fn in SIDE_EFFECTFUL:
            return True
    except TypeError:
        pass
    if fn is _assert_is_none or getattr(fn, "__name__", "") == "_assert":
        return True
    return impure_random and callable(fn) and qualified_name(fn) in _RANDOM


# torch's top-level functions written in Python (the rest are C++ builtins)
_TORCH_PYTHON_FUNCTIONS = frozenset((
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
    "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "lobpcg", "lu",
    "meshgrid", "norm", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
    "unique_consecutive", "unravel_index"))
_BOOLEAN_DISPATCH = frozenset(f"torch.nn.functional.{n}" for n in (
    "max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "fractional_max_pool2d", "fractional_max_pool3d"))
_BUILTIN_TYPE_OBJECT = object()  # stands for torch's _VariableFunctions class in printouts


def target_str(target: Any) -> str:
    """`str(target)` as PyTorch's object prints (print_tabular's target column):
    ``<built-in method cat of type object at 0x...>`` for a torch function bound to a C++
    builtin, ``<built-in function linear>`` for torch._C._nn's."""
    if isinstance(target, str) or not callable(target):
        return str(target)
    path = qualified_name(target)
    if path.startswith("torch._C._nn."):
        return f"<built-in function {path.rsplit('.', 1)[1]}>"
    if path in _BOOLEAN_DISPATCH:  # torch picks these by `return_indices` at call time
        return f"<function boolean_dispatch.<locals>.fn at {id(target):#x}>"
    if path.startswith("torch.") and path.count(".") == 1 and \
            path[6:] not in _TORCH_PYTHON_FUNCTIONS:
        return f"<built-in method {path[6:]} of type object at {id(_BUILTIN_TYPE_OBJECT):#x}>"
    return str(target)
