"""What runs on a Dask worker for a sweep: :func:`dask_cell`, one cell (isolated in a child
process by default, :mod:`attncert.sweep.cell`), with the worker's address added to the
outcome. (The workers' start-up hook is :func:`attncert.parallel.dask_setup`.)
"""

from __future__ import annotations

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
