"""Running a model report's cells — in this process or as tasks on Dask — with resumption.

:func:`run_report` plans every cell (analysis × n, :mod:`attncert.report.cells`), skips
the ones a half-finished report directory already holds, runs the rest and writes each
finished cell the moment it finishes:

* ``DIR/report-manifest.json`` — what the directory is (model, language, lengths ``ns``,
  the length horizon's range ``lengths``, cells);
  written first, so an interrupted run leaves a directory that a rerun resumes and
  ``attncert check DIR`` reports as incomplete;
* ``DIR/model.json`` — the model analysed (certificates of a non-zoo model name it);
* ``DIR/cells/<cell>.json`` — one cell's outcome; ``DIR/certs/<cell>.json`` — its
  certificate, in the format the command writes with ``-o``.

Every file is written atomically (:func:`attncert.io.write_atomic`). A cell whose file
exists with status ``ok`` or ``not-applicable`` and the same key is not run again; a
``failed`` or ``timeout`` cell is.

Where the cells run:

* ``dask=False`` (CLI ``--no-dask`` / ``--workers 0``): one after another in this
  process. The cell time limit is passed to each analysis's own time limit and enforced
  by a timer signal (main thread only; code inside a C extension finishes its call
  first).
* otherwise on ``dask.distributed`` through the machinery of ``attncert sweep``
  (:func:`attncert.parallel.dask_client`, :func:`attncert.sweep.worker.dask_cell`): an
  embedded ``LocalCluster`` (``workers`` processes) or ``scheduler="tcp://…"``. Each cell
  runs in a child process of its worker, killed at the time limit plus
  :data:`STARTUP_GRACE` seconds for the child's imports; a worker that dies is reported
  as a lost cell. On an existing cluster the workers must see the report directory's
  ``model.json`` at the same path (a zoo model needs nothing). The scheduler must answer
  within :data:`CONNECT_TIMEOUT` seconds, before anything is written
  (:func:`scheduler_client`).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from attncert.errors import AttncertError, InputError
from attncert.io import check_output_dir, read_json, write_atomic, write_json
from attncert.model.spec import Model
from attncert.report.cells import ANALYSES, ONCE, CellSpec, CellTimeout, applies, run_cell

MANIFEST = "report-manifest.json"
MANIFEST_FORMAT, MANIFEST_VERSION = "attncert-report", 1
STARTUP_GRACE = 15.0  # seconds for a cell's child process to import attncert (Dask runs)
DONE = ("ok", "not-applicable")
MAX_N = 4096
CONNECT_TIMEOUT = 20.0  # seconds for an existing Dask scheduler to answer (--scheduler)


def plan(
    ns: Sequence[int],
    language: str,
    time_limit: float,
    seed: int,
    span: tuple[int, int | None] | None = None,
) -> tuple[CellSpec, ...]:
    """Every cell of a report: each analysis at each n; a once-per-report analysis at the
    least n, with all lengths (the horizon with its range ``span``, [A, B], B None: ∞)."""
    lengths = tuple(sorted(set(ns)))
    out = []
    for analysis in ANALYSES:
        if analysis in ONCE:
            sp = span if analysis == "horizon" else None
            out.append(CellSpec(analysis, lengths[0], language, time_limit, seed, lengths, sp))
        else:
            out.extend(CellSpec(analysis, n, language, time_limit, seed) for n in lengths)
    return tuple(out)


def check_language(model: Model, name: str) -> None:
    """Refuse, before any work, a language that is unknown or not over the model's alphabet."""
    from attncert.languages import language

    lang = language("dfa", path=name[4:]) if name.startswith("dfa:") else language(name)
    foreign = sorted(set(model.alphabet) - set(lang.alphabet))
    if foreign:
        raise InputError(
            f"language {name!r} (alphabet {''.join(lang.alphabet)}) is not over the alphabet "
            f"{''.join(model.alphabet)} of model {model.name!r}: it has no symbol "
            f"{foreign[0]!r}",
            where="--language",
            expected="a language whose alphabet contains every symbol of the model's",
        )


def check_lengths(model: Model, ns: Sequence[int]) -> None:
    from attncert import limits

    if not ns:
        raise InputError("no lengths", where="--n", expected="e.g. 16,64,256,1024")
    for n in ns:
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_N:
            raise InputError(f"length {n!r}", where="--n", expected=f"1 ≤ n ≤ {MAX_N}")
        limits.check_certify_size(model.n_tokens(n), what=f"--n {n}")


def prepare_directory(out: Path, model: Model, language: str) -> dict | None:
    """Refuse a directory that exists, is not empty and is not a report, or is the report
    of another model or language; return its manifest (None for a new directory)."""
    check_output_dir(out, "-o")
    if not out.exists() or not any(out.iterdir()):
        return None
    path = out / MANIFEST
    if not path.is_file():
        raise InputError(
            f"{str(out)!r} exists, is not empty and is not a report directory (no {MANIFEST})",
            where="-o",
            expected="a new or empty directory, or a report directory to resume",
        )
    manifest = read_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise InputError(f"{str(path)!r} is not a report manifest", where="-o")
    old = manifest.get("model", {}).get("sha256")
    if old != model.digest or manifest.get("language") != language:
        raise InputError(
            f"{str(out)!r} is the report of model {manifest.get('model', {}).get('name')!r} "
            f"[{str(old)[:12]}] on {manifest.get('language')!r}, not of {model.name!r} "
            f"[{model.digest[:12]}] on {language!r}",
            where="-o",
            expected="a new directory (or the same model and language, to resume)",
        )
    return manifest


def write_manifest(out: Path, model: Model, source: dict, language, cells, time_limit, seed):
    span = next((c.span for c in cells if c.span is not None), None)
    write_json(
        out / MANIFEST,
        {
            "format": MANIFEST_FORMAT,
            "version": MANIFEST_VERSION,
            "model": {"name": model.name, "sha256": model.digest, "source": source},
            "language": language,
            "ns": sorted(
                {c.n for c in cells if not c.lengths} | {n for c in cells for n in c.lengths}
            ),
            "lengths": None if span is None else [span[0], "inf" if span[1] is None else span[1]],
            "cell_time_limit": time_limit,
            "seed": seed,
            "cells": [c.name for c in cells],
        },
    )


def finished(out: Path, spec: CellSpec) -> dict | None:
    """The cell's stored outcome if it is finished with the same key (else None)."""
    path = out / "cells" / f"{spec.name}.json"
    if not path.is_file():
        return None
    try:
        got = read_json(path)
    except AttncertError:
        return None
    if not isinstance(got, dict) or got.get("key") != spec.key() or got.get("status") not in DONE:
        return None
    return got


def store(out: Path, spec: CellSpec, outcome: dict[str, Any]) -> dict[str, Any]:
    """Write the cell's certificate (if any), then its outcome file; return the record."""
    cert = outcome.pop("certificate", None)
    # the cell's time budget is part of its record: the page shows what it had and used
    rec = {
        "cell": spec.name,
        "key": spec.key(),
        "time_limit": spec.time_limit,
        **outcome,
        "certificate": None,
    }
    if cert:
        rel = f"certs/{spec.name}.json"
        write_atomic(out / rel, cert)
        rec["certificate"] = rel
    write_json(out / "cells" / f"{spec.name}.json", rec)
    return rec


def execute(
    out: Path,
    model: Model,
    model_spec: str,
    source: dict,
    cells: Sequence[CellSpec],
    *,
    dask: bool = True,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    client: Any = None,
) -> tuple[dict[str, dict], int, str]:
    """Run every unfinished cell; return ``(records by cell name, cells run now, where)``.
    ``client``: a connected client of ``scheduler`` (:func:`scheduler_client`) to use."""
    records: dict[str, dict] = {}
    todo = []
    for spec in cells:
        got = finished(out, spec)
        if got is not None:
            records[spec.name] = got
        elif applies(spec.analysis, model) is not None:  # known without running anything
            records[spec.name] = store(out, spec, run_cell(spec, model, source))
        else:
            todo.append(spec)
    bar = _bar(len(cells), len(cells) - len(todo), progress)
    where = "in-process" if todo else "nothing left to run"
    try:
        if not todo:
            pass
        elif not dask:
            for spec in todo:
                try:
                    with _time_limit(spec.time_limit):
                        outcome = run_cell(spec, model, source)
                except CellTimeout as err:  # the timer fired just as the cell returned
                    outcome = {"status": "timeout", "verdict": None, "reason": str(err)}
                records[spec.name] = store(out, spec, outcome)
                _tick(bar, records[spec.name])
        else:
            where = _run_dask(
                out, model_spec, source, todo, records, bar, scheduler, workers, client
            )
    finally:
        if bar is not None:
            bar.close()
    return records, len(todo), where


def scheduler_client(address: str | None):
    """A client of the Dask scheduler at ``address`` for the report's cells, or None (:func:`attncert.parallel.scheduler_client`,
    :data:`CONNECT_TIMEOUT` seconds to answer)."""
    from attncert.parallel import scheduler_client as connect

    return connect(address, timeout=CONNECT_TIMEOUT, local="--no-dask for this process")


def _run_dask(out, model_spec, source, todo, records, bar, scheduler, workers, client=None) -> str:
    from distributed import KilledWorker, as_completed

    from attncert.parallel import dask_client
    from attncert.sweep.grid import Cell, model_hash
    from attncert.sweep.worker import dask_cell

    nonce = uuid.uuid4().hex[:8]
    given = nullcontext((client, scheduler)) if client is not None else None
    with given or dask_client(scheduler, workers) as (client, where):
        futures = {}
        for spec in sorted(todo, key=lambda s: -s.n):  # longest first
            cell = Cell(
                "attncert.report.cells:report_task",
                model_spec,
                spec.n,
                spec.seed,
                tuple(
                    sorted(
                        {
                            "analysis": spec.analysis,
                            "language": spec.language,
                            "time_limit": spec.time_limit,
                            "lengths": ",".join(map(str, spec.lengths)),
                            "span": _span_text(spec.span),
                            "source": json.dumps(source, sort_keys=True),
                        }.items()
                    )
                ),
                model_hash(model_spec),
                spec.time_limit + STARTUP_GRACE,
            )
            fut = client.submit(
                dask_cell,
                cell.to_dict(),
                cell.timeout,
                True,
                key=f"attncert-report-{spec.name}-{nonce}",
                pure=False,
            )
            futures[fut] = spec
        for fut in as_completed(list(futures)):
            spec = futures.pop(fut)
            if fut.status == "finished":
                got = fut.result()
                outcome = dict(got.get("result") or {})
                if got["status"] != "ok" or not outcome:
                    outcome = {
                        "status": got["status"],  # failed | timeout
                        "verdict": None,
                        "reason": got.get("reason", ""),
                        "data": {},
                        "certificate": None,
                    }
                outcome["seconds"] = got.get("seconds", outcome.get("seconds"))
                outcome["worker"] = got.get("worker", "")
            else:
                err = fut.exception()
                lost = isinstance(err, KilledWorker)
                outcome = {
                    "status": "lost" if lost else "failed",
                    "verdict": None,
                    "reason": "its Dask worker died while running it, also on retry"
                    if lost
                    else f"{type(err).__name__}: {err}",
                    "data": {},
                    "certificate": None,
                }
            records[spec.name] = store(out, spec, outcome)
            _tick(bar, records[spec.name])
    return where


def _span_text(span: tuple[int, int | None] | None) -> str:
    """The horizon's range as a sweep parameter: ``A:B`` (``A:inf``), or "" for none."""
    if span is None:
        return ""
    return f"{span[0]}:{'inf' if span[1] is None else span[1]}"


def bind_records(
    out: Path, model: Model, cells: Sequence[CellSpec], records: dict[str, dict], ns
) -> dict[str, dict]:
    """Every record bound to its certificate (:func:`attncert.report.binding.bind`: the
    verdict and certified numbers re-derived by the kernel), each cell file rewritten with
    the bound record. A record that cannot be bound (its certificate missing or about
    another model) becomes a failed cell with the reason."""
    from attncert.report.binding import Unbound, bind

    bound = {}
    for spec in cells:
        rec = records.get(spec.name)
        if rec is None:
            continue
        try:
            b = bind(spec.analysis, rec, model, out, spec.n, tuple(ns))
        except Unbound as err:
            b = {
                **rec,
                "status": "failed",
                "verdict": None,
                "reason": f"not bound to its certificate: {err.message}",
            }
        if b != rec:
            write_json(out / "cells" / f"{spec.name}.json", b)
        bound[spec.name] = b
    return bound


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`CellTimeout` in this (main) thread after ``seconds`` (a timer signal;
    elsewhere than the main thread, or without SIGALRM, no enforcement)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def handler(signum, frame):
        raise CellTimeout(f"no result within the cell time limit of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _bar(total: int, done: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=done, desc="report", unit="cell", file=sys.stderr)


def _tick(bar, rec: dict) -> None:
    if bar is not None:
        bar.set_postfix_str(f"{rec['cell']}: {rec.get('verdict') or rec['status']}", refresh=False)
        bar.update(1)


def model_reference(model: Model, spec: str | None, out: Path) -> tuple[str, dict]:
    """How workers load the model (``zoo:NAME`` or the report's ``model.json``) and the
    ``model.source`` certificates record (a zoo name, or ``../model.json`` relative to
    ``certs/``)."""
    from attncert.model import zoo_model, zoo_names

    name = spec[4:] if spec and spec.startswith("zoo:") else model.name
    if name in zoo_names() and zoo_model(name).digest == model.digest:
        return f"zoo:{name}", {"zoo": name}
    return str((out / "model.json").resolve()), {"path": "../model.json"}


def save_model_copy(out: Path, model: Model) -> None:
    from attncert.model import load_model, save_model

    path = out / "model.json"
    if path.is_file():
        try:
            if load_model(path).digest == model.digest:
                return
        except AttncertError:
            pass
    save_model(model, path)
