"""The task registry: what a sweep cell can run. A new task kind is one small function.

A task is a function ``fn(cell) -> dict`` registered with :func:`task` under a name,
with the parameters it accepts and their defaults. It returns a JSON-able dict whose
``verdict`` says what was found; ``free_fraction`` and ``value`` (when it has them) are
drawn by :mod:`attncert.sweep.report`. A task that cannot decide returns a verdict such
as ``unknown``; a task that *raises* is recorded as a failed cell with the error.

Built in:

* ``certify`` — Hahn's Theorem 1 restriction certificate (search, then the independent
  checker: :func:`attncert.hard.pipeline.certify`); a certificate is only reported if the
  checker accepted it.
* ``sensitivity`` — **MEASURED, NOT CERTIFIED (placeholder).** The largest change of the
  readout when one input symbol is exchanged, exhaustive for small n, else a search (a
  lower bound of the true maximum): :func:`attncert.soft.sensitivity.sensitivity_profile`.
  When the certified soft-attention API lands, replace the body of
  :func:`sensitivity_task` by a call to it (and its verdict); nothing else changes.
* ``prove`` — the bounded z3 agreement proof at one length n
  (:func:`attncert.prove.prove_agreement` with ``min_len = max_len = n``); the cell's
  model is a formula (text, or ``library:NAME``), compiled in ``regime``.

A task outside the package can be named ``module.path:function`` in a grid: the
function takes the cell and returns a dict, and must be importable where the sweep is
started (its parameters are checked there, against the function's optional
``sweep_defaults`` dict) and on the workers.

Model specs (cell.model) for ``certify`` and ``sensitivity``: ``zoo:NAME``, a model
JSON path, or ``random:L2-H2-d16[-KIND]`` (a seeded random model; the cell's seed is the
model's seed).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from attncert.errors import InputError, SpecError
from attncert.sweep.grid import Cell, Scalar

TaskFn = Callable[[Cell], dict[str, Any]]


@dataclass(frozen=True)
class TaskKind:
    """A registered task: its function, accepted parameters with defaults, whether the
    cell's seed matters, and whether its verdicts are certified (checked) or measured."""

    name: str
    fn: TaskFn
    defaults: Mapping[str, Scalar]
    uses_seed: bool = True
    certified: bool = True
    summary: str = ""
    strict: bool = True  # refuse parameters not in ``defaults``

    def options(self, cell: Cell) -> dict[str, Any]:
        """The cell's parameters over the defaults (unknown names refused if ``strict``)."""
        given = cell.param_dict
        unknown = sorted(set(given) - set(self.defaults))
        if unknown and self.strict:
            raise SpecError(
                f"task {self.name!r} has no parameter(s) {unknown}",
                where="params",
                expected=", ".join(sorted(self.defaults)) or "no parameters",
            )
        return {**self.defaults, **given}


TASKS: dict[str, TaskKind] = {}


def task(
    name: str,
    *,
    defaults: Mapping[str, Scalar] | None = None,
    uses_seed: bool = True,
    certified: bool = True,
) -> Callable[[TaskFn], TaskFn]:
    """Register ``fn`` as task ``name`` (decorator)."""

    def deco(fn: TaskFn) -> TaskFn:
        doc = (fn.__doc__ or "").strip().splitlines()
        TASKS[name] = TaskKind(
            name, fn, dict(defaults or {}), uses_seed, certified, doc[0] if doc else ""
        )
        return fn

    return deco


def get_task(name: str) -> TaskKind:
    """The task named ``name``: a registered name or ``module.path:function``."""
    if name in TASKS:
        return TASKS[name]
    if ":" in name:
        mod, _, attr = name.partition(":")
        try:
            fn = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as err:
            raise InputError(
                f"cannot import task {name!r}: {err}", where="task", expected="module.path:function"
            ) from None
        defaults = getattr(fn, "sweep_defaults", None)  # optional: declares its parameters
        return TaskKind(name, fn, dict(defaults or {}), strict=defaults is not None)
    raise InputError(
        f"no task {name!r}", where="task", expected=", ".join(sorted(TASKS)) + " or module:function"
    )


def run_task(cell: Cell) -> dict[str, Any]:
    """Run one cell in this process and return the task's result dict."""
    kind = get_task(cell.task)
    kind.options(cell)  # refuse unknown parameters before any work
    out = kind.fn(cell)
    if not isinstance(out, dict) or "verdict" not in out:
        raise SpecError(
            f"task {cell.task!r} returned {type(out).__name__}", expected="a dict with a verdict"
        )
    return out


# ----- model specs --------------------------------------------------------------------------

_RANDOM = re.compile(r"random:L(\d+)-H(\d+)-d(\d+)(?:-([a-z_]+))?")


def resolve_model(spec: str, seed: int = 0):
    """The model a cell names: ``zoo:NAME``, ``random:L2-H2-d16[-KIND]`` (seeded), or a path."""
    m = _RANDOM.fullmatch(spec)
    if m:
        from attncert.model import random_model

        layers, heads, d, kind = m.groups()
        return random_model(int(layers), int(heads), int(d), kind=kind or "leftmost", seed=seed)
    if spec.startswith("random:"):
        raise InputError(
            f"model {spec!r}", where="model", expected="random:L<layers>-H<heads>-d<dim>[-kind]"
        )
    from attncert.model import load_model, zoo_model

    if spec.startswith("zoo:"):
        return zoo_model(spec[4:])
    return load_model(spec)


# ----- built-in tasks --------------------------------------------------------------------------


@task(
    "certify",
    defaults={
        "language": "parity",
        "method": "maxsat",
        "k": 1,
        "time_limit": 60.0,
        "paper_stages": True,
    },
)
def certify_task(cell: Cell) -> dict[str, Any]:
    """Theorem 1 restriction certificate, checked by the independent checker."""
    from attncert.errors import SolverTimeout
    from attncert.hard.checker import check  # the kernel's check, heads in threads
    from attncert.hard.pipeline import CertificationFailed, certify
    from attncert.hard.verdict import assess
    from attncert.kernel.verdict import not_found
    from attncert.model import harden

    o = TASKS["certify"].options(cell)
    model = resolve_model(cell.model, cell.seed)
    if not model.is_hard:
        model = harden(model)  # Theorem 1 is about hard attention: certify the hardened model
    try:
        cert = certify(
            model,
            verify=False,
            n=cell.n,
            language=o["language"],
            method=str(o["method"]),
            k=int(o["k"]),
            time_limit=None if o["time_limit"] is None else float(o["time_limit"]),
            paper_stages=bool(o["paper_stages"]),
            seed=cell.seed,
        )
    except SolverTimeout as err:
        a = not_found(f"solver time-out: {err}")
        return {"verdict": a.verdict.value, "reason": a.reasons[0], "model_name": model.name}
    except CertificationFailed as err:
        a = err.assessment()  # a search that found nothing is UNDECIDED, never REFUTED
        return {"verdict": a.verdict.value, "reason": a.reasons[0], "model_name": model.name}
    report = check(cert, model)
    cert.trace["seconds_check"] = round(report.seconds, 3)
    assessment = assess(cert, model, report)
    t = cert.trace
    rho = cert.final_restriction
    return {
        "verdict": assessment.verdict.value,  # the kernel's verdict (attncert.verdicts)
        "reasons": list(assessment.reasons),
        "model_name": model.name,
        "model_sha256": model.digest,
        "free": rho.num_free,
        "free_fraction": rho.free_fraction,
        "output_dependency": [u + 1 for u in cert.output_dependency],
        "decision_constant": not cert.output_dependency,  # on the restriction
        "model_nonconstant": report.nonconstant,  # a checked witness at n
        "fixed_dependence": [u + 1 for u in report.fixed_dependence],
        "misclassified": cert.misclassified is not None,
        "seconds_search": t.get("seconds_search"),
        "seconds_check": t.get("seconds_check"),
    }


@task(
    "sensitivity",
    defaults={"metric": "logit", "restarts": 8, "time_budget": 30.0},
    certified=False,
)
def sensitivity_task(cell: Cell) -> dict[str, Any]:
    """MEASURED (placeholder, not certified): largest effect of one input symbol (Lemma 5)."""
    from attncert.soft.sensitivity import sensitivity_profile

    o = TASKS["sensitivity"].options(cell)
    model = resolve_model(cell.model, cell.seed)
    prof = sensitivity_profile(
        model,
        [cell.n],
        str(o["metric"]),
        seed=cell.seed,
        restarts=int(o["restarts"]),
        time_budget=None if o["time_budget"] is None else float(o["time_budget"]),
    )
    r = prof.results[0]
    return {
        "verdict": "MEASURED",
        "certified": False,
        "note": "measured maximum (exhaustive) or lower bound (search), not a certificate; "
        "placeholder for the certified soft-attention task",
        "model_name": model.name,
        "model_sha256": model.digest,
        "metric": r.metric,
        "value": r.value,
        "method": r.method,
        "evaluations": r.evaluations,
        "witness": {"x": r.witness.x, "position": r.witness.position, "symbol": r.witness.symbol},
    }


@task(
    "prove",
    defaults={"regime": "temperature", "alphabet": None, "positions": "all", "query_timeout": 60.0},
    uses_seed=False,
)
def prove_task(cell: Cell) -> dict[str, Any]:
    """z3 bounded agreement proof of a compiled formula at length n."""
    from attncert.logic import library_formula, parse
    from attncert.prove import prove_agreement

    o = TASKS["prove"].options(cell)
    alphabet = o["alphabet"]
    if cell.model.startswith("library:"):
        nf = library_formula(cell.model[len("library:") :])
        formula, alphabet = nf.formula, alphabet or nf.alphabet
    else:
        formula = parse(cell.model)
    res = prove_agreement(
        formula,
        max_len=cell.n,
        min_len=cell.n,
        regime=str(o["regime"]),
        alphabet=alphabet,
        positions=str(o["positions"]),
        timeout=float(o["query_timeout"]),
    )
    r = res.lengths[0]
    return {
        "verdict": r.verdict,
        "model_name": res.model,
        "model_sha256": res.digest,
        "method": r.method,
        "queries": len(r.queries),
        "counterexample": r.counterexample,
        "reason": r.reason,
    }
