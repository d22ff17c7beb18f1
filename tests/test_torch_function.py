"""`__torch_function__`, Tensor subclasses, ember.overrides and ember.utils._pytree, each
checked against PyTorch: the same code runs on both libraries (`lib` is torch or ember)
and must see the same functions, types, arguments, results and error texts."""

from __future__ import annotations

import collections
import functools
import re

import pytest

torch = pytest.importorskip("torch")
import torch.utils._pytree as torch_pytree  # noqa: E402

import ember  # noqa: E402
import ember.nn.functional as EF  # noqa: E402
import ember.overrides  # noqa: E402
import ember.utils._pytree as ember_pytree  # noqa: E402
from ember.core import interpose, torch_function  # noqa: E402

LIBS = {"torch": torch, "ember": ember}


@pytest.fixture(autouse=True)
def _check_off_afterwards():
    """Each test turns the override check on (defining a subclass does); the tests that
    follow in this process must not pay for it."""
    yield
    torch_function.unwatch()
    assert interpose.active is None or interpose._hooks


def _functional(lib):
    return torch.nn.functional if lib is torch else EF


def _logging_class(lib, seen):
    class Logged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append((func.__name__, [t.__name__ for t in types]))
            return super().__torch_function__(func, types, args, kwargs)
    return Logged


def _both(run):
    """`run(lib)` on torch and on ember."""
    return run(torch), run(ember)


# -- which function is passed, with which types -----------------------------------------


@pytest.mark.parametrize("call", [
    lambda lib, x: x + 1, lambda lib, x: 1 + x, lambda lib, x: x * x, lambda lib, x: x - 1,
    lambda lib, x: lib.add(x, x), lambda lib, x: x.sum(), lambda lib, x: lib.cat([x, x]),
    lambda lib, x: x[0], lambda lib, x: x.shape, lambda lib, x: x.dtype, lambda lib, x: x.size(),
    lambda lib, x: _functional(lib).relu(x), lambda lib, x: _functional(lib).softmax(x, 0),
    lambda lib, x: x.clone(), lambda lib, x: x.detach(), lambda lib, x: x.tolist(),
    lambda lib, x: len(x), lambda lib, x: repr(x), lambda lib, x: lib.max(x, 0),
    lambda lib, x: x.to(lib.float64), lambda lib, x: x.grad, lambda lib, x: x.reshape(2),
    lambda lib, x: x.expand(2, 2), lambda lib, x: lib.dropout(x, 0.5, False),
    lambda lib, x: lib.where(x > 1, x, 0.0), lambda lib, x: x.norm(),
    lambda lib, x: _functional(lib).linear(x, lib.ones(1, 2)),
    lambda lib, x: _functional(lib).mse_loss(x, lib.ones(2)),
    lambda lib, x: _functional(lib).normalize(x, dim=0),
])
def test_function_seen_by_subclass(call):
    def run(lib):
        seen = []
        x = lib.tensor([1.0, 2.0]).as_subclass(_logging_class(lib, seen))
        seen.clear()
        call(lib, x)
        return seen
    want, got = _both(run)
    assert got == want


def test_autograd_functions_are_overridable_and_hide_the_engine():
    def run(lib):
        seen = []
        w = lib.ones(3, requires_grad=True)
        x = lib.tensor([1.0, 2.0, 3.0]).as_subclass(_logging_class(lib, seen))
        y = (x * w).sum()
        g, = lib.autograd.grad(y, w, retain_graph=True)
        lib.autograd.backward(y)
        return seen, type(g).__name__, g.tolist(), type(w.grad).__name__, w.grad.tolist()
    want, got = _both(run)
    assert got == want


def test_results_keep_the_subclass():
    def run(lib):
        cls = _logging_class(lib, [])
        x = lib.tensor([[1.0, -2.0], [3.0, 4.0]]).as_subclass(cls)
        values, indices = lib.max(x, dim=1)
        pieces = lib.split(x, 1)
        return [type(r).__name__ for r in (x + 1, x.sum(), x.clone(), x.detach(), x[0],
                                            x.to(lib.float64), values, indices, pieces[0],
                                            x.tolist(), x.shape)] + [type(pieces).__name__]
    want, got = _both(run)
    assert got == want
    assert got[:9] == ["Logged"] * 9


def test_subclass_prints_under_its_name_and_parameter_as_before():
    def run(lib):
        class MyTensor(lib.Tensor):
            pass
        x = lib.tensor([1.0, 2.5]).as_subclass(MyTensor)
        p = lib.nn.Parameter(lib.ones(2))
        return repr(x), repr(x.requires_grad_()), repr(p), type(p * 2).__name__, \
            type(p.clone()).__name__, str(x * 2)
    want, got = _both(run)
    assert got == want


def test_as_subclass_is_a_view_in_the_graph():
    def run(lib):
        class M(lib.Tensor):
            pass
        a = lib.ones(2, requires_grad=True)
        b = a.as_subclass(M)
        (b * 3).sum().backward()
        return b.grad_fn.name(), b.is_leaf, b.requires_grad, a.grad.tolist(), \
            type(b).__name__
    want, got = _both(run)
    assert got == want


def test_make_subclass_is_a_new_leaf_sharing_storage():
    def run(lib):
        class M(lib.Tensor):
            pass
        base = lib.zeros(3)
        m = lib.Tensor._make_subclass(M, base, True)
        with lib.no_grad():
            m[0] = 5
        return type(m).__name__, m.requires_grad, m.is_leaf, m.grad_fn, base.tolist()
    want, got = _both(run)
    assert got == want


def test_as_subclass_of_a_non_tensor_class():
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="Creating a Tensor subclass from a class that "
                           "does not inherit from Tensor is not possible"):
            lib.ones(2).as_subclass(int)


def test_new_based_wrapper_keeps_its_metadata():
    def run(lib):
        class Tagged(lib.Tensor):
            @staticmethod
            def __new__(cls, data, tag):
                t = lib.Tensor._make_subclass(cls, lib.as_tensor(data))
                t.tag = tag
                return t

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                out = super().__torch_function__(func, types, args, kwargs or {})
                if isinstance(out, Tagged):
                    out.tag = args[0].tag
                return out
        t = Tagged([1.0, 2.0], "a")
        u = t * 2
        return type(u).__name__, u.tag, u.tolist()
    want, got = _both(run)
    assert got == want


def test_disable_contexts():
    def run(lib):
        x = lib.ones(2).as_subclass(_logging_class(lib, []))
        with lib._C.DisableTorchFunctionSubclass():
            a = type(x + 1).__name__, lib._C._is_torch_function_enabled()
        with lib._C.DisableTorchFunction():
            b = type(x + 1).__name__, lib._C._is_torch_function_enabled()
        return a, b, lib._C._is_torch_function_enabled(), type(x + 1).__name__
    want, got = _both(run)
    assert got == want


def test_disabled_impl_runs_plain():
    def run(lib):
        class Quiet(lib.Tensor):
            __torch_function__ = lib._C._disabled_torch_function_impl
        q = lib.ones(2).as_subclass(Quiet)
        return type(q + 1).__name__, lib.overrides.has_torch_function((q,))
    want, got = _both(run)
    assert got == want


# -- dispatch order and NotImplemented ----------------------------------------------------


def test_dispatch_order_subclass_first_then_left_to_right():
    def run(lib):
        calls = []

        def tf(name):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                calls.append((name, [t.__name__ for t in types]))
                return NotImplemented if name != "C" else "C answered"
            return __torch_function__

        class A(lib.Tensor):
            __torch_function__ = tf("A")

        class B(lib.Tensor):
            __torch_function__ = tf("B")

        class C(A):
            __torch_function__ = tf("C")
        a, b, c = (lib.ones(1).as_subclass(k) for k in (A, B, C))
        with pytest.raises(TypeError, match="all __torch_function__ handlers returned"):
            lib.add(a, b)
        return calls, lib.add(b, c, alpha=2), lib.add(a, c)
    want, got = _both(run)
    assert got == want


def test_all_not_implemented_error_texts():
    class Declines:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    def errors(lib):
        class N(lib.Tensor):
            __torch_function__ = Declines.__torch_function__
        n = lib.ones(2).as_subclass(N)
        out = []
        for call in (lambda: lib.add(n, Declines()), lambda: n + 1, lambda: n.shape,
                     lambda: lib.mean(Declines()), lambda: _functional(lib).relu(Declines())):
            with pytest.raises(TypeError) as info:
                call()
            out.append(str(info.value).replace(".<locals>", "").replace("errors.", ""))
        return out
    want, got = _both(errors)
    assert got == want


# -- Tensor-like objects (not Tensors) ----------------------------------------------------


def _scalar_tensor(lib):
    handled = {}

    class ScalarTensor:
        def __init__(self, n, value):
            self._n, self._value = n, value

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func not in handled or not all(issubclass(t, (lib.Tensor, cls)) for t in types):
                return NotImplemented
            return handled[func](*args, **(kwargs or {}))

    def implements(fn):
        def decorator(impl):
            functools.update_wrapper(impl, fn)
            handled[fn] = impl
            return impl
        return decorator

    @implements(lib.mean)
    def mean(input):
        return float(input._value) / input._n

    @implements(lib.add)
    def add(input, other):
        return ("added", type(input).__name__, type(other).__name__)

    @implements(_functional(lib).relu)
    def relu(input, inplace=False):
        return ("relu", inplace)
    return ScalarTensor


def test_tensor_like_object():
    def run(lib):
        st = _scalar_tensor(lib)(5, 2)
        t = lib.ones(2)
        out = [lib.mean(st), lib.add(st, t), lib.add(t, st), _functional(lib).relu(st),
               lib.overrides.is_tensor_like(st), lib.overrides.is_tensor_like(t),
               lib.overrides.is_tensor_like(3), lib.overrides.has_torch_function((st,)),
               lib.overrides.has_torch_function((t, lib.nn.Parameter(t)))]
        with pytest.raises(TypeError) as info:
            lib.mul(st, 2)
        return out, str(info.value).splitlines()[0]
    want, got = _both(run)
    assert got == want


def test_handle_torch_function_in_user_code():
    def run(lib):
        ov = lib.overrides

        def scaled(x, k=2):
            if ov.has_torch_function_unary(x):
                return ov.handle_torch_function(scaled, (x,), x, k=k)
            return x * k
        st = _scalar_tensor(lib)(3, 1)
        with pytest.raises(TypeError) as info:
            scaled(st)
        return scaled(lib.ones(1)).tolist(), \
            str(info.value).replace("test_torch_function.", "").split(" on types")[0]
    want, got = _both(run)
    assert got == want


# -- modes ------------------------------------------------------------------------------


def test_mode_sees_every_call_and_nests():
    def run(lib):
        class Counter(lib.overrides.TorchFunctionMode):
            def __init__(self):
                super().__init__()
                self.names = []

            def __torch_function__(self, func, types, args=(), kwargs=None):
                self.names.append(func.__name__)
                return func(*args, **(kwargs or {}))

        class AddToMul(lib.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                if func is lib.add:
                    return lib.mul(*args, **(kwargs or {}))
                return func(*args, **(kwargs or {}))
        x = lib.tensor([1.0, 2.0])
        with Counter() as outer:
            y = _functional(lib).relu(x) + lib.zeros(2)
            with AddToMul():
                z = lib.add(x, x)
            s = y.sum().item()
        return outer.names, z.tolist(), s, lib._C._len_torch_function_stack()
    want, got = _both(run)
    assert got == want


def test_overridable_functions_content():
    ov = ember.overrides
    table = ov.get_overridable_functions()
    assert ember.add in table[ember] and EF.relu in table[EF]
    assert ember.Tensor.__repr__ in table[ember.Tensor]
    assert ember.ones in ov.get_ignored_functions() and ember.add not in ov.get_ignored_functions()
    assert ov.resolve_name(ember.add) == "torch.add"
    assert ov.resolve_name(EF.relu) == "torch.nn.functional.relu"
    assert ov.is_tensor_method_or_property(ember.Tensor.__repr__)


def test_plain_tensors_leave_the_check_off():
    torch_function.unwatch()
    x = ember.ones(2)
    (x + x).sum()
    ember.nn.Parameter(x) * 2
    assert not torch_function.watching and interpose.active is None


def test_importing_embers_packages_leaves_the_check_off():
    """ember's own Tensor subclasses (sparse, quantized, parameters) opt out: a fresh
    process that imports every package still runs ops without the override check."""
    import subprocess
    import sys

    code = ("import ember, ember.nn, ember.optim, ember.ao.quantization, ember.fx, "
            "ember.distributions, ember.library, ember.sparse\n"
            "from ember.core import interpose, torch_function\n"
            "ember.quantize_per_tensor(ember.ones(2), 0.1, 0, ember.quint8)\n"
            "print(interpose.active is None and not torch_function.watching)")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "True"


# -- torch.utils._pytree -------------------------------------------------------------------


def _tree(lib):
    point = collections.namedtuple("Point", ["x", "y"])
    return {"a": lib.ones(2), "b": [1, (2, 3.0)], "c": None, "d": point(4, 5),
            "e": collections.OrderedDict(z=1, a=2),
            "f": collections.defaultdict(list, k=[7]), "g": collections.deque([8, 9], maxlen=3)}


def test_pytree_flatten_unflatten_and_spec_text():
    for lib, pt in ((torch, torch_pytree), (ember, ember_pytree)):
        leaves, spec = pt.tree_flatten(_tree(lib))
        rebuilt = pt.tree_unflatten(list(range(len(leaves))), spec)
        if lib is torch:
            want = (str(spec), repr(rebuilt).replace("Point", "P"), spec.num_leaves,
                    spec.num_nodes, len(leaves))
        else:
            got = (str(spec), repr(rebuilt).replace("Point", "P"), spec.num_leaves,
                   spec.num_nodes, len(leaves))
    assert got == want


def test_pytree_map_variants_and_errors():
    def run(pt, lib):
        tree = {"x": lib.ones(2), "y": [1, 2.5], "z": (lib.zeros(1),)}
        only = pt.tree_map_only(lib.Tensor, lambda t: t.sum().item(), tree)
        pairs = pt.tree_map(lambda a, b: a + b, [1, (2,)], [10, (20,)])
        out = [only, pairs, pt.tree_leaves([1, [2, [3]]]), str(pt.tree_structure(5)),
               pt.tree_all(lambda v: v > 0, [1, 2]), pt.tree_any(lambda v: v > 1, [1, 2])]
        with pytest.raises(ValueError) as info:
            pt.tree_unflatten([1], pt.tree_structure([1, 2]))
        out.append(str(info.value))

        class Pair:
            def __init__(self, a, b):
                self.a, self.b = a, b
        pt.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda v, c: Pair(*v))
        doubled = pt.tree_map(lambda v: v * 2, Pair(1, [2]))
        out += [doubled.a, doubled.b, str(pt.tree_structure(Pair(1, 2)))]
        with pytest.raises(ValueError) as info:
            pt.register_pytree_node(Pair, lambda p: ([], None), lambda v, c: None)
        out.append(str(info.value).split("'")[-1])
        return out
    assert run(ember_pytree, ember) == run(torch_pytree, torch)


# -- pickling and copying a subclass: it comes back as itself, with its attributes ----------
# (the classes live in subclass_pickles.py, imported by the test: pickle finds them by
# name there, and defining a `__torch_function__` at this module's import would switch
# the override check on for every test the session collects)

def _round_trips(lib, cls, tmp_path):
    """What pickling, and saving then loading, give back for a `cls` leaf with state."""
    import pickle

    x = lib.Tensor._make_subclass(cls, lib.arange(3.0), True)
    if "Slotted" in cls.__name__:
        x.unit = "m"
    else:
        x.meta = {"unit": "m", "scale": [1, 2]}
    seen = []
    path = tmp_path / f"{lib.__name__}.pt"
    lib.save({"x": x}, path)
    for y in (pickle.loads(pickle.dumps(x)), lib.load(path, weights_only=False)["x"]):
        seen.append((type(y).__name__.replace(lib.__name__.capitalize(), ""),
                     getattr(y, "meta", None), getattr(y, "unit", None), y.requires_grad,
                     y.is_leaf, y.tolist()))
    with pytest.raises(Exception) as info:
        lib.load(path)  # weights_only=True refuses the program's class by name
    # (PyTorch's text may carry terminal bold codes)
    seen.append((type(info.value).__name__,
                 re.sub(r"\x1b\[[0-9;]*m", "", str(info.value)).splitlines()[0],
                 f"{cls.__module__}.{cls.__name__}" in str(info.value)))
    return seen


@pytest.mark.parametrize("kind", ["Units", "Slotted"])
def test_pickled_and_saved_subclass_comes_back_as_torchs(kind, tmp_path):
    import subclass_pickles

    ours = _round_trips(ember, getattr(subclass_pickles, "Ember" + kind), tmp_path)
    theirs = _round_trips(torch, getattr(subclass_pickles, "Torch" + kind), tmp_path)
    assert ours == theirs
    assert ours[0][0] == kind and (ours[0][1] or ours[0][2])


def test_deepcopied_subclass_is_itself_with_copied_attributes():
    import copy

    from subclass_pickles import EmberSlotted, EmberUnits

    x = ember.Tensor._make_subclass(EmberUnits, ember.arange(3.0), True)
    x.meta = {"unit": "m"}
    x.grad = ember.ones(3)
    s = ember.arange(2.0).as_subclass(EmberSlotted)
    s.unit = ["m"]
    y, y_again, t = copy.deepcopy([x, x, s])
    assert type(y) is EmberUnits and y is y_again  # (the memo: one copy of one tensor)
    assert y.meta == x.meta and y.meta is not x.meta
    assert y.requires_grad and y.is_leaf and y.grad.tolist() == [1.0, 1.0, 1.0]
    y.detach().add_(1)  # its own storage
    assert x.tolist() == [0.0, 1.0, 2.0]
    assert type(t) is EmberSlotted and t.unit == ["m"] and t.unit is not s.unit
    plain = ember.ones(2)
    plain.note = "kept"
    assert copy.deepcopy(plain).note == "kept" and type(copy.deepcopy(plain)) is ember.Tensor


def test_parameter_pickles_with_its_attributes_as_torch():
    import pickle

    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(2))
        p.note = "n"
        q = pickle.loads(pickle.dumps(p))
        assert type(q) is lib.nn.Parameter and q.note == "n" and q.requires_grad
