"""`torch._inductor.config`: the settings programs assign before `torch.compile`
(`coordinate_descent_tuning`, `triton.unique_kernel_names`, `fx_graph_cache` ...), with
PyTorch's defaults. ember compiles by replaying recorded kernels (ember.jit.compiled), not
by generating code, so it reads none of them; they are kept so that programs that set them
run, and a name PyTorch does not have raises its AttributeError, as PyTorch's does."""

from __future__ import annotations

import os
import sys
import types
from typing import Any

from ember.core.backend import api_name


class _Settings:
    """A section of settings (``config.triton`` ...): its names are fixed."""

    def __init__(self, prefix: str, **defaults: Any) -> None:
        object.__setattr__(self, "_prefix", prefix)
        object.__setattr__(self, "_names", set(defaults))
        for name, value in defaults.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._names:
            raise AttributeError(f"{api_name()}._inductor.config.{self._prefix}{name} "
                                 f"does not exist")
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:  # only for names that are not set
        raise AttributeError(f"{api_name()}._inductor.config.{self._prefix}{name} does not "
                             f"exist")


coordinate_descent_tuning = False
coordinate_descent_check_all_directions = False
coordinate_descent_search_radius = 1
max_autotune = False
max_autotune_pointwise = False
max_autotune_gemm = False
max_autotune_gemm_backends = "ATEN,TRITON,CPP"
epilogue_fusion = True
freezing = False
freezing_discard_parameters = False
fx_graph_cache = True
fx_graph_remote_cache = None
autotune_local_cache = True
autotune_remote_cache = None
search_autotune_cache = False
debug = False
benchmark_kernel = False
benchmark_fusion = False
layout_optimization = True
keep_output_stride = True
aggressive_fusion = False
shape_padding = True
comprehensive_padding = True
split_reductions = True
unroll_reductions_threshold = 8
fallback_random = False
implicit_fallbacks = True
size_asserts = True
cpp_wrapper = False
compile_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
    (os.cpu_count() or 1)
emulate_precision_casts = False
pattern_matcher = True
reorder_for_compute_comm_overlap = False
allow_buffer_reuse = True
memory_planning = False
use_mixed_mm = True
force_fuse_int_mm_with_mul = False
conv_1x1_as_mm = False
triton_kernel_default_layout_constraint = "needs_fixed_stride_order"
verbose_progress = False
disable_progress = True
profiler_mark_wrapper_call = False
generate_intermediate_hooks = False
max_fusion_size = 64
realize_reads_threshold = 4

triton = _Settings(
    "triton.", cudagraphs=False, cudagraph_trees=True, unique_kernel_names=True,
    descriptive_names="original_aten", autotune_pointwise=True, max_tiles=None,
    use_block_ptr=False, cudagraph_skip_dynamic_graphs=False, autotune_cublasLt=True,
    store_cubin=False, spill_threshold=16, multi_kernel=0, persistent_reductions=True,
    divisible_by_16=True, enable_persistent_tma_matmul=False)
cpp = _Settings(
    "cpp.", threads=-1, simdlen=None, min_chunk_size=512, cxx=(None, "g++"),
    enable_kernel_profile=False, weight_prepack=True, dynamic_threads=False,
    fallback_scatter_reduce_sum=True, vec_isa_ok=None, enable_tiling_heuristics=True,
    max_horizontal_fusion_size=16)
trace = _Settings(
    "trace.", enabled=False, debug_dir=None, fx_graph=True, fx_graph_transformed=True,
    ir_pre_fusion=True, ir_post_fusion=True, output_code=True, graph_diagram=False,
    compile_profile=False, upload_tar=None)


class _ConfigModule(types.ModuleType):
    """This module, refusing names PyTorch's config does not have."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.__dict__:
            raise AttributeError(f"{api_name()}._inductor.config.{name} does not exist")
        super().__setattr__(name, value)

    def __getattr__(self, name: str) -> Any:  # only for names that are not set
        raise AttributeError(f"{api_name()}._inductor.config.{name} does not exist")


sys.modules[__name__].__class__ = _ConfigModule
