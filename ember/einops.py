"""`rearrange` of `torch.func` (einops-style patterns): a reshape into the pattern's
elementary axes, a permutation, and a reshape into the right side's groups.

`"b (h1 h) w c -> (b h1) h w c"`: each side lists the tensor's dimensions; a
parenthesized group is one dimension made of several axes (split on the left, merged on
the right), `1` or `()` a dimension of size 1, `...` the dimensions the pattern does not
name. Axis sizes come from the tensor, or from keyword arguments where a group has more
than one unknown. The checks and their messages are those of PyTorch's parser (after
einops).
"""

from __future__ import annotations

import math
from typing import Any

from ember.core.tensor import Tensor

_ELLIPSIS = "\u2026"  # (one character, as PyTorch's parser writes `...`)


class DimensionBindError(Exception):
    """Sizes that do not fit the pattern (PyTorch's first-class dimensions' error, whose
    messages name the elementary axes `d0`, `d1` ... in the left side's order)."""


class _Side:
    """One side of a pattern: `composition` is a list of groups (lists of axis names; []
    for a dimension of size 1) and `_ELLIPSIS` entries."""

    def __init__(self, expression: str) -> None:
        self.has_ellipsis = False
        self.ellipsis_in_group = False
        self.identifiers: set[str] = set()
        self.composition: list[Any] = []
        if "." in expression:
            if "..." not in expression:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            if expression.count("...") != 1 or expression.count(".") != 3:
                raise ValueError("Expression may contain dots only inside ellipsis (...); "
                                 "only one ellipsis for tensor ")
            expression = expression.replace("...", _ELLIPSIS)
            self.has_ellipsis = True
        group: list[str] | None = None
        name = ""
        for char in expression + " ":
            if char in "() ":
                if name:
                    self._add(name, group)
                name = ""
                if char == "(":
                    if group is not None:
                        raise ValueError("Axis composition is one-level (brackets inside "
                                         "brackets not allowed)")
                    group = []
                elif char == ")":
                    if group is None:
                        raise ValueError("Brackets are not balanced")
                    self.composition.append(group)
                    group = None
            elif char.isalnum() or char in ("_", _ELLIPSIS):
                name += char
            else:
                raise ValueError(f"Unknown character '{char}'")
        if group is not None:
            raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")

    def _add(self, name: str, group: list[str] | None) -> None:
        if name in self.identifiers:
            raise ValueError(f"Indexing expression contains duplicate dimension '{name}'")
        if name == _ELLIPSIS:
            self.identifiers.add(name)
            (self.composition if group is None else group).append(name)
            self.ellipsis_in_group = group is not None
            return
        if name.isdecimal():
            if int(name) == 1:
                if group is None:
                    self.composition.append([])
                return
            raise ValueError("rearrange only supports unnamed axes of size 1")
        if not name.isidentifier():
            raise ValueError(f"Invalid axis identifier: {name}\nnot a valid python identifier")
        if name[0] == "_" or name[-1] == "_":
            raise ValueError(f"Invalid axis identifier: {name}\naxis name should should not "
                             "start or end with underscore")
        self.identifiers.add(name)
        if group is None:
            self.composition.append([name])
        else:
            group.append(name)


def _parse(pattern: str, axes_lengths: dict[str, int]) -> tuple[_Side, _Side]:
    try:
        left_text, right_text = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    left, right = _Side(left_text), _Side(right_text)
    if not left.has_ellipsis and right.has_ellipsis:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern "
                         f"{pattern}")
    if left.has_ellipsis and left.ellipsis_in_group:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    difference = left.identifiers ^ right.identifiers
    if difference:
        raise ValueError("Identifiers only on one side of rearrange expression (should be on "
                         f"both): {difference}")
    unmatched = axes_lengths.keys() - left.identifiers
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {set(unmatched)}")
    return left, right


def rearrange(tensor: Any, pattern: str, **axes_lengths: int) -> Tensor:
    """Reorder the elements of `tensor` (or of a sequence of tensors, stacked first) by an
    einops-style `pattern`: transpose, reshape, squeeze, unsqueeze, stack and concatenate
    in one reader-friendly expression; `axes_lengths` give axis sizes the pattern cannot
    infer.

    Example::

        >>> images = ember.randn(32, 30, 40, 3)
        >>> rearrange(images, "b (h h1) (w w1) c -> b h w (c h1 w1)", h1=2, w1=2).shape
        ember.Size([32, 15, 20, 12])
    """
    if not isinstance(tensor, Tensor):
        from ember.core.ops.shape import stack

        tensor = stack(list(tensor))
    left, right = _parse(pattern, axes_lengths)
    ndim = tensor.ndim
    anonymous = sum(1 for entry in left.composition if entry == [])
    if left.has_ellipsis:
        named = len(left.identifiers) - 1
        if anonymous + named > ndim:
            raise ValueError(f"Number of dimensions in pattern ({anonymous + named}) must be "
                             "less than or equal to the number of dimensions in the tensor "
                             f"({ndim})")
        extra = ndim - (len(left.composition) - 1)
    else:
        if len(left.composition) != ndim:
            raise ValueError(f"Number of dimensions in pattern ({len(left.composition)}) must "
                             f"be equal to the number of dimensions in the tensor ({ndim})")
        extra = 0
    hidden = [f"{_ELLIPSIS}{i}" for i in range(extra)]
    sizes: dict[str, int] = {}
    order: list[str] = []  # the elementary axes, in the left side's order
    dim = 0
    for entry in left.composition:
        if entry == _ELLIPSIS:
            for name in hidden:
                sizes[name] = tensor.shape[dim]
                order.append(name)
                dim += 1
            continue
        size = tensor.shape[dim]
        dim += 1
        first = len(order) + sum(1 for e in left.composition[:left.composition.index(entry)]
                                 if e == [])
        labels = [f"d{first + i}" for i in range(len(entry))]
        unknown = [label for n, label in zip(entry, labels) if n not in axes_lengths]
        known = math.prod(axes_lengths[n] for n in entry if n in axes_lengths)
        if len(unknown) > 1:
            raise DimensionBindError(f"cannot infer the sizes of two dimensions at once "
                                     f"{unknown[0]} and {unknown[1]}")
        if unknown:
            if known == 0 or size % known:
                shown = tuple("?" if n not in axes_lengths else axes_lengths[n] for n in entry)
                raise DimensionBindError("inferred dimension does not evenly fit into larger "
                                         f"dimension: {size} vs {shown}")
            inferred = size // known
        elif known != size:
            pack = str(tuple(labels)).replace("'", "")
            raise DimensionBindError(f"Dimension sizes to do not match ({size} != {known}) "
                                     f"when matching dimension pack {pack}")
        for name in entry:
            sizes[name] = axes_lengths.get(name, inferred if unknown else size)
            order.append(name)
    split = tensor.reshape(tuple(sizes[n] for n in order))
    targets = [name for entry in right.composition
               for name in (hidden if entry == _ELLIPSIS else
                            [m for n in entry for m in (hidden if n == _ELLIPSIS else [n])])]
    moved = split.permute(tuple(order.index(n) for n in targets))
    shape = []
    for entry in right.composition:
        if entry == _ELLIPSIS:
            shape.extend(sizes[n] for n in hidden)
        else:
            shape.append(math.prod(sizes[m] for n in entry
                                   for m in (hidden if n == _ELLIPSIS else [n])))
    return moved.reshape(tuple(shape))
