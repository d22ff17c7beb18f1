"""`ember.nn`: modules, parameters, containers, layers and losses, with PyTorch's API.

    import ember
    from ember import nn

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    loss = nn.CrossEntropyLoss()(model(x), y)
"""

from ember.core.backend import api_name
from ember.nn import attention, functional, grad, init, parallel, utils  # noqa: F401
from ember.nn.containers import (  # noqa: F401
    Container,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from ember.nn.module import Module, RemovableHandle  # noqa: F401
from ember.nn.modules.activation import *  # noqa: F401, F403

# nnmisc family (issue 16)
from ember.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from ember.nn.modules.channelshuffle import ChannelShuffle  # noqa: F401
from ember.nn.modules.conv import *  # noqa: F401, F403
from ember.nn.modules.distance import *  # noqa: F401, F403
from ember.nn.modules.dropout import *  # noqa: F401, F403
from ember.nn.modules.flatten import *  # noqa: F401, F403
from ember.nn.modules.fold import *  # noqa: F401, F403
from ember.nn.modules.lazy import *  # noqa: F401, F403
from ember.nn.modules.linear import *  # noqa: F401, F403
from ember.nn.modules.linear_cross_entropy_options import (  # noqa: F401
    LinearCrossEntropyOptions,
)
from ember.nn.modules.loss import *  # noqa: F401, F403
from ember.nn.modules.normalization import *  # noqa: F401, F403
from ember.nn.modules.padding import *  # noqa: F401, F403
from ember.nn.modules.pooling import *  # noqa: F401, F403
from ember.nn.modules.rnn import (  # noqa: F401
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)
from ember.nn.modules.sparse import *  # noqa: F401, F403
from ember.nn.modules.transformer import (  # noqa: F401
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from ember.nn.parallel import DataParallel  # noqa: F401
from ember.nn.parameter import (  # noqa: F401
    Buffer,
    Parameter,
    UninitializedBuffer,
    UninitializedParameter,
)


def __getattr__(name: str):
    """`torch.nn.quantized`, `.intrinsic`, `.qat` (the modules of ember.ao.nn) load on first
    use: they sit above ember.nn."""
    if name in ("quantized", "intrinsic", "qat"):
        import importlib

        return importlib.import_module(f"ember.nn.{name}")
    raise AttributeError(f"module '{api_name()}.nn' has no attribute {name!r}")
