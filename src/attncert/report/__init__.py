"""One report for a model: every analysis that applies, at every length (issue 33).

Python (``attncert.report`` is itself callable)::

    import attncert
    rep = attncert.report("zoo:trained_hard_first_last", ns=(16, 64), out="report/")
    rep.section("certify").verdict
    rep.to_html(), rep.to_markdown(), rep.to_json()

Command line::

    attncert report [MODEL] [--language L] [--n 16,64,256,1024] [--lengths A:B] -o DIR

One module per idea: :mod:`~attncert.report.cells` (one analysis at one n, a pure
function returning a JSON-able outcome and a certificate; the length horizon's cell in
:mod:`~attncert.report.horizon_cell`), :mod:`~attncert.report.run`
(planning, the directory, running cells in-process or on Dask, resumption),
:mod:`~attncert.report.binding` (every cell bound to its certificate),
:mod:`~attncert.report.document` (the :class:`Report` value), :mod:`~attncert.report.sections`
(one module per family of sections), :mod:`~attncert.report.summary` (the paragraph a
person reads first, derived from the verdicts), :mod:`~attncert.report.constancy`,
:mod:`~attncert.report.text` (marks, run-length strings, exact counts),
:mod:`~attncert.report.plots` (SVG), :mod:`~attncert.report.html`,
:mod:`~attncert.report.markdown`, :mod:`~attncert.report.recheck` (``attncert check`` on
certificates of every kind and on report directories).

The directory: ``index.html`` (self-contained), ``report.md``, ``report.json``,
``plots/*.svg``, ``certs/<cell>.json`` (each certificate, as the command writes it with
``-o``), ``cells/<cell>.json`` (each cell's outcome), ``model.json`` and
``report-manifest.json``.
"""

from __future__ import annotations

import sys
import tempfile
import time
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attncert.report.document import Report, Section, build_report, describe_model

__all__ = ["DEFAULT_MODEL", "DEFAULT_NS", "Report", "Section", "default_language", "report"]

DEFAULT_MODEL = "zoo:trained_hard_first_last"
DEFAULT_NS = (16, 64, 256, 1024)
DEFAULT_CELL_TIME_LIMIT = 60.0


def default_language(model) -> str:
    """The report's language when none is given: the one ``model`` records — a compiled
    library formula's ``meta.language``, a trained model's recipe
    (:func:`attncert.languages.recorded_language`) — else dyck1 / dyck2 over a bracket
    alphabet, parity over {0,1}; InputError (naming ``--language``) when the model
    records none and its alphabet has no default."""
    from attncert.errors import InputError
    from attncert.languages import recorded_language

    record = recorded_language(model.meta)
    if record is not None and record[1] is not None:
        return record[1]
    sigma = "".join(sorted(model.alphabet))
    if sigma in ("()", "()[]"):
        return {"()": "dyck1", "()[]": "dyck2"}[sigma]
    if set(model.alphabet) <= {"0", "1"}:
        return "parity"
    said = "" if record is None else f" (its meta says {record[0]!r})"
    raise InputError(
        f"model {model.name!r} records no language attncert knows by name{said} and has no "
        f"default over its alphabet {''.join(model.alphabet)!r}",
        where="--language",
        expected="--language L",
    )


def _load(model: Any):
    """A Model, from a Model or a CLI-style spec (``zoo:NAME`` or a path)."""
    from attncert.model import load_model, zoo_model
    from attncert.model.spec import Model

    if isinstance(model, Model):
        return model, None
    spec = str(model)
    if spec.startswith("zoo:"):
        return zoo_model(spec[4:]), spec
    path = Path(spec)
    if not path.is_file():
        from attncert.errors import InputError

        raise InputError(
            f"no model file {spec!r}",
            expected="a model JSON file, or zoo:NAME for a built-in model",
        )
    return load_model(path), None


def report(
    model: Any = None,
    *,
    language: str | None = None,
    ns: Sequence[int] = DEFAULT_NS,
    lengths: str | tuple[int, int | None] | None = None,
    out: str | Path | None = None,
    dask: bool = True,
    scheduler: str | None = None,
    workers: int | None = None,
    cell_time_limit: float = DEFAULT_CELL_TIME_LIMIT,
    seed: int = 0,
    progress: bool = False,
) -> Report:
    """Run every analysis that applies to ``model`` at each n of ``ns`` and write the
    report directory ``out`` (a new temporary directory if None); see the module
    docstring. ``language`` defaults to :func:`default_language`; with ``model`` None,
    the demo: :data:`DEFAULT_MODEL` against ``parity``. Bad input (a language not over
    the model's alphabet, a range of lengths that is not 1 ≤ A ≤ B, a directory that is not
    a report, a ``scheduler`` that does not answer) is refused before any work and before
    anything is written. ``lengths`` (``"A:B"`` or ``(A, B)``, B an integer or ``inf``) is
    the length horizon's range; default [1, 64·L], L the longer of the longest length the
    model records being trained on and the largest of ``ns``
    (:func:`attncert.report.horizon_cell.default_span`). ``dask=False``
    runs the cells in this process; else on an embedded LocalCluster of ``workers``
    processes or ``scheduler``. A finished cell of an earlier run in ``out`` is not run
    again."""
    from attncert.errors import InputError
    from attncert.io import write_atomic
    from attncert.report import run as R
    from attncert.report.directory import drop_stale, seal

    t0 = time.perf_counter()
    m, spec = _load(DEFAULT_MODEL if model is None else model)
    language = language or ("parity" if model is None else default_language(m))
    R.check_language(m, language)
    ns = tuple(sorted({int(n) for n in ns}))
    R.check_lengths(m, ns)
    from attncert.report.horizon_cell import default_span, parse_span

    span = default_span(m, ns) if lengths is None else parse_span(lengths)
    if not cell_time_limit > 0:
        raise InputError(
            f"cell time limit {cell_time_limit}", expected="a positive number of seconds"
        )
    if workers is not None and workers < 0:
        raise InputError(f"workers = {workers}", expected="≥ 0 (0: in this process)")
    if workers == 0:
        dask = False
    target = None if out is None else Path(out)
    if target is not None:
        R.prepare_directory(target, m, language)
    # an existing scheduler answers (or the run is refused) before anything is written
    with R.scheduler_client(scheduler if dask else None) as client:
        if target is None:
            target = Path(tempfile.mkdtemp(prefix="attncert-report-"))
        target.mkdir(parents=True, exist_ok=True)
        model_spec, source = R.model_reference(m, spec, target)
        R.save_model_copy(target, m)
        cells = R.plan(ns, language, float(cell_time_limit), seed, span)
        R.write_manifest(target, m, source, language, cells, float(cell_time_limit), seed)
        records, ran, where = R.execute(
            target, m, model_spec, source, cells,
            dask=dask, scheduler=scheduler, workers=workers, progress=progress, client=client,
        )  # fmt: skip
    # every record — run now or resumed — re-checked by the kernel from its certificate
    # (attncert.report.binding); files of an earlier run with other lengths removed
    records = R.bind_records(target, m, cells, records, ns)
    drop_stale(target, [c.name for c in cells])
    rep = build_report(
        describe_model(m), language, ns, {c.name: records[c.name] for c in cells if c.name in records},
        directory=str(target), where=where, ran=ran, seconds=time.perf_counter() - t0,
    )  # fmt: skip
    for name, svg in rep.plots.items():
        write_atomic(target / "plots" / f"{name}.svg", svg)
    write_atomic(target / "report.json", rep.to_json())
    write_atomic(target / "report.md", rep.to_markdown())
    write_atomic(target / "index.html", rep.to_html())
    seal(target)  # the manifest records every file's hash (attncert check DIR compares)
    return rep


class _CallableModule(types.ModuleType):
    """``attncert.report(...)`` runs :func:`report` (the package and the entry point share
    the word; see :class:`attncert.sweep._CallableModule`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        return report(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
