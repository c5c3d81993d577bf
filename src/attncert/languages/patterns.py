"""Membership that is the same for every string of a pattern (trusted; issue 40).

A pattern (:class:`attncert.kernel.horizon.classes.Pattern`) is the strings u·x·w of
every length n in [lo, hi] whose middle x (m = n − |u| − |w| ≥ 1 symbols) has between a
and b occurrences of one symbol σ (optional). :func:`pattern_membership` says whether
*every* such string is in the language (True), none is (False), or neither is shown
(None) — for the languages whose membership such a pattern can pin down:

* ``first_last``: the first symbol is u's first and the last is w's last when both are
  non-empty;
* ``ones_star`` (1*): a 0 in u or w, or a middle with at least one 0 (a count bound, or a
  first-occurrence pattern of 0), is outside; a middle with no 0 and u, w of 1s only is
  inside;
* ``majority`` (more 1s than 0s), over a finite interval: 2·#1 − n is linear in (m, #σ)
  over a polygon; its sign is constant when it is at every vertex;
* ``parity`` / ``parity-odd``: the number of 1s is fixed when the count of 1s in the middle
  is pinned (a = b), or the count of 0s is pinned at a single length.

Anything else (Dyck, aⁿbⁿ, a DFA) gives None, and the horizon refuses the language.
"""

from __future__ import annotations

from attncert.languages.base import Language

SUPPORTED = ("first_last", "ones_star", "majority", "parity", "parity-odd")


def pattern_membership(
    lang: Language,
    u: str,
    w: str,
    counts: tuple[tuple[str, int, int | None], ...],
    lo: int,
    hi: int | None,
    first: str | None = None,
) -> bool | None:
    """True / False when every string of the pattern is / is not in ``lang``; None when
    the pattern does not pin membership down (module docstring). ``first``: the middle
    holds this symbol (a first-occurrence pattern)."""
    name = lang.name
    fixed = len(u) + len(w)
    m_lo, m_hi = lo - fixed, None if hi is None else hi - fixed
    if m_lo < 1:
        return None
    sym, a, b = counts[0] if counts else (None, 0, None)
    if len(counts) > 1:
        return None
    if name == "first_last":
        return (u[0] == w[-1]) if u and w else None
    if first is not None:  # the middle holds ``first`` somewhere, nothing else is known
        if name == "ones_star" and (first == "0" or "0" in u + w):
            return False
        return None
    if name == "ones_star":
        if "0" in u + w:
            return False
        if sym == "0":
            if b == 0:
                return True
            if a >= 1:
                return False
        if (
            sym == "1"
            and a >= m_lo
            and m_hi is not None
            and m_hi == m_lo
            and (b is None or b >= m_hi)
        ):
            return True  # every middle symbol is a 1 (single length, #1 = m)
        return None
    if name == "majority":
        return _majority(u + w, sym, a, b, m_lo, m_hi)
    if name in ("parity", "parity-odd"):
        ones = (u + w).count("1")
        if sym == "1" and b is not None and a == b:
            even = (ones + a) % 2 == 0
        elif sym == "0" and b is not None and a == b and m_hi == m_lo:
            even = (ones + m_lo - a) % 2 == 0
        else:
            return None
        return even if name == "parity" else not even
    return None


def _majority(ends: str, sym, a: int, b: int | None, m_lo: int, m_hi: int | None) -> bool | None:
    """Sign of f = 2·#1 − n over a finite pattern: with c the count of ``sym`` in the
    middle, #1 = k + c (sym = 1) or k + m − c (sym = 0), n = |ends| + m; f is linear in
    (m, c) on the polygon m_lo ≤ m ≤ m_hi, a ≤ c ≤ min(b, m), so its sign is constant
    when it is at every vertex."""
    if sym is None or m_hi is None or a > m_lo:
        return None  # free counts (both signs), an infinite interval, or empty lengths
    k, fixed = ends.count("1"), len(ends)

    def f(m: int, c: int) -> int:
        ones = k + c if sym == "1" else k + m - c
        return 2 * ones - fixed - m

    pts = [(m, a) for m in (m_lo, m_hi)]
    pts += [(m, m if b is None else min(b, m)) for m in (m_lo, m_hi)]
    if b is not None and m_lo < b < m_hi:
        pts.append((b, b))
    vals = [f(m, c) for m, c in pts]
    if all(v > 0 for v in vals):
        return True
    if all(v <= 0 for v in vals):
        return False
    return None
