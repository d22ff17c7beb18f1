"""Dtypes and PyTorch's type-promotion rules, checked pair by pair against PyTorch.

Three operand kinds take part in promotion: a dimensioned tensor, a 0-dim tensor and a
Python scalar. A 0-dim tensor or a scalar only lifts the result's category (bool < int <
float) and never widens a dimensioned tensor's dtype within its category.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember

NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64")
SCALARS = (True, 3, -2, 1000, 2.5)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def edt(name: str):
    return getattr(ember, name)


def name_of(dtype) -> str:
    return repr(dtype).removeprefix("ember.").removeprefix("torch.")


def ember_operand(name: str, kind: str):
    """A tensor of dtype `name`: `kind` "dim" is shape (2,), "zero" is 0-dim."""
    values = [True, True] if name == "bool" else [1, 2]  # no zero: `//` by zero raises
    t = ember.tensor(values, dtype=edt(name))
    return t if kind == "dim" else t[0]


def torch_operand(torch, name: str, kind: str):
    values = [True, True] if name == "bool" else [1, 2]
    t = torch.tensor(values, dtype=getattr(torch, name))
    return t if kind == "dim" else t[0]


def _outcome(fn, *args):
    """The dtype name of `fn(*args)`, or "error" if the op refuses its operands."""
    try:
        return name_of(fn(*args).dtype)
    except RuntimeError:
        return "error"


# -- the dtype objects ---------------------------------------------------------------------


class TestDtypeObjects:
    @pytest.mark.parametrize("name", NAMES)
    def test_attributes_match_torch(self, torch, name):
        e, t = edt(name), getattr(torch, name)
        assert repr(e) == f"ember.{name}"
        assert e.is_floating_point == t.is_floating_point
        assert e.itemsize == t.itemsize
        assert e.is_signed == t.is_signed
        assert not e.is_complex

    def test_aliases(self):
        assert ember.half is ember.float16 and ember.double is ember.float64
        assert ember.long is ember.int64 and ember.short is ember.int16
        assert ember.float is ember.float32 and ember.int is ember.int32

    def test_dtype_from_python_type_not_string(self):
        # as PyTorch: a Python type is a dtype (`float` is a C double: float64 whatever
        # the default), a name is refused
        assert ember.zeros(2, dtype=float).dtype is ember.float64
        assert ember.zeros(2, dtype=int).dtype is ember.int64
        assert ember.zeros(2, dtype=bool).dtype is ember.bool
        assert ember.zeros(2, dtype=complex).dtype is ember.complex128
        for name in ("float64", "long", "complex256"):
            with pytest.raises(TypeError, match="^zeros\\(\\): argument 'dtype' must be "
                                                "torch.dtype, not str$"):
                ember.zeros(2, dtype=name)

    def test_pickle(self):
        import pickle
        for name in NAMES:
            assert pickle.loads(pickle.dumps(edt(name))) is edt(name)


# -- promotion tables ------------------------------------------------------------------------


class TestPromoteTypes:
    def test_promote_types_table(self, torch):
        bad = []
        for a, b in itertools.product(NAMES, NAMES):
            got = name_of(ember.promote_types(edt(a), edt(b)))
            want = name_of(torch.promote_types(getattr(torch, a), getattr(torch, b)))
            if got != want:
                bad.append(f"promote_types({a}, {b}) = {got}, torch: {want}")
        assert not bad, "\n".join(bad)

    def test_promote_types_is_symmetric(self):
        for a, b in itertools.product(NAMES, NAMES):
            assert ember.promote_types(edt(a), edt(b)) is ember.promote_types(edt(b), edt(a))


# (ember op, torch op name): arithmetic keeps the common dtype, true division goes to a
# float, comparisons give bool but still need a common dtype.
BINARY = [("add", "add"), ("mul", "mul"), ("sub", "sub"), ("div", "div"), ("eq", "eq"),
          ("lt", "lt"), ("maximum", "maximum")]


@pytest.mark.parametrize("op, top", BINARY)
@pytest.mark.parametrize("kinds", [("dim", "dim"), ("dim", "zero"), ("zero", "dim"),
                                   ("zero", "zero")])
def test_tensor_tensor_table(torch, op, top, kinds):
    """Every dtype pair, for dimensioned and 0-dim operands, against torch."""
    bad = []
    ka, kb = kinds
    for a, b in itertools.product(NAMES, NAMES):
        got = _outcome(getattr(ember, op), ember_operand(a, ka), ember_operand(b, kb))
        want = _outcome(getattr(torch, top), torch_operand(torch, a, ka),
                        torch_operand(torch, b, kb))
        if got != want:
            bad.append(f"{op}({a}[{ka}], {b}[{kb}]) -> {got}, torch: {want}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("op, top", [b for b in BINARY if b[0] != "maximum"])
@pytest.mark.parametrize("kind", ["dim", "zero"])
def test_tensor_scalar_table(torch, op, top, kind):
    """Every dtype with Python bool, int and float scalars, on either side, against torch."""
    bad = []
    for a, s in itertools.product(NAMES, SCALARS):
        for reflected in (False, True):
            def run(lib, x, s=s, reflected=reflected):
                f = getattr(lib, op if lib is ember else top)
                if not reflected:
                    return f(x, s)
                # the scalar on the left: through the reflected operator where there is one
                dunder = {"add": "__radd__", "mul": "__rmul__", "sub": "__rsub__",
                          "div": "__rtruediv__", "eq": "__eq__", "lt": "__gt__"}[op]
                return getattr(x, dunder)(s)
            got = _outcome(run, ember, ember_operand(a, kind))
            want = _outcome(run, torch, torch_operand(torch, a, kind))
            if got != want:
                side = "scalar first" if reflected else "tensor first"
                bad.append(f"{op}({a}[{kind}], {s!r}) {side} -> {got}, torch: {want}")
    assert not bad, "\n".join(bad)


def test_operators_promote_like_functions(torch):
    bad = []
    ops = ["__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__",
           "__pow__", "__lt__", "__ne__", "__and__", "__or__", "__xor__"]
    for a, b in itertools.product(NAMES, NAMES):
        for op in ops:
            got = _outcome(getattr(ember_operand(a, "dim"), op), ember_operand(b, "dim"))
            want = _outcome(getattr(torch_operand(torch, a, "dim"), op),
                            torch_operand(torch, b, "dim"))
            if got != want:
                bad.append(f"{a} {op} {b} -> {got}, torch: {want}")
    assert not bad, "\n".join(bad)


def test_scalar_keeps_width():
    """The headline cases of PyTorch's rule, spelled out."""
    i8 = ember.tensor([1, 2], dtype=ember.int8)
    assert (i8 + 1000).dtype is ember.int8
    assert (i8 + 1.5).dtype is ember.float32
    assert (i8 + ember.tensor(5)).dtype is ember.int8  # 0-dim int64 does not widen int8
    # a 0-dim tensor of a higher category brings its own dtype (a scalar: the default)
    assert (i8 + ember.tensor(5.0, dtype=ember.float64)).dtype is ember.float64
    h = ember.tensor([1.0], dtype=ember.float16)
    assert (h + 1.5).dtype is ember.float16
    assert (h + ember.tensor(1.0, dtype=ember.float64)).dtype is ember.float16
    assert (h + ember.tensor([1.0], dtype=ember.float64)).dtype is ember.float64
    b = ember.tensor([True, False])
    assert (b + True).dtype is ember.bool and (b + 1).dtype is ember.int64
    assert (b * 2.0).dtype is ember.float32


def test_scalar_promotion_follows_default_dtype():
    try:
        ember.set_default_dtype(ember.float64)
        assert (ember.tensor([1, 2]) + 0.5).dtype is ember.float64
        assert (ember.tensor([1, 2]) / 2).dtype is ember.float64
        assert (ember.tensor([1.0], dtype=ember.float32) + 0.5).dtype is ember.float32
    finally:
        ember.set_default_dtype(ember.float32)


def test_integer_overflow_wraps_like_torch(torch):
    """A scalar beyond the tensor's range wraps as a C cast does (torch's behaviour)."""
    e = ember.tensor([100, 1], dtype=ember.int8) + 100
    t = torch.tensor([100, 1], dtype=torch.int8) + 100
    assert e.dtype is ember.int8 and e.tolist() == t.tolist()
    e = ember.tensor([250], dtype=ember.uint8) + ember.tensor([10], dtype=ember.uint8)
    assert e.tolist() == [4]


def test_mixed_values_match_torch(torch):
    """Values, not just dtypes, of mixed-dtype arithmetic (computed in the common dtype)."""
    for a, b in itertools.product(("uint8", "int8", "int32", "float16", "bfloat16",
                                   "float64"), repeat=2):
        ea = ember.tensor([3, 7, 1], dtype=edt(a))
        eb = ember.tensor([2, 5, 4], dtype=edt(b))
        ta = torch.tensor([3, 7, 1], dtype=getattr(torch, a))
        tb = torch.tensor([2, 5, 4], dtype=getattr(torch, b))
        for op in ("add", "sub", "mul", "div"):
            got = getattr(ember, op)(ea, eb).double().tolist()
            want = getattr(torch, op)(ta, tb).double().tolist()
            np.testing.assert_allclose(got, want, rtol=1e-2, err_msg=f"{op} {a} {b}")


# -- in-place ops cannot change a tensor's dtype ------------------------------------------------


class TestInplaceCasting:
    def test_float_result_into_int_raises(self, torch):
        x = ember.tensor([1, 2])
        with pytest.raises(RuntimeError, match="^result type Float can't be cast to the "
                                               "desired output type Long\n"):
            x.add_(1.5)
        assert x.tolist() == [1, 2]
        tx = torch.tensor([1, 2])
        with pytest.raises(RuntimeError, match="can't be cast"):
            tx.add_(1.5)

    def test_wider_same_category_is_allowed(self):
        x = ember.tensor([1, 2], dtype=ember.int8)
        x.add_(ember.tensor([1, 1], dtype=ember.int64))
        assert x.dtype is ember.int8 and x.tolist() == [2, 3]
        f = ember.tensor([1.0], dtype=ember.float16)
        f.mul_(ember.tensor([2.0], dtype=ember.float64))
        assert f.dtype is ember.float16 and f.tolist() == [2.0]

    def test_int_into_float_is_allowed(self):
        x = ember.tensor([1.5, 2.5])
        x.add_(ember.tensor([1, 2]))
        assert x.dtype is ember.float32 and x.tolist() == [2.5, 4.5]

    def test_div_into_int_raises(self):
        x = ember.tensor([4, 2])
        with pytest.raises(RuntimeError, match="can't be cast"):
            x.div_(2)
        assert x.tolist() == [4, 2]


# -- dtype rules of specific op families --------------------------------------------------------


class TestOpDtypes:
    def test_unary_float_ops_on_ints(self, torch):
        for name in ("exp", "sqrt", "sin", "sigmoid", "log"):
            for dname in ("bool", "uint8", "int32", "int64", "float16", "float64"):
                e = getattr(ember, name)(ember.tensor([1, 1], dtype=edt(dname)))
                t = getattr(torch, name)(torch.tensor([1, 1], dtype=getattr(torch, dname)))
                assert name_of(e.dtype) == name_of(t.dtype), (name, dname)

    def test_reductions(self, torch):
        for dname in ("bool", "uint8", "int8", "int32", "int64", "float16", "float64"):
            et = ember.tensor([1, 0, 1], dtype=edt(dname))
            tt = torch.tensor([1, 0, 1], dtype=getattr(torch, dname))
            for red in ("sum", "prod", "amax", "cumsum"):
                args = (0,) if red == "cumsum" else ()
                e = getattr(ember, red)(et, *args)
                t = getattr(torch, red)(tt, *args)
                assert name_of(e.dtype) == name_of(t.dtype), (red, dname)
                assert e.tolist() == t.tolist(), (red, dname)
            if dname != "bool":  # (PyTorch's argmax refuses bool)
                assert ember.argmax(et).dtype is ember.int64
            for red in ("all", "any"):  # bool, but uint8 for uint8
                assert name_of(getattr(ember, red)(et).dtype) == \
                    name_of(getattr(torch, red)(tt).dtype), (red, dname)

    def test_sum_dtype_argument(self):
        x = ember.tensor([1, 2, 3], dtype=ember.int8)
        assert ember.sum(x, dtype=ember.float64).dtype is ember.float64
        assert x.sum(dtype=ember.int16).dtype is ember.int16

    def test_where_and_clamp(self, torch):
        cond = ember.tensor([True, False])
        assert ember.where(cond, ember.tensor([1, 2]), 0.5).dtype is ember.float32
        assert ember.where(cond, ember.tensor([1, 2], dtype=ember.int8), 3).dtype is ember.int8
        assert ember.clamp(ember.tensor([1, 5]), 0, 3).dtype is ember.int64
        assert ember.clamp(ember.tensor([1, 5]), 0.5).dtype is ember.float32
        tc = torch.tensor([True, False])
        assert torch.where(tc, torch.tensor([1, 2]), 0.5).dtype is torch.float32

    def test_floor_divide_and_remainder(self, torch):
        a, b = [7, -7, 5, -5], [2, 2, -3, -3]
        for dname in ("int64", "float32"):
            e = ember.tensor(a, dtype=edt(dname))
            t = torch.tensor(a, dtype=getattr(torch, dname))
            eb = ember.tensor(b, dtype=edt(dname))
            tb = torch.tensor(b, dtype=getattr(torch, dname))
            assert (e // eb).tolist() == (t // tb).tolist()
            assert (e % eb).tolist() == (t % tb).tolist()
            assert ember.div(e, eb, rounding_mode="trunc").tolist() == \
                torch.div(t, tb, rounding_mode="trunc").tolist()
            assert ember.div(e, eb, rounding_mode="floor").dtype is e.dtype

    def test_bool_arithmetic(self, torch):
        b = ember.tensor([True, False, True])
        assert (b + b).dtype is ember.bool and (b + b).tolist() == [True, False, True]
        assert (b * b).tolist() == [True, False, True]
        with pytest.raises(RuntimeError):
            b - b
        with pytest.raises(RuntimeError):
            b.neg()
        assert (~b).tolist() == [False, True, False]
        with pytest.raises(RuntimeError):
            -torch.tensor([True])



@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_shell_unsigned_dtypes_as_torch(name):
    """uint16/uint32/uint64: tensors hold and print them (NumPy arrays too), casts work,
    and they promote with no other integer dtype (PyTorch's error) but with floats."""
    torch = pytest.importorskip("torch")

    def run(L):
        d = getattr(L, name)
        big = np.array([np.iinfo(name).max, 5], dtype=name)
        t = L.from_numpy(big)
        out = [str(t).split("dtype=")[0], str(d).split(".")[1], t.tolist(), t.dtype is d,
               t.to(L.float64).tolist(), str(L.promote_types(d, L.float32)).split(".")[1]]
        for other in (L.int64, L.uint8, L.bool):
            try:
                L.promote_types(d, other)
            except RuntimeError as err:
                out.append(str(err))
        return out

    assert run(ember) == run(torch)
