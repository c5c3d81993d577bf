"""Patterns of strings over an interval of lengths, and their position classes (trusted;
issue 40, :mod:`attncert.kernel.horizon.checker`).

A **pattern** is a set of strings of every length n in [n₁, n₂] (n₂ may be ∞): a fixed
prefix u, a fixed suffix w, and a middle of m = n − |u| − |w| ≥ 1 symbols, free except
for optional bounds on how many times a symbol occurs in it (``counts``: σ ↦ [lo, hi],
hi ∞ allowed).

Token positions are 1-based, i ∈ {1, …, N}, N = n + [BOS] + [EOS] (as in
:mod:`attncert.model.positional`). For every length of the interval they fall into the
same **classes**:

* *head* classes: BOS, then the prefix's positions (each one position, one token);
* *tail* classes: the suffix's positions, then EOS (each one position, one token; the
  position is N − k for a fixed k);
* *middle* classes: the middle's positions cut into ``bins`` consecutive runs of nearly
  equal length — bin c holds the middle positions i₀ + j with ⌈c·m/M⌉ ≤ j < ⌈(c+1)·m/M⌉
  (i₀ = the first middle position), so its size is ⌊m/M⌋ or ⌈m/M⌉ and the sizes add up to
  m (exactly ⌈(c+1)m/M⌉ − ⌈cm/M⌉ of them at a single length, between ⌊m/M⌋ and ⌈m/M⌉
  over an interval). At a single length a class may be one position (``bins = 0``:
  every position exact).

For each class this module gives what every bound needs, **valid for every length of
the interval and every position of the class**: the count of its positions ([lo, hi],
exact integers, hi None for ∞), the tokens its positions may carry, and the exact
rational range of every used positional feature over all its (i, N)
(:func:`feature_range`): i/N over a middle bin lies between (i₀ + c·m/M)/N and
(i₀ − 1 + ⌈(c+1)m/M⌉)/N, a monotone function of m, so its extremes are at the interval's
ends (or its limit at ∞); 1/N, 1/i likewise; [i = 1] and [i = N] are exact in every
class; (−1)^i, sin and cos are exact at a single fixed position and [−1, 1] elsewhere;
a bounded indicator is [0, 1]. A feature without a rule, an unbounded feature on an
infinite interval, and a learned position table are refused (UnsupportedError).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from attncert.errors import SpecError, UnsupportedError
from attncert.model.positional import PosFeature
from attncert.model.spec import Model

#: features with a rule here (the rest are refused by name)
_BOUNDED_INDICATORS = ("[i>n/2]", "[i square]", "[i-1 square]", "[2i=n]", "[2i-2=n]", "[i-1>n/2]")
_PARITY = ("(-1)^i", "cos(pi*i)")
MAX_CLASSES = 1 << 20


@dataclass(frozen=True)
class Pattern:
    """Strings u·x·w of every length n in [lo, hi] (hi None: every n ≥ lo) whose middle x
    has, for each (σ, a, b) in ``counts``, between a and b occurrences of σ (b None: no
    upper bound)."""

    lo: int
    hi: int | None
    u: str = ""
    w: str = ""
    counts: tuple[tuple[str, int, int | None], ...] = ()
    #: (τ, t_lo, t_hi): the middle holds τ, and its first τ is at a token position i* with
    #: t_lo ≤ i*/N < t_hi (t_hi None: no upper bound) — a *first-occurrence* pattern
    first: tuple[str, Fraction, Fraction | None] | None = None

    def __post_init__(self) -> None:
        if self.lo < 1 or (self.hi is not None and self.hi < self.lo):
            raise SpecError(f"lengths [{self.lo}, {self.hi}]", expected="1 ≤ lo ≤ hi")
        if self.first is not None:
            _, a, b = self.first
            if self.counts or a < 0 or (b is not None and b <= a):
                raise SpecError(
                    f"first occurrence at i/N ∈ [{a}, {b})",
                    expected="0 ≤ t_lo < t_hi, and no count bound beside it",
                )

    @property
    def fixed(self) -> int:
        return len(self.u) + len(self.w)

    @property
    def m_lo(self) -> int:
        return self.lo - self.fixed

    @property
    def m_hi(self) -> int | None:
        return None if self.hi is None else self.hi - self.fixed

    def count_range(self, sym: str) -> tuple[int, int | None]:
        for s, a, b in self.counts:
            if s == sym:
                return a, b
        return 0, None

    def text(self) -> str:
        hi = "∞" if self.hi is None else str(self.hi)
        cs = "".join(f", #{s} ∈ [{a}, {'∞' if b is None else b}]" for s, a, b in self.counts)
        if self.first is not None:
            t, a, b = self.first
            cs += f", first {t} at i/N ∈ [{a}, {'∞' if b is None else b})"
        return f"n ∈ [{self.lo}, {hi}]: {self.u or 'ε'}·x·{self.w or 'ε'}{cs}"


@dataclass(frozen=True)
class PositionClass:
    """Positions of one kind at every length (module docstring).

    ``kind`` is ``head`` (token position ``a``), ``tail`` (token position N − ``a``) or
    ``middle`` (bin ``a`` of ``bins``; with ``exact`` the single token position ``a`` at
    a single length). ``count`` is the range of its number of positions; ``tokens`` the
    token ids its positions may carry; ``order`` sorts classes by position."""

    name: str
    kind: str
    a: int
    tokens: tuple[int, ...]
    count: tuple[int, int | None]
    order: int
    bins: int = 1
    exact: bool = False
    symbols: tuple[str, ...] = field(default=())  # the input symbols of ``tokens``
    #: for the classes of a first-occurrence pattern (kinds ``run``, ``first``, ``rel``):
    #: exact ranges of i/N and of i over the class at every length (i's upper end None:
    #: unbounded)
    rel: tuple[Fraction, Fraction] | None = None
    irange: tuple[Fraction, Fraction | None] | None = None

    @property
    def singleton(self) -> bool:
        return self.kind in ("head", "tail", "first") or self.exact


@dataclass(frozen=True)
class Layout:
    """The classes of a pattern for one model, with the token counts N₁ ≤ N ≤ N₂."""

    pattern: Pattern
    classes: tuple[PositionClass, ...]
    n_lo: int  # N₁ (tokens)
    n_hi: int | None  # N₂ (None: ∞)
    first_middle: int  # i₀, the first middle token position
    readout: int  # index of the readout's class
    bins: int


def _head_tail(model: Model) -> tuple[int, int]:
    return int(model.bos is not None), int(model.eos is not None)


def layout(model: Model, pat: Pattern, bins: int) -> Layout:
    """The position classes of ``pat`` for ``model`` with ``bins`` middle bins (``bins``
    = 0: one class per middle position, only at a single length). Refuses (SpecError) a
    pattern whose lengths leave no middle position, a readout position inside the free
    middle (it must be fixed: u or w, BOS or EOS), a mean readout, and too many classes."""
    b, e = _head_tail(model)
    if pat.m_lo < 1:
        raise SpecError(
            f"{pat.text()}: lengths below {pat.fixed + 1} leave no middle position",
            expected="lengths ≥ |u| + |w| + 1 (shorter ones are single-length verify leaves)",
        )
    sym_ids = {s: model.token_index[s] for s in model.alphabet}
    for s in pat.u + pat.w:
        if s not in sym_ids:
            raise SpecError(f"symbol {s!r} of the pattern is not in the alphabet")
    for s, lo, hi in pat.counts:
        if s not in sym_ids or lo < 0 or (hi is not None and hi < lo):
            raise SpecError(f"count of {s!r} in [{lo}, {hi}]", expected="0 ≤ lo ≤ hi, σ ∈ Σ")
    if bins == 0 and pat.hi != pat.lo:
        raise SpecError("one class per position needs a single length", expected="bins ≥ 1")
    if bins == 0 and pat.m_lo > MAX_CLASSES:
        raise SpecError(f"{pat.m_lo} middle positions", expected=f"at most {MAX_CLASSES}")
    if bins < 0 or bins > MAX_CLASSES:
        raise SpecError(f"{bins} bins", expected=f"0 … {MAX_CLASSES}")
    out: list[PositionClass] = []
    order = 0
    if b:
        out.append(PositionClass("BOS", "head", 1, (model.token_index[model.bos],), (1, 1), order))
        order += 1
    for k, s in enumerate(pat.u):
        pos = b + k + 1
        out.append(
            PositionClass(
                f"input {k + 1} = {s}", "head", pos, (sym_ids[s],), (1, 1), order, symbols=(s,)
            )
        )
        order += 1
    i0 = b + len(pat.u) + 1
    free = tuple(sym_ids[s] for s in model.alphabet)
    mlo, mhi = pat.m_lo, pat.m_hi
    if pat.first is not None:
        if bins < 1:
            raise SpecError("a first-occurrence pattern takes relative bins", expected="bins ≥ 1")
        mid = _first_classes(model, pat, bins, i0, b, e, order, sym_ids)
        out.extend(mid)
        order += len(mid)
    elif bins == 0:
        for j in range(mlo):
            out.append(
                PositionClass(
                    f"position {i0 + j}", "middle", i0 + j, free, (1, 1), order, 0, True,
                    tuple(model.alphabet),
                )
            )  # fmt: skip
            order += 1
    else:
        for c in range(bins):
            if mhi == mlo:  # one length: bin c has exactly ⌈(c+1)m/M⌉ − ⌈cm/M⌉ positions
                lo = hi = -(-(c + 1) * mlo // bins) - -(-c * mlo // bins)
            else:
                lo, hi = mlo // bins, None if mhi is None else -(-mhi // bins)
            out.append(
                PositionClass(
                    f"middle bin {c + 1}/{bins}", "middle", c, free, (lo, hi), order, bins,
                    symbols=tuple(model.alphabet),
                )
            )  # fmt: skip
            order += 1
    for k, s in enumerate(pat.w):
        back = e + len(pat.w) - 1 - k  # token position N − back
        out.append(
            PositionClass(
                f"input n−{len(pat.w) - 1 - k} = {s}",
                "tail",
                back,
                (sym_ids[s],),
                (1, 1),
                order,
                symbols=(s,),
            )
        )
        order += 1
    if e:
        out.append(PositionClass("EOS", "tail", 0, (model.token_index[model.eos],), (1, 1), order))
    n_lo = pat.lo + b + e
    n_hi = None if pat.hi is None else pat.hi + b + e
    return Layout(pat, tuple(out), n_lo, n_hi, i0, _readout(model, pat, out, b, e), bins)


def _first_classes(model, pat: Pattern, bins: int, i0: int, b: int, e: int, order: int, sym_ids):
    """The middle of a first-occurrence pattern u·y·τ·x·w (y without τ, i*/N ∈ [t_lo, t_hi)
    at the position i* of τ): the run y (one class), τ (one position) and x in ``bins``
    relative bins by i/N (bin c: c/M ≤ i/N < (c+1)/M, those above t_lo); each with its exact
    i/N and i ranges and a count range valid at every length."""
    tau, t_lo, t_hi = pat.first
    if tau not in sym_ids:
        raise SpecError(f"symbol {tau!r} of the pattern is not in the alphabet")
    n1 = pat.lo + b + e
    n2 = None if pat.hi is None else pat.hi + b + e
    tail = len(pat.w) + e  # i* ≤ N − tail
    zero, one = Fraction(0), Fraction(1)
    star_lo = max(i0, -(-t_lo.numerator * n1 // t_lo.denominator))  # ⌈t_lo·N₁⌉
    if n2 is None:
        star_hi = None
    else:
        cap = n2 - tail
        if t_hi is not None:
            cap = min(cap, -(-t_hi.numerator * n2 // t_hi.denominator) - 1)  # ⌈t_hi N₂⌉ − 1
        star_hi = Fraction(cap)
    others = tuple(sym_ids[c] for c in model.alphabet if c != tau)
    hi_rel = one if t_hi is None else min(t_hi, one)
    lo_rel = zero if n2 is None else Fraction(i0, n2)
    out = [
        PositionClass(
            f"before the first {tau}", "run", 0, others,
            (max(0, star_lo - i0), None if star_hi is None else max(0, int(star_hi) - i0)),
            order, symbols=tuple(c for c in model.alphabet if c != tau),
            rel=(lo_rel, hi_rel),
            irange=(Fraction(i0), None if star_hi is None else max(Fraction(i0), star_hi - 1)),
        ),
        PositionClass(
            f"the first {tau}", "first", 0, (sym_ids[tau],), (1, 1), order + 1, symbols=(tau,),
            rel=(max(t_lo, lo_rel), hi_rel), irange=(Fraction(star_lo), star_hi),
        ),
    ]  # fmt: skip
    M = Fraction(bins)
    first_bin = int(t_lo * bins)  # bins with (c+1)/M > t_lo
    for c in range(min(first_bin, bins - 1), bins):
        top = (c + 1) / M
        if top <= t_lo:
            continue
        i_lo = max(Fraction(star_lo + 1), Fraction(-(-c * n1 // bins)))
        out.append(
            PositionClass(
                f"after the first {tau}, bin {c + 1}/{bins}", "rel", c, tuple(sym_ids.values()),
                (0, None if n2 is None else n2 // bins + 2), order + 2 + c - first_bin,
                bins, symbols=tuple(model.alphabet),
                rel=(max(c / M, t_lo), top), irange=(i_lo, None if n2 is None else Fraction(n2)),
            )
        )  # fmt: skip
    return out


def _readout(model: Model, pat: Pattern, classes: list[PositionClass], b: int, e: int) -> int:
    pos = model.readout.position
    if pos == "mean":
        raise UnsupportedError("a mean readout reads every position: the horizon bound needs one")
    want: tuple[str, int]
    if pos == "last":
        want = ("tail", 0)
    elif pos == "first":
        want = ("head", 1)
    elif isinstance(pos, int) and pos > 0:
        want = ("head", pos)
    else:
        want = ("tail", -int(pos) - 1)
    for k, c in enumerate(classes):
        if (c.kind, c.a) == want:
            return k
    raise SpecError(
        f"{pat.text()}: the readout position ({pos}) is in the free middle",
        expected="a pattern that fixes the readout's symbol (a longer u or w)",
    )


# ----- feature ranges ---------------------------------------------------------------------


def _ratio_range(num0: Fraction, slope: Fraction, const: Fraction, mlo: int, mhi: int | None):
    """The range of (num0 + slope·m)/(const + m) over integers m ∈ [mlo, mhi] (mhi None: the
    limit slope as m → ∞ is included): a Möbius map of m, monotone on m > −const."""
    vals = [(num0 + slope * mlo) / (const + mlo)]
    vals.append(slope if mhi is None else (num0 + slope * mhi) / (const + mhi))
    return min(vals), max(vals)


def position_range(c: PositionClass, lay: Layout, model: Model):
    """(i/N range, i range): exact rationals over every (i, N) of the class; the i range's
    upper end is None when it is unbounded (an infinite interval)."""
    if c.rel is not None:
        return c.rel, c.irange
    b, e = _head_tail(model)
    pat = lay.pattern
    const = Fraction(b + pat.fixed + e)  # N = const + m
    i0 = lay.first_middle
    mlo, mhi = pat.m_lo, pat.m_hi
    if c.kind == "head":
        i = Fraction(c.a)
        return _ratio_range(i, Fraction(0), const, mlo, mhi), (i, i)
    if c.kind == "tail":  # i = N − a = const + m − a
        r = _ratio_range(const - c.a, Fraction(1), const, mlo, mhi)
        return r, (const + mlo - c.a, None if mhi is None else const + mhi - c.a)
    if c.exact:
        i = Fraction(c.a)
        return (i / (const + mlo), i / (const + mlo)), (i, i)
    # middle bin c of M: i − i₀ ∈ [⌈cm/M⌉, ⌈(c+1)m/M⌉ − 1] ⊂ [cm/M, (c+1)m/M) as reals, so
    # i/N lies between (i₀ + cm/M)/N and (i₀ + (c+1)m/M)/N, Möbius maps of m
    M = Fraction(c.bins)
    lo1, hi1 = _ratio_range(Fraction(i0), c.a / M, const, mlo, mhi)
    lo2, hi2 = _ratio_range(Fraction(i0), (c.a + 1) / M, const, mlo, mhi)
    first = i0 + -((-c.a * mlo) // c.bins)
    last = None if mhi is None else i0 - 1 + -((-(c.a + 1) * mhi) // c.bins)
    return (min(lo1, lo2), max(hi1, hi2)), (
        Fraction(first),
        None if last is None else Fraction(last),
    )


def feature_range(f: PosFeature, c: PositionClass, lay: Layout, model: Model):
    """[lo, hi] ∋ φ(i, N) for every position i of ``c`` at every length of the layout
    (exact rationals; module docstring)."""
    name = f.name
    one, zero = Fraction(1), Fraction(0)
    single = c.kind in ("head", "tail") or c.exact  # one position whose index is known
    fixed_n = lay.n_hi == lay.n_lo
    if name == "1":
        return one, one
    if name in ("i/n", "(i/n)^2"):
        (lo, hi), _ = position_range(c, lay, model)
        lo, hi = max(lo, zero), min(hi, one)
        return (lo, hi) if name == "i/n" else (lo * lo, hi * hi)
    if name in ("1/n", "1/n^2"):
        lo = zero if lay.n_hi is None else Fraction(1, lay.n_hi)
        hi = Fraction(1, lay.n_lo)
        return (lo, hi) if name == "1/n" else (lo * lo, hi * hi)
    if name in ("1/i", "1/i^2"):
        _, (i_lo, i_hi) = position_range(c, lay, model)
        lo, hi = (zero if i_hi is None else 1 / i_hi), 1 / max(i_lo, one)
        return (lo, hi) if name == "1/i" else (lo * lo, hi * hi)
    if name == "[i=1]":
        _, (i_lo, i_hi) = position_range(c, lay, model)
        if i_lo > 1:
            return zero, zero
        return (one, one) if i_hi == 1 else (zero, one)
    if name == "[i=n]":
        if (c.kind, c.a) == ("tail", 0):
            return one, one
        # a class before the tail classes never holds position N; without tail classes
        # (no suffix, no EOS) a middle class may
        reach = c.kind not in ("head", "tail") and not lay.pattern.w and _head_tail(model)[1] == 0
        return (zero, one) if reach else (zero, zero)
    if name in _PARITY or name in ("sin", "cos"):
        if c.kind == "head" or c.exact:
            v = f.exact(c.a, lay.n_lo)  # depends on i only
            return v, v
        if c.kind == "tail" and fixed_n:
            v = f.exact(lay.n_lo - c.a, lay.n_lo)
            return v, v
        return -one, one
    if name == "(-1)^n":
        if fixed_n:
            v = Fraction((-1) ** lay.n_lo)
            return v, v
        return -one, one
    if name in _BOUNDED_INDICATORS:
        if single and fixed_n:
            i = c.a if c.kind != "tail" else lay.n_lo - c.a
            v = f.exact(i, lay.n_lo)
            return v, v
        return zero, one
    if not f.bounded and lay.n_hi is None:
        raise UnsupportedError(
            f"positional feature {f.label!r} is unbounded: no bound holds for every length",
            expected="a finite interval of lengths, or bounded features",
        )
    if name in ("i", "n", "i^2"):
        if name == "n":
            return Fraction(lay.n_lo), Fraction(lay.n_hi)
        _, (i_lo, i_hi) = position_range(c, lay, model)
        return (i_lo, i_hi) if name == "i" else (i_lo * i_lo, i_hi * i_hi)
    raise UnsupportedError(
        f"positional feature {f.label!r} has no rule for an interval of lengths",
        expected="1, i/n, (i/n)^2, 1/n, 1/i, [i=1], [i=n], (-1)^i, sin, cos, indicators",
    )


def used_features(model: Model) -> tuple[int, ...]:
    """Indices of the positional features with a nonzero weight column."""
    emb = model.embedding
    return tuple(fi for fi in range(len(emb.features)) if np.any(emb.pos_weight[:, fi] != 0))
