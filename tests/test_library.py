"""ember.library (torch.library): Python custom operators against PyTorch's: schemas,
torch.ops access, kernels per device type, fake kernels on the meta device, autograd,
mutation, the older Library API, opcheck, errors, and recording by jit.trace / compile.

Operator names are global in each library: every test uses its own namespace."""

from collections.abc import Sequence

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

LIBS = [torch, ember]


def _numpy_sin(lib, ns):
    @lib.library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: lib.Tensor) -> lib.Tensor:
        return lib.from_numpy(np.sin(x.numpy()))

    return numpy_sin


def _error(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    return info.type.__name__, str(info.value)


def test_custom_op_runs_and_is_reachable_through_ops():
    def run(lib):  # (one library per call: closures bind its values)
        op = _numpy_sin(lib, f"cop_{lib.__name__}")
        x = lib.tensor([0.0, 0.5, 1.0])
        ns = getattr(lib.ops, f"cop_{lib.__name__}")
        assert repr(op) == f"<CustomOpDef(cop_{lib.__name__}::numpy_sin)>"
        assert str(ns.numpy_sin.default._schema) == \
            f"cop_{lib.__name__}::numpy_sin(Tensor x) -> Tensor"
        assert str(ns.numpy_sin) == f"cop_{lib.__name__}.numpy_sin"
        assert repr(ns.numpy_sin.default) == \
            f"<OpOverload(op='cop_{lib.__name__}.numpy_sin', overload='default')>"
        assert ns.numpy_sin.default.name() == f"cop_{lib.__name__}::numpy_sin"
        assert ns.numpy_sin.overloads() == ["default"]
        for fn in (op, ns.numpy_sin, ns.numpy_sin.default):
            np.testing.assert_allclose(fn(x).numpy(), np.sin([0.0, 0.5, 1.0]), rtol=1e-6)
        assert _error(lambda: ns.nothere)[1] == \
            f"'_OpNamespace' 'cop_{lib.__name__}' object has no attribute 'nothere'"

    for lib in LIBS:
        run(lib)


def _schema_of(lib, ns):
    Tensor = lib.Tensor

    @lib.library.custom_op(f"{ns}::many", mutates_args={"out"})
    def many(x: Tensor, out: Tensor, n: int, sizes: Sequence[int], ts: list[Tensor],
             s: float = 2.0, flag: bool = False, opt: Tensor | None = None,
             name: str = "a") -> tuple[Tensor, Tensor]:
        out.copy_(x)
        return x * s, x + n

    @lib.library.custom_op(f"{ns}::nothing", mutates_args="unknown")
    def nothing(x: Tensor, y: Tensor) -> None:
        pass

    return [str(getattr(lib.ops, ns).many.default._schema),
            str(getattr(lib.ops, ns).nothing.default._schema),
            lib.library.infer_schema(many._init_fn, mutates_args={"out"})]


def test_inferred_schemas_are_torchs():
    assert _schema_of(ember, "sch_e") == [s.replace("sch_t", "sch_e")
                                          for s in _schema_of(torch, "sch_t")]


@pytest.mark.parametrize("case", ["no_namespace", "no_annotation", "mutates_missing",
                                  "aliasing", "view", "too_many", "wrong_type", "no_fake"])
def test_errors_are_torchs(case):
    results = []
    def run(lib):  # (one library per call: closures bind its values)
        ns = f"err_{case}_{lib.__name__}"
        Tensor = lib.Tensor

        def annotated(x: Tensor) -> Tensor:
            return x.clone()

        def plain(x):
            return x

        def ident(x: Tensor) -> Tensor:
            return x

        def view(x: Tensor) -> Tensor:
            return x.view(-1)

        make = {
            "no_namespace": lambda: lib.library.custom_op("nonamespace",
                                                          mutates_args=())(annotated),
            "no_annotation": lambda: lib.library.custom_op(f"{ns}::a", mutates_args=())(plain),
            "mutates_missing": lambda: lib.library.custom_op(
                f"{ns}::a", mutates_args={"nope"})(annotated),
            "aliasing": lambda: lib.library.custom_op(f"{ns}::ident", mutates_args=())(ident)(
                lib.ones(2)),
            "view": lambda: lib.library.custom_op(f"{ns}::view", mutates_args=())(view)(
                lib.ones(2)),
            "too_many": lambda: _numpy_sin(lib, ns)(lib.ones(2), lib.ones(2)),
            "wrong_type": lambda: _numpy_sin(lib, ns)(3),
            "no_fake": lambda: _numpy_sin(lib, ns)(lib.empty(2, device="meta")),
        }[case]
        kind, text = _error(make)
        # (PyTorch names its own module as the implementation's)
        results.append((kind, text.replace(ns, "NS").replace(f"{lib.__name__}.Tensor", "T")
                        .split("(with implementation")[-1].split(": The output")[-1]))

    for lib in LIBS:
        run(lib)
    assert results[1] == results[0]


def _crop(lib, ns):
    @lib.library.custom_op(f"{ns}::crop", mutates_args=())
    def crop(pic: lib.Tensor, box: Sequence[int]) -> lib.Tensor:
        x0, y0, x1, y1 = box
        return lib.from_numpy(pic.numpy()[:, y0:y1, x0:x1].copy())

    @crop.register_fake
    def _(pic, box):
        x0, y0, x1, y1 = box
        return pic.new_empty(pic.shape[0], y1 - y0, x1 - x0)

    def backward(ctx, grad_output):
        grad_input = grad_output.new_zeros(ctx.pic_shape)
        grad_input[..., ctx.y0:ctx.y1, ctx.x0:ctx.x1] = grad_output
        return grad_input, None

    def setup_context(ctx, inputs, output):
        pic, box = inputs
        ctx.pic_shape = pic.shape
        ctx.x0, ctx.y0, ctx.x1, ctx.y1 = box

    crop.register_autograd(backward, setup_context=setup_context)
    return crop


def test_autograd_fake_kernel_and_opcheck_as_torch():
    outs = []
    def run(lib):  # (one library per call: closures bind its values)
        crop = _crop(lib, f"crop_{lib.__name__}")
        img = lib.arange(48.0).reshape(3, 4, 4).requires_grad_()
        out = crop(img, (1, 0, 3, 2))
        (out * out).sum().backward()
        meta = crop(lib.empty(3, 8, 8, device="meta"), (1, 2, 5, 4))
        checks = lib.library.opcheck(crop, (lib.randn(3, 6, 6, requires_grad=True), [0, 1, 2, 3]))
        outs.append((out.tolist(), out.grad_fn.name().replace(lib.__name__, "L"), img.grad.tolist(),
                     tuple(meta.shape), meta.device.type, checks))

    for lib in LIBS:
        run(lib)
    assert outs[1] == outs[0]


def test_backward_without_a_formula_raises_torchs_error():
    errors = []
    def run(lib):  # (one library per call: closures bind its values)
        op = _numpy_sin(lib, f"nograd_{lib.__name__}")
        y = op(lib.ones(2, requires_grad=True))
        assert y.requires_grad
        errors.append(_error(lambda: y.sum().backward())[1].replace(lib.__name__, "L"))

    for lib in LIBS:
        run(lib)
    assert errors[1] == errors[0]


def test_mutating_op_and_kernels_per_device_type():
    def run(lib):  # (one library per call: closures bind its values)
        ns = f"mut_{lib.__name__}"

        @lib.library.custom_op(f"{ns}::sin_out", mutates_args={"out"}, device_types="cpu")
        def sin_out(x: lib.Tensor, out: lib.Tensor) -> None:
            np.sin(x.numpy(), out=out.numpy())

        x, out = lib.tensor([0.25, 1.5]), lib.empty(2)
        assert sin_out(x, out) is None
        np.testing.assert_allclose(out.numpy(), np.sin([0.25, 1.5]), rtol=1e-6)
        assert str(getattr(lib.ops, ns).sin_out.default._schema).endswith(
            "sin_out(Tensor x, Tensor(a1!) out) -> ()")
        assert lib.library.opcheck(sin_out, (x, out))["test_schema"] == "SUCCESS"

        @lib.library.custom_op(f"{ns}::twice", mutates_args=(), device_types="cpu")
        def twice(x: lib.Tensor) -> lib.Tensor:
            return x * 2

        @twice.register_kernel("meta")
        def _(x):
            return lib.empty_like(x)

        assert twice(lib.ones(2)).tolist() == [2.0, 2.0]
        assert twice(lib.ones(3, device="meta")).shape == (3,)

    for lib in LIBS:
        run(lib)


def test_opcheck_failures_are_torchs():
    results = []
    def run(lib):  # (one library per call: closures bind its values)
        ns = f"opc_{lib.__name__}"

        @lib.library.custom_op(f"{ns}::sneaky", mutates_args=())
        def sneaky(x: lib.Tensor) -> lib.Tensor:
            x.add_(1)
            return x.clone()

        sneaky.register_fake(lambda x: lib.empty_like(x))

        @lib.library.custom_op(f"{ns}::badfake", mutates_args=())
        def badfake(x: lib.Tensor) -> lib.Tensor:
            return x.clone()

        badfake.register_fake(lambda x: x.new_empty(2, 2))
        for op in (sneaky, badfake):
            kind, text = _error(lambda op=op: lib.library.opcheck(op, (lib.randn(3),)))
            results.append((kind, text.replace(ns, "NS").replace(f"{lib.__name__}.", "L.")))

    for lib in LIBS:
        run(lib)
    assert results[2:] == results[:2]


def test_library_define_and_impl_as_torch():
    results = []
    def run(lib):  # (one library per call: closures bind its values)
        ns = f"libdef_{lib.__name__}"
        library = lib.library.Library(ns, "DEF")
        library.define("foo(Tensor x, int n=1, *, float alpha=1.0) -> Tensor")
        foo = getattr(lib.ops, ns).foo
        row = [str(foo.default._schema).replace(ns, "NS"),
               _error(lambda: foo(lib.ones(2)))[1].split(" This could")[0].replace(ns, "NS")]
        library.impl("foo", lambda x, n=1, alpha=1.0: x * n * alpha, "CPU")
        row.append(foo(lib.ones(2), 3, alpha=2.0).tolist())
        row.append(_error(lambda: foo(lib.ones(2), 3, 2.0))[1].replace(ns, "NS"))
        row.append(_error(lambda: library.define("foo(Tensor x) -> Tensor"))[1]
                   .split(" Duplicate")[0].replace(ns, "NS"))
        row.append(_error(lambda: lib.library.Library(ns + "x", "XYZ")))
        library.define("bar(Tensor x) -> Tensor")
        library.impl("bar", lambda x: x.sin() * 2)  # CompositeImplicitAutograd
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        getattr(lib.ops, ns).bar(x).sum().backward()
        row.append([round(v, 6) for v in x.grad.tolist()])
        results.append(row)

    for lib in LIBS:
        run(lib)
    assert results[1] == results[0]


def _traced_program(lib, ns):
    op = _numpy_sin(lib, ns)
    op.register_fake(lambda x: lib.empty_like(x))
    return lambda x: op(x * 2) + 1


def test_custom_op_under_jit_trace_and_compile_reruns_the_kernel():
    """jit.trace records the op as one call (the kernel reruns on new inputs); a compiled
    step records it as one kernel call and replays it (fullgraph: nothing refused)."""
    fn = _traced_program(ember, "rec_e")
    traced = ember.jit.trace(fn, (ember.zeros(3),))
    compiled = ember.compile(fn, fullgraph=True)
    for seed in range(5):
        x = ember.tensor(np.random.default_rng(seed).standard_normal(3).astype(np.float32))
        want = np.sin(x.numpy() * 2) + 1
        np.testing.assert_allclose(traced(x).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(compiled(x).numpy(), want, rtol=1e-6)
    assert "replayed" in compiled.explain()


def test_compiled_training_step_through_a_custom_op_replays_as_eager():
    """A whole step (forward through a NumPy custom op with a registered backward, the
    backward, SGD) under compile(fullgraph=True) replays, bit-identical to eager."""
    @ember.library.custom_op("ctrain::numpy_tanh", mutates_args=())
    def numpy_tanh(x: ember.Tensor) -> ember.Tensor:
        return ember.from_numpy(np.tanh(x.numpy()))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - y * y)

    numpy_tanh.register_autograd(backward, setup_context=setup_context)

    def step(model, opt, x):
        opt.zero_grad()
        loss = numpy_tanh(model(x)).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    ember.manual_seed(0)
    models = [ember.nn.Linear(4, 4)]
    models.append(ember.nn.Linear(4, 4))
    models[1].load_state_dict(models[0].state_dict())
    opts = [ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in models]
    compiled = ember.compile(step, fullgraph=True)
    for _ in range(5):
        x = ember.randn(8, 4)
        assert compiled(models[0], opts[0], x).item() == step(models[1], opts[1], x).item()
    assert all(ember.equal(p, q) for p, q in zip(models[0].parameters(),
                                                 models[1].parameters()))
    assert "replayed" in compiled.explain()


def _fx_code(lib) -> tuple[str, bool]:
    ns = f"fxlib_{lib.__name__}"
    op = _numpy_sin(lib, ns)
    op.register_fake(lambda x: lib.empty_like(x))
    packet = getattr(lib.ops, ns).numpy_sin

    class M(lib.nn.Module):
        def forward(self, x):
            return op(x * 2) + packet.default(x)

    gm = lib.fx.symbolic_trace(M())
    x = lib.tensor([0.1, 0.2])
    return gm.code.replace(ns, "NS"), bool(lib.allclose(gm(x), M()(x)))


def test_symbolic_trace_records_the_overload_as_torch():
    assert _fx_code(ember) == _fx_code(torch)


def _autograd_key_result(lib) -> tuple:
    ns = f"akey_{lib.__name__}"
    library = lib.library.Library(ns, "DEF")
    library.define("mysin(Tensor x) -> Tensor")
    library.impl("mysin", lambda x: lib.sin(x), "CPU")
    below = getattr(getattr(lib, "_C", None), "_AutoDispatchBelowAutograd", lib.no_grad)

    class MySin(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            with below():  # (the op again: below autograd, its CPU kernel)
                return getattr(lib.ops, ns).mysin(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos() * 10

    library.impl("mysin", MySin.apply, "Autograd")
    x = lib.tensor([0.5, 1.0], requires_grad=True)
    y = getattr(lib.ops, ns).mysin(x)
    y.sum().backward()
    return [round(v, 5) for v in y.tolist()], [round(v, 5) for v in x.grad.tolist()]


def test_an_autograd_key_kernel_calling_its_op_goes_below_autograd():
    assert _autograd_key_result(ember) == _autograd_key_result(torch)


def _impl_abstract_warning(lib) -> tuple:
    ns = f"iabs_{lib.__name__}"
    library = lib.library.Library(ns, "DEF")
    library.define("f(Tensor x) -> Tensor")
    library.impl("f", lambda x: x * 2, "CPU")
    library.impl("f", lib.library.fallthrough_kernel, "Autograd")  # (no autograd kernel)
    with pytest.warns(FutureWarning) as caught:
        lib.library.impl_abstract(f"{ns}::f")(lambda x: lib.empty_like(x))
    meta = getattr(lib.ops, ns).f(lib.empty(4, device="meta"))
    return str(caught[0].message), tuple(meta.shape), getattr(lib.ops, ns).f(lib.ones(2)).tolist()


def test_impl_abstract_is_the_deprecated_register_fake_and_fallthrough_skips():
    assert _impl_abstract_warning(ember) == _impl_abstract_warning(torch)


# -- get_ctx, register_vmap, infer_schema, register_torch_dispatch -------------------------

def _nonzero(lib, ns, dynamic):
    """A data-dependent op (PyTorch's custom_nonzero example): its fake kernel asks
    get_ctx() for the row count (`dynamic`), or guesses one."""
    @lib.library.custom_op(f"{ns}::nonzero", mutates_args=())
    def nonzero(x: lib.Tensor) -> lib.Tensor:
        return lib.from_numpy(np.stack(np.nonzero(x.numpy()), axis=1))

    @nonzero.register_fake
    def _(x):
        rows = lib.library.get_ctx().new_dynamic_size() if dynamic else 2
        return x.new_empty(rows, x.dim(), dtype=lib.int64)

    return nonzero


@pytest.mark.parametrize("dynamic", [True, False])
def test_get_ctx_in_fake_kernels_as_torch(dynamic):
    seen = []
    for lib in LIBS:
        ns = f"ctx{int(dynamic)}_{lib.__name__}"
        op = _nonzero(lib, ns, dynamic)
        x = lib.tensor([[1.0, 0.0], [0.0, 3.0]])
        outcome = [lib.library.get_ctx(), op(x).tolist(),
                   lib.library.opcheck(op, (x,), test_utils="test_faketensor")]
        try:
            outcome.append(tuple(op(x.to("meta")).shape))
        except RuntimeError as error:
            outcome.append(str(error).replace(ns, "NS"))
        seen.append(outcome)
    assert seen[1] == seen[0]
    assert seen[1][2] == {"test_faketensor": "SUCCESS"}
    if dynamic:  # named by where the op was made: this file, _nonzero's decorator line
        assert seen[1][3].startswith(f"NS::nonzero ({__file__}:")
        assert "You're trying to run this operator with meta Tensors" in seen[1][3]


def _scaled(lib, ns, calls):
    @lib.library.custom_op(f"{ns}::scaled", mutates_args=())
    def scaled(x: lib.Tensor, y: lib.Tensor, k: float) -> lib.Tensor:
        return lib.from_numpy(x.numpy() * y.numpy() * k)

    def rule(info, in_dims, x, y, k):
        calls.append((info.batch_size, info.randomness, in_dims))
        x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x.unsqueeze(0)
        y = y.movedim(in_dims[1], 0) if in_dims[1] is not None else y.unsqueeze(0)
        return scaled(x, y, k), 0

    return scaled, rule


def _vmap_outcomes(lib):
    calls = []
    op, rule = _scaled(lib, f"vmap_{lib.__name__}", calls)
    x, y = lib.arange(6.0).reshape(2, 3), lib.arange(2.0)
    plain = lib.func.vmap(op, in_dims=(1, None, None))(x, y, 2.0)  # no rule: per sample
    lib.library.register_vmap(f"vmap_{lib.__name__}::scaled", rule)
    ruled = lib.func.vmap(op, in_dims=(1, None, None))(x, y, 2.0)
    overload = getattr(lib.ops, f"vmap_{lib.__name__}").scaled.default
    moved = lib.func.vmap(overload, in_dims=(0, 0, None), out_dims=1)(x, x, 3.0)
    op.register_vmap(lambda info, in_dims, x, y, k: (lib.ones(2), None))  # unbatched
    broadcast = lib.func.vmap(op, in_dims=(0, 0, None))(x, x, 1.0)
    op.register_vmap(lambda info, in_dims, x, y, k: op(x, y, k))
    error = _error(lambda: lib.func.vmap(op, in_dims=(0, 0, None))(x, x, 1.0))
    return (plain.tolist(), ruled.tolist(), moved.tolist(), broadcast.tolist(), calls,
            error[0], error[1].split(" Got")[0])  # (then the Tensor class, each library's)


def test_register_vmap_rule_runs_once_per_batch_as_torch():
    ours, theirs = _vmap_outcomes(ember), _vmap_outcomes(torch)
    assert ours == theirs
    assert ours[4] == [(3, "error", (1, None, None)), (2, "error", (0, 0, None))]


def test_infer_schema_as_torch():
    def fn(lib):
        def f(x: lib.Tensor, n: int = 2, *, scale: float = 1.0) -> lib.Tensor:
            ...
        return [lib.library.infer_schema(f, mutates_args=()),
                lib.library.infer_schema(f, mutates_args=(), op_name="foo")]
    assert fn(ember) == fn(torch) == ["(Tensor x, SymInt n=2, *, float scale=1.0) -> Tensor",
                                      "foo(Tensor x, SymInt n=2, *, float scale=1.0) -> Tensor"]


def test_register_torch_dispatch_is_refused_clearly():
    op = _numpy_sin(ember, "tdispatch")
    with pytest.raises(NotImplementedError, match=r"register_torch_dispatch\(.*ember has no "
                                                  r"__torch_dispatch__"):
        ember.library.register_torch_dispatch(op, ember.Tensor, lambda *a: None)
