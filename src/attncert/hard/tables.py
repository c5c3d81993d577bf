"""Activation tables: a c-transformer made concrete (Hahn 2020, Definition 3).

After some layers have been collapsed under a restriction ρ, the activation at
token position j is a function of a few free input positions S_j (its
*dependency set*). A :class:`Table` stores that function exactly: one row per
assignment of S_j, each row pointing to an exact activation vector (python-flint
``fmpq``) and its correctly rounded float64 copy (used only by filters with a
rigorous error bound, never for a decision on its own).

Part of the trusted kernel (see :mod:`attncert.hard.checker`): imports no solver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np
from flint import fmpq, fmpq_mat

from attncert.hard.restriction import Restriction
from attncert.model.exact import exact_weights, position_part_exact
from attncert.model.spec import Model

__implements__ = (
    "Hahn Definition 3",
    "Hahn eq. (4)",
    "Hahn S1 Definition 2",
    "Hahn S1 eq. (1)",
)

Vector = tuple[fmpq, ...]


def to_float(x: fmpq) -> float:
    """Correctly rounded float64 of an exact rational (Python int division rounds correctly)."""
    return int(x.p) / int(x.q)


@dataclass(frozen=True, eq=False)
class Table:
    """y_j as an exact function of the input positions ``deps``.

    Row r corresponds to the assignment of ``deps`` whose symbol indices, read
    as a base-|Σ| number with ``deps[0]`` most significant, equal r.
    """

    deps: tuple[int, ...]
    base: int  # |Σ|
    value_of_row: tuple[int, ...]
    values: tuple[Vector, ...]
    floats: np.ndarray  # (len(values), d)

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


def make_table(deps: tuple[int, ...], base: int, row_vectors: Sequence[Vector]) -> Table:
    """Deduplicate exact row vectors into a :class:`Table`.

    Rows are grouped by their correctly rounded float copies first (equal exact
    vectors have equal floats); within a group, exact equality decides."""
    groups: dict[bytes, list[int]] = {}
    values: list[Vector] = []
    float_rows: list[np.ndarray] = []
    value_of_row = []
    for vec in row_vectors:
        fl = np.array([to_float(x) for x in vec], dtype=np.float64)
        key = fl.tobytes()
        ids = groups.setdefault(key, [])
        for vid in ids:
            if values[vid] == vec:
                break
        else:
            vid = len(values)
            values.append(vec)
            float_rows.append(fl)
            ids.append(vid)
        value_of_row.append(vid)
    floats = np.array(float_rows, dtype=np.float64).reshape(len(values), -1)
    return Table(tuple(deps), base, tuple(value_of_row), tuple(values), floats)


def restrict_table(table: Table, rho: Restriction) -> Table:
    """The same function with the positions ρ fixes substituted (rows filtered)."""
    if all(rho.is_free(u) for u in table.deps):
        return table
    alpha = {s: k for k, s in enumerate(rho.symbols)}
    base = len(rho.symbols)
    new_deps = tuple(u for u in table.deps if rho.is_free(u))
    vectors = []
    for combo in product(range(base), repeat=len(new_deps)):
        sym = dict(zip(new_deps, combo, strict=True))
        r = 0
        for u in table.deps:
            r = r * base + (sym[u] if u in sym else alpha[rho.fixed[u]])
        vectors.append(table.values[table.value_of_row[r]])
    return make_table(new_deps, base, vectors)


def initial_tables(model: Model, rho: Restriction) -> tuple[Table, ...]:
    """Layer-0 tables under ρ: a free input position depends on itself, every
    other token (fixed input, BOS, EOS) is constant."""
    n = rho.n
    n_tok = model.n_tokens(n)
    off = model.input_offset()
    ew = exact_weights(model)
    pos = position_part_exact(model, n_tok).entries()
    word = ew.word.entries()
    d = model.d
    tokens = model.encode(rho.complete({}))

    def vec(t: int, tok: int) -> Vector:
        return tuple(word[tok * d + c] + pos[t * d + c] for c in range(d))

    tables = []
    for t in range(n_tok):
        u = t - off
        if 0 <= u < n and rho.is_free(u):
            rows = [vec(t, model.token_index[s]) for s in rho.symbols]
            tables.append(make_table((u,), len(rho.symbols), rows))
        else:
            tables.append(make_table((), len(rho.symbols), [vec(t, tokens[t])]))
    return tuple(tables)


def stack_values(tables: Sequence[Table]) -> tuple[np.ndarray, np.ndarray, list[Vector]]:
    """All (position, value) pairs: owner position per row, float matrix, exact vectors."""
    owner = np.concatenate(
        [np.full(len(t.values), j, dtype=np.int64) for j, t in enumerate(tables)]
    )
    floats = np.concatenate([t.floats for t in tables], axis=0)
    exact = [v for t in tables for v in t.values]
    return owner, floats, exact


def exact_matrix(vectors: Sequence[Vector], d: int) -> fmpq_mat:
    return fmpq_mat(len(vectors), d, [x for v in vectors for x in v])
