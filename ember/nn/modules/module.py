"""`Module` and the global module hooks at PyTorch's path
(`torch.nn.modules.module.register_module_forward_pre_hook`); they live in
`ember.nn.module`."""

import sys
from collections.abc import Callable  # noqa: F401 - Module's annotations resolve here
from typing import Any  # noqa: F401 - (typing.get_type_hints(Module), as transformers calls)

from ember.core.dtype import place_in
from ember.nn.module import (  # noqa: F401
    _EXTRA_STATE_KEY_SUFFIX,
    Module,
    RemovableHandle,
    _IncompatibleKeys,
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)

__all__ = ["Module", "RemovableHandle", "register_module_buffer_registration_hook",
           "register_module_forward_hook", "register_module_forward_pre_hook",
           "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

place_in(sys.modules[__name__], Module)
