"""PyTorch submodules that programs import around their models (torch.futures,
torch.__future__, torch._inductor.config, torch.cuda.nvtx, torch.nn.utils.weight_norm,
torch.distributed.elastic's `record`), against PyTorch itself."""

from __future__ import annotations

import importlib
import json

import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["futures", "__future__", "_inductor", "_inductor.config",
                                  "cuda.nvtx", "nn.utils.weight_norm",
                                  "distributed.elastic.multiprocessing.errors",
                                  "distributed.fsdp", "distributed.fsdp.wrap"])
def test_the_submodule_imports_with_pytorchs_public_names(name: str) -> None:
    ours = importlib.import_module(f"ember.{name}")
    theirs = importlib.import_module(f"torch.{name}")
    wanted = set(getattr(ours, "__all__", ()))
    assert wanted <= {n for n in dir(theirs) if not n.startswith("_")}, wanted


_INDUCTOR = ["coordinate_descent_tuning", "max_autotune", "max_autotune_gemm_backends",
             "epilogue_fusion", "freezing", "fx_graph_cache", "shape_padding",
             "unroll_reductions_threshold", "fallback_random", "cpp_wrapper",
             "triton.cudagraphs", "triton.unique_kernel_names", "triton.max_tiles",
             "cpp.threads", "cpp.simdlen", "trace.enabled", "trace.output_code"]


def _lookup(module, dotted: str):
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


@pytest.mark.parametrize("name", _INDUCTOR)
def test_inductor_config_defaults_are_pytorchs(name: str) -> None:
    import torch._inductor.config as theirs

    from ember._inductor import config as ours
    assert _lookup(ours, name) == _lookup(theirs, name)


def test_inductor_config_takes_its_names_and_refuses_others() -> None:
    from ember._inductor import config
    old = config.coordinate_descent_tuning, config.triton.unique_kernel_names
    try:
        config.coordinate_descent_tuning = True
        config.triton.unique_kernel_names = False
        assert ember._inductor.config.coordinate_descent_tuning is True
        assert config.triton.unique_kernel_names is False
    finally:
        config.coordinate_descent_tuning, config.triton.unique_kernel_names = old
    import torch._inductor.config as theirs
    for target, mine, name in ((config, theirs, "foo_bar"), (config.triton, theirs.triton, "foo")):
        with pytest.raises(AttributeError) as ours_error:
            setattr(target, name, 1)
        with pytest.raises(AttributeError) as theirs_error:
            setattr(mine, name, 1)
        assert str(ours_error.value).replace("ember", "torch") == str(theirs_error.value)
    with pytest.raises(AttributeError, match="config.cpp.nope does not exist"):
        config.cpp.nope  # noqa: B018


def _future_story(lib) -> list:
    """What a program observes of a Future's life: completion, chaining, errors."""
    seen = []
    f = lib.futures.Future()
    seen.append(f.done())
    f.set_result(3)
    seen += [f.done(), f.wait(), f.value()]
    try:
        f.set_result(4)
    except RuntimeError as e:
        seen.append(str(e))
    g = f.then(lambda fut: fut.value() * 2)
    seen.append(g.wait())
    seen.append(lib.futures.wait_all([f, g]))
    seen.append([x.value() for x in lib.futures.collect_all([f, g]).wait()])
    late = lib.futures.Future()
    chained = late.then(lambda fut: fut.value() + 1)  # runs when `late` completes
    seen.append(chained.done())
    late.set_result(10)
    seen.append(chained.wait())
    failed = lib.futures.Future()
    failed.set_exception(ValueError("boom"))
    try:
        failed.wait()
    except ValueError as e:
        seen.append(str(e))
    try:
        failed.then(lambda fut: fut.value()).wait()
    except RuntimeError as e:
        seen.append(str(e).splitlines()[0])
    seen.append(lib.jit.wait(lib.jit.fork(lambda a: a + 1, 2)))
    seen.append(str(lib.futures.Future))
    return seen


def test_futures_behave_as_pytorchs() -> None:
    ours = _future_story(ember)
    theirs = _future_story(torch)
    assert [str(x).replace("ember", "torch") for x in ours] == [str(x) for x in theirs]
    assert ember.jit.Future is ember.futures.Future


def test_overwrite_module_params_on_conversion() -> None:
    from ember import __future__ as future
    assert not future.get_overwrite_module_params_on_conversion()
    assert not future.get_swap_module_params_on_conversion()
    m = ember.nn.Linear(2, 2)
    kept = m.weight
    m.double()
    assert m.weight is kept and m.weight.dtype == ember.float64
    future.set_overwrite_module_params_on_conversion(True)
    try:
        m.weight.grad = ember.ones(2, 2, dtype=ember.float64)
        m.float()
    finally:
        future.set_overwrite_module_params_on_conversion(False)
    assert m.weight is not kept and isinstance(m.weight, ember.nn.Parameter)
    assert m.weight.dtype == m.weight.grad.dtype == ember.float32 and m.weight.requires_grad
    assert kept.dtype == ember.float64  # the old Parameter is left as it was


def test_nvtx_without_cuda_raises_pytorchs_error() -> None:
    if ember.cuda.is_available():
        assert ember.cuda.nvtx.range_push("a") == 0
        assert ember.cuda.nvtx.range_pop() == 0
        return
    for fn in (lambda: ember.cuda.nvtx.range_push("a"), ember.cuda.nvtx.range_pop,
               lambda: ember.cuda.nvtx.mark("m")):
        with pytest.raises(RuntimeError, match="NVTX functions not installed"):
            fn()
    with pytest.raises(RuntimeError, match="Are you sure you have a CUDA build"):
        with ember.cuda.nvtx.range("step {}", 1):
            pass


def test_weight_norm_module_holds_the_old_style_weight_norm() -> None:
    from ember.nn.utils.weight_norm import WeightNorm, remove_weight_norm, weight_norm
    with pytest.warns(FutureWarning):
        m = weight_norm(ember.nn.Linear(3, 2))
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight_g", "weight_v"]
    assert any(isinstance(h, WeightNorm) for h in m._forward_pre_hooks.values())
    remove_weight_norm(m)
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight"]
    assert ember.nn.utils.weight_norm is weight_norm


def test_record_writes_the_error_file_and_reraises(tmp_path, monkeypatch) -> None:
    from ember.distributed.elastic.multiprocessing.errors import record

    @record
    def main(x: int) -> int:
        """The entry point."""
        if x < 0:
            raise ValueError("negative")
        return 2 * x
    assert main(2) == 4 and main.__name__ == "main" and main.__doc__ == "The entry point."
    error_file = tmp_path / "error.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(error_file))
    with pytest.raises(ValueError, match="negative"):
        main(-1)
    written = json.loads(error_file.read_text())
    assert written["message"]["message"] == "ValueError: negative"
    assert set(written["message"]["extraInfo"]) == {"py_callstack", "timestamp"}
    assert "raise ValueError" in written["message"]["extraInfo"]["py_callstack"]


_CUDA_WITHOUT_GPU = ["get_rng_state_all()", "set_rng_state_all([])", "get_rng_state()",
                     "set_rng_state(lib.zeros(8, dtype=lib.uint8))", "memory_cached()",
                     "max_memory_cached()", "memory_stats_as_nested_dict()", "ipc_collect()",
                     "set_per_process_memory_fraction(0.5)", "get_per_process_memory_fraction()",
                     "get_sync_debug_mode()", "set_sync_debug_mode(0)", "is_tf32_supported()",
                     "has_half", "has_magma", "default_generators", "get_gencode_flags()",
                     "utilization()", "temperature()", "device_memory_used()"]


@pytest.mark.parametrize("call", _CUDA_WITHOUT_GPU)
def test_cuda_functions_without_a_gpu_answer_as_pytorchs_cpu_build(call: str) -> None:
    if ember.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("a CUDA device is present")

    def outcome(lib):
        try:
            return "value", repr(eval(f"lib.cuda.{call}"))  # noqa: S307 - the test's own text
        except Exception as e:  # noqa: BLE001 - compared with PyTorch's
            return type(e).__name__, str(e).split("\n")[0]
    ours, theirs = outcome(ember), outcome(torch)
    assert ours[0] == theirs[0] and ours[1].replace("ember", "torch") == theirs[1]


def test_memory_stats_as_nested_dict_splits_the_names(monkeypatch) -> None:
    stats = {"allocated_bytes.all.current": 5, "allocated_bytes.all.peak": 7, "num_ooms": 0}
    monkeypatch.setattr(ember.cuda, "memory_stats", lambda device=None: stats)
    assert ember.cuda.memory_stats_as_nested_dict() == {
        "allocated_bytes": {"all": {"current": 5, "peak": 7}}, "num_ooms": 0}


_DIST = ["is_gloo_available()", "is_ucc_available()", "is_xccl_available()",
         "is_backend_available('gloo')", "is_backend_available('nope')",
         "is_torchelastic_launched()", "get_debug_level()", "DebugLevel.DETAIL",
         "get_default_backend_for_device('cpu')", "get_default_backend_for_device('cuda')",
         "get_default_backend_for_device(lib.device('cuda', 1))",
         "get_default_backend_for_device('meta')", "default_pg_timeout",
         "supports_complex(lib.distributed.ReduceOp.SUM)",
         "supports_complex(lib.distributed.ReduceOp.MAX)", "get_pg_count()"]


@pytest.mark.parametrize("call", _DIST)
def test_distributed_queries_answer_as_pytorchs(call: str, monkeypatch) -> None:
    for name in ("TORCHELASTIC_RUN_ID", "TORCH_DISTRIBUTED_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    import torch.distributed  # noqa: F401 - loads the submodule

    import ember.distributed  # noqa: F401

    def outcome(lib):
        try:
            return "value", repr(eval(f"lib.distributed.{call}"))  # noqa: S307
        except Exception as e:  # noqa: BLE001 - compared with PyTorch's
            return type(e).__name__, str(e)
    assert outcome(ember) == outcome(torch)


def test_ember_run_sets_torchruns_run_variables() -> None:
    from ember.distributed._rank import set_torchrun_env
    env = {"PMI_RANK": "1", "PMI_SIZE": "2"}
    set_torchrun_env(env)
    assert env["RANK"] == "1" and env["WORLD_SIZE"] == "2"
    assert env["TORCHELASTIC_RUN_ID"] == "none" and env["TORCHELASTIC_RESTART_COUNT"] == "0"


def test_debug_level_from_the_environment(monkeypatch) -> None:
    from ember.distributed import debug
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "detail")
    try:
        debug.set_debug_level_from_env()
        assert debug.get_debug_level() is debug.DebugLevel.DETAIL
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "LOUD")
        with pytest.raises(ValueError, match="OFF, INFO, or DETAIL"):
            debug.set_debug_level_from_env()
    finally:
        debug.set_debug_level(debug.DebugLevel.OFF)


def _fsdp_story(lib) -> list:
    """What a program sees of torch.distributed.fsdp on a machine without a GPU."""
    import importlib
    fsdp = importlib.import_module(f"{lib.__name__}.distributed.fsdp")
    wrap = importlib.import_module(f"{lib.__name__}.distributed.fsdp.wrap")
    seen = [list(fsdp.ShardingStrategy), fsdp.BackwardPrefetch.BACKWARD_PRE,
            list(fsdp.StateDictType), list(fsdp.OptimStateKeyType), fsdp.CPUOffload(),
            fsdp.MixedPrecision(param_dtype=lib.bfloat16, reduce_dtype=lib.float32),
            fsdp.FullStateDictConfig(offload_to_cpu=True, rank0_only=True),
            fsdp.FullOptimStateDictConfig(), fsdp.ShardedStateDictConfig(),
            fsdp.MixedPrecisionPolicy(), fsdp.CPUOffloadPolicy()]
    nn = lib.nn
    for m in (nn.Linear(10, 10), nn.MultiheadAttention(8, 2), nn.ModuleList([nn.Linear(2, 2)])):
        seen.append([wrap.size_based_auto_wrap_policy(m, recurse, numel, min_num_params=100)
                     for recurse in (True, False) for numel in (50, 200)])
        seen.append([wrap.transformer_auto_wrap_policy(m, False, 0, {nn.Linear}),
                     wrap.ModuleWrapPolicy({nn.Linear})(m, False),
                     wrap.lambda_auto_wrap_policy(m, False, 0, lambda_fn=lambda x: False)])
    try:
        fsdp.FullyShardedDataParallel(nn.Linear(2, 2))
    except RuntimeError as e:
        seen.append(str(e))
    return seen


def test_fsdp_settings_policies_and_refusal_without_a_gpu_as_pytorchs() -> None:
    if ember.accelerator.is_available() or torch.accelerator.is_available():
        pytest.skip("an accelerator is present")
    ours, theirs = _fsdp_story(ember), _fsdp_story(torch)
    assert [str(x).replace("ember", "torch") for x in ours] == [str(x) for x in theirs]
    from ember.distributed.fsdp import wrap

    class Box:
        def __init__(self, module, **kwargs):
            self.module, self.kwargs = module, kwargs
    layer = ember.nn.Linear(2, 2)
    assert wrap.wrap(layer) is layer
    with wrap.enable_wrap(wrapper_cls=Box, flag=1):
        boxed = wrap.wrap(layer, other=2)
    assert boxed.module is layer and boxed.kwargs == {"flag": 1, "other": 2}
