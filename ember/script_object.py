"""`torch.ScriptObject` in a checkpoint: an object of a TorchScript custom class, which
PyTorch pickles as `torch.ScriptObject.__new__()` followed by `__setstate__((values,
qualified_name))`, `values` being what the class's C++ `__getstate__` returns. A dynamic
quantized LSTM's state dict holds such objects (`__torch__.torch.classes.rnn.
CellParamsBase`, each holding `__torch__.torch.classes.quantized.LinearPackedParamsBase`
objects). ember runs no TorchScript: it keeps the state as it is, writes it back as
PyTorch does (`ember.torch_pickler`), and lets the module that owns it read it.
"""

from __future__ import annotations

from typing import Any


class ScriptObject:
    """The pickled state of a TorchScript custom class's object: `values` (a tuple) and
    `qualified_name` (`"__torch__.torch.classes.<namespace>.<Class>"`)."""

    __slots__ = ("values", "qualified_name")

    def __init__(self, values: tuple = (), qualified_name: str = "") -> None:
        self.values, self.qualified_name = values, qualified_name

    def __getstate__(self) -> tuple[tuple, str]:
        return (self.values, self.qualified_name)

    def __setstate__(self, state: Any) -> None:
        if not (isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], str)):
            raise TypeError(f"a torch.ScriptObject's state is (values, qualified class name), "
                            f"not {str(state)[:80]}")
        self.values, self.qualified_name = state

    def __repr__(self) -> str:
        return f"ScriptObject <{self.qualified_name}>"

    def values_of(self, qualified_name: str, what: str) -> tuple:
        """The values of an object that must be of class `qualified_name` (`what` names
        where it was found, for the error)."""
        if self.qualified_name != qualified_name or not isinstance(self.values, tuple):
            raise RuntimeError(f"{what}: expected a {qualified_name} object, got a "
                               f"{self.qualified_name or 'nameless'} one")
        return self.values
