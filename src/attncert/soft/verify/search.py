"""Branch-and-bound over cubes (untrusted search; issue 22).

The root is the cube of all |Σ|ⁿ strings. A cube is decided when the model's decision is
certified constant on it — the affine-form propagation of
:func:`attncert.kernel.soft.affine.bound.restriction_range` (the kernel's own evaluator, used
here as the oracle) gives a logit range that excludes 0 — or, when it is small, by
evaluating every completion with rigorous error bounds
(:mod:`attncert.kernel.soft.batch`, the check's own rule). A cube that is not decided is
split on one free position into |Σ| children, one per symbol (the α,β-CROWN pattern:
bound, then branch where the bound blames most). Cubes are taken largest first, so the
undecided measure falls as fast as the bound allows; when the budget (time, nodes) runs
out, what is left is recorded as open leaves with its exact measure.

Which position to split: first a free position that can capture the readout's attention
(:func:`attncert.soft.verify.capture.capture_order`: a free readout position, then the
positions whose key can come within e⁸ of the best fixed token's score, highest first);
else the one the affine bound blames most — the largest spread of the logit form's
coefficients over that position's symbols (:attr:`AffineRange.blame`) — and where the
bound gave nothing (its forms fell back to boxes), the first free position of a ranking
made once at the root: how far the float logit moves when the position's symbol changes,
at the base string and at its complement (:func:`sensitivity`).

When cubes are left open and no leaf is wrong, a witness is sought among them and carved
into the tree as a one-string leaf (:mod:`attncert.soft.verify.witness`; a quarter of the
node budget at most is kept back for it). A bound whose estimated memory exceeds
:data:`MEMORY_CAP` is not attempted (:func:`bound_memory`).

Every leaf's claims are re-derived by :mod:`attncert.kernel.verify.checker`; nothing here is
trusted.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from attncert.certificates.verify import Leaf, Node
from attncert.errors import UnsupportedError
from attncert.kernel.core.bounds import Undecided
from attncert.kernel.soft.affine.bound import Unsupported, applicable, restriction_range
from attncert.kernel.soft.batch import logit_bounds, tokens
from attncert.kernel.soft.checker import decide
from attncert.kernel.verify.checker import decide_string
from attncert.languages.base import Language
from attncert.languages.counting import completion, count_members, cube_size
from attncert.model.forward import forward
from attncert.model.spec import Model
from attncert.restriction import FREE, Restriction
from attncert.soft.certified.restriction import influence
from attncert.soft.verify.capture import capture_order
from attncert.soft.verify.witness import (
    ATTEMPTS,
    WitnessSearch,
    carve_path,
    holds,
    open_leaf,
    sample_wrong,
)


@dataclass(frozen=True)
class Budget:
    """When the search stops: seconds, nodes, and the largest cube evaluated string by
    string (``exhaustive``: completions; 0 never)."""

    seconds: float = 60.0
    nodes: int = 50_000
    exhaustive: int = 4096
    direct: int = 64  # cubes this small are evaluated string by string without a bound

    def at(self, n: int) -> tuple[int, int]:
        """(exhaustive, direct) at length n: as given up to n = 64; beyond, scaled by
        (64/n)² — one string's rigorous evaluation costs O(n²), while a bound on a cube
        costs about as much as one string (at n = 1024, 4096 completions took minutes and
        the affine bound milliseconds). A single string is always evaluated directly."""
        scale = min(1.0, (64.0 / n) ** 2)
        return int(self.exhaustive * scale), max(1, int(self.direct * scale))


@dataclass
class SearchStats:
    bounds: int = 0  # affine propagations run
    bound_seconds: float = 0.0
    exhaustive_strings: int = 0
    exhaustive_seconds: float = 0.0
    splits: int = 0
    stopped: str = ""  # why the search stopped early ("" when every cube was decided)
    bound_free: int = 0  # the most free positions the affine bound accepts at this n
    bound_refusal: str = ""  # why it refuses more (its work budget), if it does
    split_rules: dict[str, int] = field(default_factory=dict)  # which rule chose each split
    witness: WitnessSearch | None = None  # the sampling for a witness, if it ran
    bound_rate: float = 0.0  # the most seconds per estimated GiB a bound took in this run


@dataclass
class _Cube:
    node: int
    rho: str
    base: str
    order: np.ndarray | None  # inherited split ranking (positions, most blamed first)


class Tree:
    """The nodes as the certificate lists them (parent before child)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = [Node(None, None)]

    def child(self, parent: int, symbol: str) -> int:
        self.nodes.append(Node(parent, symbol))
        return len(self.nodes) - 1

    def split(self, k: int, position: int) -> None:
        nd = self.nodes[k]
        self.nodes[k] = Node(nd.parent, nd.symbol, split=position + 1)

    def leaf(self, k: int, leaf: Leaf) -> None:
        nd = self.nodes[k]
        self.nodes[k] = Node(nd.parent, nd.symbol, leaf=leaf)


def search(
    model: Model,
    lang: Language,
    n: int,
    *,
    budget: Budget,
    base: str,
    seed: int = 0,
    progress: Callable[[float, int], None] | None = None,
) -> tuple[Tree, SearchStats]:
    """Branch and bound (module docstring). ``progress(decided measure, nodes)`` is called
    after every node. When cubes are left open and no leaf is wrong, a witness is sought
    among them (:mod:`attncert.soft.verify.witness`; ``seed`` draws its strings) for at most
    a tenth of ``budget.seconds`` (at least 1 s) more."""
    t0 = time.perf_counter()
    alpha = tuple(model.alphabet)
    tree = Tree()
    stats = SearchStats()
    heap: list[tuple[int, int, _Cube]] = []
    seq = 0

    def push(c: _Cube) -> None:
        nonlocal seq
        heapq.heappush(heap, (-c.rho.count(FREE), seq, c))
        seq += 1

    stats.bound_free, stats.bound_refusal = bound_reach(model, n)
    push(_Cube(0, FREE * n, base, None))
    # the smallest cubes anything can decide, and whether the node budget reaches them
    exhaustive = budget.at(n)[0]
    reach = max(stats.bound_free, int(np.floor(np.log(max(exhaustive, 1)) / np.log(len(alpha)))))
    depth = n - reach
    far = depth > 0 and depth * np.log(len(alpha)) > np.log(max(budget.nodes, 1))
    if far and stats.bound_free < n:
        stats.stopped = (
            f"no cube can be decided within the node budget: the bound applies to at most "
            f"{max(stats.bound_free, 0)} free positions and string-by-string evaluation to "
            f"{exhaustive} completion{'s' if exhaustive != 1 else ''}, {depth} splits deep"
        )
    # nodes kept back for carving a witness out of an open cube (at most a quarter)
    reserve = min(len(alpha) * n, budget.nodes // 4)
    decided = 0.0
    while heap and not far:
        if time.perf_counter() - t0 > budget.seconds:
            stats.stopped = f"time limit ({budget.seconds:g} s)"
            break
        if len(tree.nodes) + len(alpha) > budget.nodes - reserve:
            stats.stopped = f"node limit ({budget.nodes})"
            break
        _, _, cube = heapq.heappop(heap)
        wait = _bound_wait(model, cube, budget, stats)
        if time.perf_counter() - t0 + wait > budget.seconds:
            stats.stopped = (
                f"time limit ({budget.seconds:g} s; the next bound would take about {wait:.0f} s)"
            )
            push(cube)
            break
        leaf, order, rule = _decide(model, lang, cube, budget, stats, t0 + budget.seconds)
        if leaf is not None:
            tree.leaf(cube.node, leaf)
            decided += len(alpha) ** (cube.rho.count(FREE) - n)
        else:
            if cube.order is None:  # the root: one sensitivity ranking, inherited
                cube.order = np.argsort(-sensitivity(model, cube.base), kind="stable")
            p = _first_free(cube.rho, order if order is not None else cube.order)
            rule = rule if order is not None else "sensitivity"
            rest = cube.order[cube.order != p]
            for a, k in zip(alpha, _split(tree, stats, cube.node, p, rule, alpha), strict=True):
                push(
                    _Cube(
                        k,
                        cube.rho[:p] + a + cube.rho[p + 1 :],
                        cube.base[:p] + a + cube.base[p + 1 :],
                        rest,
                    )
                )
        if progress is not None:
            progress(decided, len(tree.nodes))
    left = [cube for _, _, cube in heap]
    wrong = any(nd.leaf is not None and nd.leaf.wrong for nd in tree.nodes)
    if left and not wrong:
        allowance = max(1.0, 0.1 * budget.seconds)
        rng = np.random.default_rng(seed)
        stats.witness = _carve(model, lang, tree, left, budget, stats, rng, allowance)
    for cube in left:
        tree.leaf(cube.node, open_leaf(stats.stopped or "budget"))
    return tree, stats


def _split(tree: Tree, stats: SearchStats, node: int, p: int, rule: str, alpha) -> list[int]:
    """Split ``node`` on position ``p`` (0-based), counted under ``rule``: its children,
    one per symbol of ``alpha``, in order."""
    tree.split(node, p)
    stats.splits += 1
    stats.split_rules[rule] = stats.split_rules.get(rule, 0) + 1
    return [tree.child(node, a) for a in alpha]


def _carve(model, lang, tree: Tree, left: list[_Cube], budget, stats, rng, allowance: float):
    """Sample the open cubes ``left`` for a misclassified string and carve the best one
    into the tree (:mod:`attncert.soft.verify.witness`); ``left`` is updated in place
    (the carved cube leaves it, its open siblings join it)."""
    alpha = tuple(model.alphabet)
    deadline = time.perf_counter() + allowance
    rhos = [c.rho for c in left]
    drawn, cands = sample_wrong(model, lang, rhos, rng, deadline=deadline, max_strings=256)
    if not cands:
        return WitnessSearch(drawn, 0, False)
    for s in cands[:ATTEMPTS]:
        at = next((i for i, c in enumerate(left) if holds(c.rho, s)), None)
        if at is None:  # pragma: no cover - every candidate was drawn from an open cube
            continue
        cube = left[at]
        path = carve_path(cube.rho)
        need = len(path) * len(alpha)
        if len(tree.nodes) + need > budget.nodes:
            return WitnessSearch(
                drawn, len(cands), False, f"carving one needs {need} more nodes (node limit)"
            )
        left.pop(at)
        node, rho = cube.node, cube.rho
        for p in path:
            for a, child in zip(alpha, _split(tree, stats, node, p, "witness", alpha), strict=True):
                here = rho[:p] + a + rho[p + 1 :]
                if a == s[p]:
                    step = (child, here)
                else:
                    left.append(_Cube(child, here, s, None))
            node, rho = step
        leaf = _exhaustive(model, lang, rho, stats)
        tree.leaf(node, leaf)
        if leaf.wrong:
            return WitnessSearch(drawn, len(cands), True)
    return WitnessSearch(drawn, len(cands), False, "arb did not confirm the float decisions")


def _decide(model, lang, cube: _Cube, budget: Budget, stats: SearchStats, deadline: float):
    """(leaf or None, the split ranking, the rule that made it: "capture", "blame" or
    None — then the root's sensitivity ranking applies). ``deadline``: when the arb
    decisions of an exhaustive cube must stop (the cube is then left open)."""
    size = cube_size(len(model.alphabet), cube.rho)
    exhaustive, direct = budget.at(len(cube.rho))
    if size <= direct:
        return _exhaustive(model, lang, cube.rho, stats, deadline), None, None
    free = cube.rho.count(FREE)
    got = None
    if _runs_bound(model, cube, budget, stats):
        t = time.perf_counter()
        stats.bounds += 1
        try:
            got = restriction_range(model, cube.rho, cube.base)
        except (Unsupported, Undecided):
            got = None
        took = time.perf_counter() - t
        stats.bound_seconds += took
        gib = bound_memory(model, len(cube.rho), free) / 2**30
        stats.bound_rate = max(stats.bound_rate, took / gib)
    if got is not None and got.decision is not None:
        try:
            return _bound_leaf(model, lang, cube, got), None, None
        except UnsupportedError:  # a Dyck-k count beyond its stack budget: split further
            got = None
    if size <= exhaustive:
        return _exhaustive(model, lang, cube.rho, stats, deadline), None, None
    order, rule = None, None
    if got is not None and got.blame is not None and np.max(got.blame) > 0:
        free = np.array([i for i, c in enumerate(cube.rho) if c == FREE])
        order, rule = free[np.argsort(-np.asarray(got.blame), kind="stable")], "blame"
    first = capture_order(model, cube.rho, cube.base)
    if len(first):
        rest = order if order is not None else cube.order
        order = first if rest is None else np.concatenate([first, rest])
        rule = "capture"
    return None, order, rule


MEMORY_CAP = 4 << 30  # bytes one affine bound may take (estimated), untrusted guard
RATE_PRIOR = 8.0  # seconds per estimated GiB before any bound ran (measured 0.4–7)


def _bound_wait(model: Model, cube: _Cube, budget: Budget, stats: SearchStats) -> float:
    """Predicted seconds of the affine bound :func:`_decide` would run on ``cube`` (0 when
    it would run none): its estimated GiB (:func:`bound_memory`) times the slowest rate
    seen in this run, or :data:`RATE_PRIOR` before the first bound. A bound is not
    interrupted, so the search stops before one that would overrun the time limit."""
    if not _runs_bound(model, cube, budget, stats):
        return 0.0
    rate = stats.bound_rate or RATE_PRIOR
    return rate * bound_memory(model, len(cube.rho), cube.rho.count(FREE)) / 2**30


def _runs_bound(model: Model, cube: _Cube, budget: Budget, stats: SearchStats) -> bool:
    """Whether :func:`_decide` runs the affine bound on ``cube``: it is larger than the
    cubes evaluated string by string at once, and within the bound's reach (beyond it the
    affine method refuses: work budget, :data:`MEMORY_CAP`)."""
    big = cube_size(len(model.alphabet), cube.rho) > budget.at(len(cube.rho))[1]
    return big and cube.rho.count(FREE) <= stats.bound_free


def bound_memory(model: Model, n: int, free: int) -> float:
    """Estimated peak bytes of one affine bound on a cube with ``free`` free positions:
    about ten (query rows · coefficient columns · d) float64 arrays, the rows being every
    row when a layer after the first needs them as keys and the readout's rows otherwise,
    times half the widest layer's heads. Calibrated on ``trained_parity`` (two layers, two
    heads, d = 16): 2.6 GB measured at n = 1024 with every position free (estimate
    2.9 GB), 9.8 GB at n = 2048 (estimate 11.1 GB)."""
    alpha = len(model.alphabet)
    rows = model.n_tokens(n) + free * (alpha - 1)
    cols = free * (alpha - 1) + 4 * model.d
    queries = rows if len(model.layers) > 1 else alpha
    heads = max((len(layer.heads) for layer in model.layers), default=1)
    return 10.0 * queries * cols * model.d * 8 * max(1.0, heads / 2)


def bound_reach(model: Model, n: int) -> tuple[int, str]:
    """The largest number of free positions for which the affine method applies at length
    n — its work budget (:func:`~attncert.kernel.soft.affine.bound.applicable`) grows with the
    free positions — and fits :data:`MEMORY_CAP` (:func:`bound_memory`); and why it is
    refused beyond that."""

    def refusal(free: int) -> str | None:
        why = applicable(model, n, free)
        if why is None and bound_memory(model, n, free) > MEMORY_CAP:
            why = (
                f"a bound with {free} free positions would take about "
                f"{bound_memory(model, n, free) / 2**30:.1f} GiB, over the search's "
                f"{MEMORY_CAP / 2**30:.0f} GiB cap"
            )
        return why

    why = refusal(n)
    if why is None:
        return n, ""
    none_free = refusal(0)
    if none_free is not None:
        return -1, none_free
    lo, hi = 0, n  # applicable at lo, not at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if refusal(mid) is None:
            lo = mid
        else:
            hi = mid
    return lo, why


def _bound_leaf(model, lang, cube: _Cube, got) -> Leaf:
    decision = bool(got.decision)
    size = cube_size(len(model.alphabet), cube.rho)
    members = count_members(lang, cube.rho)
    right, wrong = (members, size - members) if decision else (size - members, members)
    witness = None
    if wrong:
        witness = completion(lang, cube.rho, member=not decision)
        if decide_string(model, witness, "witness") != decision:  # pragma: no cover
            raise AssertionError(
                f"the affine bound gave decision {decision} on a cube containing "
                f"{witness[:32]}…, which arb decides otherwise: an unsound bound"
            )
    return Leaf(
        "bound",
        decision=decision,
        method="affine",
        base=cube.base,
        z_range=(got.z_lo, got.z_hi),
        members=members,
        right=right,
        wrong=wrong,
        witness=witness,
    )


def _exhaustive(model, lang, rho: str, stats: SearchStats, deadline: float | None = None) -> Leaf:
    """Every completion of ``rho`` decided as the kernel's check decides it: batched
    rigorous enclosures, arb where they leave the sign open
    (:func:`attncert.kernel.soft.batch.logit_bounds`,
    :func:`attncert.kernel.soft.checker.decide`). The cube stays open when arb cannot
    decide a string at 4096 bits, or when the arb decisions pass ``deadline`` (a model
    whose float enclosures are loose leaves many strings to arb)."""
    t = time.perf_counter()
    strings = list(Restriction.parse(model.alphabet, rho).completions())
    lo, hi = logit_bounds(model, tokens(model, strings))
    accept = lo > 0
    left = np.flatnonzero(~(lo > 0) & ~(hi <= 0))
    stats.exhaustive_strings += len(strings)
    for k, i in enumerate(left):
        if deadline is not None and time.perf_counter() > deadline:
            stats.exhaustive_seconds += time.perf_counter() - t
            stats.stopped = stats.stopped or (
                f"time limit, in the arb decisions of {len(left)} completions (--time-limit)"
            )
            return open_leaf(
                f"the float enclosures left {len(left)} of {len(strings)} completions to arb; "
                f"{k} were decided before the time limit"
            )
        prec, ball = decide(model, strings[i])
        if prec is None:
            stats.exhaustive_seconds += time.perf_counter() - t
            return open_leaf(f"arb leaves the sign of {strings[i][:32]} open at 4096 bits")
        accept[i] = bool(ball > 0)
    member = np.array([lang.contains(s) for s in strings], dtype=bool)
    wrong_at = np.flatnonzero(accept != member)
    stats.exhaustive_seconds += time.perf_counter() - t
    return Leaf(
        "exhaustive",
        members=int(member.sum()),
        right=len(strings) - len(wrong_at),
        wrong=len(wrong_at),
        witness=strings[int(wrong_at[0])] if len(wrong_at) else None,
    )


def _first_free(rho: str, order: np.ndarray) -> int:
    """The first position of ``order`` that is free in ``rho``."""
    for p in order:
        if rho[int(p)] == FREE:
            return int(p)
    raise AssertionError("a cube without a free position cannot be split")  # pragma: no cover


def sensitivity(model: Model, base: str, candidates: int = 48) -> np.ndarray:
    """Untrusted split ranking: the attention mass each position receives
    (:func:`attncert.soft.certified.restriction.influence`), and for the ``candidates``
    positions it ranks highest — plus the ends and the readout token — how far the float
    logit moves when the position takes the next symbol of Σ, at ``base`` and at its
    complement (those rank first, by that change)."""
    alpha = list(model.alphabet)
    nxt = {a: alpha[(k + 1) % len(alpha)] for k, a in enumerate(alpha)}
    n = len(base)
    mass = influence(model, base)
    score = mass / max(float(mass.max()), 1e-300)  # in [0, 1]
    cand = set(np.argsort(-mass, kind="stable")[:candidates].tolist()) | {0, n - 1}
    r = model.readout.index(model.n_tokens(n)) - model.input_offset()
    if 0 <= r < n:
        cand.add(r)
    cand = sorted(cand)
    other = "".join(nxt[c] for c in base)
    moved = np.zeros(len(cand))
    for s in (base, other):
        flips = [s] + [s[:i] + nxt[s[i]] + s[i + 1 :] for i in cand]
        z = forward(model, flips, keep_attention=False).logits
        moved = np.maximum(moved, np.abs(z[1:] - z[0]))
    score[cand] = 2.0 + moved  # probed positions first
    return score
