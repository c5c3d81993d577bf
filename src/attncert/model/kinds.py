"""The kinds a model's parts come in: attention (hard or soft), masks, activations, where a
LayerNorm sits and which norm it is — enumerations shared by the spec
(:mod:`attncert.model.spec`, which re-exports them) and every evaluator.
"""

from __future__ import annotations

from enum import Enum
from functools import lru_cache

import numpy as np


class AttentionKind(str, Enum):
    """How a head turns scores into attention (Hahn §5 footnote 1; Yang et al. §2)."""

    LEFTMOST = "leftmost"  # unique-hard, ties broken to the leftmost maximum
    RIGHTMOST = "rightmost"  # unique-hard, ties broken to the rightmost maximum
    AVERAGE = "average"  # average-hard: uniform over all maxima
    SOFTMAX = "softmax"  # softmax with inverse temperature β(N)

    @property
    def is_hard(self) -> bool:
        return self is not AttentionKind.SOFTMAX


class Mask(str, Enum):
    """Which positions j a query at i may attend to."""

    NONE = "none"  # all j
    FUTURE = "future"  # future masked: j ≤ i
    FUTURE_STRICT = "future_strict"  # j < i
    PAST = "past"  # past masked: j ≥ i
    PAST_STRICT = "past_strict"  # j > i

    def allowed(self, i: int, j: int) -> bool:
        """Whether query position ``i`` sees key position ``j`` (any indexing base)."""
        if self is Mask.NONE:
            return True
        if self is Mask.FUTURE:
            return j <= i
        if self is Mask.FUTURE_STRICT:
            return j < i
        if self is Mask.PAST:
            return j >= i
        return j > i

    def matrix(self, n: int) -> np.ndarray:
        """Boolean n × n matrix (read-only, cached), entry [i, j] true iff i sees j."""
        return _mask_matrix(self, n)

    def sees_any(self, n: int) -> np.ndarray:
        """Per query position (0-based), whether it sees at least one of the n keys."""
        i = np.arange(n)
        if self is Mask.FUTURE_STRICT:
            return i > 0
        if self is Mask.PAST_STRICT:
            return i < n - 1
        return np.ones(n, dtype=bool)

    def rows(self, rows: np.ndarray, n: int) -> np.ndarray | None:
        """The rows ``rows`` of :meth:`matrix` (len(rows) × n), built without the n × n
        matrix; None for ``none`` (every key visible)."""
        if self is Mask.NONE:
            return None
        i = np.asarray(rows)[:, None]
        j = np.arange(n)[None, :]
        if self is Mask.FUTURE:
            return j <= i
        if self is Mask.FUTURE_STRICT:
            return j < i
        if self is Mask.PAST:
            return j >= i
        return j > i


class Activation(str, Enum):
    """The feed-forward non-linearity."""

    RELU = "relu"
    GELU = "gelu"  # x·Φ(x) = x/2·(1 + erf(x/√2)) (PyTorch's default GELU)
    GELU_TANH = "gelu_tanh"  # x/2·(1 + tanh(√(2/π)(x + 0.044715x³))) (GPT-2's gelu_new)
    SILU = "silu"  # x·σ(x) = x/(1 + e^(−x)) (Llama's SwiGLU gate)


class NormPosition(str, Enum):
    """Where a layer's LayerNorms sit (see the module docstring)."""

    PRE = "pre"  # norm_first=True: normalize the sublayer's input
    POST = "post"  # norm_first=False: normalize after each residual add


class NormKind(str, Enum):
    """Which normalization a :class:`LayerNorm` value computes."""

    LAYER = "layer"  # γ ⊙ (x − μ)/√(σ² + ε) + β (LayerNorm)
    RMS = "rms"  # γ ⊙ x/√(mean(x²) + ε) + β (RMSNorm: no mean subtracted; β = 0 in Llama)


@lru_cache(maxsize=16)
def _mask_matrix(mask: Mask, n: int) -> np.ndarray:
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    m = {
        Mask.NONE: np.ones((n, n), dtype=bool),
        Mask.FUTURE: j <= i,
        Mask.FUTURE_STRICT: j < i,
        Mask.PAST: j >= i,
        Mask.PAST_STRICT: j > i,
    }[mask]
    m.setflags(write=False)
    return m
