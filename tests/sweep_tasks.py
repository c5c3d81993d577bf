"""Sweep tasks for the tests (named ``sweep_tasks:NAME`` in a grid; importable on workers
because the tests put this folder on PYTHONPATH)."""

from __future__ import annotations

import os
import signal
import time

FAIL_N = 13  # raises
HANG_N = 17  # never returns (hits the cell timeout)
KILL_N = 19  # kills the worker that runs it (lost worker)


def echo(cell):
    """Returns quickly (after ``sleep`` seconds) with a value derived from the cell."""
    time.sleep(float(cell.param_dict.get("sleep", 0.0)))
    return {"verdict": "ok", "value": cell.n + cell.seed / 10, "pid": os.getpid()}


echo.sweep_defaults = {"sleep": 0.0}


def mixed(cell):
    """Like :func:`echo`, except at the planted lengths."""
    if cell.n == FAIL_N:
        raise RuntimeError(f"planted failure at n={cell.n}")
    if cell.n == HANG_N:
        time.sleep(3600)
    if cell.n == KILL_N:
        os.kill(os.getppid(), signal.SIGKILL)  # our parent is the Dask worker
        time.sleep(60)
    return echo(cell)


mixed.sweep_defaults = {"sleep": 0.0}
