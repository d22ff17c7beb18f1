"""`ember.nn.Module` and the containers: registration, iteration, state dicts, modes,
moving/casting, hooks, reprs, and `Parameter`.

Where PyTorch defines the behaviour exactly (state_dict keys, error messages, reprs, hook
arguments) the same architecture is built in both and compared; torch is an oracle
only, and those tests skip without it.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _same_arch(lib, lib_nn):
    """The same small architecture in ember.nn or torch.nn (for keys and reprs)."""

    class Block(lib_nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib_nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.bn = lib_nn.BatchNorm2d(4)
            self.act = lib_nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class Net(lib_nn.Module):
        def __init__(self):
            super().__init__()
            self.features = lib_nn.Sequential(Block(), lib_nn.MaxPool2d(2), lib_nn.Flatten())
            self.heads = lib_nn.ModuleList([lib_nn.Linear(64, 8) for _ in range(3)] +
                                           [lib_nn.Linear(64, 2)])
            self.extra = lib_nn.ModuleDict({"drop": lib_nn.Dropout(0.1),
                                            "norm": lib_nn.LayerNorm(8)})
            self.emb = lib_nn.Embedding(10, 4, padding_idx=0)
            self.scale = lib_nn.Parameter(lib.ones(2))
            self.register_buffer("steps", None)
            self.register_buffer("mask", lib.zeros(2), persistent=False)

        def forward(self, x):
            h = self.features(x)
            return [head(h) for head in self.heads]

    return Net()


# -- registration ---------------------------------------------------------------------


class TestRegistration:
    def test_setattr_registers_parameters_modules_and_keeps_plain_attributes(self):
        m = nn.Module()
        m.w = nn.Parameter(ember.zeros(2))
        m.child = nn.Linear(2, 3)
        m.t = ember.ones(2)  # a plain tensor is not registered
        m.n = 5
        assert list(m._parameters) == ["w"]
        assert list(m._modules) == ["child"]
        assert m._buffers == {}
        assert "t" in m.__dict__ and m.n == 5
        assert [n for n, _ in m.named_parameters()] == ["w", "child.weight", "child.bias"]

    def test_buffers_persistent_and_not(self):
        m = nn.Module()
        m.register_buffer("a", ember.zeros(2))
        m.register_buffer("b", ember.ones(2), persistent=False)
        m.c = nn.Buffer(ember.full((1,), 3.0))
        m.d = nn.Buffer(ember.zeros(1), persistent=False)
        assert [n for n, _ in m.named_buffers()] == ["a", "b", "c", "d"]
        assert list(m.state_dict()) == ["a", "c"]
        # reassigning a registered buffer keeps it a buffer, and keeps it non-persistent
        m.b = ember.zeros(3)
        assert m._buffers["b"].shape == (3,) and "b" not in m.state_dict()

    def test_reassigning_a_parameter_with_a_tensor_is_a_type_error(self):
        lin = nn.Linear(2, 2)
        with pytest.raises(TypeError, match=r"cannot assign '.*' as parameter 'weight' "
                                            r"\(ember.nn.Parameter or None expected\)"):
            lin.weight = ember.zeros(2, 2)
        lin.bias = None  # None is allowed
        assert lin.bias is None and "bias" in lin._parameters
        assert [n for n, _ in lin.named_parameters()] == ["weight"]

    def test_register_errors(self):
        m = nn.Module()
        m.x = 1
        with pytest.raises(KeyError, match="attribute 'x' already exists"):
            m.register_parameter("x", nn.Parameter(ember.zeros(1)))
        with pytest.raises(KeyError, match=r'parameter name can.*t contain "\."'):
            m.register_parameter("a.b", None)
        with pytest.raises(KeyError, match="t be empty string"):
            m.register_buffer("", None)
        with pytest.raises(TypeError, match="cannot assign 'int' object to "
                                            "parameter 'p'"):
            m.register_parameter("p", 3)
        with pytest.raises(TypeError, match="is not a Module subclass"):
            m.add_module("m", 3)
        with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter"):
            m.register_parameter("q", _non_leaf_parameter())

    def test_assigning_before_init_raises(self):
        class Bad(nn.Module):
            def __init__(self):
                self.lin = nn.Linear(1, 1)

        with pytest.raises(AttributeError, match=r"cannot assign module before "
                                                 r"Module.__init__\(\) call"):
            Bad()

    def test_getattr_delattr_dir(self):
        lin = nn.Linear(2, 3)
        assert lin.weight is lin._parameters["weight"]
        with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
            lin.nope  # noqa: B018
        assert "weight" in dir(lin) and "forward" in dir(lin)
        del lin.bias
        assert "bias" not in lin._parameters
        seq = nn.Sequential(nn.ReLU())
        assert "0" not in dir(seq)

    def test_add_module_register_module_and_get_submodule(self):
        m = nn.Module()
        m.add_module("a", nn.Sequential(nn.Linear(1, 2)))
        m.register_module("b", nn.ReLU())
        assert m.get_submodule("a.0") is m.a[0]
        assert m.get_parameter("a.0.bias") is m.a[0].bias
        with pytest.raises(AttributeError, match="has no attribute `zz`"):
            m.get_submodule("a.zz")
        bn = nn.BatchNorm1d(2)
        assert bn.get_buffer("running_mean") is bn.running_mean
        with pytest.raises(AttributeError, match="has no attribute `nope`"):
            m.get_parameter("a.0.nope")
        with pytest.raises(AttributeError, match="has no attribute `nope`"):
            bn.get_buffer("nope")
        with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
            bn.get_parameter("running_mean")
        with pytest.raises(AttributeError, match="`weight` is not a buffer"):
            bn.get_buffer("weight")

    def test_forward_not_implemented(self):
        with pytest.raises(NotImplementedError, match='missing the required "forward"'):
            nn.Module()(ember.zeros(1))


def _non_leaf_parameter():
    p = nn.Parameter(ember.zeros(1))
    p._node = (p * 2)._node  # a Parameter that is the output of an op
    return p


# -- iteration ------------------------------------------------------------------------


class TestIteration:
    def test_shared_parameters_and_modules_are_yielded_once(self):
        shared = nn.Linear(2, 2)
        m = nn.Sequential(shared, nn.ReLU(), shared)
        assert len(list(m.parameters())) == 2
        assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias"]
        names = [n for n, _ in m.named_parameters(remove_duplicate=False)]
        assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
        assert [n for n, _ in m.named_modules()] == ["", "0", "1"]
        assert len(list(m.modules())) == 3
        assert len(list(m.children())) == 2

    def test_prefix_and_recurse(self):
        m = nn.Sequential(nn.Linear(1, 1), nn.BatchNorm1d(1))
        m.top = nn.Parameter(ember.zeros(1))
        assert [n for n, _ in m.named_parameters(recurse=False)] == ["top"]
        assert [n for n, _ in m.named_parameters(prefix="net")][:2] == ["net.top",
                                                                        "net.0.weight"]
        assert [n for n, _ in m.named_buffers()] == ["1.running_mean", "1.running_var",
                                                     "1.num_batches_tracked"]
        assert list(m.buffers(recurse=False)) == []

    def test_named_parameters_match_torch(self, torch):
        ours = [n for n, _ in _same_arch(ember, nn).named_parameters()]
        theirs = [n for n, _ in _same_arch(torch, torch.nn).named_parameters()]
        assert ours == theirs
        ours = [n for n, _ in _same_arch(ember, nn).named_modules()]
        theirs = [n for n, _ in _same_arch(torch, torch.nn).named_modules()]
        assert ours == theirs


# -- state dicts ----------------------------------------------------------------------


class TestStateDict:
    def test_keys_match_torch(self, torch):
        ours = list(_same_arch(ember, nn).state_dict())
        assert ours == list(_same_arch(torch, torch.nn).state_dict())

    def test_values_are_detached_and_share_storage(self):
        lin = nn.Linear(2, 2)
        sd = lin.state_dict()
        assert isinstance(sd, OrderedDict)
        assert sd._metadata[""] == {"version": 1}
        assert not sd["weight"].requires_grad and not isinstance(sd["weight"], nn.Parameter)
        sd["weight"].fill_(2.0)  # in place: the module sees it (as in torch)
        assert lin.weight.tolist() == [[2.0, 2.0], [2.0, 2.0]]
        kept = lin.state_dict(keep_vars=True)
        assert kept["weight"] is lin.weight
        assert list(lin.state_dict(prefix="p.")) == ["p.weight", "p.bias"]

    def test_load_copies_in_place_and_keeps_identity(self):
        src, dst = nn.Linear(3, 2), nn.Linear(3, 2)
        w = dst.weight
        result = dst.load_state_dict(src.state_dict())
        assert dst.weight is w and dst.weight.requires_grad
        assert np.array_equal(dst.weight.detach().numpy(), src.weight.detach().numpy())
        assert result.missing_keys == [] and result.unexpected_keys == []
        assert repr(result) == "<All keys matched successfully>"
        assert w._version >= 1  # an in-place copy bumps the version counter

    def test_strict_errors_match_torch(self, torch):
        sd = {"weight": ember.zeros(2, 3), "extra": ember.zeros(1)}
        with pytest.raises(RuntimeError) as ours:
            nn.Linear(3, 2).load_state_dict(sd)
        tsd = {"weight": torch.zeros(2, 3), "extra": torch.zeros(1)}
        with pytest.raises(RuntimeError) as theirs:
            torch.nn.Linear(3, 2).load_state_dict(tsd)
        assert str(ours.value) == str(theirs.value)
        assert str(ours.value) == ('Error(s) in loading state_dict for Linear:\n\tMissing '
                                   'key(s) in state_dict: "bias". \n\tUnexpected key(s) in '
                                   'state_dict: "extra". ')

    def test_size_mismatch_message(self, torch):
        with pytest.raises(RuntimeError) as ours:
            nn.Linear(3, 2).load_state_dict({"weight": ember.zeros(4, 3),
                                             "bias": ember.zeros(2)})
        with pytest.raises(RuntimeError) as theirs:
            torch.nn.Linear(3, 2).load_state_dict({"weight": torch.zeros(4, 3),
                                                   "bias": torch.zeros(2)})
        assert str(ours.value) == str(theirs.value).replace("torch.Size", "ember.Size")
        assert "size mismatch for weight: copying a param with shape ember.Size([4, 3]) " \
               "from checkpoint, the shape in current model is ember.Size([2, 3])." in \
               str(ours.value)

    def test_non_strict_reports_keys(self):
        m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
        res = m.load_state_dict({"0.weight": ember.ones(2, 2), "2.weight": ember.ones(1)},
                                strict=False)
        # a plain dict has no version metadata: BatchNorm takes it for a checkpoint older
        # than num_batches_tracked and fills that in, as torch does
        assert res.missing_keys == ["0.bias", "1.weight", "1.bias", "1.running_mean",
                                    "1.running_var"]
        assert res.unexpected_keys == ["2.weight"]
        assert m[0].weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]

    def test_round_trip_through_torch(self, torch):
        tnet, enet = _same_arch(torch, torch.nn), _same_arch(ember, nn)
        enet.load_state_dict({k: ember.tensor(v.numpy()) for k, v in
                              tnet.state_dict().items()})
        back = {k: torch.from_numpy(np.array(v.numpy())) for k, v in
                enet.state_dict().items()}
        tnet2 = _same_arch(torch, torch.nn)
        tnet2.load_state_dict(back)
        for (k, a), b in zip(tnet.state_dict().items(), tnet2.state_dict().values()):
            assert torch.equal(a, b), k

    def test_assign(self):
        lin = nn.Linear(2, 2)
        w = ember.ones(2, 2)
        lin.load_state_dict({"weight": w, "bias": ember.zeros(2)}, assign=True)
        assert isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad
        w.fill_(5.0)  # the assigned tensor's storage is the parameter's
        assert lin.weight.tolist() == [[5.0, 5.0], [5.0, 5.0]]

    def test_batchnorm_loads_checkpoint_without_num_batches_tracked(self):
        bn = nn.BatchNorm1d(2)
        bn.num_batches_tracked.fill_(7)
        sd = bn.state_dict()
        del sd["num_batches_tracked"]
        sd._metadata[""] = {"version": 1}  # written before the buffer existed
        fresh = nn.BatchNorm1d(2)
        assert fresh.load_state_dict(sd).missing_keys == []
        assert fresh.num_batches_tracked.item() == 0
        sd._metadata[""] = {"version": 2}  # a current checkpoint must have it
        with pytest.raises(RuntimeError, match='Missing key.*"num_batches_tracked"'):
            fresh.load_state_dict(sd)

    def test_extra_state(self):
        class WithState(nn.Module):
            def __init__(self):
                super().__init__()
                self.counter = 0

            def get_extra_state(self):
                return {"counter": self.counter}

            def set_extra_state(self, state):
                self.counter = state["counter"]

        a, b = WithState(), WithState()
        a.counter = 4
        sd = a.state_dict()
        assert list(sd) == ["_extra_state"]
        b.load_state_dict(sd)
        assert b.counter == 4

    def test_state_dict_hooks(self):
        lin = nn.Linear(1, 1)
        calls = []
        lin.register_state_dict_pre_hook(lambda m, prefix, keep: calls.append(("pre", prefix)))
        lin.register_state_dict_post_hook(
            lambda m, sd, prefix, meta: calls.append(("post", list(sd))))
        lin.register_load_state_dict_post_hook(
            lambda m, keys: calls.append(("load", keys.missing_keys)))
        lin.load_state_dict(lin.state_dict())
        assert calls == [("pre", ""), ("post", ["weight", "bias"]), ("load", [])]


# -- modes, moving, zero_grad ---------------------------------------------------------


class TestModes:
    def test_train_eval_propagate(self):
        net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(), nn.BatchNorm1d(2)))
        assert all(m.training for m in net.modules())
        assert net.eval() is net
        assert not any(m.training for m in net.modules())
        net.train()
        assert all(m.training for m in net.modules())
        with pytest.raises(ValueError, match="training mode is expected to be boolean"):
            net.train("yes")

    def test_to_dtype_keeps_parameter_identity_and_casts_grads(self):
        net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
        w = net[0].weight
        net(ember.randn(4, 2)).sum().backward()
        assert net.double() is net
        assert net[0].weight is w and isinstance(w, nn.Parameter) and w.requires_grad
        assert w.dtype is ember.float64 and w.grad.dtype is ember.float64
        assert net[1].running_mean.dtype is ember.float64
        assert net[1].num_batches_tracked.dtype is ember.int64  # integers are not cast
        net.to(ember.float32)
        assert w.dtype is ember.float32
        net.to(ember.zeros(1, dtype=ember.float64))
        assert w.dtype is ember.float64
        net.to("cpu", dtype=ember.float32)
        assert w.dtype is ember.float32 and w.device == ember.device("cpu")
        net.half().float()
        assert w.dtype is ember.float32
        with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
            net.to(ember.int64)

    def test_parameter_moved_in_place_still_trains(self):
        lin = nn.Linear(2, 1).double()
        x = ember.ones(1, 2, dtype=ember.float64)
        lin(x).sum().backward()
        assert lin.weight.grad.tolist() == [[1.0, 1.0]]

    def test_apply_visits_children_first(self, torch):
        order = []
        nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU())).apply(
            lambda m: order.append(type(m).__name__))
        torder = []
        torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.Sequential(torch.nn.ReLU())).apply(
            lambda m: torder.append(type(m).__name__))
        assert order == torder == ["Linear", "ReLU", "Sequential", "Sequential"]

    def test_apply_for_initialisation(self):
        def init_weights(m):
            if isinstance(m, nn.Linear):
                nn.init.constant_(m.weight, 0.5)

        net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
        net.apply(init_weights)
        assert net[2].weight.tolist() == [[0.5, 0.5]]

    def test_zero_grad(self):
        lin = nn.Linear(2, 1)
        lin(ember.ones(1, 2)).sum().backward()
        g = lin.weight.grad
        lin.zero_grad(set_to_none=False)
        assert lin.weight.grad is g and lin.weight.grad.tolist() == [[0.0, 0.0]]
        lin.zero_grad()
        assert lin.weight.grad is None and lin.bias.grad is None

    def test_requires_grad_(self):
        lin = nn.Linear(2, 1)
        assert lin.requires_grad_(False) is lin
        assert not any(p.requires_grad for p in lin.parameters())
        out = lin(ember.ones(1, 2))
        assert not out.requires_grad


# -- hooks ----------------------------------------------------------------------------


class TestForwardHooks:
    def test_order_arguments_and_replacement(self):
        lin = nn.Linear(2, 2)
        calls = []

        def pre(m, args):
            calls.append(("pre", m is lin, len(args)))
            return args[0] * 0  # a single non-tuple value becomes (value,)

        def pre_kw(m, args, kwargs):
            calls.append(("pre_kw", sorted(kwargs)))

        def post(m, args, out):
            calls.append(("post", float(args[0].sum())))
            return out + 1

        def first(m, args, out):
            calls.append(("first",))

        lin.register_forward_pre_hook(pre)
        lin.register_forward_pre_hook(pre_kw, with_kwargs=True)
        h = lin.register_forward_hook(post)
        lin.register_forward_hook(first, prepend=True)
        out = lin(ember.ones(3, 2))
        assert calls == [("pre", True, 1), ("pre_kw", []), ("first",), ("post", 0.0)]
        expected = lin.bias.detach() + 1
        assert np.allclose(out.detach().numpy(), np.broadcast_to(expected.numpy(), (3, 2)))
        h.remove()
        h.remove()  # a second remove is harmless
        calls.clear()
        lin(ember.ones(1, 2))
        assert [c[0] for c in calls] == ["pre", "pre_kw", "first"]

    def test_hook_with_kwargs_can_replace_args_and_kwargs(self):
        class Scale(nn.Module):
            def forward(self, x, factor=1.0):
                return x * factor

        m = Scale()
        m.register_forward_pre_hook(lambda mod, args, kw: (args, {"factor": 3.0}),
                                    with_kwargs=True)
        seen = []
        m.register_forward_hook(lambda mod, args, kw, out: seen.append(kw), with_kwargs=True)
        assert m(ember.ones(1), factor=2.0).tolist() == [3.0]
        assert seen == [{"factor": 3.0}]
        m2 = Scale()
        m2.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
        with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
            m2(ember.ones(1))

    def test_handle_as_context_manager_and_always_call(self):
        class Boom(nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Boom()
        seen = []
        m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
        with pytest.raises(ValueError, match="boom"):
            m(ember.zeros(1))
        assert seen == [None]
        lin = nn.Linear(1, 1)
        with lin.register_forward_hook(lambda *a: seen.append("ctx")):
            lin(ember.zeros(1, 1))
        lin(ember.zeros(1, 1))
        assert seen == [None, "ctx"]


def _hook_trace(lib, lib_nn, modify: bool):
    """Run the same module with full backward (pre-)hooks in ember or torch and record
    what the hooks see, plus the resulting input gradient."""
    log = []

    class TwoIn(lib_nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib_nn.Linear(3, 2)
            self.b = lib_nn.Linear(3, 2)

        def forward(self, x, y, scale=1.0):
            return self.a(x) * scale, self.b(y)

    m = TwoIn()
    with lib.no_grad():
        for i, p in enumerate(m.parameters()):
            p.fill_(0.25 * (i + 1))

    def rounded(gs):
        return [None if g is None else np.round(g.detach().numpy(), 5).tolist() for g in gs]

    def pre(mod, grad_out):
        log.append(("pre", rounded(grad_out)))
        if modify:
            return tuple(g * 2 for g in grad_out)

    def hook(mod, grad_in, grad_out):
        log.append(("full", rounded(grad_in), rounded(grad_out)))
        if modify:
            return (grad_in[0] + 1, grad_in[1])

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(hook)
    m.a.register_full_backward_hook(lambda mod, gi, go: log.append(("inner", rounded(gi))))
    x = lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    y = lib.tensor(np.ones((2, 3), dtype=np.float32))
    o1, o2 = m(x, y, scale=3.0)
    (o1.sum() + (o2 * 3).sum()).backward()
    log.append(("x.grad", x.grad.numpy().tolist()))
    return log


class TestBackwardHooks:
    @pytest.mark.parametrize("modify", [False, True])
    def test_full_backward_hooks_match_torch(self, torch, modify):
        assert _hook_trace(ember, nn, modify) == _hook_trace(torch, torch.nn, modify)

    def test_no_input_requires_grad(self, torch):
        def trace(lib, lib_nn):
            seen = []
            lin = lib_nn.Linear(2, 1)
            lin.register_full_backward_hook(
                lambda m, gi, go: seen.append((gi, tuple(go[0].shape))))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lin(lib.ones(4, 2)).sum().backward()
            return seen

        assert trace(ember, nn) == trace(torch, torch.nn) == [((None,), (4, 1))]

    def test_hook_must_return_right_count(self):
        lin = nn.Linear(2, 1)
        lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        x = ember.ones(1, 2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                               "grad_input, got 2, but expected 1"):
            lin(x).sum().backward()

    def test_removed_backward_hook_does_not_fire(self):
        lin = nn.Linear(2, 1)
        seen = []
        h = lin.register_full_backward_hook(lambda *a: seen.append(1))
        h.remove()
        lin(ember.ones(1, 2, requires_grad=True)).sum().backward()
        assert seen == []


# -- repr -----------------------------------------------------------------------------


class TestRepr:
    def test_nested_repr_equals_torch(self, torch):
        ours = repr(_same_arch(ember, nn))
        theirs = repr(_same_arch(torch, torch.nn))
        assert ours == theirs
        assert "(0-2): 3 x Linear(in_features=64, out_features=8, bias=True)" in ours

    def test_sequential_from_ordered_dict_and_multiline_extra_repr(self, torch):
        def build(lib_nn):
            class Multi(lib_nn.Module):
                def extra_repr(self):
                    return "first line\nsecond line"

            return lib_nn.Sequential(OrderedDict([("enc", lib_nn.Linear(2, 3)),
                                                  ("multi", Multi()),
                                                  ("empty", lib_nn.Sequential())]))

        assert repr(build(nn)) == repr(build(torch.nn))

    def test_parameter_repr(self, torch):
        p = nn.Parameter(ember.tensor([1.0, 2.5]))
        assert repr(p) == "Parameter containing:\ntensor([1.0000, 2.5000], requires_grad=True)"
        assert repr(p) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.5])))


# -- containers -----------------------------------------------------------------------


class TestSequential:
    def test_indexing_slicing_len_iteration(self):
        layers = [nn.Linear(1, 1), nn.ReLU(), nn.Linear(1, 1)]
        seq = nn.Sequential(*layers)
        assert len(seq) == 3 and seq[0] is layers[0] and seq[-1] is layers[2]
        assert list(seq) == layers
        sub = seq[1:]
        assert isinstance(sub, nn.Sequential) and list(sub._modules) == ["1", "2"]
        with pytest.raises(IndexError, match="index 3 is out of range"):
            seq[3]
        with pytest.raises(IndexError, match="index -4 is out of range"):
            seq[-4]
        for listed in (nn.ModuleList(layers), nn.ParameterList([nn.Parameter(ember.ones(1))])):
            assert listed[-1] is list(listed)[-1]
            with pytest.raises(IndexError, match=f"index {len(listed)} is out of range"):
                listed[len(listed)]
        seq[1] = nn.Tanh()
        assert isinstance(seq[1], nn.Tanh)

    def test_mutation(self):
        seq = nn.Sequential(nn.ReLU())
        seq.append(nn.Tanh()).extend([nn.Sigmoid()])
        seq.insert(0, nn.Identity())
        assert [type(m).__name__ for m in seq] == ["Identity", "ReLU", "Tanh", "Sigmoid"]
        del seq[1]
        assert list(seq._modules) == ["0", "1", "2"]  # renumbered
        assert isinstance(seq.pop(0), nn.Identity)
        both = seq + nn.Sequential(nn.ReLU())
        assert len(both) == 3 and len(seq * 2) == 4

    def test_forward_chains(self):
        seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        x = ember.randn(3, 2)
        expected = ember.relu(seq[0](x))
        assert ember.allclose(seq(x), expected)


class TestModuleListDict:
    def test_module_list(self):
        ml = nn.ModuleList([nn.Linear(1, 1)])
        ml.append(nn.ReLU())
        ml += [nn.Tanh()]
        ml.insert(1, nn.Sigmoid())
        assert [type(m).__name__ for m in ml] == ["Linear", "Sigmoid", "ReLU", "Tanh"]
        assert isinstance(ml[-1], nn.Tanh) and isinstance(ml[1:3], nn.ModuleList)
        assert len(list(ml.parameters())) == 2
        del ml[0]
        assert list(ml._modules) == ["0", "1", "2"]
        with pytest.raises(TypeError, match="ModuleList.extend should be called with an "
                                            "iterable, but got int"):
            ml.extend(3)

    def test_module_dict(self):
        md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Linear(1, 1)})
        assert list(md.keys()) == ["b", "a"]  # insertion order is kept
        md["c"] = nn.Tanh()
        assert "c" in md and len(md) == 3
        assert isinstance(md.pop("b"), nn.ReLU)
        md.update([("d", nn.Sigmoid())])
        assert list(md) == ["a", "c", "d"]
        assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]

    def test_parameter_list_and_dict(self, torch):
        pl = nn.ParameterList([ember.zeros(2), nn.Parameter(ember.ones(3, 4))])
        assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
        assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
        tpl = torch.nn.ParameterList([torch.zeros(2), torch.nn.Parameter(torch.ones(3, 4))])
        assert repr(pl) == repr(tpl).replace("torch.", "ember.")
        pd = nn.ParameterDict({"w": ember.zeros(2), "b": ember.ones(1)})
        assert list(pd.keys()) == ["b", "w"]  # a plain dict is added in sorted order
        assert isinstance(pd["w"], nn.Parameter)
        assert [n for n, _ in pd.named_parameters()] == ["b", "w"]
        with pytest.raises(RuntimeError, match="ParameterList should not be called"):
            pl()


# -- Parameter ------------------------------------------------------------------------


class TestParameter:
    def test_shares_storage_and_is_a_leaf(self):
        t = ember.zeros(3)
        p = nn.Parameter(t)
        assert isinstance(p, ember.Tensor) and p.is_leaf and p.requires_grad
        t.fill_(2.0)
        assert p.tolist() == [2.0, 2.0, 2.0]
        assert not nn.Parameter(t, requires_grad=False).requires_grad
        assert nn.Parameter().shape == (0,)
        assert type(p * 2) is ember.Tensor  # ops return plain tensors, as in torch

    def test_deepcopy_and_pickle(self):
        shared = nn.Linear(2, 2)
        net = nn.Sequential(shared, nn.ReLU(), shared)
        net2 = copy.deepcopy(net)
        assert net2[0] is net2[2] and net2[0] is not shared  # ties survive the copy
        assert isinstance(net2[0].weight, nn.Parameter) and net2[0].weight.requires_grad
        assert ember.equal(net2[0].weight, shared.weight)
        net3 = pickle.loads(pickle.dumps(net))
        assert isinstance(net3[0].weight, nn.Parameter)
        x = ember.randn(2, 2)
        assert ember.allclose(net3(x), net(x))
        p = pickle.loads(pickle.dumps(nn.Parameter(ember.ones(2), requires_grad=False)))
        assert isinstance(p, nn.Parameter) and not p.requires_grad


@pytest.mark.parametrize("kind", ["buffer", "parameter"])
def test_registration_errors_match_torch(torch, kind):
    def attempts(lib, make):
        register = f"register_{kind}"
        value = make()
        plain = lib.nn.Module()
        plain.x = 1
        early = object.__new__(lib.nn.Module)
        return [lambda: getattr(plain, register)(3, value),
                lambda: getattr(plain, register)("a.b", value),
                lambda: getattr(plain, register)("", value),
                lambda: getattr(plain, register)("x", value),
                lambda: getattr(early, register)("w", value)]

    ours = attempts(ember, lambda: nn.Parameter(ember.ones(1)) if kind == "parameter"
                    else ember.ones(1))
    theirs = attempts(torch, lambda: torch.nn.Parameter(torch.ones(1)) if kind == "parameter"
                      else torch.ones(1))
    for mine, reference in zip(ours, theirs):
        with pytest.raises(Exception) as expected:
            reference()
        with pytest.raises(type(expected.value)) as got:
            mine()
        assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("kind", ["spectral_norm", "weight_norm"])
def test_removing_a_weight_reparametrisation_as_pytorch(kind):
    torch = pytest.importorskip("torch")
    ours, theirs = ember.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        getattr(ember.nn.utils, kind)(ours)
        getattr(torch.nn.utils, kind)(theirs)
    assert "weight" not in dict(ours.named_parameters())
    getattr(ember.nn.utils, f"remove_{kind}")(ours)
    getattr(torch.nn.utils, f"remove_{kind}")(theirs)
    assert sorted(dict(ours.named_parameters())) == sorted(dict(theirs.named_parameters()))
    assert not ours._forward_pre_hooks
    with pytest.raises(ValueError) as want:
        getattr(torch.nn.utils, f"remove_{kind}")(theirs)
    with pytest.raises(ValueError) as got:
        getattr(ember.nn.utils, f"remove_{kind}")(ours)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_weights_show_torchs_node_names(dim):
    """A printed weight-normalised weight says grad_fn=<WeightNormInterfaceBackward0> (its
    fused kernel), or MulBackward0 for the norm over all of it (dim=None), in both forms."""
    torch = pytest.importorskip("torch")
    names = []
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            hooked = lib.nn.utils.weight_norm(lib.nn.Conv1d(2, 3, 2), dim=dim)
        parametrized = lib.nn.utils.parametrizations.weight_norm(lib.nn.Conv1d(2, 3, 2),
                                                                 dim=dim)
        v, g = (lib.ones(3, 2, 2, requires_grad=True), lib.full((3, 1, 1), 2.0))
        names.append((hooked.weight.grad_fn.name(), parametrized.weight.grad_fn.name(),
                      lib._weight_norm(v, g, -1 if dim is None else dim).grad_fn.name()))
    assert names[1] == names[0]


# -- torch.func.functional_call / nn.utils.stateless ---------------------------------------


def _tied_net(L):
    L.manual_seed(0)
    net = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4), L.nn.Linear(4, 3))
    net[2].weight = L.nn.Parameter(net[0].weight.t().detach().clone())
    return net


def test_functional_call_matches_torch_and_restores_the_module():
    torch = pytest.importorskip("torch")
    from torch.func import functional_call as torch_call

    from ember.func import functional_call

    results = []
    for L, call in ((ember, functional_call), (torch, torch_call)):
        net = _tied_net(L)
        net.eval()
        x = L.tensor([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]])
        params = {k: v * 2 for k, v in net.named_parameters()}
        params["1.running_mean"] = L.ones(4)
        y = call(net, params, (x,))
        grads = L.autograd.grad(y.sum(), list(params.values())[:2], allow_unused=True)
        before = net[0].weight
        assert net(x).tolist() != y.tolist()  # the module's own parameters are back
        assert net[0].weight is before and net[1].running_mean.tolist() == [0.0] * 4
        split = call(net, ({"0.weight": params["0.weight"]}, {"0.bias": params["0.bias"]}), x)
        results.append((y, grads[0], split))
    for got, want in zip(results[0], results[1]):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)


def test_functional_call_errors_match_torch():
    torch = pytest.importorskip("torch")
    from torch.func import functional_call as torch_call

    from ember.func import functional_call

    for L, call in ((ember, functional_call), (torch, torch_call)):
        net = L.nn.Linear(2, 2)
        with pytest.raises(RuntimeError, match=r"Error\(s\) in reparametrizing for Linear:\n\t"
                           r"Unexpected key\(s\): 'w'.\n\tMissing key\(s\): 'bias', 'weight'."):
            call(net, {"w": L.ones(2, 2)}, L.ones(1, 2), strict=True)
        with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
            call(net, ({"bias": L.ones(2)}, {"bias": L.ones(2)}), L.ones(1, 2))
        weight = net.weight
        with pytest.raises(RuntimeError):
            call(net, {"weight": L.ones(3, 3)}, L.ones(1, 2))
        assert net.weight is weight  # put back after the failed call


# -- nn.utils.prune ---------------------------------------------------------------------------


def _pruned_lenet_parts(L):
    """Prune a conv and a linear layer the ways the pruning tutorial does; what it prints."""
    import importlib

    prune = importlib.import_module(f"{L.__name__}.nn.utils.prune")
    L.manual_seed(0)
    conv, fc = L.nn.Conv2d(1, 4, 3), L.nn.Linear(6, 5)
    fc.weight.data = L.arange(30.0).reshape(5, 6).sin()  # the same weights on both
    conv.weight.data = L.arange(36.0).reshape(4, 1, 3, 3).cos()
    out = []
    prune.l1_unstructured(fc, name="weight", amount=0.3)
    out += [[n for n, _ in fc.named_parameters()], [n for n, _ in fc.named_buffers()],
            fc.weight_mask.clone(), fc.weight.clone()]
    prune.l1_unstructured(fc, "bias", amount=2, importance_scores=L.arange(5.0))
    out.append(fc.bias_mask.clone())
    prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)
    prune.ln_structured(conv, "weight", amount=1, n=1, dim=1 + 0 * 3)  # a container
    out += [conv.weight_mask.clone(), type(conv._forward_pre_hooks[next(
        iter(conv._forward_pre_hooks))]).__name__]
    loss = (fc(L.ones(2, 6)).sum() + conv(L.ones(1, 1, 5, 5)).sum())
    loss.backward()
    out += [fc.weight_orig.grad.clone(), prune.is_pruned(fc)]
    prune.global_unstructured([(fc, "weight"), (conv, "weight")],
                              pruning_method=prune.L1Unstructured, amount=0.5)
    out += [fc.weight_mask.clone(), conv.weight_mask.clone()]
    prune.remove(fc, "weight")
    out += [[n for n, _ in fc.named_parameters()], sorted(fc.state_dict()), fc.weight.clone()]
    return out


def test_prune_matches_torch():
    torch = pytest.importorskip("torch")
    for got, want in zip(_pruned_lenet_parts(ember), _pruned_lenet_parts(torch), strict=True):
        if isinstance(want, torch.Tensor):
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        else:
            assert got == want


def test_prune_errors_match_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tprune

    import ember.nn.utils.prune as eprune

    for L, prune in ((ember, eprune), (torch, tprune)):
        lin = L.nn.Linear(3, 2)
        with pytest.raises(ValueError, match=r"amount=1.5 should either be a float in the range"):
            prune.l1_unstructured(lin, "weight", amount=1.5)
        with pytest.raises(ValueError, match=r"amount=7 should be smaller than the number of "
                                             r"parameters to prune=6"):
            prune.l1_unstructured(lin, "weight", amount=7)
        assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"]  # put back
        with pytest.raises(ValueError, match="Structured pruning can only be applied to "
                                             "multidimensional tensors"):
            prune.ln_structured(lin, "bias", amount=1, n=2, dim=0)
        with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned "
                                             "before pruning can be removed"):
            prune.remove(lin, "weight")
        with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
            prune.global_unstructured([(lin, "weight")], prune.LnStructured, amount=1, n=2)


# -- nn.utils.parametrize and nn.utils.parametrizations ---------------------------------------


def _parametrized_parts(L):
    """A custom parametrization, weight_norm and spectral_norm as the tutorial uses them."""
    import importlib

    parametrize = importlib.import_module(f"{L.__name__}.nn.utils.parametrize")
    parametrizations = importlib.import_module(f"{L.__name__}.nn.utils.parametrizations")

    class Symmetric(L.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    L.manual_seed(0)
    layer = L.nn.Linear(3, 3)
    layer.weight.data = L.arange(9.0).reshape(3, 3).cos()
    parametrize.register_parametrization(layer, "weight", Symmetric())
    out = [repr(layer), type(layer).__name__, layer.weight.clone(),
           parametrize.is_parametrized(layer), parametrize.is_parametrized(layer, "bias"),
           sorted(layer.state_dict()), [n for n, _ in layer.named_parameters()]]
    layer(L.ones(2, 3)).sum().backward()
    out.append(layer.parametrizations.weight.original.grad.clone())
    layer.weight = L.eye(3) * 2  # through right_inverse
    out.append(layer.parametrizations.weight.original.clone())
    with parametrize.cached():
        out.append(layer.weight is layer.weight)
    out.append(layer.weight is layer.weight)
    parametrize.remove_parametrizations(layer, "weight")
    out += [repr(layer), type(layer).__name__, [n for n, _ in layer.named_parameters()],
            layer.weight.clone()]
    wn = L.nn.Linear(4, 5)
    wn.weight.data = L.arange(20.0).reshape(5, 4).sin()
    parametrizations.weight_norm(wn)
    out += [sorted(wn.state_dict()), wn.parametrizations.weight.original0.clone(),
            wn.weight.clone()]
    sn = L.nn.Conv2d(2, 3, 2)
    sn.weight.data = L.arange(24.0).reshape(3, 2, 2, 2).sin()
    parametrizations.spectral_norm(sn)
    sn(L.ones(1, 2, 3, 3))
    out += [sorted(sn.state_dict()), sn.weight.clone(), sn.parametrizations.weight[0]._u.clone()]
    return out


def test_parametrize_matches_torch():
    torch = pytest.importorskip("torch")
    for got, want in zip(_parametrized_parts(ember), _parametrized_parts(torch), strict=True):
        if isinstance(want, torch.Tensor):
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)
        else:
            assert got == want


def test_parametrize_errors_match_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.parametrize as tparametrize

    import ember.nn.utils.parametrize as eparametrize

    for L, parametrize in ((ember, eparametrize), (torch, tparametrize)):
        class Shrink(L.nn.Module):
            def forward(self, x):
                return x[:1]

        lin = L.nn.Linear(2, 2)
        with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                             "parametrized element with name 'w'"):
            parametrize.register_parametrization(lin, "w", Shrink())
        with pytest.raises(ValueError, match="may not change the shape of the tensor"):
            parametrize.register_parametrization(lin, "weight", Shrink())
        with pytest.raises(ValueError, match="does not have a parametrization on weight"):
            parametrize.remove_parametrizations(lin, "weight")
        parametrize.register_parametrization(lin, "weight", Shrink(), unsafe=True)
        with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only "
                                               "supported through state_dict()"):
            pickle.dumps(lin)


def _orthogonal_parts(L):
    import importlib

    parametrizations = importlib.import_module(f"{L.__name__}.nn.utils.parametrizations")
    L.manual_seed(0)
    out = []
    for shape, kind, trivial in [((3, 3), None, True), ((5, 3), None, True),
                                 ((3, 5), None, True), ((4, 4), "cayley", True),
                                 ((4, 4), "householder", False)]:
        lin = L.nn.Linear(shape[1], shape[0])
        # full rank (a singular matrix's QR signs are rounding noise)
        lin.weight.data = L.tensor(np.random.default_rng(sum(shape)).standard_normal(shape),
                                   dtype=L.float32)
        parametrizations.orthogonal(lin, orthogonal_map=kind, use_trivialization=trivial)
        opt = L.optim.SGD(lin.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            (lin(L.ones(2, shape[1])) ** 2).sum().backward()
            opt.step()
        w = lin.weight.detach()
        q = w if w.shape[0] >= w.shape[1] else w.T
        out += [w, q.T @ q, sorted(lin.state_dict())]
    return out


def test_orthogonal_parametrization_matches_torch():
    torch = pytest.importorskip("torch")
    for got, want in zip(_orthogonal_parts(ember), _orthogonal_parts(torch), strict=True):
        if isinstance(want, torch.Tensor):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
        else:
            assert got == want
    import ember.nn.utils.parametrizations as P

    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley"'):
        P.orthogonal(nn.Linear(3, 3), orthogonal_map="x")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of "
                                         "1 dimensions."):
        P.orthogonal(nn.Linear(3, 3), "bias")
