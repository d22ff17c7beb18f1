"""`torch.quasirandom`: Sobol sequences (`SobolEngine`).

The engine is PyTorch's `torch/quasirandom.py` line for line; its four kernels
(`torch._sobol_engine_initialize_state_`, `_draw`, `_ff_`, `_scramble_`, ATen's
SobolEngineOps.cpp) run here on the host in NumPy. The direction numbers are Joe and Kuo's
(new-joe-kuo-6.21201), the table PyTorch compiles in; SciPy ships the same table with
`scipy.stats.qmc.Sobol`, and it is read from there (without importing SciPy) on the first
engine made. Points equal PyTorch's bit for bit, scrambled ones too, since the scrambling
draws with `randint` from ember's generator, which is PyTorch's stream.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Any

import numpy as np

import ember
from ember.core.dispatch import kernel_refuses

__all__ = ["SobolEngine"]

_MAXBIT = 30


@functools.cache
def _direction_numbers() -> tuple[np.ndarray, np.ndarray]:
    """(poly, vinit): each dimension's primitive polynomial and initial direction
    numbers, Joe and Kuo's table as SciPy stores it."""
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("SobolEngine needs SciPy's table of direction numbers "
                           "(pip install scipy)")
    folder = list(spec.submodule_search_locations)[0]
    with np.load(os.path.join(folder, "stats", "_sobol_direction_numbers.npz")) as table:
        return table["poly"], table["vinit"]


def _initial_state(dimension: int) -> np.ndarray:
    """The (dimension, MAXBIT) direction numbers: the first dimension all ones, the others
    their initial numbers continued by the polynomial's recurrence (Bratley and Fox,
    pg. 90), then column j scaled by 2**(MAXBIT - 1 - j)."""
    poly, vinit = _direction_numbers()
    state = np.zeros((dimension, _MAXBIT), np.int64)
    state[0] = 1
    rest, p = state[1:], poly[1:dimension]  # (the recurrence for all dimensions at once)
    degree = np.array([int(x).bit_length() - 1 for x in p], np.int64)
    rows = np.arange(len(p))
    for j in range(_MAXBIT):
        given = j < degree
        if j < vinit.shape[1]:
            rest[given, j] = vinit[1:dimension][given, j]
        todo = rows[~given]
        m, q = degree[todo], p[todo]
        value = rest[todo, j - m]
        for k in range(int(m.max()) if len(m) else 0):
            use = (k < m) & (((q >> np.maximum(m - 1 - k, 0)) & 1) == 1)
            value = np.where(use, value ^ (rest[todo, max(j - k - 1, 0)] << (k + 1)), value)
        rest[todo, j] = value
    return state << (_MAXBIT - 1 - np.arange(_MAXBIT))


def _rightmost_zeros(start: int, n: int) -> np.ndarray:
    """The index of the lowest zero bit of each of start, start + 1, ... start + n - 1."""
    k = np.arange(start, start + n, dtype=np.int64)
    lowest = ~k & (k + 1)
    return np.log2(lowest.astype(np.float64)).astype(np.int64)


def _sobol_engine_initialize_state_(sobolstate: ember.Tensor, dimension: int) -> ember.Tensor:
    sobolstate.copy_(ember.from_numpy(_initial_state(dimension)))
    return sobolstate


def _sobol_engine_draw(quasi: ember.Tensor, n: int, sobolstate: ember.Tensor,
                       dimension: int, num_generated: int,
                       dtype: Any) -> tuple[ember.Tensor, ember.Tensor]:
    """`n` points after `num_generated`: each XORs the column of the lowest zero bit of
    its index into the running point; (points as `dtype` in [0, 1), the last point)."""
    if dtype not in (ember.float32, ember.float64):
        raise kernel_refuses("_sobol_engine_draw", dtype)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                           f"[{n}, {dimension}]")
    state = sobolstate.numpy()[:dimension]
    columns = state[:, _rightmost_zeros(num_generated, n)].T
    points = np.bitwise_xor.accumulate(columns, axis=0) ^ quasi.numpy()[:dimension]
    last = points[-1].copy() if n else quasi.numpy().copy()
    # (an int64 below 2**30 is exact in either dtype, and 2**-30 scales exactly)
    scaled = points.astype(dtype.name) * (1.0 / (1 << _MAXBIT))
    return ember.from_numpy(scaled.astype(dtype.name)), ember.from_numpy(last)


def _sobol_engine_ff_(quasi: ember.Tensor, n: int, sobolstate: ember.Tensor,
                      dimension: int, num_generated: int) -> ember.Tensor:
    """Skips `n` points in place: `quasi` XORed with every column they would take."""
    state = sobolstate.numpy()[:dimension]
    skipped = state[:, _rightmost_zeros(num_generated, max(n, 0))]
    quasi.numpy()[:dimension] ^= np.bitwise_xor.reduce(skipped, axis=1)
    return quasi


def _sobol_engine_scramble_(sobolstate: ember.Tensor, ltm: ember.Tensor,
                            dimension: int) -> ember.Tensor:
    """Owen's linear matrix scrambling in place: bit (MAXBIT - 1 - p) of each direction
    number becomes the parity of its bits against row p of the dimension's lower
    triangular matrix (ones on the diagonal)."""
    matrices = ltm.numpy()[:dimension].copy()
    idx = np.arange(_MAXBIT)
    matrices[:, idx, idx] = 1
    weights = np.int64(1) << (_MAXBIT - 1 - idx)
    rows = (matrices * weights).sum(-1)  # (dimension, MAXBIT): row p as an integer
    state = sobolstate.numpy()
    bits = (state[:dimension, :, None] >> idx) & 1  # (d, j, k): bit k of number j
    row_bits = (rows[:, :, None] >> idx) & 1  # (d, p, k)
    parity = np.einsum("djk,dpk->djp", bits, row_bits) % 2
    state[:dimension] = (parity << (_MAXBIT - 1 - idx)).sum(-1)
    return sobolstate


class SobolEngine:
    r"""
    The :class:`torch.quasirandom.SobolEngine` is an engine for generating
    (scrambled) Sobol sequences. Sobol sequences are an example of low
    discrepancy quasi-random sequences.

    This implementation of an engine for Sobol sequences is capable of
    sampling sequences up to a maximum dimension of 21201. It uses direction
    numbers from https://web.maths.unsw.edu.au/~fkuo/sobol/ obtained using the
    search criterion D(6) up to the dimension 21201. This is the recommended
    choice by the authors.

    Args:
        dimension (Int): The dimensionality of the sequence to be drawn
        scramble (bool, optional): Setting this to ``True`` will produce
                                   scrambled Sobol sequences. Scrambling is
                                   capable of producing better Sobol
                                   sequences. Default: ``False``.
        seed (Int, optional): This is the seed for the scrambling. The seed
                              of the random number generator is set to this,
                              if specified. Otherwise, it uses a random seed.
                              Default: ``None``

    Examples::

        >>> soboleng = torch.quasirandom.SobolEngine(dimension=5)
        >>> soboleng.draw(3)
        tensor([[0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
                [0.5000, 0.5000, 0.5000, 0.5000, 0.5000],
                [0.7500, 0.2500, 0.2500, 0.2500, 0.7500]])
    """

    MAXBIT = _MAXBIT
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError("Supported range of dimensionality "
                             f"for SobolEngine is [1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        cpu = ember.device("cpu")
        self.sobolstate = ember.zeros(dimension, self.MAXBIT, device=cpu, dtype=ember.long)
        _sobol_engine_initialize_state_(self.sobolstate, self.dimension)
        if not self.scramble:
            self.shift = ember.zeros(self.dimension, device=cpu, dtype=ember.long)
        else:
            self._scramble()
        self.quasi = self.shift.clone(memory_format=ember.contiguous_format)
        self._first_point = (self.quasi / 2**self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def draw(self, n: int = 1, out: ember.Tensor | None = None,
             dtype: Any = None) -> ember.Tensor:
        r"""
        Function to draw a sequence of :attr:`n` points from a Sobol sequence.
        Note that the samples are dependent on the previous samples. The size
        of the result is :math:`(n, dimension)`.

        Args:
            n (Int, optional): The length of sequence of points to draw.
                               Default: 1
            out (Tensor, optional): The output tensor
            dtype (:class:`torch.dtype`, optional): the desired data type of the
                                                    returned tensor.
                                                    Default: ``None``
        """
        if dtype is None:
            dtype = ember.get_default_dtype()
        if self.num_generated == 0:
            if n == 1:
                result = self._first_point.to(dtype)
            else:
                result, self.quasi = _sobol_engine_draw(
                    self.quasi, n - 1, self.sobolstate, self.dimension, self.num_generated,
                    dtype=dtype)
                result = ember.cat((self._first_point.to(dtype), result), dim=-2)
        else:
            result, self.quasi = _sobol_engine_draw(
                self.quasi, n, self.sobolstate, self.dimension, self.num_generated - 1,
                dtype=dtype)
        self.num_generated += n
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: ember.Tensor | None = None,
                   dtype: Any = None) -> ember.Tensor:
        r"""
        Function to draw a sequence of :attr:`2**m` points from a Sobol sequence.
        Note that the samples are dependent on the previous samples. The size
        of the result is :math:`(2**m, dimension)`.

        Args:
            m (Int): The (base2) exponent of the number of points to draw.
            out (Tensor, optional): The output tensor
            dtype (:class:`torch.dtype`, optional): the desired data type of the
                                                    returned tensor.
                                                    Default: ``None``
        """
        n = 2**m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError(
                "The balance properties of Sobol' points require "
                f"n to be a power of 2. {self.num_generated} points have been "
                f"previously generated, then: n={self.num_generated}+2**{m}={total_n}. "
                "If you still want to do this, please use "
                "'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        r"""
        Function to reset the ``SobolEngine`` to base state.
        """
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        r"""
        Function to fast-forward the state of the ``SobolEngine`` by
        :attr:`n` steps. This is equivalent to drawing :attr:`n` samples
        without using the samples.

        Args:
            n (Int): The number of steps to fast-forward by.
        """
        if self.num_generated == 0:
            _sobol_engine_ff_(self.quasi, n - 1, self.sobolstate, self.dimension,
                              self.num_generated)
        else:
            _sobol_engine_ff_(self.quasi, n, self.sobolstate, self.dimension,
                              self.num_generated - 1)
        self.num_generated += n
        return self

    def _scramble(self) -> None:
        g: ember.Generator | None = None
        if self.seed is not None:
            g = ember.Generator()
            g.manual_seed(self.seed)
        cpu = ember.device("cpu")
        # the shift vector, then the lower triangular matrices, drawn in PyTorch's order
        shift_ints = ember.randint(2, (self.dimension, self.MAXBIT), device=cpu, generator=g)
        self.shift = ember.mv(shift_ints, ember.pow(2, ember.arange(0, self.MAXBIT, device=cpu)))
        ltm_dims = (self.dimension, self.MAXBIT, self.MAXBIT)
        ltm = ember.randint(2, ltm_dims, device=cpu, generator=g).tril()
        _sobol_engine_scramble_(self.sobolstate, ltm, self.dimension)

    def __repr__(self) -> str:
        fmt_string = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt_string += ["scramble=True"]
        if self.seed is not None:
            fmt_string += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt_string) + ")"
