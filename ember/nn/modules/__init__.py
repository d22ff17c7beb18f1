"""The layers of `ember.nn` (re-exported there)."""

from ember.nn.containers import (  # noqa: F401
    Container,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from ember.nn.module import Module  # noqa: F401
from ember.nn.modules import (  # noqa: F401 - PyTorch's submodule paths, as attributes
    batchnorm,  # nn.modules.batchnorm._BatchNorm in isinstance checks
    container,
    instancenorm,
    module,  # the global hooks
    pixelshuffle,
    upsampling,
    utils,  # nn.modules.utils._pair
)
from ember.nn.modules.activation import *  # noqa: F401, F403
from ember.nn.modules.adaptive import *  # noqa: F401, F403
from ember.nn.modules.channelshuffle import *  # noqa: F401, F403
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
from ember.nn.modules.rnn import *  # noqa: F401, F403
from ember.nn.modules.sparse import *  # noqa: F401, F403
from ember.nn.modules.transformer import *  # noqa: F401, F403
