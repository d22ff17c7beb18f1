"""`torch.utils.benchmark`: `Timer` to time a statement with replicates, the
`Measurement` it returns (median, mean, IQR, PyTorch's printed form), and `Compare` to
print many measurements as PyTorch's table. C++ statements and Callgrind are not part of
ember."""

from ember.utils.benchmark.utils.common import *  # noqa: F403
from ember.utils.benchmark.utils.compare import *  # noqa: F403
from ember.utils.benchmark.utils.timer import *  # noqa: F403
