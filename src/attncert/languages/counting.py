"""Exact member counts over a cube, and completions of a chosen membership.

A *cube* is a restriction ρ ∈ (Σ ∪ {*})ⁿ: the strings of length n that agree with ρ on
its fixed positions. Under the uniform distribution on Σⁿ it has measure |Σ|^(free − n).
Certified accuracy (:mod:`attncert.kernel.verify.checker`) needs, for every cube on which a
model's decision is certified constant, the exact number of its members of L:

* **regular languages** (PARITY, 1*, first_last, any DFA): dynamic programming over the
  positions, state = DFA state; a fixed position takes one transition, a free one sums
  over Σ — O(n·|Q|·|Σ|) big-integer additions;
* **majority** (more 1s than 0s): with a fixed 1s and f free positions, the members are
  Σ_{k > n/2 − a} C(f, k);
* **Dyck-1**: dynamic programming over the height (a ballot count), the height capped by
  the positions left, so that only heights that can still return to 0 are kept;
* **Dyck-k, k ≥ 2**: dynamic programming over stacks in which a bracket opened at a free
  position is a *wildcard* whose type is not chosen yet: a fixed closer of type t pops it
  (its type is then t: one way), a free closer pops it with k ways (the pair's type), and
  pops a typed bracket with one way (its own closer). Each member completion is one path
  counted once with its multiplicity. Refused (:class:`UnsupportedError`) when a position
  has more than :data:`DYCK_STATES` distinct stacks;
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
DYCK_STATES = 100_000  # distinct stacks per position before a Dyck-k count is refused
_WILD = -1  # a bracket opened at a free position, its type not chosen yet


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
    if isinstance(lang, Dyck):
        return None
    return (
        f"exact counts over cubes are implemented for regular languages (DFAs), majority, "
        f"Dyck-k and aⁿbⁿ, not for {lang.name}"
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
    if isinstance(lang, Dyck) and lang.k > 1:
        return _dyck_layers(lang.pairs, rho)[-1].get((), 0)
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
    if isinstance(lang, Dyck) and lang.k > 1:
        s = _dyck_member(lang.pairs, rho) if member else _dyck_nonmember(lang, rho)
        if s is not None and lang.contains(s) != member:  # pragma: no cover - a bug here
            raise AssertionError(f"Dyck completion {s!r} of {rho!r} has the wrong membership")
        return s
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


def _dyck_step(pairs: tuple[str, ...], c: str, st: tuple[int, ...]):
    """The (next stack, multiplicity, action) moves of Dyck-k's wildcard machine on symbol
    ``c`` (or a free position) from stack ``st``; action is ("open", None), ("close", t)
    with t the type closed (None: a free closer of a wildcard, type chosen here)."""
    if c == FREE:
        yield (*st, _WILD), 1, ("open", None)
        if st:
            top = st[-1]
            yield (
                st[:-1],
                (len(pairs) if top == _WILD else 1),
                ("close", None if top == _WILD else top),
            )
        return
    for t, (o, x) in enumerate(pairs):
        if c == o:
            yield (*st, t), 1, ("open", t)
        elif c == x and st and st[-1] in (t, _WILD):
            yield st[:-1], 1, ("close", t)


def _dyck_layers(pairs: tuple[str, ...], rho: str) -> list[dict[tuple[int, ...], int]]:
    """layers[i]: every stack reachable after ρ[:i] that can still be emptied by the end
    (height ≤ positions left), with its number of weighted paths (module docstring)."""
    n = len(rho)
    layers: list[dict[tuple[int, ...], int]] = [{(): 1}]
    for i, c in enumerate(rho):
        left, nxt = n - i - 1, {}
        for st, w in layers[-1].items():
            for st2, mult, _ in _dyck_step(pairs, c, st):
                if len(st2) <= left:
                    nxt[st2] = nxt.get(st2, 0) + w * mult
        if len(nxt) > DYCK_STATES:
            raise UnsupportedError(
                f"counting Dyck-{len(pairs)} members of a cube of length {n} needs more than "
                f"{DYCK_STATES:,} bracket stacks at position {i + 1}",
                expected="a cube with fewer interleaved fixed brackets",
            )
        layers.append(nxt)
    return layers


def _dyck_member(pairs: tuple[str, ...], rho: str) -> str | None:
    """A member completion: a path through the reachable stacks that ends empty, walked
    forward among the stacks from which the end is reachable; a wildcard's opening symbol
    is written when its pair is closed (a free closer chooses the first pair)."""
    layers = _dyck_layers(pairs, rho)
    if () not in layers[-1]:
        return None
    good = [set() for _ in layers]
    good[-1] = {()}
    for i in range(len(rho) - 1, -1, -1):
        good[i] = {
            st
            for st in layers[i]
            if any(st2 in good[i + 1] for st2, _, _ in _dyck_step(pairs, rho[i], st))
        }
    out: list[str] = []
    opened: list[int] = []  # output index of each bracket on the stack
    st: tuple[int, ...] = ()
    for i, c in enumerate(rho):
        st2, _, (act, t) = next(m for m in _dyck_step(pairs, c, st) if m[0] in good[i + 1])
        if act == "open":
            opened.append(len(out))
            out.append(c if c != FREE else "?")
        else:
            j = opened.pop()
            t = 0 if t is None else t
            if out[j] == "?":
                out[j] = pairs[t][0]
            out.append(pairs[t][1])
        st = st2
    return "".join(out)


def _dyck_nonmember(lang: Language, rho: str) -> str:
    """A non-member completion (ρ has a free position): fill with the first symbol; if that
    is a member, change the first free position — a member with one symbol changed is never
    a member (its final height or the type of one matched pair changes)."""
    a, b = lang.alphabet[0], lang.alphabet[1]
    s = rho.replace(FREE, a)
    if lang.contains(s):
        u = rho.index(FREE)
        s = s[:u] + b + s[u + 1 :]
    return s


def _anbn(n: int) -> str | None:
    return "a" * (n // 2) + "b" * (n // 2) if n % 2 == 0 else None


def _compatible(rho: str, s: str) -> bool:
    return all(c in (FREE, d) for c, d in zip(rho, s, strict=True))
