"""Activation tables: a c-transformer made concrete (Hahn 2020, Definition 3).

After some layers have been collapsed under a restriction ρ, the activation at
token position j is a function of a few free input positions S_j (its
*dependency set*). A :class:`Table` stores that function: one row per assignment of
S_j, each row pointing to a value — an activation vector in the evaluation's field
(exact rationals for rational models, arb balls otherwise; :mod:`attncert.arith`),
its float64 midpoints and radii (used only by filters with a rigorous error bound,
never for a decision on their own) and its identity key (equal keys ⇒ equal values:
the same computation on identical exact inputs).

Values are rows of a :class:`~attncert.arith.rows.RowGraph`: every table value is held
as a float64 enclosure (computed vectorized, :mod:`attncert.arith.enclose`), and its
exact / arb value is computed only when a comparison needs it.

An :class:`Evaluation` fixes the field of one attempt: precision escalates by
re-running the collapses at more bits (:func:`attncert.arith.field.escalate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product

import numpy as np

from attncert.arith import enclose
from attncert.arith.field import Field, Interner, Number
from attncert.arith.positionwise import ModelMaps, model_maps
from attncert.arith.rows import RowGraph
from attncert.model.spec import Model
from attncert.restriction import Restriction

__implements__ = (
    "Hahn Definition 3",
    "Hahn eq. (4)",
    "Hahn S1 Definition 2",
    "Hahn S1 eq. (1)",
)

Vector = tuple[Number, ...]


@dataclass(eq=False)
class Evaluation:
    """The field of one collapse attempt, its identity keys and its rows."""

    model: Model
    field: Field
    interner: Interner = field(default_factory=Interner)
    graph: RowGraph | None = None  # set by :func:`initial_tables`

    @property
    def maps(self) -> ModelMaps:
        return model_maps(self.model, self.field)

    def rows(self, n_tok: int) -> RowGraph:
        if self.graph is None or self.graph.n_tok != n_tok:
            self.graph = RowGraph(self.model, n_tok, self.field, self.interner)
        return self.graph


@dataclass(frozen=True, eq=False)
class Table:
    """y_j as a function of the input positions ``deps``.

    Row r corresponds to the assignment of ``deps`` whose symbol indices, read
    as a base-|Σ| number with ``deps[0]`` most significant, equal r.
    """

    deps: tuple[int, ...]
    base: int  # |Σ|
    value_of_row: tuple[int, ...]
    values: tuple[int, ...]  # the values' rows in the evaluation's RowGraph
    floats: np.ndarray  # (len(values), d) midpoints
    rads: np.ndarray  # (len(values), d) radii: |exact − float| ≤ rad entrywise
    keys: tuple[int, ...]  # identity key per value

    @property
    def is_constant(self) -> bool:
        return len(self.values) == 1

    def row_index(self, symbol_index: Sequence[int]) -> int:
        """Row of the full assignment ``symbol_index[u]`` (indexed by input position)."""
        r = 0
        for u in self.deps:
            r = r * self.base + symbol_index[u]
        return r

    def value_at(self, symbol_index: Sequence[int]) -> int:
        return self.value_of_row[self.row_index(symbol_index)]


def make_table(
    deps: tuple[int, ...],
    base: int,
    rows: Sequence[int],
    mid: np.ndarray,
    rad: np.ndarray,
    keys: Sequence[int],
) -> Table:
    """Deduplicate row values by identity key into a :class:`Table` (``mid``/``rad``:
    the enclosure of each row)."""
    index: dict[int, int] = {}
    first: list[int] = []
    value_of_row = []
    for t, key in enumerate(keys):
        vid = index.get(key)
        if vid is None:
            vid = index[key] = len(first)
            first.append(t)
        value_of_row.append(vid)
    return Table(
        tuple(deps),
        base,
        tuple(value_of_row),
        tuple(int(rows[t]) for t in first),
        mid[first],
        rad[first],
        tuple(keys[t] for t in first),
    )


def restrict_table(table: Table, rho: Restriction) -> Table:
    """The same function with the positions ρ fixes substituted (rows filtered)."""
    if all(rho.is_free(u) for u in table.deps):
        return table
    alpha = {s: k for k, s in enumerate(rho.symbols)}
    base = len(rho.symbols)
    new_deps = tuple(u for u in table.deps if rho.is_free(u))
    picked = []
    for combo in product(range(base), repeat=len(new_deps)):
        sym = dict(zip(new_deps, combo, strict=True))
        r = 0
        for u in table.deps:
            r = r * base + (sym[u] if u in sym else alpha[rho.fixed[u]])
        picked.append(table.value_of_row[r])
    used = sorted(set(picked))
    remap = {v: k for k, v in enumerate(used)}
    return Table(
        new_deps,
        base,
        tuple(remap[v] for v in picked),
        tuple(table.values[v] for v in used),
        table.floats[used],
        table.rads[used],
        tuple(table.keys[v] for v in used),
    )


def evaluation(model: Model) -> Evaluation:
    """A fresh evaluation in the model's first field: exact rationals for a rational
    hard model, arb balls at 53 bits otherwise."""
    from attncert.kernel.hard.decide import is_rational

    return Evaluation(model, Field(None if is_rational(model) else 53))


def initial_tables(ev: Evaluation | Model, rho: Restriction) -> tuple[Table, ...]:
    """Layer-0 tables under ρ: a free input position depends on itself, every
    other token (fixed input, BOS, EOS) is constant. Values are the exact layer-0
    activations (enclosed in float64; exact on demand), keyed by (token, position
    features). Given a model, a fresh :func:`evaluation` of it is used."""
    if isinstance(ev, Model):
        ev = evaluation(ev)
    model = ev.model
    n = rho.n
    off = model.input_offset()
    tokens = model.encode(rho.complete({}))
    graph = ev.rows(len(tokens))
    base = len(rho.symbols)
    toks: list[int] = []
    where: list[int] = []
    spans = []
    for t in range(len(tokens)):
        u = t - off
        if 0 <= u < n and rho.is_free(u):
            opts, deps = [model.token_index[s] for s in rho.symbols], (u,)
        else:
            opts, deps = [tokens[t]], ()
        spans.append((len(toks), len(toks) + len(opts), deps))
        toks.extend(opts)
        where.extend([t] * len(opts))
    rows = graph.add_embedding(toks, where)
    box = enclose.embed(model, np.array(toks, dtype=np.int64), np.array(where), len(tokens))
    keys = [graph.keys[r] for r in rows.tolist()]
    return tuple(
        make_table(deps, base, rows[a:b], box.mid[a:b], box.rad[a:b], keys[a:b])
        for a, b, deps in spans
    )


def stack_values(tables: Sequence[Table]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """All (position, value) pairs: owner position per row, graph rows, identity keys."""
    owner = np.concatenate(
        [np.full(len(t.values), j, dtype=np.int64) for j, t in enumerate(tables)]
    )
    rows = np.array([v for t in tables for v in t.values], dtype=np.int64)
    keys = [k for t in tables for k in t.keys]
    return owner, rows, keys
