"""The float ranking (Hahn S1 eq. (8)) of a refined restriction re-scores only the tuples
that were open in the layer's previous ranking (a closed tuple stays closed, exactly in
floats): its result must be exactly the ranking that scores every row."""

from __future__ import annotations

import itertools

import pytest

from attncert.hard.pipeline import _restrict_all
from attncert.hard.restriction import Restriction
from attncert.hard.search import ranking
from attncert.hard.tables import initial_tables
from attncert.model import random_model

CHAIN = [{}, {0: "1", 7: "0"}, {40: "1", 41: "1", 50: "0"}, {i: "0" for i in range(60, 90, 3)}]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("layers", "heads", "seed", "mask", "kind"),
    [
        (1, 2, 0, "none", "leftmost"),
        (1, 2, 4, "future", "rightmost"),
        (1, 3, 2, "past_strict", "average"),
        (2, 2, 1, "none", "leftmost"),
    ],
)
def test_incremental_ranking_equals_the_full_one(monkeypatch, layers, heads, seed, mask, kind):
    monkeypatch.setattr(ranking, "_MEMO", type(ranking._MEMO)())
    monkeypatch.setattr(ranking, "_LAST", {})
    model = random_model(layers, heads, 8, seed=seed, mask=mask, kind=kind)
    n = 96
    tables = initial_tables(model, Restriction.free(model.alphabet, n))
    rho = Restriction.free(model.alphabet, n)
    used = []
    partial = []
    orig = ranking._rank

    def spy(model, layer_index, tables, top, bound=None):
        partial.append(bound is not None)
        return orig(model, layer_index, tables, top, bound)

    monkeypatch.setattr(ranking, "_rank", spy)
    for fix in CHAIN:
        rho = rho.fix(fix)
        tabs = _restrict_all(tables, rho)
        got = ranking.rank_tuples(model, 1, tabs, top=8)
        assert got == ranking._rank(model, 1, tabs, 8)  # every row scored
        used.append(ranking._LAST[(model.digest, 1)][1])
    assert partial[0::2] == [False, True, True, True]  # refinements: only the open rows
    # each refinement re-scored a subset of the rows: its open tuples are a subset too
    assert all(len(b) <= len(a) for a, b in itertools.pairwise(used))
    # back to the coarsest restriction: not a refinement, every row is scored again
    tabs = _restrict_all(tables, Restriction.free(model.alphabet, n))
    monkeypatch.setattr(ranking, "_MEMO", type(ranking._MEMO)())
    assert ranking._bounds_from(tabs, *ranking._LAST[(model.digest, 1)], heads) is None
    assert ranking.rank_tuples(model, 1, tabs, top=8) == ranking._rank(model, 1, tabs, 8)


def test_only_the_rows_given_are_ranked():
    """Rows bounded by −inf are taken as closed (not scored); without constant keys no
    row is closed by its bound."""
    import numpy as np

    model = random_model(1, 2, 8, seed=3)
    n = 64
    rho = Restriction.free(model.alphabet, n)
    tabs = _restrict_all(initial_tables(model, rho), rho)
    full = ranking._rank(model, 1, tabs, 8)
    rows = sum(len(t.values) for t in tabs)
    bound = np.full((2, rows), -np.inf)  # −inf: known closed, not scored
    bound[1, ::3] = np.inf
    part = ranking._rank(model, 1, tabs, 8, bound)
    starts = np.cumsum([0] + [len(t.values) for t in tabs])
    assert part == [tr for tr in full if bound[tr.head, starts[tr.position] + tr.value] > 0]
    assert part and len(part) < len(full)
