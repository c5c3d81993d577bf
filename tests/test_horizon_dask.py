"""The length horizon in chunks of lengths (issue 40 item 4,
:mod:`attncert.soft.horizon.parallel`): chunks that depend only on [A, B], one certificate
merged from them that the kernel accepts with the summary of the one-piece search, the same
certificate JSON in this process, on one Dask worker and on two, a resumed run that reads
its finished chunks instead of searching (and a forged stored chunk the kernel catches),
and an unreachable scheduler refused with nothing written."""

from __future__ import annotations

import itertools
import json
import math
import random
import socket

import pytest

from attncert.certificates.horizon import certificate_from_dict
from attncert.cli.main import main
from attncert.errors import InputError
from attncert.kernel.horizon.checker import check
from attncert.languages import language
from attncert.model import save_model
from attncert.model.testbeds import first_failure, first_symbol_model
from attncert.soft.horizon import parallel as P
from attncert.soft.horizon import verify_lengths
from attncert.soft.horizon.parallel import merge, plan_chunks, verify_lengths_parallel

# wrong first at n* = ⌊e^Δ⌋ + 2 = 4096, the start of a chunk: the merge joins a proved
# chunk to refuted ones
REFUTED = first_symbol_model(math.log(4094.5))
RIGHT = first_symbol_model(2.0, temperature="log")  # right at every length
SPAN = (1100, 70000)  # chunks [1100, 4095], [4096, 65535], [65536, 70000]


def summary(out) -> dict:
    d = out.to_dict()
    return {k: v for k, v in d.items() if not k.endswith("seconds") and k != "nodes"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The chunked search in this process, keeping its chunks in a state directory."""
    state = tmp_path_factory.mktemp("state")
    chunked = verify_lengths_parallel(REFUTED, "first_last", *SPAN, time_limit=120, state=state)
    return chunked, state


def test_chunks_cover_the_lengths_exactly_and_do_not_depend_on_the_run():
    rng = random.Random(0)
    for _ in range(400):
        lo = rng.choice([1, 2, 7, 8, 9, 12, 15, 16, 17, 255, 256, 4095, 10**6])
        hi = rng.choice([None, lo, lo + rng.randrange(0, 5000), 10**12])
        cut = rng.choice([1, 3, 8, 16, 20])
        alone = rng.choice([None, 1, 5, 12, 30])
        chunks = plan_chunks(lo, hi, cut, alone)
        assert chunks[0][0] == lo and chunks[-1][1] == hi
        for (_, b), (a2, _) in itertools.pairwise(chunks):
            assert b is not None and a2 == b + 1  # consecutive, disjoint
        for a, b in chunks:
            assert b is None or a <= b
            if b is not None and b <= cut and alone is not None and b >= alone:
                assert a == b or (a < alone and b == alone - 1), (lo, hi, cut, alone, a, b)
            if a <= cut < (math.inf if b is None else b):
                raise AssertionError(f"{(a, b)} crosses the single-length cut {cut}")
            if b is not None and a > cut:  # within [16^k, 16^(k+1)) above the cut
                assert b < max(16 * a, cut + 16), (lo, hi, cut, a, b)
        assert chunks == plan_chunks(lo, hi, cut, alone)
    assert plan_chunks(1, 1000, 8) == ((1, 8), (9, 15), (16, 255), (256, 1000))
    assert plan_chunks(1, 1000, 16, 12) == (
        (1, 11), (12, 12), (13, 13), (14, 14), (15, 15), (16, 16), (17, 255), (256, 1000)
    )  # fmt: skip
    assert plan_chunks(1, 1000, 8, 12) == plan_chunks(1, 1000, 8)
    assert plan_chunks(1, None, 8)[-1] == (16**5, None)
    assert plan_chunks(10**7, None, 8) == ((10**7, None),)
    with pytest.raises(InputError):
        plan_chunks(5, 4, 8)


@pytest.mark.slow
def test_merged_certificate_is_accepted_with_the_one_piece_summary(runs):
    chunked, _ = runs
    n_star = first_failure(math.log(4094.5))
    r = chunked.report
    assert r.accepted, r.failures
    assert (r.proved_up_to, r.first_refuted) == (n_star - 1, n_star) == (4095, 4096)
    assert r.refuted == ((4096, 70000),) and r.witness[0] == ("0", 1)
    assert r.witness in ((("0", 1), ("1", 4095)), (("0", 1), ("1", 4094), ("0", 1)))
    assert chunked.stats["chunks"] == 3 and chunked.stats["ran"] == 3
    # the root is [1100, 70000], split by length at the chunks' ends
    nodes = chunked.certificate["nodes"]
    assert nodes[0] == {"parent": None, "split": {"kind": "length", "at": 4095}}
    assert nodes[1] == {"parent": 0, "branch": 1, "split": {"kind": "length", "at": 65535}}
    assert chunked.certificate["trace"]["chunks"] == [[1100, 4095], [4096, 65535], [65536, 70000]]
    # re-checked from its JSON text alone
    again = check(certificate_from_dict(json.loads(json.dumps(chunked.certificate))), REFUTED)
    assert again.accepted and again.proved == r.proved and again.refuted == r.refuted
    # a chunk left out is a hole in the partition, which the kernel refuses
    cut = dict(chunked.certificate, nodes=nodes[:2] + nodes[-1:])
    assert not check(certificate_from_dict(cut), REFUTED).accepted
    # the same summary as the one-piece search (for REFUTED, whose one-piece search
    # bisects [1100, 70000] down to 4096: the slow test below)
    right = verify_lengths_parallel(RIGHT, "first_last", 4096, None)
    assert right.report.accepted and right.stats["chunks"] == 3
    assert summary(right) == summary(verify_lengths(RIGHT, "first_last", 4096, None))


def test_a_lost_chunk_is_undecided_never_proved(runs):
    _, state = runs
    chunks = plan_chunks(*SPAN, 16)
    certs = [json.loads(p.read_text()) for p in sorted(state.glob("chunk-*.json"))]
    by_lo = {c["lengths"][0]: c for c in certs}
    parts = [by_lo[1100], P._lost(4096, 65535, "worker died"), by_lo[65536]]
    cert = merge(REFUTED, language("first_last"), *SPAN, chunks, parts, None)
    r = check(certificate_from_dict(cert), REFUTED)
    assert r.accepted, r.failures
    # 4096..65535 (wrong in truth) stay undecided, never proved
    assert r.proved_up_to == 4095 and r.undecided == ((4096, 65535),)
    assert r.first_refuted == 65536 and r.refuted == ((65536, 70000),)


def test_a_resumed_run_reads_its_chunks_and_gives_the_same_certificate(runs, monkeypatch):
    chunked, state = runs
    files = sorted(state.glob("chunk-*.json"))
    assert [p.name.split("-")[1:3] for p in files] == [
        ["1100", "4095"],
        ["4096", "65535"],
        ["65536", "70000"],
    ]

    def no_search(*args):
        raise AssertionError("a finished chunk was searched again")

    monkeypatch.setattr(P, "chunk_task", no_search)
    again = verify_lengths_parallel(REFUTED, "first_last", *SPAN, time_limit=120, state=state)
    assert again.stats["ran"] == 0 and again.stats["resumed"] == 3
    assert json.dumps(again.certificate) == json.dumps(chunked.certificate)
    assert summary(again) == summary(chunked)
    # another budget is another key: nothing is reused
    with pytest.raises(AssertionError, match="searched again"):
        verify_lengths_parallel(
            REFUTED, "first_last", *SPAN, time_limit=120, max_nodes=999, state=state
        )
    monkeypatch.undo()
    # a file whose key does not match is not used: that chunk runs again (and replaces it),
    # the others are read, and the certificate is the same
    data = json.loads(files[2].read_text())
    data["trace"]["chunk"]["language"] = "parity"
    files[2].write_text(json.dumps(data))
    third = verify_lengths_parallel(REFUTED, "first_last", *SPAN, time_limit=120, state=state)
    assert third.stats["ran"] == 1 and third.stats["resumed"] == 2
    assert json.dumps(third.certificate) == json.dumps(chunked.certificate)
    assert json.loads(files[2].read_text())["trace"]["chunk"]["language"] == "first_last"


def test_a_forged_stored_chunk_is_caught_by_the_kernel(runs, tmp_path, capsys):
    """A stored chunk is read, not trusted: a wrong leaf turned 'right' is refused."""
    _, state = runs
    forged = tmp_path / "forged"
    forged.mkdir()
    for p in state.glob("chunk-*.json"):
        (forged / p.name).write_text(p.read_text())
    [late] = forged.glob("chunk-4096-65535-*.json")
    data = json.loads(late.read_text())
    wrong = [nd for nd in data["nodes"] if nd.get("leaf", {}).get("claim") == "wrong"]
    assert wrong
    for nd in wrong:
        nd["leaf"]["claim"] = "right"
    data["summary"] = {
        "proved": [[4096, 65535]],
        "undecided": [],
        "refuted_intervals": [],
        "proved_up_to": 65535,
        "first_refuted": None,
    }
    late.write_text(json.dumps(data))
    model = tmp_path / "m.json"
    save_model(REFUTED, model)
    budget = ["--time-limit", "120", "--max-nodes", "20000"]  # the same key
    argv = ["--lengths", "1100:70000", *budget, "--state", str(forged)]
    code = main(["verify", str(model), "--language", "first_last", *argv])
    err = capsys.readouterr().err
    assert code == 2 and "kernel rejected" in err and "Traceback" not in err
    assert "claim" in err and "3 chunks were read from --state" in err


@pytest.mark.slow
def test_one_dask_worker_gives_the_in_process_certificate():
    """The chunks as tasks on Dask (a one-thread in-process cluster: the model travels as
    JSON and is rebuilt on the worker) — the same certificate JSON as in this process."""
    distributed = pytest.importorskip("distributed")
    P._MODELS.clear()
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = verify_lengths_parallel(RIGHT, "first_last", 4096, None, client=client)
    assert P._MODELS[RIGHT.digest] is not RIGHT  # rebuilt from its JSON on the worker
    here = verify_lengths_parallel(RIGHT, "first_last", 4096, None)
    assert on_dask.stats["where"] == "the given Dask client" and here.stats["where"] == "in-process"
    assert on_dask.report.accepted and on_dask.report.proved_up_to == "inf"
    assert json.dumps(on_dask.certificate) == json.dumps(here.certificate)
    assert summary(on_dask) == summary(here)


@pytest.mark.slow
def test_one_and_two_worker_processes_give_the_same_certificate(runs, tmp_path, capsys):
    pytest.importorskip("distributed")
    chunked, _ = runs
    whole = verify_lengths(REFUTED, "first_last", *SPAN, time_limit=120)
    assert summary(chunked) == summary(whole)
    one = verify_lengths_parallel(REFUTED, "first_last", *SPAN, time_limit=120, workers=1)
    two = verify_lengths_parallel(REFUTED, "first_last", *SPAN, time_limit=120, workers=2)
    assert one.stats["where"] == "LocalCluster(1 worker)"
    assert two.stats["where"] == "LocalCluster(2 workers)"
    for out in (one, two):
        assert json.dumps(out.certificate) == json.dumps(chunked.certificate)
        assert summary(out) == summary(chunked)
    model = tmp_path / "m.json"
    save_model(REFUTED, model)
    cert = tmp_path / "c.json"
    argv = ["--lengths", "1100:70000", "--workers", "2", "--time-limit", "120", "-o", str(cert)]
    code = main(["verify", str(model), "--language", "first_last", *argv, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["first_refuted"] == 4096 and out["chunks"]["ran"] == 3
    assert json.loads(cert.read_text())["nodes"] == chunked.certificate["nodes"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_an_unreachable_scheduler_is_refused_before_anything_is_written(
    tmp_path, capsys, monkeypatch
):
    pytest.importorskip("distributed")
    monkeypatch.setattr(P, "CONNECT_TIMEOUT", 0.5)
    address = f"tcp://127.0.0.1:{closed_port()}"
    model = tmp_path / "m.json"
    save_model(RIGHT, model)
    state, cert = tmp_path / "state", tmp_path / "out" / "c.json"
    argv = ["--lengths", "1:inf", "--scheduler", address, "--state", str(state), "-o", str(cert)]
    code = main(["verify", str(model), "--language", "first_last", *argv])
    err = capsys.readouterr().err
    assert code == 2 and "--scheduler" in err and address in err and "Traceback" not in err
    assert "nothing was written" in err
    assert not state.exists() and not cert.parent.exists()
    with pytest.raises(InputError, match="--scheduler"):
        verify_lengths_parallel(RIGHT, "first_last", 1, 100, scheduler=address, state=state)
    assert not state.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--n", "4", "--workers", "2"], "--workers without --lengths"),
        (["--n", "4", "--state", "S"], "--state without --lengths"),
        (["--lengths", "1:9", "--workers", "1", "--scheduler", "tcp://x:1"], "together"),
        (["--lengths", "1:9", "--workers", "-1"], "--workers"),
        (["--lengths", "1:9", "--state", "FILE"], "not a directory"),
    ],
)
def test_chunk_flags_are_refused_when_they_make_no_sense(argv, message, tmp_path, capsys):
    (tmp_path / "FILE").write_text("x")
    argv = [str(tmp_path / a) if a in ("S", "FILE") else a for a in argv]
    code = main(["verify", "zoo:trained_hard_first_last", "--language", "first_last", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "S").exists()
