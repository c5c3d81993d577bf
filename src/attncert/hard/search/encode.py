"""Stage 3 as a SAT problem: a reduction from "find ρ' ≽ ρ capturing every head"
to CNF, and back (in the manner of cvxpy's reductions: ``apply`` builds the
formula and remembers what ``invert`` needs to map a model back to ρ').

Variables x(u, σ): "free input position u is fixed to symbol σ" (at most one σ
per u). For each open tuple ((h, i), z) (a query value whose attention is not yet
captured) the hard clauses require one *option*:

* blocker (m, α): fix the positions of S_m to the assignment α, and *neutralize*
  every other key m′ that could reach α's score (every row β of m′'s table whose
  score would beat α is killed: some position of S_m′ is fixed to a symbol other
  than β's) — with k = 1 nothing may remain above the blocker, so the head's
  output is determined by z (the paper's "satisfied" tuple); with k ≥ 2 at most
  k − 1 such keys may stay live, each adding its S_m′ to the dependency set;
* away from z: kill every row of y_i's table that has value z.

Options and tuple clauses are deduplicated (many tuples share their top keys).
Soft clauses ¬x(u, σ) keep positions free: a MaxSAT optimum fixes as few as
possible for the chosen k.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

from attncert.hard.search.ranking import TupleRanking, beats
from attncert.hard.tables import Table
from attncert.model.spec import AttentionKind, Model
from attncert.restriction import Restriction

Clause = tuple[int, ...]


@dataclass
class Encoding:
    """CNF over x(u, σ) variables plus option selectors."""

    rho: Restriction
    var_of: dict[tuple[int, int], int] = field(default_factory=dict)
    bit_of: dict[int, tuple[int, int]] = field(default_factory=dict)
    hard: list[Clause] = field(default_factory=list)
    top: int = 0
    n_tuples: int = 0
    n_options: int = 0

    def x(self, u: int, sigma: int) -> int:
        v = self.var_of.get((u, sigma))
        if v is None:
            self.top += 1
            v = self.var_of[(u, sigma)] = self.top
            self.bit_of[v] = (u, sigma)
        return v

    def new_var(self) -> int:
        self.top += 1
        return self.top

    @property
    def bit_vars(self) -> list[int]:
        return sorted(self.bit_of)

    def invert(self, model_lits: list[int] | set[int]) -> Restriction:
        """The restriction a satisfying assignment describes."""
        true = {lit for lit in model_lits if lit > 0}
        fix = {}
        for v in true:
            if v in self.bit_of:
                u, sigma = self.bit_of[v]
                fix[u] = self.rho.symbols[sigma]
        return self.rho.fix(fix)


def _assignments(table: Table) -> list[tuple[tuple[int, int], ...]]:
    """Row r of ``table`` as ((u, σ), ...) pairs."""
    return [
        tuple(zip(table.deps, combo, strict=True))
        for combo in product(range(table.base), repeat=len(table.deps))
    ]


def encode(
    model: Model,
    layer_index: int,
    tables: tuple[Table, ...],
    rankings: list[TupleRanking],
    rho: Restriction,
    k: int = 1,
) -> Encoding:
    """Hard clauses: every ranked tuple gets one of its options (see module docstring)."""
    if k < 1:
        raise ValueError("k must be ≥ 1")
    enc = Encoding(rho)
    kinds = [h.kind for h in model.layers[layer_index - 1].heads]
    assign_cache: dict[int, list[tuple[tuple[int, int], ...]]] = {}

    def rows_of(m: int) -> list[tuple[tuple[int, int], ...]]:
        r = assign_cache.get(m)
        if r is None:
            r = assign_cache[m] = _assignments(tables[m])
        return r

    def kill(assignment: tuple[tuple[int, int], ...]) -> Clause:
        return tuple(
            sorted(enc.x(u, s) for u, sig in assignment for s in range(rho_base) if s != sig)
        )

    rho_base = len(rho.symbols)
    option_var: dict[frozenset, int] = {}
    seen_tuples: set[Clause] = set()

    def option(
        clauses: frozenset, card: tuple[tuple[Clause, ...], ...] = (), bound: int = 0
    ) -> int | None:
        key = frozenset([clauses, card, bound]) if card else clauses
        if not clauses and not card:
            return None
        sel = option_var.get(key)
        if sel is None:
            sel = option_var[key] = enc.new_var()
            for cl in clauses:
                enc.hard.append((-sel, *cl))
            if card:
                _at_most_live(enc, sel, card, bound)
        return sel

    for tr in rankings:
        kind = kinds[tr.head]
        own = set(tables[tr.position].deps)
        # keys that depend only on the query's own inputs add nothing to its dependency set
        keys = tuple(key for key in tr.keys if not set(tables[key.position].deps) <= own)
        if tr.cutoff == float("-inf") and (
            not keys
            or (
                tr.blocker is not None
                and not any(
                    beats(kind, sc, key.position, tr.blocker_score, tr.blocker)
                    for key in keys
                    for sc in key.row_scores
                )
            )
        ):
            continue  # nothing that adds dependencies can win: already satisfied
        sels: list[int] = []
        trivially = False
        for rank, key in enumerate(tr.keys):
            m = key.position
            for r, (assignment, s_alpha) in enumerate(zip(rows_of(m), key.row_scores, strict=True)):
                del r
                if tr.blocker is not None and not beats(
                    kind, s_alpha, m, tr.blocker_score, tr.blocker
                ):
                    continue  # this row would not even beat the current blocker
                if tr.cutoff > s_alpha or (tr.cutoff == s_alpha and kind is AttentionKind.AVERAGE):
                    continue  # keys outside the ranked top could reach it
                clauses = {(enc.x(u, sig),) for u, sig in assignment}
                live_kills: list[tuple[Clause, ...]] = []  # keys that may stay live (k ≥ 2)
                forced = 0  # keys every row of which beats the blocker: live whatever is fixed
                for other in keys:
                    if other.position == m:
                        continue
                    danger = [
                        a
                        for a, sb in zip(rows_of(other.position), other.row_scores, strict=True)
                        if beats(kind, sb, other.position, s_alpha, m)
                    ]
                    if not danger:
                        continue
                    if len(danger) == len(rows_of(other.position)):
                        forced += 1
                    elif k == 1:
                        clauses.update(kill(a) for a in danger)
                    else:
                        live_kills.append(tuple(kill(a) for a in danger))
                if forced > k - 1:
                    continue
                if len(live_kills) + forced <= k - 1:
                    live_kills = []  # the cardinality bound holds whatever is fixed
                sel = option(frozenset(clauses), tuple(live_kills), k - 1 - forced)
                if sel is None:
                    trivially = True
                    break
                sels.append(sel)
            if trivially:
                break
            del rank
        if trivially:
            continue
        # away from z: y_i takes another value
        ti = tables[tr.position]
        rows_i = rows_of(tr.position)
        if not ti.is_constant:
            kills = frozenset(
                kill(a) for a, v in zip(rows_i, ti.value_of_row, strict=True) if v == tr.value
            )
            sel = option(kills)
            if sel is not None:
                sels.append(sel)
        clause = tuple(sorted(set(sels)))
        if clause not in seen_tuples:
            seen_tuples.add(clause)
            enc.hard.append(clause)
        enc.n_tuples += 1
    # at most one symbol per position
    by_u: dict[int, list[int]] = {}
    for (u, _), v in enc.var_of.items():
        by_u.setdefault(u, []).append(v)
    for vs in by_u.values():
        for a in range(len(vs)):
            for b in range(a + 1, len(vs)):
                enc.hard.append((-vs[a], -vs[b]))
    enc.n_options = len(option_var)
    return enc


def _at_most_live(
    enc: Encoding, sel: int, groups: tuple[tuple[Clause, ...], ...], bound: int
) -> None:
    """sel → at most ``bound`` of the groups stay live (a group is neutralized when all its
    kill clauses hold). Sequential-counter encoding, every clause guarded by ¬sel."""
    from pysat.card import CardEnc, EncType

    neutral = []
    for kills in groups:
        nv = enc.new_var()
        for cl in kills:
            enc.hard.append((-sel, -nv, *cl))
        neutral.append(nv)
    live = [-v for v in neutral]
    if bound >= len(live):
        return
    card = CardEnc.atmost(lits=live, bound=bound, top_id=enc.top, encoding=EncType.seqcounter)
    enc.top = max(enc.top, card.nv)
    for cl in card.clauses:
        enc.hard.append((-sel, *cl))
