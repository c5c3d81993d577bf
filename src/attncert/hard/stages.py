"""Stages 1 and 2 of the Depth Reduction Lemma on a concrete instance (Hahn 2020
§5.1; supplement Lemma 6, Lemmas 15–17, Corollary 18), and the invariants the
proof trace reports. Untrusted (uses float rankings); the checker re-derives
everything that matters from the final restriction.

Terms, for the collapse of layer ℓ: the tables of layer ℓ−1 are the "layer-0
activations" of a c-transformer (c = largest dependency set); a tuple
((h, i), z) is a head h at position i with y_i = z. A tuple is *satisfied* when
the input positions that attention can still reach total ≤ c·k (supplement
Definition 8); it *k-depends* on the first k non-constant positions of its
ranking (Definitions 11–12).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from attncert.hard.search.ranking import TupleRanking
from attncert.hard.tables import Table
from attncert.restriction import Restriction

__implements__ = (
    "Hahn S1 Lemma 6",
    "Hahn S1 Lemma 15",
    "Hahn S1 Definition 16",
    "Hahn S1 Lemma 17",
    "Hahn S1 Corollary 18",
    "Hahn S1 eq. (5)",
    "Hahn S1 eq. (11)",
)


@dataclass(frozen=True)
class Invariant:
    """One of the paper's inequalities, evaluated on this instance."""

    name: str
    source: str
    value: float
    bound: float
    relation: str  # "<=" or ">="

    @property
    def holds(self) -> bool:
        return self.value <= self.bound if self.relation == "<=" else self.value >= self.bound

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "source": self.source,
            "value": self.value,
            "bound": self.bound,
            "relation": self.relation,
            "holds": self.holds,
        }


def dependency_c(tables: tuple[Table, ...]) -> int:
    return max(1, max((len(t.deps) for t in tables), default=1))


def stage1(
    tables: tuple[Table, ...], rho: Restriction, eta: Fraction
) -> tuple[Restriction, list[Invariant]]:
    """Lemma 6: fix every free input that feeds more than (1/η)·c/C activations."""
    c = dependency_c(tables)
    C = Fraction(rho.num_free, rho.n)
    if C == 0:
        return rho, []
    threshold = Fraction(c) / (eta * C)
    feeds = Counter(u for t in tables for u in t.deps)
    heavy = sorted(u for u, cnt in feeds.items() if cnt > threshold)
    new = rho.fix({u: rho.symbols[0] for u in heavy})
    n = rho.n
    degree = max(
        (cnt for u, cnt in Counter(u for t in tables for u in t.deps if new.is_free(u)).items()),
        default=0,
    )
    return new, [
        Invariant(
            "inputs fixed by Stage 1", "S1 Lemma 6 (≤ ηCn)", len(heavy), float(eta * C * n), "<="
        ),
        Invariant(
            "max activations fed by a free input",
            "S1 Lemma 6.1 (≤ c/(ηC))",
            degree,
            float(threshold),
            "<=",
        ),
        Invariant(
            "free after Stage 1", "S1 (5): ≥ (1−η)Cn", new.num_free, float((1 - eta) * C * n), ">="
        ),
    ]


def _unsatisfied(tr: TupleRanking, tables: tuple[Table, ...], c: int, k: int) -> bool:
    if tr.cutoff != float("-inf"):
        return True
    reach = set()
    for key in tr.keys:
        reach.update(tables[key.position].deps)
    return len(reach - set(tables[tr.position].deps)) > c * k


def _k_depends(tr: TupleRanking, k: int) -> tuple[int, ...]:
    return tuple(key.position for key in tr.keys[:k])


def stage2(
    rank,  # callable: (tables) -> list[TupleRanking]
    tables: tuple[Table, ...],
    rho: Restriction,
    *,
    k: int,
    heads: int,
    eta: Fraction,
    C: Fraction,
    restrict,  # callable: (tables, rho) -> tables
    max_rounds: int = 200,
) -> tuple[Restriction, list[Invariant], dict]:
    """Lemmas 15–17: while some position has more than 2^c·k·H k-depending unsatisfied
    tuples, fix its inputs to the value that maximizes attention for most of them
    (pigeonhole). Positions with disjoint inputs are fixed together in one round."""
    if rho.num_free == 0 or C == 0:
        return rho, [], {"rounds": 0, "fixed": 0, "unsatisfied": 0}
    c = dependency_c(tables)
    limit = (2**c) * k * heads
    rounds = fixed_total = 0
    sequence: list[dict] = []  # Definition 16's σ_1 ≼ σ_2 ≼ …, one entry per round
    tabs = restrict(tables, rho)
    while True:
        rankings = rank(tabs)
        unsat = [tr for tr in rankings if _unsatisfied(tr, tabs, c, k)]
        depending: dict[int, list[TupleRanking]] = {}
        for tr in unsat:
            for m in _k_depends(tr, k):
                depending.setdefault(m, []).append(tr)
        over = sorted(
            (m for m, ts in depending.items() if len(ts) > limit), key=lambda m: -len(depending[m])
        )
        sequence.append({"unsatisfied": len(unsat), "overloaded": len(over)})
        if not over or rounds >= max_rounds:
            break
        used: set[int] = set()
        used_heads: list[int] = []
        fix: dict[int, str] = {}
        for m in over:
            deps = tabs[m].deps
            if used.intersection(deps):
                continue
            used_heads.append(m)
            votes = Counter()
            for tr in depending[m]:
                key = next(key for key in tr.keys if key.position == m)
                best_row = max(range(len(key.row_scores)), key=lambda r: key.row_scores[r])
                votes[best_row] += 1
            row = votes.most_common(1)[0][0]
            digits = []
            for _ in deps:
                digits.append(row % tabs[m].base)
                row //= tabs[m].base
            for u, sym in zip(deps, reversed(digits), strict=True):
                fix[u] = rho.symbols[sym]
            used.update(deps)
        rho = rho.fix(fix)
        sequence[-1].update(heads_fixed=sorted(used_heads), bits_fixed=len(fix))
        fixed_total += len(fix)
        rounds += 1
        tabs = restrict(tables, rho)
    n = rho.n
    worst = max((len(ts) for ts in depending.values()), default=0)
    neighbours = _max_neighbours(unsat, tabs, k)
    f_paper = Fraction(2 ** (2 * c) * c * c * k * k * heads) / (eta * C)
    invariants = [
        Invariant(
            "max k-depending unsatisfied tuples per position",
            "S1 Lemma 17.2 (≤ 2^c·k·H)",
            worst,
            limit,
            "<=",
        ),
        Invariant(
            "free after Stage 2",
            "S1 Lemma 17.1: ≥ (1−2η)Cn",
            rho.num_free,
            float((1 - 2 * eta) * C * n),
            ">=",
        ),
        Invariant(
            "max unsatisfied k-neighbours of an unsatisfied tuple",
            "S1 Corollary 18.2 (f ≤ 2^{2c}c²k²H/(ηC))",
            neighbours,
            float(f_paper),
            "<=",
        ),
    ]
    info = {"rounds": rounds, "fixed": fixed_total, "unsatisfied": len(unsat), "sequence": sequence}
    return rho, invariants, info


def _max_neighbours(unsat: list[TupleRanking], tabs: tuple[Table, ...], k: int) -> int:
    """Largest number of unsatisfied k-neighbours (tuples sharing a k-depended input)."""
    by_bit: dict[int, list[int]] = {}
    bits_of = []
    for t, tr in enumerate(unsat):
        bits = set()
        for m in _k_depends(tr, k):
            bits.update(tabs[m].deps)
        bits_of.append(bits)
        for u in bits:
            by_bit.setdefault(u, []).append(t)
    work = sum(len(v) ** 2 for v in by_bit.values())
    best = 0
    for t, bits in enumerate(bits_of):
        if work > 5_000_000:
            count = sum(len(by_bit[u]) - 1 for u in bits)  # an upper bound
        else:
            nb = set()
            for u in bits:
                nb.update(by_bit[u])
            nb.discard(t)
            count = len(nb)
        best = max(best, count)
    return best
