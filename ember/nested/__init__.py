"""`ember.nested`, as `torch.nested` for the strided layout: a `NestedTensor` holds a list
of tensors of one dtype, device and number of dimensions whose sizes may differ
(`nested_tensor`, `as_nested_tensor`); it gives them back (`unbind`, indexing), padded
into one tensor (`to_padded_tensor`), its regular sizes (`size(i)`) and PyTorch's
printed form.

ember's `NestedTensor` is a plain class holding the components, not a Tensor subclass
(PyTorch's is a tensor with a nested layout that most ops take); only the operations
below are defined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember
from ember.core.tensor import Tensor

__all__ = ["NestedTensor", "nested_tensor", "as_nested_tensor", "to_padded_tensor"]


class NestedTensor:
    """A batch of tensors of the same dtype, device and dimensionality, of possibly
    different sizes (PyTorch's nested tensor of the strided layout)."""

    is_nested = True
    layout = ember.strided

    def __init__(self, components: list[Tensor]) -> None:
        self._components = components

    @property
    def dtype(self) -> Any:
        return self._components[0].dtype if self._components else ember.get_default_dtype()

    @property
    def device(self) -> Any:
        return self._components[0].device if self._components else ember.device("cpu")

    @property
    def requires_grad(self) -> bool:
        return any(t.requires_grad for t in self._components)

    @property
    def shape(self) -> Any:
        return self.size()

    def dim(self) -> int:
        """The number of dimensions: the batch's, then the components'."""
        return 1 + (self._components[0].dim() if self._components else 0)

    ndim = property(dim)

    def size(self, dim: int | None = None) -> int:
        """The size of dimension `dim`: the number of components for 0, else the size the
        components share there (an irregular dimension has none)."""
        if dim is None:
            raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. "
                               "Please file an issue.")
        dim = dim % self.dim()
        if dim == 0:
            return len(self._components)
        sizes = {t.shape[dim - 1] for t in self._components}
        if len(sizes) != 1:
            raise RuntimeError(f"Given dimension {dim} is irregular and does not have a size.")
        return sizes.pop()

    def numel(self) -> int:
        return sum(t.numel() for t in self._components)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        """The components, as a tuple."""
        if dim != 0:
            raise RuntimeError(f"NestedTensor can only be unbound along dimension 0 got "
                               f"dimension {dim} instead.")
        return tuple(self._components)

    def __getitem__(self, index: int) -> Tensor:
        return self._components[index]

    def __len__(self) -> int:
        return len(self._components)

    def to_padded_tensor(self, padding: float, output_size: Sequence[int] | None = None
                         ) -> Tensor:
        """See :func:`to_padded_tensor`."""
        return to_padded_tensor(self, padding, output_size)

    def __repr__(self) -> str:
        body = ",\n".join("\n".join("  " + line for line in repr(t).split("\n"))
                          for t in self._components)
        end = "], requires_grad=True)" if self.requires_grad else "])"
        return f"nested_tensor([\n{body}\n{end}"


def _components(tensor_list: Sequence[Any], dtype: Any, device: Any) -> list[Tensor]:
    out = [t if isinstance(t, Tensor) else ember.tensor(t) for t in tensor_list]
    for i, t in enumerate(out):
        if t.dim() != out[0].dim():
            raise RuntimeError(f"All Tensors given to nested_tensor must have the same "
                               f"dimension. Found dimension {t.dim()} for Tensor at index {i} "
                               f"and dimension {out[0].dim()} for Tensor at index 0.")
    dtype = dtype if dtype is not None else (out[0].dtype if out else None)
    return [t.to(device=device, dtype=dtype) for t in out]


def nested_tensor(tensor_list: Sequence[Any], *, dtype: Any = None, layout: Any = None,
                  device: Any = None, requires_grad: bool = False,
                  pin_memory: bool = False) -> NestedTensor:
    """Constructs a nested tensor with no autograd history (also known as a "leaf
    tensor") from `tensor_list`, a list of tensors (or of nested lists of numbers),
    each copied.

    Args:
        tensor_list (List[array_like]): a list of tensors, or anything that can be
            passed to torch.tensor, where each element of the list has the same
            dimensionality.
        dtype (:class:`torch.dtype`, optional): the desired type of the components.
        layout (:class:`torch.layout`, optional): ``torch.strided`` (the only one here).
        device (:class:`torch.device`, optional): the desired device of the components.
        requires_grad (bool, optional): If autograd should record operations on the
            components. Default: ``False``.
    """
    parts = _components(tensor_list, dtype, device)
    return NestedTensor([t.detach().clone().requires_grad_(requires_grad) for t in parts])


def as_nested_tensor(ts: Sequence[Tensor], dtype: Any = None, device: Any = None,
                     layout: Any = None) -> NestedTensor:
    """Constructs a nested tensor preserving autograd history from `ts`, a list of
    tensors (the components are the tensors themselves where no conversion is needed)."""
    return NestedTensor(_components(ts, dtype, device))


def to_padded_tensor(input: NestedTensor, padding: float,
                     output_size: Sequence[int] | None = None) -> Tensor:
    """A dense tensor of `input`'s components, each padded with `padding` at the end of
    every dimension to the largest size there (or to `output_size`)."""
    parts = input.unbind()
    if output_size is None:
        inner = [max(t.shape[d] for t in parts) for d in range(input.dim() - 1)] \
            if parts else []
        output_size = [len(parts), *inner]
    out = ember.full(tuple(output_size), padding, dtype=input.dtype, device=input.device)
    for i, t in enumerate(parts):
        out[(i, *(slice(0, s) for s in t.shape))] = t
    return out
