"""The decision as a function of the free inputs, after every layer is collapsed.

For a readout at one position (``last``, ``first``, an index) the decision is read
from that position's table: one logit per value, its sign decided in the field. For a
``mean`` readout the logit is b + (1/N)·Σ_t w·r_t over every token t, so it depends on
every position's table: the decision is constant when the sum of the per-position
minima already has a sign (each table's terms bounded separately — sound whatever the
overlap of their dependency sets); otherwise the union of the non-constant tables'
dependency sets is enumerated if it is small, and refused if not (Hahn's Theorem 1
reads the decision at one position; a pooled readout may depend on all of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

from attncert.arith.field import Number
from attncert.arith.positionwise import readout_terms
from attncert.errors import AttncertError
from attncert.hard.collapse import decisions_of, readout_table
from attncert.hard.tables import Evaluation, Table


class OutputError(AttncertError):
    """The decision cannot be tabulated (a pooled readout over too many inputs)."""


@dataclass(frozen=True)
class OutputFunction:
    """decisions[r] for the assignments r of ``deps`` (base-|Σ| digits, deps[0] first)."""

    deps: tuple[int, ...]
    base: int
    decisions: tuple[bool, ...]

    def decision(self, symbol_index: Sequence[int]) -> bool:
        r = 0
        for u in self.deps:
            r = r * self.base + symbol_index[u]
        return self.decisions[r]

    @property
    def essential(self) -> tuple[int, ...]:
        """The inputs the decision depends on: its essential variables (e.g. empty when
        the decision is constant) — a subset of ``deps``."""
        base, k = self.base, len(self.deps)
        dec = self.decisions
        out = []
        for t, u in enumerate(self.deps):
            step = base ** (k - 1 - t)
            if any(
                dec[r] != dec[r + step * j]
                for r in range(len(dec))
                if (r // step) % base == 0
                for j in range(1, base)
            ):
                out.append(u)
        return tuple(out)


def output_function(
    ev: Evaluation, tables: Sequence[Table], position: int, max_deps: int
) -> OutputFunction:
    """The decision's function of the free inputs (module docstring)."""
    if not ev.model.readout.pooled:
        table = tables[position]
        dec = decisions_of(ev, readout_table(ev, table))
        return OutputFunction(table.deps, table.base, tuple(dec[v] for v in table.value_of_row))
    return _pooled(ev, tables, max_deps)


def _pooled(ev: Evaluation, tables: Sequence[Table], max_deps: int) -> OutputFunction:
    fld = ev.field
    d = ev.model.d
    n_tok = len(tables)
    base = tables[0].base
    terms: list[list[Number]] = []
    for t in tables:
        m = fld.matrix(len(t.values), d, [c for v in t.values for c in v])
        terms.append(readout_terms(ev.maps, m))
    inv = fld.num(1) / n_tok
    bias = ev.maps.readout_bias
    lo = sum((_lower(fld, ts) for ts in terms), fld.zero()) * inv + bias
    hi = sum((_upper(fld, ts) for ts in terms), fld.zero()) * inv + bias
    if lo > 0:
        return OutputFunction((), base, (True,))
    if hi < 0 or (fld.exact and hi == 0):
        return OutputFunction((), base, (False,))
    deps = tuple(sorted({u for t in tables for u in t.deps}))
    if len(deps) > max_deps:
        raise OutputError(
            f"the mean readout may depend on {len(deps)} free inputs (the per-position ranges "
            "do not fix its sign), more than the cap of "
            f"{max_deps}: Hahn's Theorem 1 reads the decision at one position",
            expected="a readout at one position, or a restriction fixing more inputs",
        )
    decisions = []
    for combo in product(range(base), repeat=len(deps)):
        sym = dict(zip(deps, combo, strict=True))
        total = fld.zero()
        for t, ts in zip(tables, terms, strict=True):
            r = 0
            for u in t.deps:
                r = r * base + sym[u]
            total = total + ts[t.value_of_row[r]]
        decisions.append(fld.sign(total * inv + bias, "the mean readout's sign") > 0)
    return OutputFunction(deps, base, tuple(decisions))


def _lower(fld, xs: list[Number]) -> Number:
    if fld.exact:
        return min(xs)
    out = xs[0]
    for x in xs[1:]:
        out = out.min(x)
    return out


def _upper(fld, xs: list[Number]) -> Number:
    if fld.exact:
        return max(xs)
    out = xs[0]
    for x in xs[1:]:
        out = out.max(x)
    return out
