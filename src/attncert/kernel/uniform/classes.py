"""Lemma 5's hypotheses and the position classes of the length-uniform propagation
(trusted; see :mod:`attncert.kernel.uniform.checker`).

**Hypotheses** (Hahn 2020, Lemma 5 and the supplement's k = 0 step), as this project states
them (:func:`attncert.soft.bounds.check_lemma5_assumptions`): every head is a softmax head
that attends to all N positions (no mask), with an inverse temperature that does not grow
with n; every positional feature the model uses is bounded; and the model is defined at
every length (no learned position table, which has a last row). :func:`hypotheses` lists
the ones that fail, in words.

**Position classes.** Token positions are 1-based, i ∈ {1, …, N}, N = n + [BOS] + [EOS]
(as in :mod:`attncert.model.positional`). For every N ≥ N₀ + [BOS] + [EOS] the positions
fall into the same finitely many classes:

* *head* classes: token position k for k = 1..h (BOS, the first input position, and the
  readout position when it is a fixed positive index);
* *tail* classes: token position N − k for k = 0..t−1 (EOS, the last input position, a
  negative readout index);
* *middle*: positions h+1..N−t, in M *bins* by relative position (bin b holds the
  positions with b/M ≤ i/N < (b+1)/M), each split by the parity of i when a used feature
  depends on it ((−1)^i, cos(πi)).

Every used feature φ gets an exact rational range over all (i, N) in a class with
N ≥ N₀ + [BOS] + [EOS] (:func:`feature_range`): i/N ∈ [0, k/N₀'] at head position k and
[1 − k/N₀', 1] at tail position N − k, [b/M, (b+1)/M] in middle bin b; 1/N ∈ [0, 1/N₀'];
1/i exact at the head, ≤ 1/(N₀' − k) at the tail, ≤ min(1/(h + 1), M/(b·N₀')) in middle bin
b (there i ≥ bN/M); (−1)^i exact at the head
and in a parity class, [−1, 1] at the tail; [i = 1] and [i = N] exact (0 or 1) in every
class, since the classes are disjoint once N ≥ h + t; sin/cos(ωi) exact at the head,
[−1, 1] elsewhere; every other bounded indicator [0, 1]. (N₀' = N₀ + [BOS] + [EOS].)

**The parity of N.** When a used feature depends on parity ((−1)^i, cos(πi), (−1)^n), the
lengths are split into two *cases*, N even and N odd (:func:`length_cases`): in each, the
tail positions' (−1)^i and (−1)^N are exact too. Every bound below holds for all N ≥ N₀' of
the case, since it holds for all N ≥ N₀'.

Middle classes have a number of positions growing with N: :func:`count_fraction` is an
exact lower bound on (count − 1)/(N − 1) over all N ≥ N₀', used to lower-bound the sum of
the other keys' weights. (Soundness never needs a class to be non-empty: an empty class
only widens a hull.)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from attncert.errors import UnsupportedError
from attncert.kernel.core.hypotheses import lemma5
from attncert.model.positional import FEATURE_NAMES, PosFeature
from attncert.model.spec import Model

PARITY_FEATURES = ("(-1)^i", "cos(pi*i)")
# bounded indicators whose range is taken as [0, 1] everywhere (sound; used by compiled
# models only)
_INDICATORS = ("[i>n/2]", "[i square]", "[i-1 square]", "[2i=n]", "[2i-2=n]", "[i-1>n/2]")
_RULES = (
    "1",
    "i/n",
    "(i/n)^2",
    "1/n",
    "1/i",
    "1/i^2",
    *PARITY_FEATURES,
    "(-1)^n",
    "[i=1]",
    "[i=n]",
    "sin",
    "cos",
    *_INDICATORS,
)


def hypotheses(model: Model) -> tuple[str, ...]:
    """The hypotheses of Lemma 5 that ``model`` violates for a statement about every
    length (:func:`attncert.kernel.core.hypotheses.lemma5` with ``every_length``)."""
    return lemma5(model, every_length=True)


def used_features(model: Model) -> tuple[int, ...]:
    """Indices of the positional features with a nonzero weight column."""
    emb = model.embedding
    return tuple(fi for fi in range(len(emb.features)) if np.any(emb.pos_weight[:, fi] != 0))


@dataclass(frozen=True)
class PositionClass:
    """A set of token positions present at every length N ≥ N₀' (module docstring).

    ``kind`` is ``"head"`` (token position ``k``), ``"tail"`` (token position N − ``k``) or
    ``"middle"`` (the positions h+1..N−t of bin ``bin`` with i ≡ ``k`` mod 2, or all of
    them when ``k`` is −1). ``tokens`` are the token ids its positions may carry;
    ``changeable``: the position may be the changed one (an input position that is not the
    readout token)."""

    name: str
    kind: str
    k: int
    tokens: tuple[int, ...]
    changeable: bool
    bin: int = 0

    @property
    def singleton(self) -> bool:
        return self.kind != "middle"

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "k": self.k,
            "tokens": list(self.tokens),
            "changeable": self.changeable,
            "bin": self.bin,
        }


@dataclass(frozen=True)
class Layout:
    """The classes for one model, N₀ and M bins, with h, t and N₀' = N₀ + [BOS] + [EOS]."""

    n0: int
    n0_tokens: int
    h: int
    t: int
    bins: int
    classes: tuple[PositionClass, ...]
    readout: int | None  # index of the readout class, None for a mean readout
    n_parity: int | None = None  # N mod 2 in this case, None for every N

    @property
    def split_parity(self) -> bool:
        return any(c.kind == "middle" and c.k >= 0 for c in self.classes)


MAX_BINS = 256


def _head_tail(model: Model) -> tuple[int, int]:
    b, e = int(model.bos is not None), int(model.eos is not None)
    h, t = b + 1, e + 1
    pos = model.readout.position
    if isinstance(pos, int):
        if pos > 0:
            h = max(h, pos)
        else:
            t = max(t, -pos)
    return h, t


def minimum_n0(model: Model) -> int:
    """The least N₀ the classes allow: N₀ ≥ 2 and N₀ + [BOS] + [EOS] ≥ h + t."""
    h, t = _head_tail(model)
    return max(2, h + t - int(model.bos is not None) - int(model.eos is not None))


def length_cases(model: Model) -> tuple[int | None, ...]:
    """(0, 1) — N even, N odd — when a used feature depends on parity, else (None,)."""
    names = {model.embedding.features[fi].name for fi in used_features(model)}
    return (0, 1) if names & {*PARITY_FEATURES, "(-1)^n"} else (None,)


def layout(model: Model, n0: int, bins: int = 1, n_parity: int | None = None) -> Layout:
    """The position classes (module docstring) for the lengths N ≥ N₀' (of parity
    ``n_parity`` when given). Raises :class:`UnsupportedError` when N₀ is too small for the
    classes to be disjoint or ``bins`` is outside 1..MAX_BINS."""
    if n_parity not in (None, 0, 1):
        raise UnsupportedError(f"N parity {n_parity!r}", where="n_parity", expected="0, 1 or none")
    if not 1 <= bins <= MAX_BINS:
        raise UnsupportedError(f"{bins} bins", where="bins", expected=f"1 to {MAX_BINS}")
    b, e = int(model.bos is not None), int(model.eos is not None)
    h, t = _head_tail(model)
    n0t = n0 + b + e
    if n0 < minimum_n0(model):
        raise UnsupportedError(
            f"N₀ = {n0} is too small: the length-uniform classes need N₀ ≥ 2 and "
            f"N₀ + [BOS] + [EOS] ≥ {h + t} (head and tail positions disjoint)",
            where="n0",
            expected=f"N₀ ≥ {minimum_n0(model)}",
        )
    sym = tuple(model.token_index[s] for s in model.alphabet)
    used = used_features(model)
    split = any(model.embedding.features[fi].name in PARITY_FEATURES for fi in used)
    r_kind, r_k = _readout_class(model)
    out: list[PositionClass] = []
    for k in range(1, h + 1):
        if k <= b:
            out.append(PositionClass("BOS", "head", k, (model.token_index[model.bos],), False))
        else:
            ro = (r_kind, r_k) == ("head", k)
            out.append(PositionClass(f"token {k} (input {k - b})", "head", k, sym, not ro))
    mids = (0, 1) if split else (-1,)
    for bn in range(bins):
        where = "" if bins == 1 else f" {bn}/{bins} ≤ i/N < {bn + 1}/{bins}"
        for p in mids:
            label = {0: ", i even", 1: ", i odd", -1: ""}[p]
            out.append(PositionClass(f"middle{where}{label}", "middle", p, sym, True, bn))
    for k in range(t - 1, -1, -1):
        if k < e:
            out.append(PositionClass("EOS", "tail", k, (model.token_index[model.eos],), False))
        else:
            ro = (r_kind, r_k) == ("tail", k)
            name = "token N" if k == 0 else f"token N−{k}"
            out.append(PositionClass(f"{name} (input n−{k - e})", "tail", k, sym, not ro))
    readout = None
    if r_kind is not None:
        readout = next(
            i for i, c in enumerate(out) if (c.kind, c.k) == (r_kind, r_k) and c.singleton
        )
    return Layout(n0, n0t, h, t, bins, tuple(out), readout, n_parity)


def _readout_class(model: Model) -> tuple[str | None, int]:
    pos = model.readout.position
    if pos == "mean":
        return None, 0
    if pos == "first":
        return "head", 1
    if pos == "last":
        return "tail", 0
    return ("head", int(pos)) if pos > 0 else ("tail", -int(pos) - 1)


def feature_range(f: PosFeature, c: PositionClass, lay: Layout) -> tuple[Fraction, Fraction]:
    """[lo, hi] ∋ φ(i, N) for every N ≥ N₀' and every position i of class ``c`` (module
    docstring); exact rationals."""
    n0t, name = lay.n0_tokens, f.name
    one, zero = Fraction(1), Fraction(0)
    if name not in _RULES:
        raise UnsupportedError(
            f"positional feature {f.label!r} has no length-uniform range rule",
            expected="one of " + ", ".join(n for n in FEATURE_NAMES if n in _RULES),
        )
    if name == "1":
        return one, one
    if name in ("i/n", "(i/n)^2"):
        if c.kind == "head":
            lo, hi = zero, Fraction(c.k, n0t)
        elif c.kind == "tail":
            lo, hi = 1 - Fraction(c.k, n0t), one
        else:
            lo, hi = Fraction(c.bin, lay.bins), Fraction(c.bin + 1, lay.bins)
        return (lo, hi) if name == "i/n" else (lo * lo, hi * hi)
    if name == "1/n":
        return zero, Fraction(1, n0t)
    if name in ("1/i", "1/i^2"):
        if c.kind == "head":
            lo = hi = Fraction(1, c.k)
        elif c.kind == "tail":
            lo, hi = zero, Fraction(1, n0t - c.k)
        else:
            hi = Fraction(1, lay.h + 1)
            if c.bin > 0:
                hi = min(hi, Fraction(lay.bins, c.bin * n0t))
            lo = zero
        return (lo, hi) if name == "1/i" else (lo * lo, hi * hi)
    if name in PARITY_FEATURES:
        if c.kind == "head":
            v = Fraction((-1) ** c.k)
            return v, v
        if c.kind == "middle" and c.k >= 0:
            v = Fraction((-1) ** c.k)
            return v, v
        if c.kind == "tail" and lay.n_parity is not None:  # i = N − k
            v = Fraction((-1) ** (lay.n_parity + c.k))
            return v, v
        return -one, one
    if name == "(-1)^n":
        if lay.n_parity is not None:
            v = Fraction((-1) ** lay.n_parity)
            return v, v
        return -one, one
    if name == "[i=1]":
        v = one if (c.kind, c.k) == ("head", 1) else zero
        return v, v
    if name == "[i=n]":
        v = one if (c.kind, c.k) == ("tail", 0) else zero
        return v, v
    if name in ("sin", "cos"):
        if c.kind == "head":
            v = f.exact(c.k, n0t)  # depends on i only
            return v, v
        return -one, one
    return zero, one  # the other bounded indicators


def feature_ranges(model: Model, lay: Layout) -> tuple[tuple[tuple[Fraction, Fraction], ...], ...]:
    """Per class, the ranges of the used features (in the order of :func:`used_features`)."""
    feats = model.embedding.features
    return tuple(
        tuple(feature_range(feats[fi], c, lay) for fi in used_features(model)) for c in lay.classes
    )


def count_fraction(c: PositionClass, lay: Layout) -> Fraction:
    """A lower bound, valid for every N ≥ N₀', on (|c| − 1)/(N − 1) for a middle class
    (0 for a single position). Bin b holds the integers of [bN/M, (b+1)N/M) — at least
    N/M − 1 of them — that lie in [h+1, N−t]: |c| ≥ N/M − 1 − h − t, and |c| ≥ N/M − 1 for
    an interior bin (1 ≤ b ≤ M − 2) once N₀' > M·h and N₀' ≥ M·t (it then starts above h
    and ends below N − t + 1). With the parity split a parity holds at least
    (|bin| − 1)/2. Hence |c| − 1 ≥ s·(N/M − γ) with s = 1 (or ½ with the split) and
    γ = 2 (4) + h + t at the edges; s(N/M − γ)/(N − 1) increases with N (γ > 1/M), so its
    value at N₀' (or 0) is the bound."""
    if c.singleton:
        return Fraction(0)
    n, m = lay.n0_tokens, lay.bins
    interior = 1 <= c.bin <= m - 2 and n > m * lay.h and n >= m * lay.t
    lost = 0 if interior else lay.h + lay.t
    s, g = (Fraction(1), 2 + lost) if c.k < 0 else (Fraction(1, 2), 4 + lost)
    return max(s * (Fraction(n, m) - g) / (n - 1), Fraction(0))
