"""One report for a model: every analysis that applies, at every length (issue 33).

Python (``attncert.report`` is itself callable)::

    import attncert
    rep = attncert.report("zoo:trained_hard_first_last", ns=(16, 64), out="report/")
    rep.section("certify").verdict
    rep.to_html(), rep.to_markdown(), rep.to_json()

Command line::

    attncert report [MODEL] [--language L] [--n 16,64,256,1024] -o DIR

One module per idea: :mod:`~attncert.report.cells` (one analysis at one n, a pure
function returning a JSON-able outcome and a certificate), :mod:`~attncert.report.run`
(planning, the directory, running cells in-process or on Dask, resumption),
:mod:`~attncert.report.document` (the :class:`Report` value and its sections),
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
    """``parity`` over {0,1} (what ``certify`` uses), dyck1 / dyck2 over bracket alphabets,
    else the language the model records."""
    from collections.abc import Mapping

    sigma = "".join(sorted(model.alphabet))
    if sigma in ("()", "()[]"):
        return {"()": "dyck1", "()[]": "dyck2"}[sigma]
    if set(model.alphabet) <= {"0", "1"}:
        return "parity"
    meta = model.meta if isinstance(model.meta, Mapping) else {}
    training = meta.get("training") if isinstance(meta.get("training"), Mapping) else {}
    recipe = training.get("recipe") if isinstance(training.get("recipe"), Mapping) else {}
    return str(recipe.get("language") or meta.get("language") or "parity")


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
    model: Any = DEFAULT_MODEL,
    *,
    language: str | None = None,
    ns: Sequence[int] = DEFAULT_NS,
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
    docstring. Bad input (a language not over the model's alphabet, a directory that is
    not a report) is refused before any work. ``dask=False`` runs the cells in this
    process; else on an embedded LocalCluster of ``workers`` processes or ``scheduler``.
    A finished cell of an earlier run in ``out`` is not run again."""
    from attncert.errors import InputError
    from attncert.io import write_atomic
    from attncert.report import run as R

    t0 = time.perf_counter()
    m, spec = _load(model)
    language = language or default_language(m)
    R.check_language(m, language)
    ns = tuple(sorted({int(n) for n in ns}))
    R.check_lengths(m, ns)
    if not cell_time_limit > 0:
        raise InputError(
            f"cell time limit {cell_time_limit}", expected="a positive number of seconds"
        )
    if workers is not None and workers < 0:
        raise InputError(f"workers = {workers}", expected="≥ 0 (0: in this process)")
    if workers == 0:
        dask = False
    target = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="attncert-report-"))
    R.prepare_directory(target, m, language)
    target.mkdir(parents=True, exist_ok=True)
    model_spec, source = R.model_reference(m, spec, target)
    R.save_model_copy(target, m)
    cells = R.plan(ns, language, float(cell_time_limit), seed)
    R.write_manifest(target, m, source, language, cells, float(cell_time_limit), seed)
    records, ran, where = R.execute(
        target, m, model_spec, source, cells,
        dask=dask, scheduler=scheduler, workers=workers, progress=progress,
    )  # fmt: skip
    rep = build_report(
        describe_model(m), language, ns, {c.name: records[c.name] for c in cells if c.name in records},
        directory=str(target), where=where, ran=ran, seconds=time.perf_counter() - t0,
    )  # fmt: skip
    for name, svg in rep.plots.items():
        write_atomic(target / "plots" / f"{name}.svg", svg)
    write_atomic(target / "report.json", rep.to_json())
    write_atomic(target / "report.md", rep.to_markdown())
    write_atomic(target / "index.html", rep.to_html())
    return rep


class _CallableModule(types.ModuleType):
    """``attncert.report(...)`` runs :func:`report` (the package and the entry point share
    the word; see :class:`attncert.sweep._CallableModule`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        return report(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
