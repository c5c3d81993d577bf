"""From a restriction to a wrong answer (Hahn 2020, Corollary 2 and beyond).

After the collapse, the decision depends only on the input positions S. Two
ρ-compatible strings that agree on S get the same answer; if the language
separates them, the model is wrong on one. Untrusted search; the checker
re-runs the model on both strings.

* PARITY (and any language where one substitution always changes membership
  from a member: Dyck-k from a balanced string, aⁿbⁿ from its member): find one
  ρ-compatible string, change one free position outside S.
* Dyck-k: a balanced ρ-compatible completion by interval dynamic programming
  (bitsets), exact: it finds one whenever one exists.
* Any DFA language (first = last among them): a product construction over pairs of
  runs that agree on S finds two completions with different membership, or proves
  there are none.
* MAJORITY: counting. With c₁ ones fixed, a free positions in S and t outside, a pair
  exists iff t ≥ 1 and 1 ≤ m ≤ a + t for m = ⌊n/2⌋ + 1 − c₁ (the ones the free
  positions must add for a majority); it differs in one position outside S. Exact.
"""

from __future__ import annotations

from attncert.languages import DFA, AnBn, Dyck, Language, Majority, Parity
from attncert.restriction import Restriction

__implements__ = ("Hahn Corollary 2",)


def separating_pair(
    lang: Language, rho: Restriction, S: tuple[int, ...], base: str | None = None
) -> tuple[str, str] | None:
    """Two ρ-compatible strings agreeing on S with different membership, or None.

    ``base``: a ρ-compatible string to pair with if one can (MAJORITY, PARITY and DFA
    languages; the pair then starts with ``base``) — the certificate's witness string, so
    that the checker decides one string fewer; otherwise any pair (a pair exists iff one
    is returned, with or without ``base``)."""
    usable = base is not None and len(base) == rho.n and set(base) <= set(rho.symbols)
    if usable and rho.compatible(base):
        partner = _partner(lang, rho, S, base)
        if partner is not None:
            return base, partner
    outside = [u for u in rho.free_positions if u not in set(S)]
    if isinstance(lang, Dyck):
        member = _dyck_member(lang, rho)
        return _flip(member, outside, rho) if member is not None else None
    if isinstance(lang, AnBn):
        n = rho.n
        if n % 2:
            return None
        member = "a" * (n // 2) + "b" * (n // 2)
        return _flip(member, outside, rho) if rho.compatible(member) else None
    if isinstance(lang, Majority):
        return _majority_pair(rho, S)
    if isinstance(lang, Parity) or lang.is_regular:
        return _product(lang.as_dfa(), rho, set(S))
    return None


def _partner(lang: Language, rho: Restriction, S: tuple[int, ...], base: str) -> str | None:
    """A ρ-compatible string agreeing with ``base`` on S with the other membership."""
    if isinstance(lang, (Dyck, AnBn)):
        return None
    if isinstance(lang, Majority):
        if not {"0", "1"} <= set(rho.symbols):
            return None
        in_s = set(S)
        outside = [u for u in rho.free_positions if u not in in_s]
        ones = base.count("1")
        m0 = rho.n // 2 + 1  # a member has ≥ m0 ones
        if ones >= m0:  # turn ones outside S into zeros until it is not
            flip, to = [u for u in outside if base[u] == "1"][: ones - m0 + 1], "0"
            need = ones - m0 + 1
        else:
            flip, to = [u for u in outside if base[u] == "0"][: m0 - ones], "1"
            need = m0 - ones
        if len(flip) < need:
            return None
        out = list(base)
        for u in flip:
            out[u] = to
        return "".join(out)
    if isinstance(lang, Parity) or lang.is_regular:
        pair = _product(lang.as_dfa(), rho, set(S), left=base)
        return None if pair is None else pair[1]
    return None


def _flip(member: str, outside: list[int], rho: Restriction) -> tuple[str, str] | None:
    if not outside:
        return None
    u = outside[0]
    other = next(s for s in rho.symbols if s != member[u])
    return member, member[:u] + other + member[u + 1 :]


def _majority_pair(rho: Restriction, S: tuple[int, ...]) -> tuple[str, str] | None:
    """Two ρ-compatible strings agreeing on S, one with #1 > #0 and one without, or None.

    Only the number of 1s matters. The free positions inside S carry x ones (the same
    in both strings), those outside S carry y ones; the string is a member iff
    c₁ + x + y ≥ m₀ = ⌊n/2⌋ + 1. A pair needs y and y − 1 on the two sides of the
    threshold, i.e. x + y = m := m₀ − c₁ with 1 ≤ y ≤ t and 0 ≤ x ≤ a: possible iff
    t ≥ 1 and 1 ≤ m ≤ a + t (and both symbols are allowed at free positions)."""
    if not {"0", "1"} <= set(rho.symbols):
        return None  # a free position has one choice: every completion is the same string
    in_s = set(S)
    inside = [u for u in rho.free_positions if u in in_s]
    outside = [u for u in rho.free_positions if u not in in_s]
    ones_fixed = sum(1 for c in rho.fixed if c == "1")
    m = rho.n // 2 + 1 - ones_fixed
    a, t = len(inside), len(outside)
    if t < 1 or not 1 <= m <= a + t:
        return None
    y = max(1, m - a)
    x = m - y
    values = {u: ("1" if k < x else "0") for k, u in enumerate(inside)}
    member = dict(values)
    member.update({u: ("1" if k < y else "0") for k, u in enumerate(outside)})
    other = dict(member)
    other[outside[y - 1]] = "0"
    return rho.complete(member), rho.complete(other)


def _dyck_member(lang: Dyck, rho: Restriction) -> str | None:
    """A balanced completion of ρ, or None if there is none.

    Interval dynamic programming with bitsets: B[i] is the set of j such that the
    segment [i, j) can be completed to a balanced string, built from right to left by
    B[i] = {i} ∪ ⋃ {B[k+1] : positions i and k can be a matching pair and k ∈ B[i+1]}.
    O(n²) big-integer operations; exact (no greedy choice)."""
    n = rho.n
    pairs = lang.pairs
    if len(pairs) == 1:
        return _dyck1_member(lang, rho)

    free = set(rho.symbols)

    def can_match(i: int, k: int) -> str | None:
        a, b = rho.fixed[i], rho.fixed[k]
        for p in pairs:
            if (p[0] == a or (a is None and p[0] in free)) and (
                p[1] == b or (b is None and p[1] in free)
            ):
                return p
        return None

    can_open = [
        any(rho.fixed[i] == p[0] or (rho.fixed[i] is None and p[0] in free) for p in pairs)
        for i in range(n)
    ]
    B = [0] * (n + 2)
    B[n] = 1 << n
    for i in range(n - 1, -1, -1):
        acc = 1 << i
        if can_open[i]:
            # the set bits k > i of B[i+1], lowest first (not every k up to the highest)
            rest = B[i + 1] >> (i + 1)
            base = i + 1
            while rest:
                low = rest & -rest
                k = base + low.bit_length() - 1
                if k < n and can_match(i, k):
                    acc |= B[k + 1]
                rest ^= low
        B[i] = acc
    if not (B[0] >> n) & 1:
        return None
    out = [""] * n
    todo = [(0, n)]
    while todo:
        i, j = todo.pop()
        if i == j:
            continue
        # choose the partner k of position i with [i+1, k) balanced and [k+1, j) balanced
        for k in range(i + 1, j):
            p = can_match(i, k)
            if p and (B[i + 1] >> k) & 1 and (B[k + 1] >> j) & 1:
                out[i], out[k] = p[0], p[1]
                todo.append((i + 1, k))
                todo.append((k + 1, j))
                break
        else:  # pragma: no cover - excluded by the DP
            return None
    s = "".join(out)
    return s if lang.contains(s) else None


def _dyck1_member(lang: Dyck, rho: Restriction) -> str | None:
    """A balanced completion of ρ for one bracket pair, in O(n), or None if there is none.

    A completion is balanced iff it has n/2 openers and no prefix closes more than it
    opened. Among the completions with n/2 openers, giving the openers to the *earliest*
    free positions makes every prefix height as large as possible (moving an opener
    earlier never lowers a prefix), so that one completion is balanced iff any is."""
    (pair,) = lang.pairs
    opener, closer = pair[0], pair[1]
    n = rho.n
    free = rho.free_positions
    need = n // 2 - sum(1 for c in rho.fixed if c == opener)
    if n % 2 or need < 0 or need > len(free):
        return None
    if (need > 0 and opener not in rho.symbols) or (need < len(free) and closer not in rho.symbols):
        return None
    values = {u: (opener if k < need else closer) for k, u in enumerate(free)}
    s = rho.complete(values)
    return s if lang.contains(s) else None


def _product(
    dfa: DFA, rho: Restriction, S: set[int], left: str | None = None
) -> tuple[str, str] | None:
    """BFS over pairs of DFA states; positions in S read the same symbol in both runs
    (``left``: the first run reads this string)."""
    alphabet = rho.symbols
    start = (dfa.start, dfa.start)
    layer = {start: None}
    history = []
    for i in range(rho.n):
        syms = (rho.fixed[i],) if rho.fixed[i] is not None else alphabet
        nxt: dict[tuple[int, int], tuple[tuple[int, int], str, str]] = {}
        for p, q in layer:
            for a in syms if left is None else (left[i],):
                pa = dfa.step(p, a)
                if i in S or rho.fixed[i] is not None:
                    key = (pa, dfa.step(q, a))
                    nxt.setdefault(key, ((p, q), a, a))
                else:
                    for b in syms:
                        key = (pa, dfa.step(q, b))
                        nxt.setdefault(key, ((p, q), a, b))
        history.append(nxt)
        layer = nxt
    accepting = set(dfa.accepting)
    goal = next(((p, q) for (p, q) in layer if (p in accepting) != (q in accepting)), None)
    if goal is None:
        return None
    left, right = [], []
    state = goal
    for i in range(rho.n - 1, -1, -1):
        prev, a, b = history[i][state]
        left.append(a)
        right.append(b)
        state = prev
    return "".join(reversed(left)), "".join(reversed(right))
