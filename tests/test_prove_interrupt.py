"""Ctrl-C during ``attncert prove --jobs 2`` (issue 19 item 5) and ``--dask``: the workers
ignore SIGINT, the parent terminates them and exits 130 with one line — no traceback, no
"Process ForkPoolWorker-…" lines.

A terminal sends Ctrl-C to the whole foreground process group, workers included; the
test does the same (the CLI runs in a session of its own and gets ``killpg``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CMD = [sys.executable, "-m", "attncert.cli.main"]
pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")


def _default_sigint() -> None:
    """In the child before exec: SIGINT back to its default. A shell starts background
    jobs with SIGINT ignored, and Python then installs no KeyboardInterrupt handler (the
    CLI would ignore the test's Ctrl-C as it ignores the terminal's); a terminal's
    foreground process has the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            kids += [int(x) for x in (task / "children").read_text().split()]
    return kids


@pytest.mark.parametrize(
    "delay, mode",
    # the Dask case starts a LocalCluster (5-10 s): slow, a .ci/run step
    [(0.3, "--jobs"), (1.2, "--jobs"), pytest.param(2.5, "--dask", marks=pytest.mark.slow)],
)
def test_ctrl_c_during_parallel_prove_exits_130_with_one_line(delay, mode):
    """``--jobs 2``: a fork pool; ``--dask --jobs 2``: an embedded Dask LocalCluster
    (its workers must not print asyncio tracebacks either)."""
    if mode == "--dask":
        pytest.importorskip("distributed")
    flags = ["--jobs", "2"] if mode == "--jobs" else ["--dask", "--jobs", "2"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(
        [*CMD, "prove", "Q_1 S Q_0", "--max-len", "200", *flags, "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 30
        while len(_children(proc.pid)) < 2:  # both workers exist
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the worker pool never started"
            time.sleep(0.05)
        time.sleep(delay)  # let them work on a length
        assert proc.poll() is None, "finished before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert err.splitlines() == ["attncert: interrupted"], err
    assert "Traceback" not in err and "ForkPoolWorker" not in err and "Dask" not in err
    assert out == ""
