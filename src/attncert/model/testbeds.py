"""Models whose length horizon is known in closed form (issue 40): test beds for
``verify --lengths``.

:func:`first_symbol_model` is a one-layer, one-head first = last classifier over {0, 1}.
The head sits at every query (no mask), its query is the constant 1, the key of position i
is Δ·[i = 1] + γ·i/n, its value the symbol's sign v_i = ±1 (0 ↦ −1, 1 ↦ +1); the
attention output a is added to the residual stream beside v_n, and a ReLU feed-forward
layer maps (a, v_n) to |a + v_n| − |a − v_n| = 2·a·v_n (for |a| ≤ 1). The readout accepts
iff 2·a·v_n > 0, i.e. iff a has the sign of the last symbol. So the model is right on every
string exactly when the first symbol's weight outweighs all the others', and wrong first on
0 1ⁿ⁻¹ (and 1 0ⁿ⁻¹):

* softmax, β = 1, γ = 0: right on every string of length n iff n − 1 < e^Δ, so the first
  failure is at n* = ⌊e^Δ⌋ + 2 (:func:`first_failure`; Δ = 20: n* = 485,165,197);
* softmax, β = 1, γ ≠ 0: wrong first at the least n with Σ_{j=2..n} e^{γj/n} > e^{Δ+γ/n}
  (the sum is increasing in n, so :func:`first_failure` finds it by bisection in mpmath);
* ``temperature="log"``: β(N) = c·log N with c·Δ ≥ 1 (Yang et al.'s scaling): the first
  symbol's weight N^{cΔ} beats the N − 1 others at every length — right at every n;
* ``kind="leftmost"``: a unique-hard head attends to position 1 at every length — right
  at every n.

Python::

    >>> from attncert.model.testbeds import first_symbol_model, first_failure
    >>> first_failure(20.0)
    485165197
    >>> m = first_symbol_model(20.0)
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from attncert.errors import ParameterError
from attncert.model.positional import PosFeature
from attncert.model.spec import (
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    Mask,
    Model,
    Readout,
    Temperature,
)

__all__ = ["first_failure", "first_symbol_model"]

D = 5  # coordinates: 0 the symbol's sign v, 1 the key Δ[i=1] + γ i/n, 2 the constant 1,
# 3 the attention output a, 4 the feed-forward output 2·a·v


def first_symbol_model(
    delta: float,
    gamma: float = 0.0,
    *,
    temperature: str | float = 1.0,
    kind: str = "softmax",
    name: str | None = None,
) -> Model:
    """The first = last classifier of the module docstring with score gap ``delta`` (Δ)
    and relative-position slope ``gamma`` (γ); ``temperature`` a constant β or ``"log"``
    for β(N) = log N (then Δ ≥ 1 keeps it right at every length); ``kind`` ``softmax`` or
    ``leftmost`` (unique hard attention)."""
    for what, v in (("delta", delta), ("gamma", gamma)):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ParameterError(f"{what} = {v!r}", where=what, expected="a finite number")
    if temperature == "log":
        temp = Temperature(1.0, log_power=1.0)
    elif isinstance(temperature, (int, float)) and not isinstance(temperature, bool):
        temp = Temperature(float(temperature))
    else:
        raise ParameterError(
            f"temperature {temperature!r}", where="temperature", expected="a number or 'log'"
        )
    word = np.zeros((2, D))
    word[0, 0], word[1, 0] = -1.0, 1.0
    word[:, 2] = 1.0
    pos = np.zeros((D, 2))
    pos[1, 0], pos[1, 1] = float(delta), float(gamma)  # key = Δ·[i=1] + γ·i/n
    emb = Embedding(("0", "1"), word, (PosFeature("[i=1]"), PosFeature("i/n")), pos)
    w_q = np.zeros((1, D))
    w_q[0, 2] = 1.0
    w_k = np.zeros((1, D))
    w_k[0, 1] = 1.0
    w_v = np.zeros((1, D))
    w_v[0, 0] = 1.0
    w_o = np.zeros((D, 1))
    w_o[3, 0] = 1.0
    head = Head(
        w_q,
        w_k,
        w_v,
        w_o,
        kind=AttentionKind(kind),
        mask=Mask.NONE,
        temperature=temp if kind == "softmax" else None,
    )
    # ReLU units: a + v, −a − v, a − v, v − a; output (u1 + u2) − (u3 + u4) = |a+v| − |a−v|
    w1 = np.array(
        [[1.0, 0, 0, 1.0, 0], [-1.0, 0, 0, -1.0, 0], [-1.0, 0, 0, 1.0, 0], [1.0, 0, 0, -1.0, 0]]
    )
    w2 = np.zeros((D, 4))
    w2[4] = [1.0, 1.0, -1.0, -1.0]
    ffn = FeedForward(w1, np.zeros(4), w2, np.zeros(D))
    readout = np.zeros(D)
    readout[4] = 1.0
    label = name or (
        f"first_symbol(Δ={delta:g}"
        + (f", γ={gamma:g}" if gamma else "")
        + (", β=log N" if temperature == "log" else "")
        + (f", {kind}" if kind != "softmax" else "")
        + ")"
    )
    return Model(
        alphabet=("0", "1"),
        embedding=emb,
        layers=(Layer((head,), ffn),),
        readout=Readout(readout, 0.0, position="last"),
        name=label,
        meta={
            "description": "first = last classifier with a known length horizon "
            "(attncert.model.testbeds)",
            "language": "first_last",
            "testbed": {"delta": delta, "gamma": gamma, "temperature": str(temperature)},
        },
    )


def first_failure(delta: float, gamma: float = 0.0, *, limit: int = 10**18) -> int | None:
    """The least length at which :func:`first_symbol_model` (softmax, β = 1) is wrong on
    some string — the least n ≥ 2 with Σ_{j=2..n} e^{γj/n} > e^{Δ+γ/n} — or None below
    ``limit``, computed in mpmath at 200 bits (a ground truth for tests; not trusted)."""
    with mpmath.workprec(200):
        d, g = mpmath.mpf(delta), mpmath.mpf(gamma)

        def wrong(n: int) -> bool:
            n_ = mpmath.mpf(n)
            if g == 0:
                lhs = n_ - 1
            else:  # Σ_{j=2..n} e^{γj/n}: a geometric sum with ratio r = e^{γ/n}
                r = mpmath.exp(g / n_)
                lhs = r**2 * (r ** (n - 1) - 1) / (r - 1)
            return lhs > mpmath.exp(d + g / n_)

        if not wrong(limit):
            return None
        lo, hi = 1, limit  # wrong(hi), not wrong(1) (one string: always right)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if wrong(mid) else (mid, hi)
        return hi
