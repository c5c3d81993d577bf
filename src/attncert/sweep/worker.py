"""What runs on a Dask worker: the per-cell function and the worker's start-up hook.

* :func:`dask_cell` runs one cell (isolated in a child process by default,
  :mod:`attncert.sweep.cell`) and adds the worker's address to the outcome.
* :func:`dask_setup` is loaded by every worker of the embedded cluster at start-up
  (``preload="attncert.sweep.worker"``), also when a nanny restarts a dead worker: the
  worker ignores SIGINT. A Ctrl-C at the terminal reaches every process of the
  foreground group; only the client should act on it (stop between records, shut the
  cluster down), not the workers (which would print asyncio tracebacks).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from attncert.sweep.cell import run_cell, run_cell_inline


def dask_cell(cell_dict: dict[str, Any], timeout: float | None, isolate: bool) -> dict[str, Any]:
    """One cell on a worker; the outcome of :func:`attncert.sweep.cell.run_cell`."""
    outcome = run_cell(cell_dict, timeout) if isolate else run_cell_inline(cell_dict)
    try:
        from distributed import get_worker

        outcome["worker"] = get_worker().address
    except (ImportError, ValueError):
        pass
    return outcome


def dask_setup(worker: Any = None) -> None:
    """Dask preload hook: ignore SIGINT in this worker process (see module docstring)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
