"""Sweeps: a grid of tasks over models × lengths × seeds, on Dask, resumable.

Python (``attncert.sweep`` is itself callable, for notebooks)::

    import attncert
    res = attncert.sweep("certify", models=["random:L2-H2-d8"], n=[64, 256], seeds=[0, 1],
                         out="sweep.jsonl", workers=2)
    print(res.summary())
    print(res.table())          # Markdown
    res.plot("sweep.png")       # free fraction and time against n

Command line::

    attncert sweep certify --models random:L2-H2-d8 zoo:random-L2-H2-d16 --n 64 256 1024 \\
        --seeds 0 1 -o sweep.jsonl --plot sweep.png
    attncert sweep --grid grid.yaml -o sweep.jsonl --scheduler tcp://scheduler:8786

One module per idea: :mod:`~attncert.sweep.grid` (cells and their stable ids, grid files),
:mod:`~attncert.sweep.tasks` (the task registry), :mod:`~attncert.sweep.cell` (one cell
in an isolated child process with a hard timeout), :mod:`~attncert.sweep.results` (the
JSON-lines file), :mod:`~attncert.sweep.runner` (serial or Dask, failures recorded,
Ctrl-C), :mod:`~attncert.sweep.report` (Markdown table and plot).
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attncert.sweep.grid import Cell, Grid, all_cells, grid_from_mapping, load_grid
from attncert.sweep.results import CellRecord, ResultsFile
from attncert.sweep.runner import SweepInterrupted, SweepResult, run_sweep
from attncert.sweep.tasks import TASKS, get_task, task

__all__ = [
    "TASKS",
    "Cell",
    "CellRecord",
    "Grid",
    "ResultsFile",
    "SweepInterrupted",
    "SweepResult",
    "grid_cells",
    "run_sweep",
    "sweep",
    "task",
]


def grid_cells(
    task: str | None = None,
    models: Sequence[str] = (),
    n: Sequence[int] = (),
    seeds: Sequence[int] = (0,),
    params: Mapping[str, Any] | None = None,
    *,
    grid: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> tuple[Cell, ...]:
    """The cells of a grid given by arguments, or by a grid file / mapping (``grid``)."""
    if grid is not None:
        if task is not None or models or n:
            from attncert.errors import InputError

            raise InputError("give either a grid file or task/models/n, not both", where="grid")
        blocks = grid_from_mapping(grid) if isinstance(grid, Mapping) else load_grid(Path(grid))
    else:
        if task is None:
            from attncert.errors import InputError

            raise InputError("no task", where="task", expected=", ".join(sorted(TASKS)))
        blocks = grid_from_mapping(
            {
                "task": task,
                "models": list(models),
                "n": list(n),
                "seeds": list(seeds),
                "params": dict(params or {}),
            },
            "arguments",
        )
    if timeout is not None:
        blocks = tuple(Grid(b.task, b.models, b.ns, b.seeds, b.params, timeout) for b in blocks)
    return all_cells(blocks, {b.task: get_task(b.task).uses_seed for b in blocks})


def sweep(
    task: str | None = None,
    models: Sequence[str] = (),
    n: Sequence[int] = (),
    seeds: Sequence[int] = (0,),
    params: Mapping[str, Any] | None = None,
    *,
    grid: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    out: str | os.PathLike[str] = "sweep.jsonl",
    scheduler: str | None = None,
    workers: int | None = None,
    serial: bool = False,
    timeout: float | None = None,
    retry_failed: bool = False,
    progress: bool = True,
    plot: str | os.PathLike[str] | None = None,
) -> SweepResult:
    """Run a sweep and return its records (see the module docstring and
    :func:`attncert.sweep.runner.run_sweep`). ``timeout`` is per cell (hard)."""
    cells = grid_cells(task, models, n, seeds, params, grid=grid, timeout=timeout)
    res = run_sweep(
        cells,
        out,
        scheduler=scheduler,
        workers=workers,
        serial=serial,
        retry_failed=retry_failed,
        progress=progress,
    )
    if plot is not None:
        res.plot(plot)
    return res


class _CallableModule(types.ModuleType):
    """``attncert.sweep(...)`` runs :func:`sweep`: the package name and the notebook
    entry point are the same word, and an import of ``attncert.sweep.<module>`` rebinds
    ``attncert.sweep`` to this package, so the package itself is made callable."""

    def __call__(self, *args: Any, **kwargs: Any) -> SweepResult:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
