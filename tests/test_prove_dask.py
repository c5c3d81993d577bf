"""Parallel proofs on Dask (issue 17 item 4): each length is a task; the verdicts, methods,
queries and counterexamples are those of the local driver, length by length."""

from __future__ import annotations

import logging

import pytest

distributed = pytest.importorskip("distributed")

from attncert.compile import compile_formula  # noqa: E402
from attncert.compile.variants import with_temperature  # noqa: E402
from attncert.model.spec import Temperature  # noqa: E402
from attncert.parallel import DASK_CONFIG  # noqa: E402
from attncert.prove import prove_agreement  # noqa: E402
from attncert.prove.cluster import iter_lengths, payload  # noqa: E402
from attncert.prove.coordinate import designated_coordinate  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    import dask

    with (
        dask.config.set(DASK_CONFIG),
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL,
        ) as lc,
        distributed.Client(lc) as client,
    ):
        yield lc, client


def _same(a, b):
    assert a.verdict == b.verdict
    assert [(r.n, r.verdict, r.method, len(r.queries), r.counterexample) for r in a.lengths] == [
        (r.n, r.verdict, r.method, len(r.queries), r.counterexample) for r in b.lengths
    ]


@pytest.mark.slow
def test_lengths_on_an_existing_cluster_match_the_local_driver(cluster):
    lc, _ = cluster
    m = compile_formula("Q_a S Q_b", alphabet="abc")
    local = prove_agreement("Q_a S Q_b", m, max_len=7)
    remote = prove_agreement("Q_a S Q_b", m, max_len=7, scheduler=lc.scheduler_address)
    _same(local, remote)
    assert remote.verdict == "proved"
    assert remote.notes[-1] == f"lengths ran as tasks on Dask: {lc.scheduler_address}"


def test_counterexamples_come_back_from_the_workers(cluster):
    lc, _ = cluster
    m = compile_formula("Q_a S Q_b", alphabet="abc")
    low = with_temperature(m, Temperature(0.5, 1.0))  # too cold: real counterexamples
    local = prove_agreement("Q_a S Q_b", low, max_len=6)
    remote = prove_agreement("Q_a S Q_b", low, max_len=6, scheduler=lc.scheduler_address)
    _same(local, remote)
    assert remote.verdict == "counterexample" and remote.exit_code == 1


def test_iter_lengths_streams_in_submission_order_with_bounded_in_flight(cluster):
    _, client = cluster
    m = compile_formula("Q_1 S Q_0")
    f = m.meta["formula"]
    from attncert.logic import parse

    opts = {
        "last_only": False,
        "timeout_ms": 60_000,
        "smt2_dir": None,
        "coord": designated_coordinate(m),
        "cross_check": 3,
        "fallback_strings": 0,
    }
    data = payload(m, parse(f), designated_coordinate(m), None, opts)
    got = list(iter_lengths(client, data, range(1, 9), in_flight=2))
    assert sorted(r.n for r in got) == list(range(1, 9))
    assert all(r.verdict == "proved" for r in got)
    assert all(r.cross_check == "agree" for r in got if r.n <= 3)  # enumeration agrees


@pytest.mark.slow
def test_embedded_local_cluster_and_the_cli(tmp_path, capsys):
    from attncert.cli.main import main

    code = main(["prove", "Q_1 S Q_0", "--max-len", "6", "--dask", "--jobs", "2", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert "note: lengths ran as tasks on Dask: LocalCluster(2 workers)" in out
    assert out.strip().splitlines()[-1].startswith("CERTIFIED (proved) for n = 1..6")
