"""Session 39 (an): autograd's graph API and the legacy API, checked against PyTorch.

Each test runs the same code on ember and on torch and compares values, types and
messages: node and tensor hook result checks, AccumulateGrad post-hooks, retain_grad and
backward(inputs=) refusals, mark_dirty's returned input, gradient edges; legacy
constructors' keywords and messages, storages made directly, storages in checkpoints,
set_default_tensor_type's string forms, Tensor.type's non_blocking, the deprecated
scale-first overloads of add/sub/addcmul/addcdiv, Variable's checks and engine.
"""

import io
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")


def outcome(fn):
    """(value or None, error type name, first line of its message)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001
        # (ember's messages name the API as `ember.`: PyTorch's name under ember.run)
        msg = str(e).splitlines()[0].replace("ember.", "torch.") if str(e) else ""
        return None, type(e).__name__, msg
    if hasattr(out, "tolist"):
        out = out.tolist()
    return out, None, None


def both(make):
    """`make(lib)` run on ember and torch: their outcomes, which should be equal."""
    return outcome(lambda: make(ember)), outcome(lambda: make(torch))


def errors_match(make):
    ours, theirs = both(make)
    assert ours[1:] == theirs[1:], (ours, theirs)
    assert theirs[1] is not None


# -- hooks --------------------------------------------------------------------------------


@pytest.mark.parametrize("hook", [
    lambda gi, go: (gi[0] + 100,),            # too few values
    lambda gi, go: [gi[0], None],             # a list, not a tuple
    lambda gi, go: (5, None),                 # not a tensor
    lambda gi, go: (None, None),              # fine: no gradient sent on
    lambda gi, go: (gi[0], None),             # fine
])
def test_node_post_hook_results_checked(hook):
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 3
        y.grad_fn.register_hook(hook)
        y.sum().backward()
        return x.grad

    ours, theirs = both(run)
    assert ours == theirs


def test_post_hook_cannot_replace_none_and_prehook_count():
    def replace_none(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 3
        y.grad_fn.register_hook(lambda gi, go: (gi[0], lib.ones(2)))
        y.sum().backward()

    errors_match(replace_none)

    class Hook:  # no __name__: PyTorch names it '<unknown>'
        def __call__(self, go):
            return go + go

    def prehook(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 3
        y.grad_fn.register_prehook(Hook())
        y.sum().backward()

    errors_match(prehook)

    def prehook_int(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 3
        y.grad_fn.register_prehook(lambda go: 5)
        y.sum().backward()

    errors_match(prehook_int)


@pytest.mark.parametrize("change", ["shape", "dtype", "int"])
@pytest.mark.parametrize("leaf", [True, False])
def test_tensor_hook_results_checked(change, leaf):
    def named_hook(g):
        if change == "shape":
            return g.reshape(1, 2)
        if change == "dtype":
            return g.double()
        return 5

    def run(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 3
        (x if leaf else y).register_hook(named_hook)
        y.sum().backward()

    errors_match(run)


def test_accumulate_grad_node_hooks():
    def run(lib):
        seen = []
        x = lib.tensor([4.0, 5.0], requires_grad=True)
        y = (x * x).sum()
        acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
        acc.register_prehook(lambda go: seen.append(("pre", [g.tolist() for g in go])))
        acc.register_hook(lambda gi, go: seen.append(("post", gi, [g.tolist() for g in go])))
        y.backward()
        return seen + [x.grad.tolist()]

    ours, theirs = both(run)
    assert ours == theirs
    assert ("post", (), [[8.0, 10.0]]) in theirs[0]

    def bad(lib):
        x = lib.ones(2, requires_grad=True)
        y = (x * x).sum()
        acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
        acc.register_hook(lambda gi, go: (lib.ones(2),))
        y.backward()

    errors_match(bad)


def test_retain_grad_and_backward_inputs_refusals():
    errors_match(lambda lib: lib.ones(2).retain_grad())
    errors_match(lambda lib: (lib.ones(2, requires_grad=True) * 2).sum().backward(inputs=[]))
    errors_match(lambda lib: lib.autograd.backward(
        (lib.ones(2, requires_grad=True) * 2).sum(), inputs=()))
    errors_match(lambda lib: (lib.ones(2, requires_grad=True) * 2).sum().backward(
        inputs=[lib.ones(2)]))


def test_gradient_edge_node_is_shown_as_pytorchs():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        edge = lib.autograd.graph.get_gradient_edge(x * 2)
        return type(edge.node).__name__, edge.output_nr

    ours, theirs = both(run)
    assert ours == theirs == (("MulBackward0", 0), None, None)


def test_mark_dirty_returns_the_input_itself():
    def run(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = lib.tensor([1.0, 3.0], requires_grad=True)
        t = x.clone()
        r = Double.apply(t)
        same = r is t
        name = type(t.grad_fn).__name__
        r.sum().backward()
        return same, name, t.tolist(), x.grad.tolist()

    ours, theirs = both(run)
    assert ours == theirs
    assert theirs[0][0] is True


# -- legacy constructors ------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda lib: lib.LongTensor(lib.ones(1)),
    lambda lib: lib.FloatTensor(lib.ones(1, dtype=lib.float64)),
    lambda lib: lib.ByteTensor(lib.ones(1, dtype=lib.int8)),
    lambda lib: lib.DoubleTensor(lib.ones(1, dtype=lib.complex64)),
    lambda lib: lib.ones(1).new(lib.ones(1, dtype=lib.long)),
    lambda lib: lib.FloatTensor("a"),
    lambda lib: lib.FloatTensor(None),
    lambda lib: lib.FloatTensor({}),
    lambda lib: lib.FloatTensor(object()),
    lambda lib: lib.Tensor([1], dtype=lib.int64),
    lambda lib: lib.Tensor(2, requires_grad=True),
    lambda lib: lib.FloatTensor([1], requires_grad=True),
    lambda lib: lib.ones(1).new(2, dtype=lib.int64),
])
def test_legacy_constructor_refusals(make):
    errors_match(make)


def test_legacy_constructor_keyword_refusal_lists_overloads():
    msgs = []
    for lib in (ember, torch):
        with pytest.raises(TypeError) as info:
            lib.Tensor([1], dtype=lib.int64)
        msgs.append(str(info.value).replace("ember.", "torch."))
    assert msgs[0] == msgs[1]


def test_legacy_type_class_attributes():
    for name in ("FloatTensor", "LongTensor", "DoubleTensor"):
        ours, theirs = getattr(ember, name), getattr(torch, name)
        assert ours.is_sparse is theirs.is_sparse is False
        assert ours.is_cuda is theirs.is_cuda is False
        assert str(ours.layout).split(".")[-1] == str(theirs.layout).split(".")[-1]
    assert ember.cuda.FloatTensor.is_cuda is True


def test_tensor_type_non_blocking_and_module_type():
    x = ember.tensor([1.5])
    assert x.type(ember.DoubleTensor, non_blocking=True).dtype is ember.float64
    m = ember.nn.Linear(2, 2).type(ember.DoubleTensor)
    assert m.weight.dtype is ember.float64


def test_data_setter_and_variable_checks():
    errors_match(lambda lib: setattr(lib.ones(2, requires_grad=True), "data", [1.0]))
    errors_match(lambda lib: lib.autograd.Variable(lib.tensor([1, 2]), requires_grad=True))
    assert hasattr(ember.autograd.Variable, "_execution_engine")


def test_execution_engine_queue_callback_and_run_backward():
    order = []
    x = ember.ones(2, requires_grad=True)
    x.register_hook(lambda g: ember.autograd.Variable._execution_engine.queue_callback(
        lambda: order.append("done")))
    ember.autograd.Variable._execution_engine.run_backward(
        ((x * 3).sum(),), (None,), False, False, (), True, True)
    assert order == ["done"] and x.grad.tolist() == [3.0, 3.0]


def test_set_default_tensor_type_strings_and_warning_once():
    for make in (lambda lib: lib.set_default_tensor_type("foo"),
                 lambda lib: lib.set_default_tensor_type(float),
                 lambda lib: lib.set_default_tensor_type(lib.LongTensor)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            errors_match(make)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = outcome(lambda: ember.set_default_tensor_type("torch.Foo"))
    assert ours[1:] == ("AttributeError", "module 'torch' has no attribute 'Foo'")
    try:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            ember.set_default_tensor_type("torch.DoubleTensor")
            ember.set_default_tensor_type(ember.FloatTensor)
        assert len(rec) <= 1  # PyTorch's TORCH_WARN_ONCE
        assert ember.get_default_dtype() is ember.float32
    finally:
        ember.set_default_dtype(ember.float32)


def test_resize_negative_message():
    errors_match(lambda lib: lib.ones(2).resize_(-1))
    errors_match(lambda lib: lib.ones(2).resize_(2, -1))


# -- storages -----------------------------------------------------------------------------


def test_legacy_storage_classes():
    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fs = lib.FloatStorage([1, 2, 3])
            ls = lib.LongStorage([5, 6])
            e = lib.FloatStorage(4)
            t = lib.FloatTensor(fs)
            t[0] = 10
            shared = fs.tolist()
            clone = fs.clone()
            clone[1] = -1
            rs = lib.FloatStorage([1, 2])
            returned = rs.resize_(4)
            ts = lib.TypedStorage([1.0, 2.0], dtype=lib.float64)
            return (type(fs).__name__, fs.dtype.__repr__().split(".")[-1], shared,
                    clone.tolist(), fs.tolist(), ls.element_size(), ls.type(),
                    e.size(), t.data_ptr() == fs.data_ptr(), returned, rs.size(),
                    ts.tolist(), ts.size(), lib.is_storage(fs), lib.is_storage(t),
                    ls.float().tolist(), lib.DoubleStorage(2).fill_(1.5).tolist(),
                    lib.UntypedStorage(8).nbytes(), fs.is_cuda,
                    lib.FloatStorage.from_buffer(b"\x00\x00\x80\x3f", "little").tolist())

    ours, theirs = both(run)
    assert ours[0][:6] == theirs[0][:6]
    assert ours[0][6].split(".")[-1] == theirs[0][6].split(".")[-1]
    assert ours[0][7:] == theirs[0][7:]


def test_storage_errors_match():
    def index(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.FloatStorage([1, 2])[5]

    errors_match(index)

    def wrong_type(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.FloatTensor(lib.DoubleStorage([1.0]))

    errors_match(wrong_type)

    def set_wrong(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.empty(0).set_(lib.DoubleStorage([1.0]))

    errors_match(set_wrong)


def test_set_storage_shares_memory():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st = ember.DoubleStorage([1.0, 2.0])
        t = ember.empty(0, dtype=ember.float64).set_(st)
        t[1] = 7
        assert st.tolist() == [1.0, 7.0] and t.dtype is ember.float64


def test_storage_in_checkpoint_shares_with_its_tensor():
    """A storage saved as itself loads as a TypedStorage sharing memory with the tensors
    saved over it, in ember's files and torch's."""
    for save, load in ((ember.save, ember.load), (torch.save, ember.load),
                       (ember.save, torch.load)):
        lib = torch if save is torch.save else ember
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            st = lib.FloatStorage([1, 2, 3])
            buf = io.BytesIO()
            save({"storage": st, "t": lib.FloatTensor(st)}, buf)
            buf.seek(0)
            got = load(buf)
            got["t"][0] = 50
            assert got["storage"].tolist() == [50.0, 2.0, 3.0]
            assert type(got["storage"]).__name__ == "TypedStorage"


# -- deprecated overloads -----------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda lib, b, o: b.add(2, o),
    lambda lib, b, o: lib.add(b, 2, o),
    lambda lib, b, o: b.clone().add_(2, o),
    lambda lib, b, o: b.clone().sub_(2, o),
    lambda lib, b, o: b.sub(2, o),
    lambda lib, b, o: lib.addcmul(b, 2, o, o),
    lambda lib, b, o: b.clone().addcmul_(0.5, o, o),
    lambda lib, b, o: b.clone().addcdiv_(0.5, o, o),
    lambda lib, b, o: lib.addcdiv(b, 0.5, o, o),
    lambda lib, b, o: b.add(2, other=o),
    lambda lib, b, o: b.add(o, 2),
])
def test_scale_first_overloads(call):
    def run(lib):
        b, o = lib.tensor([1.0, 2.0]), lib.tensor([10.0, 20.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call(lib, b, o)

    ours, theirs = both(run)
    assert ours == theirs


def test_scale_first_overload_warning_text():
    from ember.core import declare

    declare._deprecated_overload_warned = False
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ember.addcmul(ember.ones(1), 2, ember.ones(1), ember.ones(1))
        ember.ones(1).add(2, ember.ones(1))  # once a process, for all of them
    assert [str(w.message) for w in rec] == [
        "This overload of addcmul is deprecated:\n\taddcmul(Tensor input, Number value, "
        "Tensor tensor1, Tensor tensor2, *, Tensor out = None)\nConsider using one of the "
        "following signatures instead:\n\taddcmul(Tensor input, Tensor tensor1, Tensor "
        "tensor2, *, Number value = 1, Tensor out = None)"]
    declare._deprecated_overload_warned = False
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ember.ones(1).clone().add_(2, ember.ones(1))
    assert str(rec[0].message) == (
        "This overload of add_ is deprecated:\n\tadd_(Number alpha, Tensor other)\nConsider "
        "using one of the following signatures instead:\n\tadd_(Tensor other, *, Number "
        "alpha = 1)")


# -- anomaly mode -------------------------------------------------------------------------


def test_anomaly_mode_warns_with_the_forward_stack():
    def run(lib):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                x = lib.tensor([0.0, 1.0], requires_grad=True)
                y = (x * 0).div(x).sum()
                keys = list(y.grad_fn.metadata)
                try:
                    lib.autograd.grad(y, x)
                except RuntimeError as e:
                    error = str(e)
        texts = [str(w.message).split(" (Triggered internally")[0] for w in rec]
        # (the first line and the forward call's own frame: the stack above it is pytest's)
        return keys, error, [(t.splitlines()[0], t.splitlines()[-1]) for t in texts[1:]]

    ours, theirs = both(run)
    assert ours == theirs
    assert theirs[0][2][0][1].strip() == "y = (x * 0).div(x).sum()"


def test_version_error_hint_under_anomaly_mode():
    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                x = lib.tensor([1.0, 2.0], requires_grad=True)
                y = x.exp()
                y.add_(1)
                y.sum().backward()

    errors_match(run)


@pytest.mark.parametrize("call", [
    lambda lib, m, v, b: lib.addmm(0.5, m, 2, m, m),
    lambda lib, m, v, b: lib.addmm(0.5, m, m, m),
    lambda lib, m, v, b: m.addmm(2, 3, m, m),
    lambda lib, m, v, b: m.clone().addmm_(0, m, m),
    lambda lib, m, v, b: lib.addmv(1, v, 2, m, v),
    lambda lib, m, v, b: v.clone().addmv_(2, m, v),
    lambda lib, m, v, b: m.addr(1, 2, v, v),
    lambda lib, m, v, b: lib.baddbmm(1, b, 2, b, b),
    lambda lib, m, v, b: lib.addbmm(0.5, m, b, b),
    lambda lib, m, v, b: lib.addmm(True, m, m, m),
    lambda lib, m, v, b: lib.addmm(1, m, 2, m, m, out=lib.empty(2, 2)),
    lambda lib, m, v, b: v.add(True, v),
])
def test_blas_scale_first_overloads(call):
    def run(lib):
        m = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
        v, b = lib.tensor([1.0, -1.0]), m.unsqueeze(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call(lib, m, v, b)

    ours, theirs = both(run)
    assert ours == theirs


def test_blas_scale_first_warning_text():
    from ember.core import declare

    m = ember.ones(2, 2)
    for call, text in [
        (lambda: ember.addmm(1, m, 2, m, m),
         "This overload of addmm is deprecated:\n\taddmm(Number beta, Tensor input, Number "
         "alpha, Tensor mat1, Tensor mat2, *, Tensor out = None)\nConsider using one of the "
         "following signatures instead:\n\taddmm(Tensor input, Tensor mat1, Tensor mat2, *, "
         "Number beta = 1, Number alpha = 1, Tensor out = None)\n\taddmm(Tensor input, Tensor "
         "mat1, Tensor mat2, torch.dtype out_dtype, *, Number beta = 1, Number alpha = 1, "
         "Tensor out = None)"),
        (lambda: ember.ones(2).addmv(1, m, ember.ones(2)),
         "This overload of addmv is deprecated:\n\taddmv(Number beta, Tensor mat, Tensor vec)"
         "\nConsider using one of the following signatures instead:\n\taddmv(Tensor mat, "
         "Tensor vec, *, Number beta = 1, Number alpha = 1)")]:
        declare._deprecated_overload_warned = False
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            call()
        assert [str(w.message) for w in rec] == [text]


def test_variable_arguments_checked_as_pytorchs():
    errors_match(lambda lib: lib.autograd.Variable(lib.ones(1), foo=1))
    errors_match(lambda lib: lib.autograd.Variable(lib.ones(1), True, False, 1))
    x = ember.autograd.Variable(data=ember.ones(1), requires_grad=True)
    assert x.requires_grad and x.is_leaf
    assert type(ember.autograd.Variable).__name__ == type(torch.autograd.Variable).__name__


# -- calling a node -----------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda lib, x: ((x * x).grad_fn, (lib.ones(2),)),
    lambda lib, x: ((x + 1).grad_fn, (lib.ones(2),)),
    lambda lib, x: (x.sum().grad_fn, (lib.tensor(1.0),)),
    lambda lib, x: (x.exp().grad_fn, (lib.ones(2),)),
    lambda lib, x: (x.sigmoid().grad_fn, (lib.ones(2),)),
    lambda lib, x: (lib.cat([x, x * 2]).grad_fn, (lib.arange(4.0),)),
])
def test_calling_a_node_runs_its_backward(make):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        node, grads = make(lib, x)
        out = node(*grads)
        outs = out if isinstance(out, tuple) else (out,)
        return [None if g is None else (g.tolist(), type(g.grad_fn).__name__) for g in outs]

    ours, theirs = both(run)
    assert ours == theirs


def test_custom_function_node_is_not_callable():
    def run(lib):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * a

            @staticmethod
            def backward(ctx, g):
                return g

        return Sq.apply(lib.ones(1, requires_grad=True)).grad_fn(lib.ones(1))

    errors_match(run)


def test_unpack_hook_must_return_a_tensor():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 5):
            y = (x * x).sum()
        y.backward()

    errors_match(run)


def test_nllloss2d_warning_and_missing_cuda_default_type():
    for lib in (ember, torch):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            lib.nn.NLLLoss2d()
        assert rec[0].category is FutureWarning
        assert str(rec[0].message).startswith("`NLLLoss2d` has been deprecated.")
    if ember.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("CUDA present: the type is available")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        errors_match(lambda lib: lib.set_default_tensor_type("torch.cuda.FloatTensor"))
        assert ember.ones(1).device.type == "cpu"


def test_custom_function_node_reads_its_ctx():
    def run(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.k = k
                ctx.save_for_backward(x)
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None

        y = Scale.apply(lib.ones(2, requires_grad=True), 3.0)
        node = y.grad_fn
        seen = (node.k, node.needs_input_grad, type(node).__mro__[1].__name__,
                len(node.saved_tensors))
        y.sum().backward()
        return seen, outcome(lambda: node.saved_tensors)[1], outcome(lambda: node.nope)[1:]

    ours, theirs = both(run)
    assert ours == theirs
