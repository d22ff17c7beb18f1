"""`torch._dynamo.config`: the settings programs assign. ember reads none of them: its
compiled calls fall back to eager instead of failing (`suppress_errors` is always in
effect), and keep up to `ember.jit.compiled.MAX_KEYS` (8, PyTorch's `cache_size_limit`)
recordings per function."""

suppress_errors = False
cache_size_limit = 8
recompile_limit = 8
accumulated_cache_size_limit = 256
verbose = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
automatic_dynamic_shapes = True
assume_static_by_default = True
optimize_ddp = True
