"""The search for a length-horizon certificate (untrusted; issue 40).

It grows the partition tree of :mod:`attncert.certificates.horizon` over the lengths
[A, B] and asks the kernel's own bound (:func:`attncert.kernel.horizon.bound.pattern_range`)
for each leaf; nothing it decides is trusted — the checker re-derives every leaf.

Order of work (a priority queue by the node's least length, so that the horizon grows from
A and the first failure is found first):

1. lengths up to ``small`` (and those that leave no middle position) are single-length
   leaves, each a verification tree over Σⁿ (:func:`attncert.soft.verify.verify`);
2. a longer node is split on its ends (head, tail) and on a symbol's count until membership
   is the same on all its strings (:mod:`attncert.languages.patterns`);
3. its bound is tried with few middle bins, then more; a bound that decides the
   membership's side is a ``right`` leaf, the other side a ``wrong`` leaf (every string of
   the node is misclassified);
4. an undecided node first tries its *uniform middles* — the strings whose middle is one
   symbol repeated (a count split pinning the other symbol to 0), the usual worst case of
   attention that must find one position — over its whole interval; then it is split at
   the middle of its lengths (the geometric middle for long intervals, so that 10¹² is 40
   splits away), down to single lengths, where one class per position makes the bound exact
   up to rounding;
5. an infinite tail [N, ∞) is bounded by the infinite-interval rules (hard heads, or a key
   that dominates under β = κ·log N); if that fails it is split at 2N, and what the budget
   leaves over stays ``open`` (undecided).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

from attncert.errors import AttncertError, UnsupportedError
from attncert.kernel.core import bounds as B
from attncert.kernel.horizon.bound import pattern_range
from attncert.kernel.horizon.classes import Pattern, used_features
from attncert.languages.base import Language
from attncert.languages.patterns import pattern_membership
from attncert.model.spec import Model

BINS = (1, 4, 16, 64)
BEYOND = 64  # lengths past the first failure still decided one by one
EXACT_MAX = 1 << 15  # middle positions for one class per position at a single length


@dataclass
class Budget:
    seconds: float = 600.0
    max_nodes: int = 20_000
    small: int | None = None  # single-length leaves up to this length (None: as many
    # as exhaustive leaves hold: 16 for a binary softmax model, 12 with hard heads)

    def __post_init__(self) -> None:
        self.start = time.perf_counter()

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.start)


@dataclass
class Work:
    """The tree being grown: node dicts (the certificate's form), their patterns, the
    lengths already refuted (work on them stops) and the search's statistics."""

    lang: Language
    nodes: list[dict] = field(default_factory=list)
    pats: list[Pattern] = field(default_factory=list)
    refuted: list[tuple[int, int | None]] = field(default_factory=list)
    stats: dict = field(default_factory=lambda: {"bounds": 0, "verify": 0, "open": 0})

    def covered(self, pat: Pattern) -> bool:
        """Every length of ``pat`` is already refuted by a wrong leaf."""
        return any(
            a <= pat.lo and (b is None or (pat.hi is not None and pat.hi <= b))
            for a, b in self.refuted
        )

    def first_refuted(self) -> int | None:
        return min((a for a, _ in self.refuted), default=None)

    def add(self, parent: int | None, branch, pat: Pattern) -> int:
        self.nodes.append({"parent": parent, **({} if parent is None else {"branch": branch})})
        self.pats.append(pat)
        return len(self.nodes) - 1


#: features whose value is the same at every middle position
_FLAT = ("1", "[i=1]", "[i=n]", "1/n", "(-1)^n", "n")


def _needs_positions(model: Model) -> bool:
    """Whether middle positions differ by more than their symbol (a feature that varies
    along the middle, ALiBi, rotary, a mask): then more bins help."""
    feats = model.embedding.features
    if any(feats[fi].name not in _FLAT for fi in used_features(model)):
        return True
    return any(
        h.alibi or h.rotary is not None or h.mask.value != "none"
        for layer in model.layers
        for h in layer.heads
    )


def _try(model: Model, pat: Pattern, bins: int):
    try:
        return pattern_range(model, pat, bins)
    except (UnsupportedError, AttncertError, B.Undecided):
        return None


def _decides(r, decision: bool) -> bool:
    return r is not None and ((decision and r.z_lo > 0) or (not decision and r.z_hi <= 0))


def _ends_needed(model: Model, lang: Language) -> tuple[int, int]:
    """How many symbols the ends must fix for membership and the readout: (|u|, |w|)."""
    head = 1 if lang.name == "first_last" else 0
    tail = 1 if lang.name in ("first_last", "ones_star", "majority", "parity", "parity-odd") else 0
    pos = model.readout.position
    if pos == "last" and model.eos is None:
        tail = max(tail, 1)
    if pos == "first" and model.bos is None:
        head = max(head, 1)
    return head, tail


def search(model: Model, lang: Language, lo: int, hi: int | None, budget: Budget, progress=None):
    """The tree (a list of node dicts) and the search's statistics (module docstring)."""
    from attncert.soft.horizon.single import single_length_leaf

    work = Work(lang)
    root = work.add(None, None, Pattern(lo, hi))
    head, tail = _ends_needed(model, lang)
    smallest_pattern = head + tail + 1
    from attncert.soft.horizon.single import exhaustive_cut

    small = exhaustive_cut(model) if budget.small is None else budget.small
    cut = max(small, smallest_pattern - 1)
    queue: list[tuple[int, int, int]] = []  # (least length, order, node)
    order = 0

    def push(k: int) -> None:
        nonlocal order
        heapq.heappush(queue, (work.pats[k].lo, order, k))
        order += 1

    if lo <= cut and (hi is None or hi > cut):
        work.nodes[root]["split"] = {"kind": "length", "at": cut}
        push(work.add(root, 0, Pattern(lo, cut)))
        _probe_and_carve(model, lang, work, work.add(root, 1, Pattern(cut + 1, hi)), budget, push)
    elif lo > cut:
        _probe_and_carve(model, lang, work, root, budget, push)
    else:  # every length is a single-length leaf
        push(root)
    positional = _needs_positions(model)
    while queue:
        _, _, k = heapq.heappop(queue)
        pat = work.pats[k]
        nd = work.nodes[k]
        if budget.left() <= 0 or len(work.nodes) > budget.max_nodes:
            nd["leaf"] = {"kind": "open"}
            work.stats["open"] += 1
            continue
        if progress:
            progress(pat, len(work.nodes))
        if work.covered(pat):  # these lengths are refuted already: no more work on them
            nd["leaf"] = {"kind": "open"}
            work.stats["open"] += 1
            continue
        if pat.hi is not None and pat.hi <= cut:  # single lengths: verify trees
            if pat.hi > pat.lo:
                mid = pat.lo
                nd["split"] = {"kind": "length", "at": mid}
                push(work.add(k, 0, Pattern(pat.lo, mid)))
                push(work.add(k, 1, Pattern(mid + 1, pat.hi)))
                continue
            nd["leaf"], wrong = single_length_leaf(model, lang, pat.lo, budget)
            work.stats["verify"] += 1
            if wrong:
                work.refuted.append((pat.lo, pat.lo))
            continue
        if len(pat.u) < head and not pat.counts and pat.first is None:
            nd["split"] = {"kind": "head"}
            for s in model.alphabet:
                push(work.add(k, s, Pattern(pat.lo, pat.hi, pat.u + s, pat.w)))
            continue
        if len(pat.w) < tail and not pat.counts and pat.first is None:
            nd["split"] = {"kind": "tail"}
            for s in model.alphabet:
                push(work.add(k, s, Pattern(pat.lo, pat.hi, pat.u, s + pat.w)))
            continue
        member = _membership(lang, pat)
        if member is None:
            _refine_membership(work, k, pat, lang, model, push)
            continue
        _bound_or_split(model, work, k, pat, member, positional, push, budget)
    return work


def _membership(lang: Language, pat: Pattern):
    return pattern_membership(
        lang, pat.u, pat.w, pat.counts, pat.lo, pat.hi, None if pat.first is None else pat.first[0]
    )


def _refine_membership(work: Work, k: int, pat: Pattern, lang: Language, model: Model, push):
    """Split a node whose membership is not constant: on a symbol's count (ones_star: a 0 or
    none; majority and parity: at a single length, by the count of 1s), or on its lengths."""
    nd = work.nodes[k]
    name = lang.name
    if name == "ones_star" and not pat.counts:
        nd["split"] = {"kind": "count", "symbol": "0", "at": 1}
        push(work.add(k, 0, Pattern(pat.lo, pat.hi, pat.u, pat.w, (("0", 0, 0),))))
        push(work.add(k, 1, Pattern(pat.lo, pat.hi, pat.u, pat.w, (("0", 1, None),))))
        return
    if pat.hi != pat.lo:
        at = _middle(pat.lo, pat.hi)
        nd["split"] = {"kind": "length", "at": at}
        push(work.add(k, 0, Pattern(pat.lo, at, pat.u, pat.w, pat.counts)))
        push(work.add(k, 1, Pattern(at + 1, pat.hi, pat.u, pat.w, pat.counts)))
        return
    # a single length: split the count of 1s (majority: at n/2; parity: pin it)
    a, b = pat.count_range("1")
    m = pat.m_lo
    b = m if b is None else b
    ones = (pat.u + pat.w).count("1")
    at = max(a + 1, min(b, pat.lo // 2 + 1 - ones)) if name == "majority" else a + 1
    if not a < at <= b:
        nd["leaf"] = {"kind": "open"}
        work.stats["open"] += 1
        return
    nd["split"] = {"kind": "count", "symbol": "1", "at": at}
    push(work.add(k, 0, Pattern(pat.lo, pat.hi, pat.u, pat.w, (("1", a, at - 1),))))
    push(
        work.add(
            k,
            1,
            Pattern(
                pat.lo,
                pat.hi,
                pat.u,
                pat.w,
                (("1", at, None if pat.count_range("1")[1] is None else b),),
            ),
        )
    )


def _middle(lo: int, hi: int | None) -> int:
    """Where to split [lo, hi]: the arithmetic middle, or the geometric one for an interval
    spanning more than a factor 4 (so that 10¹² is about 40 splits away); [lo, ∞) at 2·lo."""
    if hi is None:
        return 2 * lo
    if hi > 4 * lo:
        return max(lo, min(hi - 1, math.isqrt(lo * hi)))
    return (lo + hi) // 2


def _bound_or_split(
    model, work: Work, k: int, pat: Pattern, member: bool, positional, push, budget
):
    nd = work.nodes[k]
    single = pat.hi == pat.lo
    if pat.first is not None:
        _first_node(model, work, k, pat, member, push, budget)
        return
    first = work.first_refuted()
    # past the first failure, long intervals get the cheap tries only (short ones, up to
    # BEYOND lengths, are still decided length by length)
    beyond = first is not None and pat.lo > first and (pat.hi is None or pat.hi - pat.lo > BEYOND)
    tries = list(BINS if positional else (1,))
    if single and positional and pat.m_lo <= EXACT_MAX and not beyond:
        tries.append(0)
    if beyond:
        tries = tries[:1]
    for bins in tries:
        r = _try(model, pat, bins)
        work.stats["bounds"] += 1
        if _decides(r, member):
            nd["leaf"] = {"kind": "bound", "bins": bins, "decision": member, "claim": "right"}
            return
        if _decides(r, not member):
            nd["leaf"] = {"kind": "bound", "bins": bins, "decision": not member, "claim": "wrong"}
            a = pat.counts[0][1] if pat.counts else 0
            work.refuted.append((max(pat.lo, pat.fixed + max(1, a)), pat.hi))
            return
        if budget.left() <= 0:
            break
    # uniform middles over the whole interval (free middle, binary alphabet)
    if not pat.counts and len(model.alphabet) == 2:
        s0, s1 = model.alphabet
        for pin in (s0, s1):
            sub = Pattern(pat.lo, pat.hi, pat.u, pat.w, ((pin, 0, 0),))
            sub_member = pattern_membership(work.lang, sub.u, sub.w, sub.counts, sub.lo, sub.hi)
            if sub_member is None:
                continue
            exact = single and positional and sub.m_lo <= EXACT_MAX
            r = _try(model, sub, 0 if exact else (1 if not positional else 64))
            if _decides(r, not sub_member):  # a wrong uniform middle: carve it out
                nd["split"] = {"kind": "count", "symbol": pin, "at": 1}
                push(work.add(k, 0, sub))
                push(work.add(k, 1, Pattern(pat.lo, pat.hi, pat.u, pat.w, ((pin, 1, None),))))
                return
    # where attention finds the first occurrence of a symbol: split on where that is
    if (
        positional
        and not beyond
        and len(model.alphabet) == 2
        and _first_occurrence(model, work, k, pat, push)
    ):
        return
    if single or beyond:
        nd["leaf"] = {"kind": "open"}
        work.stats["open"] += 1
        return
    at = _middle(pat.lo, pat.hi)
    nd["split"] = {"kind": "length", "at": at}
    push(work.add(k, 0, Pattern(pat.lo, at, pat.u, pat.w, pat.counts)))
    push(work.add(k, 1, Pattern(at + 1, pat.hi, pat.u, pat.w, pat.counts)))


FIRST_BINS = (16, 64, 256)
FIRST_WIDTH = Fraction(1, 4096)  # the narrowest first-occurrence range the search splits


def _first_occurrence(model, work: Work, k: int, pat: Pattern, push) -> bool:
    """Split a free middle on its first occurrence of τ — the τ whose "no τ" middle the
    bound already decides, if one does (that child closes at once). False when the node
    cannot take it (count bounds or a first occurrence already)."""
    if pat.counts or pat.first is not None:
        return False
    pick = None
    for tau in model.alphabet:
        none = Pattern(pat.lo, pat.hi, pat.u, pat.w, ((tau, 0, 0),))
        member = _membership(work.lang, none)
        if member is not None and _decides(_try(model, none, 64), member):
            pick = tau
            break
    tau = pick or model.alphabet[0]
    work.nodes[k]["split"] = {"kind": "first", "symbol": tau}
    push(work.add(k, 0, Pattern(pat.lo, pat.hi, pat.u, pat.w, ((tau, 0, 0),))))
    push(work.add(k, 1, Pattern(pat.lo, pat.hi, pat.u, pat.w, first=(tau, Fraction(0), None))))
    return True


def _first_node(model, work: Work, k: int, pat: Pattern, member: bool, push, budget) -> None:
    """A first-occurrence node: the bound with relative bins (one per position at a single
    length), then a split of the first occurrence's relative position, then of the
    lengths."""
    nd = work.nodes[k]
    single = pat.hi == pat.lo
    tries = (pat.lo + 2,) if single and pat.lo <= EXACT_MAX else FIRST_BINS
    for bins in tries:
        r = _try(model, pat, bins)
        work.stats["bounds"] += 1
        for decision, claim in ((member, "right"), (not member, "wrong")):
            if _decides(r, decision):
                nd["leaf"] = {"kind": "bound", "bins": bins, "decision": decision, "claim": claim}
                if claim == "wrong":
                    from attncert.kernel.horizon.checker import first_nonempty

                    n = first_nonempty(pat, model)
                    if n is not None:
                        work.refuted.append((n, pat.hi))
                return
        if budget.left() <= 0:
            break
    tau, a, b = pat.first
    top = Fraction(1) if b is None else b
    narrow = Fraction(1, 4 * pat.lo) if single else FIRST_WIDTH
    if top - a > narrow:
        t = a + (top - a) / 2
        if b is None and a < Fraction(1, 2):
            t = min(t, Fraction(1, 2))
        nd["split"] = {"kind": "firstpos", "at": f"{t.numerator}/{t.denominator}"}
        push(work.add(k, 0, Pattern(pat.lo, pat.hi, pat.u, pat.w, first=(tau, a, t))))
        push(work.add(k, 1, Pattern(pat.lo, pat.hi, pat.u, pat.w, first=(tau, t, b))))
        return
    if single:
        nd["leaf"] = {"kind": "open"}
        work.stats["open"] += 1
        return
    at = _middle(pat.lo, pat.hi)
    nd["split"] = {"kind": "length", "at": at}
    push(work.add(k, 0, Pattern(pat.lo, at, pat.u, pat.w, first=pat.first)))
    push(work.add(k, 1, Pattern(at + 1, pat.hi, pat.u, pat.w, first=pat.first)))


PROBE_SHARE = 0.15  # of the budget for sampling a misclassified string


def _probe_and_carve(model, lang, work: Work, k: int, budget, push) -> None:
    """Sample for a misclassified string beyond the exhaustive lengths (:mod:`.probe`); if
    one is found at length n, split n off node ``k`` and carve the string out of it as a
    single-string leaf (decided by the kernel), and queue the rest."""
    from attncert.soft.horizon.probe import carve, probe_failure

    pat = work.pats[k]
    found = probe_failure(model, lang, pat.lo, pat.hi, PROBE_SHARE * budget.left())
    if found is None or found[0] < pat.lo + 2:
        push(k)
        return
    n, s = found
    work.nodes[k]["split"] = {"kind": "length", "at": n - 1}
    push(work.add(k, 0, Pattern(pat.lo, n - 1)))
    right = work.add(k, 1, Pattern(n, pat.hi))
    if pat.hi is None or n < pat.hi:
        work.nodes[right]["split"] = {"kind": "length", "at": n}
        single = work.add(right, 0, Pattern(n, n))
        push(work.add(right, 1, Pattern(n + 1, pat.hi)))
    else:
        single = right
    from attncert.kernel.horizon.checker import STRING_MAX
    from attncert.soft.horizon.probe import string_leaf

    leaf = carve(work, single, s, model)
    if len(s) <= STRING_MAX:  # decided in arb by the kernel
        work.nodes[leaf]["leaf"] = string_leaf(model, lang, s)
        if work.nodes[leaf]["leaf"]["claim"] == "wrong":
            work.refuted.append((n, n))
    else:
        push(leaf)
