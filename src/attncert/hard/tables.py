"""Activation tables: a c-transformer made concrete (Hahn 2020, Definition 3).

After some layers have been collapsed under a restriction ρ, the activation at
token position j is a function of a few free input positions S_j (its
*dependency set*). A :class:`Table` stores that function: one row per assignment of
S_j, each row pointing to a value — an activation vector in the evaluation's field
(exact rationals for rational models, arb balls otherwise; :mod:`attncert.arith`),
its float64 midpoints and radii (used only by filters with a rigorous error bound,
never for a decision on their own) and its identity key (equal keys ⇒ equal values:
the same computation on identical exact inputs).

An :class:`Evaluation` fixes the field of one attempt: precision escalates by
re-running the collapses at more bits (:func:`attncert.arith.field.escalate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product

import numpy as np
from flint import arb

from attncert.arith.field import Field, Interner, Number, to_floats
from attncert.arith.positionwise import ModelMaps, model_maps
from attncert.kernel.forward import position_rows, word_rows
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
    """The field of one collapse attempt and its identity keys."""

    model: Model
    field: Field
    interner: Interner = field(default_factory=Interner)

    @property
    def maps(self) -> ModelMaps:
        return model_maps(self.model, self.field)

    def key(self, vec: Vector, provenance: tuple) -> int:
        """Identity key of a value: in the exact field the exact vector itself (equal
        vectors get equal keys), in a ball field its provenance (the computation and
        the keys of its inputs)."""
        if self.field.exact:
            return self.interner.key_exact(vec)
        return self.interner.key(provenance)


@dataclass(frozen=True, eq=False)
class Table:
    """y_j as a function of the input positions ``deps``.

    Row r corresponds to the assignment of ``deps`` whose symbol indices, read
    as a base-|Σ| number with ``deps[0]`` most significant, equal r.
    """

    deps: tuple[int, ...]
    base: int  # |Σ|
    value_of_row: tuple[int, ...]
    values: tuple[Vector, ...]
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
    fld: Field,
    deps: tuple[int, ...],
    base: int,
    row_vectors: Sequence[Vector],
    row_keys: Sequence[int],
) -> Table:
    """Deduplicate row values by identity key into a :class:`Table`."""
    index: dict[int, int] = {}
    values: list[Vector] = []
    keys: list[int] = []
    value_of_row = []
    for vec, key in zip(row_vectors, row_keys, strict=True):
        vid = index.get(key)
        if vid is None:
            vid = index[key] = len(values)
            values.append(vec)
            keys.append(key)
        value_of_row.append(vid)
    d = len(values[0])
    mid, rad = to_floats(fld.matrix(len(values), d, [x for v in values for x in v]))
    return Table(tuple(deps), base, tuple(value_of_row), tuple(values), mid, rad, tuple(keys))


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


@lru_cache(maxsize=4)
def _positions(model: Model, n_tok: int) -> tuple[tuple, ...]:
    return tuple(position_rows(model, n_tok))


def evaluation(model: Model) -> Evaluation:
    """A fresh evaluation in the model's first field: exact rationals for a rational
    hard model, arb balls at 53 bits otherwise."""
    from attncert.kernel.forward import is_rational

    return Evaluation(model, Field(None if is_rational(model) else 53))


def initial_tables(ev: Evaluation | Model, rho: Restriction) -> tuple[Table, ...]:
    """Layer-0 tables under ρ: a free input position depends on itself, every
    other token (fixed input, BOS, EOS) is constant. Values are the exact layer-0
    activations (lifted to the field), keyed by their exact value. Given a model, a
    fresh :func:`evaluation` of it is used."""
    if isinstance(ev, Model):
        ev = evaluation(ev)
    model = ev.model
    fld = ev.field
    n = rho.n
    off = model.input_offset()
    tokens = model.encode(rho.complete({}))
    pos = _positions(model, len(tokens))
    word = word_rows(model)

    def value(t: int, tok: int) -> tuple[Vector, int]:
        row = tuple(w + p for w, p in zip(word[tok], pos[t], strict=True))
        key = ev.interner.key_exact(row)
        return (row if fld.exact else tuple(arb(x) for x in row)), key

    tables = []
    for t in range(len(tokens)):
        u = t - off
        if 0 <= u < n and rho.is_free(u):
            vals = [value(t, model.token_index[s]) for s in rho.symbols]
        else:
            u, vals = None, [value(t, tokens[t])]
        deps = () if u is None else (u,)
        tables.append(
            make_table(fld, deps, len(rho.symbols), [v for v, _ in vals], [k for _, k in vals])
        )
    return tuple(tables)


def stack_values(tables: Sequence[Table]) -> tuple[np.ndarray, list[Vector], list[int]]:
    """All (position, value) pairs: owner position per row, values, identity keys."""
    owner = np.concatenate(
        [np.full(len(t.values), j, dtype=np.int64) for j, t in enumerate(tables)]
    )
    values = [v for t in tables for v in t.values]
    keys = [k for t in tables for k in t.keys]
    return owner, values, keys
