"""Exact member counts over a cube, and completions of a chosen membership.

A *cube* is a restriction ρ ∈ (Σ ∪ {*})ⁿ: the strings of length n that agree with ρ on
its fixed positions. Under the uniform distribution on Σⁿ it has measure |Σ|^(free − n).
Certified accuracy (:mod:`attncert.kernel.verify`) needs, for every cube on which a
model's decision is certified constant, the exact number of its members of L:

* **regular languages** (PARITY, 1*, first_last, any DFA): dynamic programming over the
  positions, state = DFA state; a fixed position takes one transition, a free one sums
  over Σ — O(n·|Q|·|Σ|) big-integer additions;
* **majority** (more 1s than 0s): with a fixed 1s and f free positions, the members are
  Σ_{k > n/2 − a} C(f, k);
* **Dyck-1**: dynamic programming over the height (a ballot count), the height capped by
  the positions left, so that only heights that can still return to 0 are kept;
* **aⁿbⁿ**: the one candidate a^{n/2}b^{n/2}, if ρ admits it.

:func:`completion` returns a completion of ρ of the asked membership (a witness), built
from the same tables backwards, or None when there is none. Both are part of the
trusted base (no solver, no search); they are cross-checked against enumeration of every
completion in ``tests/test_verify_counting.py``.

Python::

    >>> from attncert.languages import language
    >>> count_members(language("parity"), "1**0")   # 4 completions, half even
    2
    >>> count_members(language("dyck1"), "(**)")    # (()) and ()()
    2
    >>> completion(language("majority"), "0**", member=True)
    '011'
"""

from __future__ import annotations

from math import comb

import numpy as np

from attncert.errors import InputError, UnsupportedError
from attncert.languages.anbn import AnBn
from attncert.languages.base import Language
from attncert.languages.dyck import Dyck
from attncert.languages.majority import Majority

__implements__ = ("Hahn Theorem 1", "Hahn Theorem 6")

FREE = "*"


def _check(lang: Language, rho: str) -> None:
    sigma = set(lang.alphabet)
    for p, c in enumerate(rho):
        if c != FREE and c not in sigma:
            raise InputError(
                f"symbol {c!r} at position {p + 1} of a cube for language {lang.name}",
                expected="symbols of " + "".join(lang.alphabet) + " or '*'",
            )


def supported(lang: Language) -> str | None:
    """None if members of ``lang`` can be counted over cubes, else why not."""
    if lang.is_regular or isinstance(lang, Majority | AnBn):
        return None
    if isinstance(lang, Dyck) and lang.k == 1:
        return None
    return (
        f"exact counts over cubes are implemented for regular languages (DFAs), majority, "
        f"Dyck-1 and aⁿbⁿ, not for {lang.name}"
    )


def cube_size(alphabet_size: int, rho: str) -> int:
    """|Σ|^free: the number of completions of ρ."""
    return alphabet_size ** rho.count(FREE)


def count_members(lang: Language, rho: str) -> int:
    """The exact number of completions of ``rho`` that are members of ``lang``."""
    _check(lang, rho)
    why = supported(lang)
    if why:
        raise UnsupportedError(why, expected="a language whose cube counts are implemented")
    if FREE not in rho:
        return int(lang.contains(rho))
    if isinstance(lang, Majority):
        ones, free = rho.count("1"), rho.count(FREE)
        # members: 2·(ones + k) > n  ⇔  k ≥ ⌊n/2⌋ − ones + 1
        k0 = max(0, len(rho) // 2 - ones + 1)
        return sum(comb(free, k) for k in range(k0, free + 1))
    if isinstance(lang, AnBn):
        cand = _anbn(len(rho))
        return int(cand is not None and _compatible(rho, cand))
    return int(_suffix_table(lang, rho, True)[0][_machine(lang, len(rho))[0]])


def completion(lang: Language, rho: str, member: bool) -> str | None:
    """A completion of ``rho`` whose membership in ``lang`` is ``member`` (None if every
    completion has the other membership). Deterministic: the least symbol (in Σ's order)
    that keeps a completion of the asked membership possible, position by position."""
    _check(lang, rho)
    why = supported(lang)
    if why:
        raise UnsupportedError(why, expected="a language whose cube counts are implemented")
    alpha = lang.alphabet
    if FREE not in rho:
        return rho if lang.contains(rho) == member else None
    if isinstance(lang, Majority):
        n, ones, free = len(rho), rho.count("1"), rho.count(FREE)
        k0 = max(0, n // 2 - ones + 1)  # fewest free 1s that make a member
        k = (k0 if k0 <= free else None) if member else (k0 - 1 if k0 >= 1 else None)
        if k is None:
            return None
        out, left = [], min(k, free)
        for c in rho:
            if c == FREE:  # the first k free positions carry 1
                out.append("1" if left > 0 else "0")
                left -= 1
            else:
                out.append(c)
        s = "".join(out)
        return s if lang.contains(s) == member else None
    if isinstance(lang, AnBn):
        cand = _anbn(len(rho))
        fits = cand is not None and _compatible(rho, cand)
        if member:
            return cand if fits else None
        for fill in alpha:  # two constant fillings differ somewhere free: one is not cand
            s = "".join(fill if c == FREE else c for c in rho)
            if s != cand:
                return s
        return None
    table = _suffix_table(lang, rho, member)
    q, cols, _ = _machine(lang, len(rho))
    if table[0][q] == 0:
        return None
    out = []
    for i, c in enumerate(rho):
        for a in alpha if c == FREE else (c,):
            r = int(cols[a][q])
            if table[i + 1][r] > 0:
                out.append(a)
                q = r
                break
    return "".join(out)


# ----------------------------------------------------------------------------- tables
# A language is run as a deterministic machine: a regular one by its DFA; Dyck-1 by its
# height 0…n+1 plus a dead state for "went below 0" (a non-member for ever).
# _suffix_table[i][q] is the number of completions of ρ[i:] that, read from state q, end
# with the asked membership.


def _machine(lang: Language, n: int) -> tuple[int, dict[str, np.ndarray], np.ndarray]:
    """(start state, next-state array per symbol, accepting mask)."""
    if lang.is_regular:
        dfa = lang.as_dfa()
        cols = {
            a: np.array([dfa.delta[q][dfa.symbol_index[a]] for q in range(dfa.num_states)])
            for a in dfa.alphabet
        }
        acc = np.array([q in dfa.accepting for q in range(dfa.num_states)])
        return dfa.start, cols, acc
    dead = n + 2
    heights = np.arange(n + 3)
    opener, closer = lang.alphabet
    up_ = np.minimum(heights + 1, n + 1)
    down = np.where(heights >= 1, heights - 1, dead)
    up_[dead], down[dead] = dead, dead
    acc = heights == 0
    return 0, {opener: up_, closer: down}, acc


def _suffix_table(lang: Language, rho: str, member: bool) -> list[np.ndarray]:
    _, cols, acc = _machine(lang, len(rho))
    table = [np.where(acc == member, 1, 0).astype(object)]
    for i in range(len(rho) - 1, -1, -1):
        nxt = table[-1]
        syms = lang.alphabet if rho[i] == FREE else (rho[i],)
        cur = nxt[cols[syms[0]]]
        for a in syms[1:]:
            cur = cur + nxt[cols[a]]
        table.append(cur)
    table.reverse()
    return table


def _anbn(n: int) -> str | None:
    return "a" * (n // 2) + "b" * (n // 2) if n % 2 == 0 else None


def _compatible(rho: str, s: str) -> bool:
    return all(c in (FREE, d) for c, d in zip(rho, s, strict=True))
