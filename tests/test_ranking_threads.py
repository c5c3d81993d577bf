"""The float ranking (Hahn S1 eq. (8)) ranks a large layer's heads in threads; the result
must be exactly the one-after-the-other result, in the same order."""

from __future__ import annotations

import pytest

from attncert.hard.pipeline import _restrict_all
from attncert.hard.restriction import Restriction
from attncert.hard.search import ranking
from attncert.hard.tables import initial_tables
from attncert.model import random_model


@pytest.mark.parametrize(
    ("layers", "heads", "seed", "mask"), [(1, 3, 0, "none"), (1, 2, 4, "future"), (2, 2, 1, "none")]
)
def test_threaded_heads_give_the_sequential_ranking(monkeypatch, layers, heads, seed, mask):
    model = random_model(layers, heads, 8, seed=seed, mask=mask)
    n = 96
    rho = Restriction.free(model.alphabet, n).fix({0: "1", 7: "0", 40: "1"})
    tabs = _restrict_all(initial_tables(model, rho), rho)
    monkeypatch.setattr(ranking, "_PARALLEL_ENTRIES", 1 << 62)  # never threaded
    sequential = ranking._rank(model, 1, tabs, 8)
    monkeypatch.setattr(ranking, "_PARALLEL_ENTRIES", 0)  # always threaded
    threaded = ranking._rank(model, 1, tabs, 8)
    assert len(sequential) > 0
    assert threaded == sequential
    assert {tr.head for tr in threaded} == set(range(heads))


def test_the_kernel_checks_the_same_with_threaded_heads(monkeypatch):
    """The kernel bounds a large layer's heads in threads; its verdict, facts and failures
    are those of the sequential check — on an accepted certificate and on a tampered one."""
    import dataclasses

    from attncert.hard.pipeline import certify
    from attncert.kernel import layers
    from attncert.kernel.hard import check

    model = random_model(2, 2, 8, seed=1)
    cert = certify(model, n=64, language="parity", verify=False)
    bad = dataclasses.replace(cert, dependency_sets=(*cert.dependency_sets[:-1], ()))
    results = {}
    for name, parallel in (("sequential", 1 << 62), ("threaded", 0)):
        monkeypatch.setattr(layers._Slots, "PARALLEL", parallel)
        results[name] = [
            (r.accepted, r.facts, tuple(map(str, r.failures)), r.output_dependency)
            for r in (check(cert, model), check(bad, model))
        ]
    assert results["threaded"] == results["sequential"]
    assert results["threaded"][0][0] is True and results["threaded"][1][0] is False
