"""Declaring an op: one call registers its declaration and makes all its variants.

    @primitive(rule=..., grad=..., variants="function method inplace", ...)
    def exp(input): ...

    @composite(variants="function method", precision=Precision.FLOAT32, ...)
    def softmax(input, dim, dtype=None): ...

    fused_kernel("softmax", replaces="softmax", signature="softmax(x, *, dim) -> y", ...)

From the declaration alone (ember.core.opdef.Op) this module makes:

- the public function (`Op.public`): `fn`, taking an `out=` keyword when "out" is a
  variant, and recorded by `ember.jit.trace` as one node when `traced_as_node`;
- `Tensor.<name>` and its aliases, when "method" is a variant;
- `Tensor.<name>_`, when "inplace" is a variant: the op computed out of place and
  written into the tensor through ember.core.inplace, unless the declaration gives a
  faster `inplace_method`;
- the Python operators the declaration lists (`__add__`, `__radd__`, `__iadd__` ...).

`ember/__init__.py` exports the functions of the ops with a "function" variant.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import re
import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ember.core import dtype as dt
from ember.core import interpose, torch_function, tracing
from ember.core.backend import host_out_of_memory
from ember.core.dispatch import check_castable, refuse_complex, write_into
from ember.core.dtype import SCALAR_TYPE_NAMES
from ember.core.errors import ArgumentTypeError, invalid_combination, with_context
from ember.core.grad_mode import no_grad, state
from ember.core.graph import labelled, relabel
from ember.core.inplace import apply_inplace, check_overlap
from ember.core.opdef import OPS, FusedKernel, Kind, Op, register, register_fused
from ember.core.return_types import out_type
from ember.core.shapes import fmt_shape
from ember.core.tensor import Tensor

VARIANTS = frozenset({"function", "method", "inplace", "out"})

_BINARY = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "and", "or",
           "xor", "lshift", "rshift")
REFLECTED = frozenset(f"__r{n}__" for n in _BINARY)
INPLACE = frozenset(f"__i{n}__" for n in _BINARY)
FORWARD = frozenset(f"__{n}__" for n in _BINARY + ("eq", "ne", "lt", "le", "gt", "ge"))
torch_function.binary_operators = REFLECTED | FORWARD


def declare(op: Op) -> Callable[..., Any]:
    """Register `op` and attach its variants; returns its public function."""
    if not op.doc:
        op.doc = (op.fn.__doc__ or "").strip()
    elif not op.fn.__doc__:
        op.fn.__doc__ = op.doc  # `help(ember.exp)` shows the declaration's documentation
    unknown = op.variants - VARIANTS
    if unknown:
        raise ValueError(f"op {op.name!r}: unknown variants {sorted(unknown)}")
    register(op)
    fn = named = op.fn if op.node_label is None else labelled(op.node_label, op.fn)
    if op.traced_as_node:
        fn = tracing.composite(op.name)(fn)
    public = _entered(op, op.name, _with_out(op, fn) if "out" in op.variants else fn)
    op.public = public
    names = (op.name,) + op.aliases
    if "method" in op.variants:
        own = op.method if op.method is None or op.node_label is None else \
            labelled(op.node_label, op.method)
        # (an entry of its own even where it runs what the function does: an argument's
        # position in PyTorch's errors counts `self` in the function form only)
        method = _entered(op, op.name, own or fn, method=True)
        method.__name__ = op.name  # (not the method's own `_reshape_method`)
        for name in names:
            setattr(Tensor, name, method)
    if "inplace" in op.variants:
        inplace = _entered(op, op.name + "_", op.inplace_method or _inplace_method(op, named),
                           method=True)
        for name in names:
            setattr(Tensor, name + "_", inplace)
        if not inplace.__doc__:
            inplace.__doc__ = f"In-place version of :func:`{op.name}`."
        op.public_inplace = inplace
    for dunder in op.operators:
        impl = op.reflected_impl if dunder in REFLECTED and op.reflected_impl else \
            op.operator_impl or fn
        if op.kind is Kind.COMPOSITE and not op.complex:
            impl = _refusing_complex(op, impl)
        setattr(Tensor, dunder, _operator(op, dunder, impl))
    return public


def alias(public: Callable, name: str) -> Callable:
    """`public` under another name (`arcsin` for `asin`): the same code, closure and op in
    a function object of its own named `name`, as PyTorch's aliases are distinct
    functions (torch.fx names a node after the function it calls: `arcsin`). Calling it
    costs what calling `public` does."""
    fn = types.FunctionType(public.__code__, public.__globals__, name, public.__defaults__,
                            public.__closure__)
    fn.__kwdefaults__ = public.__kwdefaults__
    fn.__dict__.update(public.__dict__)
    fn.__qualname__ = name
    fn.__doc__ = public.__doc__
    fn.__module__ = public.__module__
    return fn


def _as_method(fn: Callable) -> Callable:
    """`fn` in a function object of its own (`__wrapped__`: `fn`)."""
    @functools.wraps(fn)
    def method(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)
    return method


def _entered(op: Op, name: str, fn: Callable, *, method: bool = False) -> Callable:
    """`fn` with the op-entry check: the hooks of ember.core.interpose run first when any
    is installed (autocast, the profiler). A composite not declared `complex` refuses a
    complex argument here (a primitive's are checked by dispatch). `method`: the entry
    is `Tensor.<name>` (an ArgumentTypeError of the op is numbered as PyTorch numbers the
    method's arguments, not the function's)."""
    refuses = op.kind is Kind.COMPOSITE and not op.complex
    numpy_names = _numpy_keywords(op.fn)
    code = getattr(_unwrapped(op.fn), "__code__", None)
    takes_input = code is not None and code.co_argcount > 0 and code.co_varnames[0] == "input"

    # what the hooks are handed: for a method, a function object of its own, so that
    # `__torch_function__` is handed Tensor.<name>, not the function form, even where both
    # run the same `fn` (ember.core.torch_function.public_of tells them apart by it)
    hooked = _as_method(fn) if method else fn

    @functools.wraps(fn)
    def entered(*args: Any, **kwargs: Any) -> Any:
        hook = interpose.active
        if kwargs and numpy_names and not numpy_names.keys().isdisjoint(kwargs):
            kwargs = _renamed(name, kwargs, numpy_names)
        try:
            if refuses:  # (here, not a wrapper of its own: one call less on a hot path)
                refuse_complex(op.name, args)
                if kwargs:
                    refuse_complex(op.name, kwargs.values())
            if hook is None:
                return fn(*args, **kwargs)
            return hook(op, name, hooked, args, kwargs)
        except MemoryError as err:  # NumPy's, as PyTorch's RuntimeError naming the bytes
            raise host_out_of_memory(op.name, err) from None
        except (AttributeError, TypeError) as err:
            if torch_function.foreign((*args, *kwargs.values())):  # a Tensor-like's call
                return torch_function.dispatch_op(op, name, args, kwargs, hooked)
            if isinstance(err, ArgumentTypeError):
                raise err.as_called(op.name, name, args, kwargs, not method) from None
            reordered = _deprecated_overload(name, args, kwargs, method)
            if reordered is not None:  # `x.add_(2, y)`: PyTorch's old (scale, tensor) form
                return entered(*reordered[0], **{**kwargs, **reordered[1]})
            missing = _missing_arguments(name, op.fn, err, args, kwargs)
            if missing is not None:
                raise missing from None
            if method:  # PyTorch's parser counts a method's arguments without `self`
                extra = _PYTHON_TOO_MANY.match(str(err)) if type(err) is TypeError else None
                if extra is not None and extra.group(1) == name and \
                        _raised_at_call(err):  # (Python's, not the op's own message)
                    took, given = int(extra.group(2)) - 1, int(extra.group(3)) - 1
                    raise TypeError(f"{name}() takes {took} positional argument"
                                    f"{'' if took == 1 else 's'} but {given} were given"
                                    ) from None
            # `torch.sqrt(2.0)`: PyTorch's TypeError, not a float's
            wrong = _input_not_a_tensor(name, args, kwargs) \
                if takes_input and isinstance(err, AttributeError) else None
            if wrong is None:
                raise
            raise TypeError(wrong) from None
        except (NotImplementedError, RuntimeError):
            # a sparse operand refused by the dense op or its decomposition (`frac` is
            # `x - trunc(x)`, and a compressed tensor refuses `-`): its own form, if any
            sparse_form = _sparse_form(name, args)
            if sparse_form is None:
                raise
            return sparse_form(*args, **kwargs)
    entered.op_entry = True  # (ember.core.torch_function routes the other Tensor methods)
    return entered


# PyTorch's deprecated overloads that take the scales before the tensors (its
# deprecated.yaml): `x.add(2, y)`, `torch.addcmul(x, 0.5, a, b)`, and the BLAS family's
# `torch.addmm(beta, M, alpha, m1, m2)`, `M.addmm_(beta, m1, m2)`; name -> (the scale's
# name, the names of the tensors after it). The BLAS ones take `beta` (then optionally
# `alpha`), and `beta` before `input` in the function form.
_SCALE_FIRST = {"add": ("alpha", ("other",)), "sub": ("alpha", ("other",)),
                "addcmul": ("value", ("tensor1", "tensor2")),
                "addcdiv": ("value", ("tensor1", "tensor2")),
                "addmm": ("beta", ("mat1", "mat2")), "addmv": ("beta", ("mat", "vec")),
                "addr": ("beta", ("vec1", "vec2")), "baddbmm": ("beta", ("batch1", "batch2")),
                "addbmm": ("beta", ("batch1", "batch2"))}
_OUT_DTYPE_FORMS = frozenset({"addmm", "baddbmm"})  # (one more current signature to name)
_deprecated_overload_warned = False  # PyTorch's parser warns once a process, for all


def _deprecated_overload(name: str, args: tuple, kwargs: dict, method: bool
                         ) -> tuple | None:
    """A call of one of PyTorch's deprecated scale-first overloads (see `_SCALE_FIRST`)
    as the current one's (args, kwargs), after PyTorch's deprecation warning (given once
    a process); None for any other call."""
    global _deprecated_overload_warned
    form = _SCALE_FIRST.get(name[:-1] if name.endswith("_") else name)
    if form is None:
        return None
    scale, names = form
    n = len(names)

    def number(v: Any) -> bool:
        return isinstance(v, numbers.Number)  # (a bool too, as PyTorch's Scalar)

    if scale == "beta":
        # method: (self, beta, [alpha,] t...); function: (beta, input, [alpha,] t...)
        if method:
            head, rest = args[:1], args[1:]
        else:
            head, rest = args[1:2], args[:1] + args[2:]
        scales = rest[:2] if len(rest) == n + 2 else rest[:1]
        tensors = rest[len(scales):]
        if len(head) != 1 or not isinstance(head[0], Tensor) or len(tensors) != n or \
                not all(number(v) for v in scales) or "beta" in kwargs or "alpha" in kwargs \
                or not all(isinstance(t, Tensor) for t in tensors):
            return None
        given = dict(zip(("beta", "alpha"), scales))
        old_scales = ", ".join(f"Number {k}" for k in given)
    else:
        head, rest = args[:1], args[1:]
        named = names[len(rest) - 1:] if rest else ()
        if not rest or len(rest) > n + 1 or not number(rest[0]) or scale in kwargs or \
                not all(isinstance(t, Tensor) for t in rest[1:]) or \
                not all(isinstance(kwargs.get(k), Tensor) for k in named):
            return None
        given, tensors = {scale: rest[0]}, rest[1:]
        old_scales = f"Number {scale}"
    if not _deprecated_overload_warned:
        _deprecated_overload_warned = True
        listed = ", ".join(f"Tensor {p}" for p in names)
        defaults = "Number beta = 1, Number alpha = 1" if scale == "beta" else \
            f"Number {scale} = 1"
        if method:
            old, new = f"{old_scales}, {listed}", [f"{listed}, *, {defaults}"]
        else:
            where = ("Number beta, Tensor input" + old_scales[len("Number beta"):]
                     if scale == "beta" else f"Tensor input, {old_scales}")
            old = f"{where}, {listed}, *, Tensor out = None"
            new = [f"Tensor input, {listed}, *, {defaults}, Tensor out = None"]
            if name in _OUT_DTYPE_FORMS:
                new.append(f"Tensor input, {listed}, torch.dtype out_dtype, *, {defaults}, "
                           "Tensor out = None")
        instead = "".join(f"\n\t{name}({signature})" for signature in new)
        warnings.warn(f"This overload of {name} is deprecated:\n\t{name}({old})\nConsider "
                      f"using one of the following signatures instead:{instead}",
                      UserWarning, stacklevel=4)
    return head + tuple(tensors), given


# ops that PyTorch writes in Python (torch/functional.py, torch/_tensor.py): Python's own
# message stays theirs
_PYTHON_LEVEL = frozenset(
    "atleast_1d atleast_2d atleast_3d block_diag broadcast_shapes broadcast_tensors "
    "cartesian_prod cdist chain_matmul einsum istft lu meshgrid norm pca_lowrank split stft "
    "svd_lowrank tensordot unique unique_consecutive unravel_index unflatten".split())
_PYTHON_TOO_MANY = re.compile(r"(\w+)\(\) takes (\d+) positional arguments? but (\d+) were "
                              r"given$")
_PYTHON_MISSING = re.compile(r"\w+\(\) missing (\d+) required positional arguments?: (.*)$")


def _raised_at_call(err: BaseException) -> bool:
    """Whether `err` was raised by the call into the op itself (Python binding its
    arguments) rather than inside it: its traceback ends in the frame that called."""
    tb = err.__traceback__
    return tb is not None and tb.tb_next is None


def _missing_arguments(name: str, fn: Callable | None, err: Exception, args: tuple,
                       kwargs: dict) -> TypeError | None:
    """PyTorch's argument parser's TypeError for a call to op `name` that leaves out
    required arguments (`torch.topk(x)`), in its words: the count, then "argument" with
    an "s" only for one (python_arg_parser.cpp's missing_args), the names double-quoted.
    None when `err` is no such error of this very call (one from inside the op)."""
    found = _PYTHON_MISSING.match(str(err)) if type(err) is TypeError else None
    if found is None or fn is None or name in _PYTHON_LEVEL:
        return None
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        count = int(found.group(1))
        names = ", ".join(f'"{n}"' for n in re.findall(r"'(\w+)'", found.group(2)))
        if not names:  # (sizes as *args: the op's own check names PyTorch's parameter)
            return None
        return TypeError(f"{name}() missing {count} required positional "
                         f"argument{'s' if count == 1 else ''}: {names}")
    except ValueError:  # (no signature to bind to)
        return None
    return None  # the call binds: the error is the op's own


# PyTorch's argument parser takes NumPy's keyword names for four parameters of every op
# (python_arg_parser.cpp, numpy_compatibility_arg_names): `x.argmax(axis=1)`,
# `x.sum(1, keepdims=True)`, `torch.add(x, x2=y)`
_NUMPY_KEYWORDS = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"),
                   "other": ("x2",)}


def _numpy_keywords(fn: Callable | None) -> dict[str, str]:
    """{NumPy's keyword: the parameter it names} for the parameters of `fn` that PyTorch
    also accepts under NumPy's name (none that `fn` has a parameter of its own for)."""
    signature = getattr(fn, "__signature__", None)  # (an overload-matching wrapper's)
    if signature is not None:
        params = tuple(signature.parameters)
    else:
        code = getattr(_unwrapped(fn), "__code__", None)
        if code is None:
            return {}
        params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return {alias: param for param in params for alias in _NUMPY_KEYWORDS.get(param, ())
            if alias not in params}


def _unwrapped(fn: Callable | None) -> Callable | None:
    """The function under `fn`'s functools.wraps layers."""
    while fn is not None and hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def _renamed(name: str, kwargs: dict, numpy_names: dict[str, str]) -> dict:
    """`kwargs` with NumPy's keyword names given PyTorch's; naming a parameter twice is
    PyTorch's TypeError."""
    out = {}
    for key, value in kwargs.items():
        param = numpy_names.get(key, key)
        if param in out or (param != key and param in kwargs):
            raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
        out[param] = value
    return out


def _input_not_a_tensor(name: str, args: tuple, kwargs: dict) -> str | None:
    """PyTorch's message for an op's `input` that is not a tensor (`torch.sqrt(2 * pi)`),
    or None when it is one. Asked only after the op failed, so calls pay nothing."""
    if args:
        value, where = args[0], " (position 1)"
    elif "input" in kwargs:
        value, where = kwargs["input"], ""
    else:
        return None
    if isinstance(value, Tensor):
        return None
    return f"{name}(): argument 'input'{where} must be Tensor, not {type(value).__name__}"


def check_tensor(op: str, name: str, value: Any, position: int) -> None:
    """PyTorch's argument parser refusing a non-tensor where the op takes only a Tensor
    (`torch.maximum(x, 2.0)`); `position` counts as for the method (see
    ArgumentTypeError)."""
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(op, name, position, "Tensor", value)


def _sparse_form(name: str, args: tuple) -> Callable | None:
    """The sparse op that answers `ember.<name>(...)` when the dense op refused a sparse
    operand (its `_data` raises NotImplementedError): `ember.t(adj)`, `ember.sum(adj, 1)`,
    `ember.add(dense, adj)` ... run the sparse tensor's own (ember.core.sparse_ops). Looked
    up only after the refusal, so the dense path pays nothing."""
    forms = getattr(args[0], "function_forms", None) if args else None
    if forms is None and args and isinstance(args[0], (list, tuple)) and args[0] and \
            isinstance(args[0][0], Tensor):  # `ember.cat([sparse, ...])` (not an fx Proxy)
        forms = getattr(args[0][0], "function_forms", None)
    if forms is None and len(args) > 1:  # `ember.add(dense, sparse)`: the second's table
        forms = getattr(args[1], "second_operand_forms", None)
    return None if forms is None else forms.get(name)


def _refusing_complex(op: Op, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def refusing(*args: Any, **kwargs: Any) -> Any:
        refuse_complex(op.name, args)
        if kwargs:
            refuse_complex(op.name, kwargs.values())
        return fn(*args, **kwargs)
    return refusing


def _fields(variants: str | Iterable[str], fields: dict) -> dict:
    if isinstance(variants, str):
        variants = variants.split()
    fields["variants"] = frozenset(variants)
    for key in ("operators", "aliases", "fused"):
        if isinstance(fields.get(key), str):
            fields[key] = tuple(fields[key].split())
    return fields


def primitive(*, variants: str | Iterable[str] = "function method",
              **fields: Any) -> Callable[[Callable], Callable]:
    """Decorator: declare the decorated function as the public face of a primitive."""
    def wrap(fn: Callable) -> Callable:
        return declare(Op(fn.__name__, Kind.PRIMITIVE, fn=fn, **_fields(variants, fields)))
    return wrap


def composite(*, variants: str | Iterable[str] = "function method",
              **fields: Any) -> Callable[[Callable], Callable]:
    """Decorator: declare the decorated function as a composite op."""
    def wrap(fn: Callable) -> Callable:
        return declare(Op(fn.__name__, Kind.COMPOSITE, fn=fn, **_fields(variants, fields)))
    return wrap


def define(name: str, kind: Kind, fn: Callable, *, variants: str | Iterable[str] = (),
           **fields: Any) -> Callable[..., Any]:
    """Declare an op whose function is built rather than written (a row of a family's
    table, such as the unary math ops)."""
    fn.__name__ = fn.__qualname__ = name
    return declare(Op(name, kind, fn=fn, **_fields(variants, fields)))


def fused_kernel(name: str, *, replaces: str, signature: str, doc: str,
                 **fields: Any) -> FusedKernel:
    """Declare a fused kernel (see ember.core.opdef.FusedKernel)."""
    return register_fused(FusedKernel(name, replaces, signature, doc, **fields))


# -- out= -----------------------------------------------------------------------------


def _with_out(op: Op, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def public(*args: Any, out: Tensor | None = None, **kwargs: Any) -> Any:
        if out is None:
            return fn(*args, **kwargs)
        if state.enabled and _any_requires_grad((out, *args, *kwargs.values())):
            raise RuntimeError(f"{op.name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
        if op.out_is_dtype and isinstance(out, Tensor):
            dtype = kwargs.get("dtype")
            if dtype is None:
                kwargs = {**kwargs, "dtype": out._dtype}
            elif dtype is not out._dtype:
                raise RuntimeError(OUT_DTYPE_ERRORS[True](dtype, out._dtype))
        if isinstance(out, Tensor) and out._vc is not None:
            check_overlap(f"{op.name}_out", out, (*args, *kwargs.values()))
        result = fn(*args, **kwargs)
        if isinstance(result, tuple):  # (a named result: max with a dim, cummax, frexp)
            if op.name in _TUPLE_OUT_OVERLOADS and not isinstance(out, (tuple, list)):
                raise _no_overload(op.name, args, kwargs, out)
            return write_outs(op.name, out, result)
        if op.exact_out and isinstance(out, Tensor) and out._dtype is not result._dtype:
            raise RuntimeError(OUT_DTYPE_ERRORS[op.exact_out](result._dtype, out._dtype))
        return write_out(op.name, out, result)
    return public


# the ops whose tuple `out=` is one overload of several in PyTorch: an `out=` of another
# type matches none of them (a single overload's refusal names the argument instead)
_TUPLE_OUT_OVERLOADS = {
    "max": ("(Tensor input, *, Tensor out = None)",
            "(Tensor input, Tensor other, *, Tensor out = None)",
            "(Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)")}
_TUPLE_OUT_OVERLOADS["min"] = _TUPLE_OUT_OVERLOADS["max"]  # (sort's: ops.sorting)


def _parser_type(value: Any) -> str:
    """A value's type as PyTorch's argument parser names it in its errors."""
    if isinstance(value, Tensor):
        return "Tensor"
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{dt.API_NAME}.{cls.__name__}"


def _no_overload(name: str, args: tuple, kwargs: dict, out: Any) -> TypeError:
    """PyTorch's "invalid combination of arguments" for a call with `out=` (which its
    parser lists first among the keywords)."""
    got = [_parser_type(a) for a in args] + [f"out={_parser_type(out)}"] + \
        [f"{k}={_parser_type(v)}" for k, v in kwargs.items()]
    return invalid_combination(name, ", ".join(got), _TUPLE_OUT_OVERLOADS[name])


def check_outs(name: str, out: Any, n: int) -> None:
    """PyTorch's argument parser's errors for an `out=` that is no tuple of `n` tensors."""
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    for i, o in enumerate(out):
        if not isinstance(o, Tensor):
            # (the position of `out` among the schema's arguments; sort's is its plain
            # overload's, without `stable`)
            position = len([p for p in inspect.signature(OPS[name].fn).parameters
                            if p not in ("out", "stable")])
            raise TypeError(f"expected Tensor as element {i} in argument {position}, but got "
                            f"{type(o).__name__}")
    if len(out) != n:
        raise TypeError(f"expected tuple of {n} elements but got {len(out)}")


def write_outs(name: str, out: Any, result: tuple) -> tuple:
    """Write the tensors of an op's named result into the `out=` tuple, one each;
    returned as PyTorch's `<result type>_out` of the out tensors."""
    check_outs(name, out, len(result))
    check = _TUPLE_OUT_DTYPE_ERRORS.get(name)
    order = (1, 0) if name in ("median", "nanmedian") else range(len(result))
    for i in order:  # (PyTorch wants each out tensor of its result's dtype exactly)
        if isinstance(out[i], Tensor) and out[i]._dtype is not result[i]._dtype:
            message = check(i, result[i]._dtype, out[i]._dtype) if check else \
                OUT_DTYPE_ERRORS[True](result[i]._dtype, out[i]._dtype)
            raise RuntimeError(message)
    written = [write_out(name, o, r) for o, r in zip(out, result)]
    return out_type(type(result))(*written) if hasattr(result, "_fields") else tuple(written)


# C++'s names of the dtypes, as PyTorch's matmul family names an `out=` of another dtype
_CPP_TYPES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _scalar(d: Any) -> str:
    return SCALAR_TYPE_NAMES.get(d.name, d.name)


# PyTorch's errors for an `out=` of another dtype where the op wants its result's dtype
# exactly (Op.exact_out): by style, (result dtype, out dtype) -> message
OUT_DTYPE_ERRORS: dict[Any, Callable[[Any, Any], str]] = {
    True: lambda want, got: f"Expected out tensor to have dtype "  # (mm, matmul, addmm)
                            f"{_CPP_TYPES.get(want.name, want.name)}, but got "
                            f"{_CPP_TYPES.get(got.name, got.name)} instead",
    "found": lambda want, got: f"Found dtype {_scalar(got)} but expected {_scalar(want)}",
    "where": lambda want, got: f"Expected out type to be {_scalar(want)} but got "
                               f"{_scalar(got)}",
    "dot": lambda want, got: f"result dtype {_scalar(got)} does not match input dtype "
                             f"{_scalar(want)}",
    "mv": lambda want, got: f"addmv input tensors must have the same dtype, but got "
                            f"{_scalar(got)}, {_scalar(want)}, and {_scalar(want)}",
    "float_power": lambda want, got: f"the output given to float_power has dtype "
                                     f"{_scalar(got)} but the operation's result requires "
                                     f"dtype {_scalar(want)}",
    "reduction": lambda want, got: f"Expected the dtype for input and out to match, but got "
                                   f"{_scalar(want)} for input's dtype and {_scalar(got)} "
                                   "for out's dtype.",
}


def _median_dtype_error(i: int, want: Any, got: Any) -> str:
    if i == 1:
        return (f"Expected tensor for argument #1 'indices' to have scalar type Long; but got "
                f"{dt.API_NAME}.{_scalar(got)}Tensor instead (while checking arguments for "
                "median)")
    return (f"Expected tensor for 'values' to have the same type as tensor for argument #2 "
            f"'self'; but type {dt.API_NAME}.{_scalar(got)}Tensor does not equal "
            f"{dt.API_NAME}.{_scalar(want)}Tensor (while checking arguments for median)")


# PyTorch's errors for an `out=` tuple tensor of another dtype than the result's, where
# the op's kernel words it its own way: (result position, its dtype, out's dtype) ->
# message (the others: OUT_DTYPE_ERRORS[True], structured kernels' words)
_TUPLE_OUT_DTYPE_ERRORS: dict[str, Callable[[int, Any, Any], str]] = {
    "kthvalue": lambda i, want, got: "output indices must be of scalar type Long" if i else
    "output values must be of same type as input",
    "cummax": lambda i, want, got: f"expected scalar_type {_scalar(want)} but found "
                                   f"{_scalar(got)}",
    "mode": lambda i, want, got: f"expected scalar type '{_scalar(want)}' but got "
                                 f"'{_scalar(got)}' for {('values', 'indices')[i]} output",
    "median": _median_dtype_error,
    "frexp": lambda i, want, got: f"{dt.API_NAME}.frexp() expects " + (
        "exponent to have int dtype" if i else
        f"mantissa to have dtype {_CPP_TYPES.get(want.name, want.name)}") +
    f" but got {_CPP_TYPES.get(got.name, got.name)}",
}
_TUPLE_OUT_DTYPE_ERRORS.update(cummin=_TUPLE_OUT_DTYPE_ERRORS["cummax"],
                               nanmedian=_median_dtype_error)


def _any_requires_grad(values: Iterable[Any]) -> bool:
    """Whether a tensor among `values`, or in a list among them (cat's), requires grad."""
    for v in values:
        if isinstance(v, (list, tuple)):
            if _any_requires_grad(v):
                return True
        elif isinstance(v, Tensor) and v._requires_grad:
            return True
    return False


def write_out(name: str, out: Tensor, result: Tensor, *, warn_resize: bool = True) -> Tensor:
    """Write `result` into the `out=` tensor, resizing it as PyTorch does (a factory's
    `out=` resizes without the deprecation warning: `warn_resize=False`)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if result._device is not out._device:
        raise RuntimeError(f"{name}(): Expected out tensor to be on device {result.device}, "
                           f"but got {out.device}")
    check_castable(f"{name}()", result._dtype, out._dtype)
    if out._data.shape != result._data.shape:
        if out.numel() and warn_resize:
            warnings.warn(f"An output with one or more elements was resized since it had "
                          f"shape {fmt_shape(tuple(out.shape))}, which does not match the "
                          f"required output shape {fmt_shape(tuple(result.shape))}. This "
                          "behavior is deprecated, and in a future PyTorch release outputs "
                          "will not be resized unless they have zero elements. You can "
                          "explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning,
                          stacklevel=3)
        if out._base is not None:
            _resize_view(name, out, tuple(result.shape))
        else:
            out._data = out._backend.empty(tuple(result.shape), out._dtype,
                                           out._device.index or 0)
    return write_into(out, result)


def _resize_view(name: str, out: Tensor, shape: tuple[int, ...]) -> None:
    """PyTorch's resize_ of an `out=` view: it keeps its storage and offset and takes
    `shape`, contiguous, from there (its other elements in the storage are left alone).
    PyTorch grows the storage where it is too small; ember's views cannot follow a
    storage that moves, so that raises."""
    try:
        with no_grad():
            out.set_(out._base, out.storage_offset(), shape)
    except (RuntimeError, NotImplementedError) as err:
        raise with_context(RuntimeError(
            f"{name}(): the out= tensor, a view of another tensor, has shape "
            f"{fmt_shape(tuple(out.shape))} but the result has shape {fmt_shape(shape)}, "
            "which its storage cannot hold; a view's storage cannot be grown"), str(err)) \
            from None


# -- in-place variants and operators --------------------------------------------------


def _inplace_method(op: Op, fn: Callable) -> Callable:
    name = op.name + "_"

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return apply_inplace(self, lambda old: fn(old, *args, **kwargs), *args,
                             *kwargs.values(), op=name)
    method.__name__ = name
    return method


def is_operand(x: Any) -> bool:
    """Whether a Python operator should handle `x` (else it returns NotImplemented): a
    tensor or a number, NumPy's scalars included. PyTorch's operators decline NumPy arrays,
    so NumPy computes `t + array` itself and wraps its result (`Tensor.__array_wrap__`),
    and `array < t` is Python's TypeError."""
    return isinstance(x, (Tensor, int, float, numbers.Number, np.bool_))


def _is_operand_or_array(x: Any) -> bool:
    return is_operand(x) or isinstance(x, np.ndarray)


# the operators that take a NumPy array all the same in PyTorch: `t == array` compares,
# `array / t` is its `t.reciprocal() * array` (which NumPy computes)
_ARRAY_OPERATORS = frozenset({"__eq__", "__rtruediv__"})


# PyTorch's nodes for a number on the left: `1 - x` is rsub, `1 / x` a reciprocal times 1
# (`number / t` needs none: div's reflected_impl computes PyTorch's `t.reciprocal() * number`)
_REFLECTED_LABELS = {"__rsub__": "RsubBackward1", "__rpow__": "PowBackward2"}


def _foreign_operand(op: Op, dunder: str, self: Tensor, other: Any) -> Any:
    """`tensor + obj` where `obj` is no operand: a Tensor-like's `__torch_function__`
    answers (PyTorch's operators dispatch to it), else NotImplemented."""
    if not torch_function.foreign((other,)):
        return NotImplemented
    return torch_function.dispatch_op(op, dunder, (self, other), {})


def _inplace_operator(method: Callable) -> Callable:
    """`t += other`: the in-place method, or NotImplemented for what PyTorch's operators
    decline (Python then tries `t + other`: NumPy computes `t += array` into a new tensor)."""
    def inplace(self: Tensor, other: Any) -> Any:
        if not isinstance(other, Tensor) and not is_operand(other) and \
                not torch_function.foreign((other,)):
            return NotImplemented
        return method(self, other)
    inplace.__name__ = method.__name__
    inplace.__doc__ = method.__doc__
    return inplace


def _without_modulus(forward: Callable) -> Callable:
    """`t ** e` that declines the three-argument `pow(t, e, m)`, as PyTorch's does (Python
    then raises its TypeError, "unsupported operand type(s) for ** or pow()")."""
    @functools.wraps(forward)
    def power(self: Tensor, other: Any, modulo: Any = None) -> Any:
        return forward(self, other) if modulo is None else NotImplemented
    power.op_entry = True
    return power


def _operator(op: Op, dunder: str, impl: Callable) -> Callable:
    # (the binary operators check the op-entry hooks inline: `a + b` is the hottest call)
    if dunder in INPLACE:
        return _inplace_operator(getattr(Tensor, op.name + "_"))
    operand = _is_operand_or_array if dunder in _ARRAY_OPERATORS else is_operand
    if dunder in REFLECTED:
        label = _REFLECTED_LABELS.get(dunder)
        # `2 * t` is PyTorch's `t.mul(2)` for the commutative ops (the node's first edge is
        # the tensor's, the same values); the others run `other op self`
        swap = dunder in ("__radd__", "__rmul__")

        def reflected(self: Tensor, other: Any) -> Any:
            if not isinstance(other, Tensor) and not operand(other):
                return _foreign_operand(op, dunder, self, other)
            args = (self, other) if swap else (other, self)
            hook = interpose.active
            try:
                out = impl(*args) if hook is None else hook(op, dunder, impl, args, {})
            except MemoryError as err:
                raise host_out_of_memory(op.name, err) from None
            if label is not None and state.enabled:
                relabel(out, label, (self,))
            return out
        reflected.op_entry = True
        return reflected
    if dunder in FORWARD:
        def forward(self: Tensor, other: Any) -> Any:
            if not isinstance(other, Tensor) and not operand(other):
                return _foreign_operand(op, dunder, self, other)
            hook = interpose.active
            try:
                if hook is None:
                    return impl(self, other)
                return hook(op, dunder, impl, (self, other), {})
            except MemoryError as err:
                raise host_out_of_memory(op.name, err) from None
        forward.op_entry = True
        return _without_modulus(forward) if dunder == "__pow__" else forward
    entered = _entered(op, dunder, impl)  # unary operators, __getitem__, __setitem__
    entered.__name__ = dunder  # (as `__torch_function__` sees it: Tensor.__getitem__)
    return entered
