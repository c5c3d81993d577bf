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
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    sequential = ranking._rank(model, 1, tabs, 8)  # a small layer: one head after the other
    monkeypatch.setattr(ranking, "_PARALLEL_SCALE", 1 << 40)  # as if it were large
    threaded = ranking._rank(model, 1, tabs, 8)
    assert len(sequential) > 0
    assert threaded == sequential
    assert {tr.head for tr in threaded} == set(range(heads))


def test_the_kernel_checks_the_same_on_any_number_of_threads():
    """The kernel bounds a layer's heads on as many threads as its caller allows (issue 41:
    the count is the untrusted caller's choice, ``workers``); its verdict, facts and
    failures are those of the sequential check for every count — one, two, more threads
    than heads, and a nonsensical count — on an accepted certificate and a tampered one."""
    import dataclasses

    from attncert.hard.pipeline import certify
    from attncert.kernel.hard import layers
    from attncert.kernel.hard.checker import check

    model = random_model(2, 2, 8, seed=1)
    cert = certify(model, n=64, language="parity", verify=False)
    bad = dataclasses.replace(cert, dependency_sets=(*cert.dependency_sets[:-1], ()))
    asked = []

    def run(workers):
        return [
            (r.accepted, r.facts, tuple(map(str, r.failures)), r.output_dependency)
            for r in (check(cert, model, workers=workers), check(bad, model, workers=workers))
        ]

    sequential = run(None)
    for count in (1, 2, 7, 0, -3):
        assert (
            run(lambda heads, entries, k=count: asked.append((heads, entries)) or k) == sequential
        )
    assert sequential[0][0] is True and sequential[1][0] is False
    assert asked and all(heads == 2 and entries > 0 for heads, entries in asked)
    # the kernel runs its own per-head function on the threads, in head order
    order = layers._map_heads(lambda h, x: (h, x), "abc", 1, lambda heads, entries: 3)
    assert order == [(0, "a"), (1, "b"), (2, "c")]


def test_the_search_side_check_gives_the_kernel_its_thread_count(monkeypatch):
    """``attncert.hard.checker.check`` (what ``certify``, ``check`` and the report call) is
    the kernel's check with :func:`attncert.hard.threads.head_workers` as the count."""
    from attncert.hard import checker as H

    seen = {}

    def kernel(cert, model, *, workers=None):
        seen["workers"] = workers
        return "report"

    monkeypatch.setattr(H, "kernel_check", kernel)
    assert H.check("cert", "model") == "report"
    assert seen["workers"] is H.head_workers


def test_heads_get_threads_only_when_blas_is_single_threaded(monkeypatch):
    import os

    from attncert.hard.threads import LARGE, head_workers

    cores = min(2, os.cpu_count() or 1)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert head_workers(2, LARGE) == cores and head_workers(1, LARGE) == 1
    assert head_workers(2, LARGE - 1) == 1  # a small layer is not worth threads
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # BLAS parallelizes each product
    assert head_workers(2, LARGE) == 1
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    assert head_workers(2, LARGE) == 1


def test_the_command_pins_openblas_to_one_thread_unless_told():
    import subprocess
    import sys

    code = "import os, attncert.cli.main; print(os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in __import__("os").environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "1"
    env["OPENBLAS_NUM_THREADS"] = "2"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "2"


@pytest.mark.parametrize(("seed", "mask"), [(0, "none"), (1, "none")])
def test_threaded_collapse_gives_the_sequential_captures(monkeypatch, seed, mask):
    """The collapse analyzes a large layer's heads in threads: the captures and the
    collapsed tables are the sequential ones."""
    from attncert.hard import collapse
    from attncert.hard.pipeline import certify
    from attncert.hard.tables import evaluation

    model = random_model(2, 2, 8, seed=seed, mask=mask)
    cert = certify(model, n=64, language="parity", verify=False, witness=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    got = {}
    for name, scale in (("sequential", 1), ("threaded", 1 << 40)):
        monkeypatch.setattr(collapse, "_PARALLEL_SCALE", scale)
        ev = evaluation(model)
        tables = initial_tables(ev, cert.restrictions[0])
        step = collapse.collapse_layer(ev, 1, tables, cert.restrictions[1])
        got[name] = (
            step.captures,
            [(t.deps, t.value_of_row, t.keys, t.floats.tobytes()) for t in step.tables],
        )
    assert got["threaded"] == got["sequential"]
