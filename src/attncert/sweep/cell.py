"""Run one cell, isolated in a child process with a hard time limit.

:func:`run_cell` is what a Dask worker (or the serial loop) calls for each cell. It
starts ``python -m attncert.sweep.cell`` in a session of its own, sends the cell as
JSON on stdin, and reads one JSON outcome from stdout. Isolation buys three things:

* a **hard timeout** — the child's process group is killed when the cell's time is up
  (a solver deep in C code cannot overrun it), recorded as ``timeout``;
* **crash containment** — a segfault or out-of-memory kill of the child is recorded as a
  ``failed`` cell with its exit status, and the worker lives on;
* **quiet Ctrl-C** — the child is not in the terminal's process group; it dies with the
  worker that started it (it watches its parent).

The outcome is a plain dict: ``status`` (``ok`` | ``failed`` | ``timeout``), ``result``
(the task's dict, for ``ok``), ``reason``, ``seconds``, ``host``. A task that raises gives
``failed`` with the exception's type and message. :func:`run_cell_inline` runs a cell in
the calling process instead (no hard timeout; for debugging and notebooks).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from typing import Any

from attncert.sweep.grid import Cell

_TAIL = 600  # characters of a dead child's stderr kept in the reason


def run_cell_inline(cell_dict: dict[str, Any]) -> dict[str, Any]:
    """Run a cell in this process; exceptions become a ``failed`` outcome."""
    from attncert.sweep.tasks import run_task

    t0 = time.perf_counter()
    host = socket.gethostname()
    try:
        result = run_task(Cell.from_dict(cell_dict))
    except Exception as err:  # a cell's failure is data, not a crash of the sweep
        reason = f"{type(err).__name__}: {err}"
        tb = traceback.format_exc(limit=-3)
        return _outcome("failed", None, reason, t0, host, traceback=tb[-2000:])
    return _outcome("ok", result, "", t0, host)


def run_cell(cell_dict: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """Run a cell in a child process, killed after ``timeout`` seconds (None: no limit)."""
    t0 = time.perf_counter()
    host = socket.gethostname()
    proc = subprocess.Popen(
        [sys.executable, "-m", "attncert.sweep.cell"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(json.dumps(cell_dict).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return _outcome("timeout", None, f"no result within {timeout:g} s (killed)", t0, host)
    except BaseException:
        _kill(proc)
        raise
    lines = out.decode("utf-8", "replace").strip().splitlines()
    if proc.returncode == 0 and lines:
        try:
            outcome = json.loads(lines[-1])
        except json.JSONDecodeError:
            outcome = None
        if isinstance(outcome, dict) and outcome.get("status") in ("ok", "failed"):
            outcome["seconds"] = round(time.perf_counter() - t0, 3)
            outcome["host"] = host
            return outcome
    rc = proc.returncode
    how = f"killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
    tail = err.decode("utf-8", "replace").strip()[-_TAIL:]
    return _outcome(
        "failed", None, f"the cell's process {how}" + (f": {tail}" if tail else ""), t0, host
    )


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.kill()
    proc.communicate()


def _outcome(status, result, reason, t0, host, **extra) -> dict[str, Any]:
    return {
        "status": status,
        "result": result,
        "reason": reason,
        "seconds": round(time.perf_counter() - t0, 3),
        "host": host,
        **extra,
    }


def _watch_parent(parent: int) -> None:
    """Exit when the process that started us is gone (a killed worker leaves no orphans)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(70)


def _child_main() -> int:
    parent = os.getppid()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # whatever the task prints must not corrupt the outcome line
    outcome = run_cell_inline(json.loads(sys.stdin.read()))
    real_stdout.write(json.dumps(outcome, allow_nan=True) + "\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_child_main())
