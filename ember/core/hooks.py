"""`RemovableHandle`, what every `register_*_hook` returns (PyTorch's
`torch.utils.hooks.RemovableHandle`, also `ember.utils.hooks.RemovableHandle`): modules',
optimizers' and tensors' hooks alike, so `isinstance(h, RemovableHandle)` holds for each."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

from ember.core.dtype import printed_in_api

__all__ = ["RemovableHandle"]


@printed_in_api(".utils.hooks")
class RemovableHandle:
    """A handle that removes the hook it was returned for; also a context manager.

    Args:
        hooks_dict (dict): the dict of hooks, keyed by handle id, the hook is in.
        extra_dict (dict or list of dicts, optional): more dicts keyed by the same id
            (a hook's flags), cleaned up with it.
    """

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if isinstance(extra_dict, dict):
            self.extra_dict_ref: tuple = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)
        else:
            self.extra_dict_ref = ()

    @classmethod
    def of_list_entry(cls, hooks: list, hook: Any) -> RemovableHandle:
        """A handle that removes `hook` from the list `hooks` (ember keeps a tensor's
        gradient hooks in lists, in the order they run)."""
        handle = cls(_NO_HOOKS)
        handle._entry = (hooks, hook)
        return handle

    def remove(self) -> None:
        """Remove the hook (a second call does nothing)."""
        entry = self.__dict__.get("_entry")
        if entry is not None:
            hooks, hook = entry
            if hook in hooks:
                hooks.remove(hook)
            return
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self) -> tuple:
        return (self.hooks_dict_ref(), self.id, tuple(r() for r in self.extra_dict_ref))

    def __setstate__(self, state: tuple) -> None:
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2] if d is not None) \
            if len(state) > 2 else ()

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


_NO_HOOKS: OrderedDict = OrderedDict()  # what a list entry's handle names as its dict
