"""Sweeps on Dask (issue 17 item 3): a LocalCluster with 2 worker processes.

* a cell that raises, one that hangs past its timeout and one that kills its worker are
  recorded with their reasons, and every other cell's result is in the file;
* a worker killed from outside in the middle of a sweep costs nothing: its cell is
  re-run elsewhere and every result is in the file;
* a re-run skips finished cells and recomputes none;
* Ctrl-C on ``attncert sweep`` (SIGINT to the whole process group, as a terminal sends
  it): status 130, one line on stderr, whole lines in the file, and the next run resumes.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from attncert.parallel import DASK_CONFIG  # noqa: E402
from attncert.sweep import grid_cells, run_sweep  # noqa: E402

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import sweep_tasks  # noqa: E402


@pytest.fixture(autouse=True)
def _tasks_importable(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), *sys.path]))


@pytest.fixture
def cluster(monkeypatch):
    """A 2-worker LocalCluster of processes, like the embedded default, owned by the test."""
    import dask

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), *sys.path]))
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


def _records(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["format"] == "attncert-sweep"
    return [json.loads(x) for x in lines[1:]]


@pytest.mark.slow  # worker processes killed and restarted: 5-10 s; a .ci/run step
def test_failing_hanging_and_worker_killing_cells_are_recorded_and_the_rest_finish(tmp_path):
    """Embedded LocalCluster (workers=2): failures recorded with reasons, nothing lost."""
    out = tmp_path / "sweep.jsonl"
    ns = [1, 2, 3, sweep_tasks.FAIL_N, 4, sweep_tasks.HANG_N, 5, sweep_tasks.KILL_N, 6, 7]
    cells = grid_cells("sweep_tasks:mixed", ["m"], ns, params={"sleep": 0.2}, timeout=3.0)
    res = run_sweep(cells, out, workers=2)
    assert res.where == "LocalCluster(2 workers)" and res.ran == len(ns)
    recs = {r["n"]: r for r in _records(out)}
    assert sorted(recs) == sorted(ns)  # every cell once
    good = [n for n in ns if n not in (sweep_tasks.FAIL_N, sweep_tasks.HANG_N, sweep_tasks.KILL_N)]
    for n in good:
        assert recs[n]["status"] == "ok" and recs[n]["result"]["value"] == float(n)
        assert recs[n]["worker"].startswith("tcp://")
    assert recs[sweep_tasks.FAIL_N]["status"] == "failed"
    assert recs[sweep_tasks.FAIL_N]["reason"] == "RuntimeError: planted failure at n=13"
    assert recs[sweep_tasks.HANG_N]["status"] == "timeout"
    assert recs[sweep_tasks.HANG_N]["reason"] == "no result within 3 s (killed)"
    assert recs[sweep_tasks.KILL_N]["status"] == "lost"
    assert "worker died" in recs[sweep_tasks.KILL_N]["reason"]
    assert res.exit_code == 1
    assert res.counts() == {"ok": 7, "failed": 1, "timeout": 1, "lost": 1, "missing": 0}


@pytest.mark.slow  # worker processes killed and restarted: 5-10 s; a .ci/run step
def test_a_worker_killed_mid_sweep_loses_no_result_and_resume_recomputes_none(tmp_path, cluster):
    """An existing cluster (``scheduler=ADDRESS``); one of its workers is SIGKILLed while
    cells run. Its cell is re-run on the other worker; then a re-run skips everything."""
    lc, client = cluster
    out = tmp_path / "sweep.jsonl"
    cells = grid_cells("sweep_tasks:echo", ["a", "b"], [1, 2, 3, 4], params={"sleep": 0.6})
    pids = list(client.run(os.getpid).values())

    import threading

    killed_at: list[int] = []

    def killer():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if out.exists() and (k := out.read_text().count("\n")) >= 3:  # header + 2 records
                os.kill(pids[0], signal.SIGKILL)
                killed_at.append(k - 1)
                return
            time.sleep(0.02)

    t = threading.Thread(target=killer)
    t.start()
    res = run_sweep(cells, out, scheduler=lc.scheduler_address)
    t.join()
    assert killed_at and killed_at[0] < len(cells) - 2, "the worker was not killed mid-sweep"
    assert pids[0] not in client.run(os.getpid).values()  # it died (and was replaced)
    assert res.where == lc.scheduler_address
    recs = _records(out)
    assert sorted((r["model"], r["n"]) for r in recs) == sorted((c.model, c.n) for c in cells)
    assert all(r["status"] == "ok" for r in recs), [r["reason"] for r in recs]
    assert res.complete and res.exit_code == 0
    before = out.read_bytes()
    again = run_sweep(cells, out, scheduler=lc.scheduler_address)
    assert (again.ran, again.skipped) == (0, len(cells)) and out.read_bytes() == before


@pytest.mark.slow  # worker processes killed and restarted: 5-10 s; a .ci/run step
def test_ctrl_c_leaves_whole_lines_and_the_next_run_resumes(tmp_path):
    out = tmp_path / "sweep.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]))
    cmd = [
        sys.executable,
        "-m",
        "attncert.cli.main",
        "sweep",
        "sweep_tasks:echo",
        "--models",
        "a",
        "--n",
        *[str(n) for n in range(1, 9)],
        "--param",
        "sleep=0.25",
        "--workers",
        "2",
        "-o",
        str(out),
    ]
    proc = subprocess.Popen(
        [*cmd, "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        # a shell's background job inherits SIGINT ignored; a terminal's foreground
        # process has the default, and Python then turns it into KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not (out.exists() and out.read_text().count("\n") >= 3):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attncert sweep: interrupted;"), err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    done = _records(out)  # every line parses
    assert 2 <= len(done) < 8
    first = {(r["id"], r["finished"], r["result"]["pid"]) for r in done}
    again = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["skipped"] == len(done) and summary["ran"] == 8 - len(done)
    recs = _records(out)
    assert len(recs) == 8 and len({r["id"] for r in recs}) == 8  # nothing recomputed
    assert first <= {(r["id"], r["finished"], r["result"]["pid"]) for r in recs}
