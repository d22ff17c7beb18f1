"""`torch.version`'s fields, for programs that print or check them (`torch.version.cuda`
is None on a CPU-only PyTorch build, as here: ember reaches CUDA through CuPy)."""

from ember import __version__  # noqa: F401

cuda: str | None = None
hip: str | None = None
debug = False
git_version = "unknown"
