"""`torch._dynamo.eval_frame.OptimizedModule`, where programs name it (isinstance checks,
unwrapping `_orig_mod` before saving)."""

from ember.jit.compiled import OptimizedModule

__all__ = ["OptimizedModule"]
