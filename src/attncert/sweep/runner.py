"""Run the cells of a grid — serially, or on a Dask cluster — and stream the results.

:func:`run_sweep` opens the results file (:mod:`attncert.sweep.results`), skips the cells
it already holds, runs the rest and appends each record the moment its cell finishes.

* **Where**: ``serial=True`` runs the cells one after another in this process (no Dask
  needed); otherwise on ``dask.distributed`` (:func:`attncert.parallel.dask_client`) — an
  embedded ``LocalCluster`` (``workers`` processes, default one per core, one thread
  each) or, with ``scheduler="tcp://…"``, an existing cluster. Each cell runs in a child process of its worker with a hard
  ``timeout`` (:mod:`attncert.sweep.cell`).
* **Failures are data**: a cell that raises is ``failed`` (with the error), one killed at
  its time limit ``timeout``; one whose worker dies is retried once on another worker
  (embedded cluster) and then recorded ``lost``. The sweep goes on.
* **Ctrl-C**: on Dask the first one stops the loop between records; pending cells are
  cancelled, the embedded cluster is shut down, and :class:`SweepInterrupted` is raised
  (the CLI turns it into one line and status 130); a second one interrupts at once.
  Serially, the running cell's child is killed and not recorded. Either way the file
  holds whole lines only (each record is one ``write``).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attncert.errors import AttncertError
from attncert.parallel import dask_client
from attncert.sweep.cell import run_cell, run_cell_inline
from attncert.sweep.grid import Cell
from attncert.sweep.results import CellRecord, ResultsFile
from attncert.sweep.tasks import get_task
from attncert.sweep.worker import dask_cell


@dataclass(frozen=True)
class SweepResult:
    """The records of a grid's cells after a run (earlier runs' records included)."""

    path: Path
    cells: tuple[Cell, ...]
    records: tuple[CellRecord, ...]  # one per cell that has a record, in grid order
    ran: int  # cells run by this call
    skipped: int  # cells already finished in the file
    seconds: float
    dropped_partial: int = 0  # bytes of a partial last line cut off on opening
    where: str = ""  # "serial", "LocalCluster(2 workers)", "tcp://…"

    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "failed": 0, "timeout": 0, "lost": 0, "missing": 0}
        for r in self.records:
            out[r.status] += 1
        out["missing"] = len(self.cells) - len(self.records)
        return out

    @property
    def complete(self) -> bool:
        """Every cell has a record with status ok."""
        return len(self.records) == len(self.cells) and all(r.ok for r in self.records)

    @property
    def exit_code(self) -> int:
        return 0 if self.complete else 1

    def table(self) -> str:
        from attncert.sweep.report import markdown_report

        return markdown_report(self.records)

    def plot(self, path: str | os.PathLike[str]) -> Path:
        from attncert.sweep.report import plot_sweep

        return plot_sweep(self.records, path)

    def summary(self) -> str:
        c = self.counts()
        parts = [f"{c['ok']} ok"] + [f"{c[k]} {k}" for k in ("failed", "timeout", "lost") if c[k]]
        if c["missing"]:
            parts.append(f"{c['missing']} not run")
        return (
            f"{len(self.cells)} cells: {', '.join(parts)} ({self.ran} run now, {self.skipped} "
            f"already in {self.path}; {self.where}, {self.seconds:.1f} s)"
        )


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the sweep; ``result`` holds what the file has (all whole lines)."""

    def __init__(self, result: SweepResult):
        super().__init__("sweep interrupted")
        self.result = result


def check_cells(cells: Sequence[Cell]) -> None:
    """Refuse unknown tasks and parameters, and sizes beyond :mod:`attncert.limits`,
    before anything runs (on the client)."""
    from attncert import limits

    for c in cells:
        get_task(c.task).options(c)
        if c.task == "certify":
            limits.check_certify_size(c.n + 2, what=f"cell {c.task} n = {c.n}")
        elif c.task == "prove":
            limits.check_at_most(
                c.n,
                limits.PROVE_MAX_LEN,
                what=f"cell prove n = {c.n}",
                reason="the z3 prover's per-length proofs grow too fast beyond it",
            )


def run_sweep(
    cells: Sequence[Cell],
    out: str | os.PathLike[str],
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    serial: bool = False,
    isolate: bool = True,
    retry_failed: bool = False,
    progress: bool = False,
) -> SweepResult:
    """Run every cell of ``cells`` not yet finished in the results file ``out``
    (see the module docstring); returns the grid's records."""
    check_cells(cells)
    if workers is not None and workers < 1:
        raise AttncertError(f"workers = {workers}", where="workers", expected="≥ 1")
    t0 = time.perf_counter()
    rf = ResultsFile.open(out)
    done = rf.finished(retry_failed=retry_failed)
    todo = [c for c in cells if c.id not in done]
    skipped = len(cells) - len(todo)
    earlier_failed = sum(1 for c in cells if c.id in done and not rf.records[c.id].ok)
    bar = _Progress(len(cells), skipped, earlier_failed, progress)
    interrupted = False
    where = "serial" if todo else "nothing left to run"
    ran = 0
    try:
        if serial or not todo:
            # a Ctrl-C here raises KeyboardInterrupt at once: the running cell's child is
            # killed and not recorded; every record already written is a whole line
            for cell in todo:
                o = run_cell(cell.to_dict(), cell.timeout) if isolate else _inline(cell)
                rf.append(_record(cell, o, "local"))
                ran += 1
                bar.tick(rf.records[cell.id])
        else:
            with _sigint_as_flag() as stop, dask_client(scheduler, workers) as (client, where):
                ran, interrupted = _run_dask(client, todo, rf, bar, stop, isolate)
    except KeyboardInterrupt:  # serial, or a second Ctrl-C on Dask
        interrupted = True
    finally:
        bar.close()
    result = SweepResult(
        Path(out),
        tuple(cells),
        tuple(rf.records[c.id] for c in cells if c.id in rf.records),
        ran,
        skipped,
        time.perf_counter() - t0,
        rf.dropped_partial,
        where,
    )
    if interrupted:
        raise SweepInterrupted(result)
    return result


# ----- Dask -------------------------------------------------------------------------------------


def _run_dask(
    client, todo: list[Cell], rf: ResultsFile, bar: _Progress, stop: threading.Event, isolate: bool
) -> tuple[int, bool]:
    """Submit every cell (longest first), record each as it finishes; stop early when
    ``stop`` is set (Ctrl-C) and cancel what is left."""
    from distributed import KilledWorker, as_completed

    nonce = uuid.uuid4().hex[:8]
    # longest first (n as the proxy): the last cells to start are the short ones
    todo = sorted(todo, key=lambda c: -c.n)
    futures = {
        client.submit(
            dask_cell,
            c.to_dict(),
            c.timeout,
            isolate,
            key=f"attncert-cell-{c.id}-{nonce}",
            pure=False,
        ): c
        for c in todo
    }
    ac = as_completed(list(futures))
    ran = 0
    while not ac.is_empty():
        if stop.is_set():
            break
        batch = ac.next_batch(block=False)
        if not batch:
            time.sleep(0.05)
            continue
        for fut in batch:
            cell = futures.pop(fut)
            if fut.status == "finished":
                rec = _record(cell, fut.result(), "")
            elif fut.status == "cancelled":
                continue  # not a result: the cell runs again next time
            else:
                err = fut.exception()
                if isinstance(err, KilledWorker):
                    rec = CellRecord.now(
                        cell,
                        "lost",
                        reason="its Dask worker died while running it, also on retry "
                        "(killed, out of memory, or the machine went away)",
                    )
                else:
                    rec = CellRecord.now(cell, "failed", reason=f"{type(err).__name__}: {err}")
            rf.append(rec)
            ran += 1
            bar.tick(rec)
    interrupted = stop.is_set()
    if futures:
        client.cancel(list(futures))
    return ran, interrupted


# ----- helpers ----------------------------------------------------------------------------------


def _inline(cell: Cell) -> dict[str, Any]:
    return run_cell_inline(cell.to_dict())


def _record(cell: Cell, outcome: dict[str, Any], worker: str) -> CellRecord:
    return CellRecord.now(
        cell,
        outcome["status"],
        reason=outcome.get("reason", ""),
        seconds=float(outcome.get("seconds", 0.0)),
        worker=outcome.get("worker", worker) or outcome.get("host", ""),
        result=outcome.get("result"),
    )


class _Progress:
    """tqdm over all cells of the grid (finished ones counted from the start), showing
    how many cells are done and how many of them failed (failed, timeout or lost)."""

    def __init__(self, total: int, done: int, failed: int, enabled: bool):
        self.failed = failed
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, desc="sweep", unit="cell", file=sys.stderr)
            self.bar.set_postfix(done=done, failed=failed, refresh=False)

    def tick(self, rec: CellRecord) -> None:
        self.failed += not rec.ok
        if self.bar is not None:
            self.bar.set_postfix(done=self.bar.n + 1, failed=self.failed, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@contextmanager
def _sigint_as_flag() -> Iterator[threading.Event]:
    """While inside: the first SIGINT sets the returned flag (the loop stops between
    records); a second one raises KeyboardInterrupt. Outside the main thread: no change."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)
