"""One analysis at one length: a *cell* of a model report (issue 33).

A cell is a pure function of (model, analysis, n, language, time limit, seed): it runs
one of the project's analyses and returns a JSON-able outcome

    {"status": "ok" | "not-applicable" | "failed" | "timeout",
     "verdict": a word of attncert.verdicts, or "MEASURED" for a measurement,
     "reason": why not applicable / why it failed,
     "data": the numbers the report prints,
     "certificate": the certificate's JSON text (as the command writes it with -o), or None}

The analyses (each the Python API behind a command):

* ``harden`` — agreement of the soft model and its hardened version
  (:func:`attncert.model.importers.hardening_report`) on every string of length n where
  that is cheap (:func:`_cheap`: |Σ|ⁿ ≤ 2¹⁶ and a probe says it fits the cell's budget),
  else on sampled strings; measured, not proved.
* ``certify`` — Hahn's Theorem 1 on the hardened model (``attncert certify``), with the
  soft model's decisions on the misclassified pair (``--soft-pair``).
* ``verify`` — certified accuracy over all |Σ|ⁿ strings (``attncert verify``), beside the
  accuracy measured in floating point (every string where cheap, else sampled).
* ``sensitivity`` — Lemma 5 measured, the certified B(n) and Theorem 6's floor
  (``attncert sensitivity --certify``).
* ``uniform`` — Lemma 5 uniformly in n (``attncert sensitivity --uniform``), one cell.
* ``horizon`` — the length horizon over the report's range of lengths (``attncert verify
  --lengths A:B``), one cell, beside the accuracy sampled at a few lengths across the
  range (:mod:`attncert.report.horizon_cell`).
* ``soft-certify`` — a certified soft restriction and a pair the model must confuse
  (``attncert soft-certify``).

A model kind or language an analysis refuses (:class:`~attncert.errors.UnsupportedError`,
:class:`~attncert.errors.InputError`) is ``not-applicable`` with the refusal as reason; any
other exception is ``failed``. :func:`report_task` is the same cell as an ``attncert
sweep`` task (``attncert.report.cells:report_task``), which is how it runs isolated in a
child process with a hard time limit, on Dask or not.
"""

from __future__ import annotations

import json
import math
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attncert.errors import InputError, ParameterError, UnsupportedError
from attncert.model.spec import Model
from attncert.report.sampling import MIN_SAMPLES, SAMPLE_WORK, random_strings

ANALYSES = ("harden", "certify", "verify", "horizon", "sensitivity", "uniform", "soft-certify")
#: the analyses that run once per report, not once per n (their cell has n = least n)
ONCE = ("uniform", "horizon")
MEASURED = "MEASURED"
#: shares of the cell time limit given to each analysis's own time limit: the rest is for
#: the kernel's check (verify's takes about as long as its search: 32 s after a 30 s
#: search for trained_hard_first_last at n = 1024), the soft pair and the process start
CERTIFY_SHARE, VERIFY_SHARE, SENSITIVITY_SHARE, SOFT_SHARE = 0.7, 0.35, 0.2, 0.5
#: strings per n for the sampled accuracy and the hardening agreement: 200 up to n = 64,
#: then fewer (a float forward pass costs O(n²) per string: ≈ 0.1 s at n = 1024), ≥ 24
#: up to |Σ|ⁿ = 2¹⁶ strings the measured numbers (hardening agreement, sampled accuracy, the
#: PARITY cross-entropy) are computed over every string, when a probe of :data:`PROBE`
#: strings says it fits in the given share of the cell's time limit
EXACT_MAX, PROBE = 1 << 16, 256
HARDEN_EXACT_SHARE, SAMPLED_EXACT_SHARE, CE_EXACT_SHARE = 0.6, 0.1, 0.15
#: languages the soft restriction's pair search knows (attncert soft-certify --language)
SOFT_LANGUAGES = ("parity", "parity-odd", "dyck1", "dyck2", "majority", "first_last")


@dataclass(frozen=True)
class CellSpec:
    """One analysis at one length n, with the report's language, time limit and seed."""

    analysis: str
    n: int
    language: str
    time_limit: float
    seed: int = 0
    lengths: tuple[int, ...] = ()  # the report's lengths (for a once-per-report cell)
    span: tuple[int, int | None] | None = None  # the horizon's range [A, B] (B None: ∞)

    @property
    def name(self) -> str:
        """File stem of the cell's result and certificate, e.g. ``certify-n64``."""
        return f"{self.analysis}-n{self.n}"

    def key(self) -> dict[str, Any]:
        """What the cell's result depends on (a rerun with another key recomputes it)."""
        key = {
            "analysis": self.analysis,
            "n": self.n,
            "language": self.language,
            "seed": self.seed,
        }
        if self.span is not None:
            key["lengths"] = [self.span[0], "inf" if self.span[1] is None else self.span[1]]
        return key


def applies(analysis: str, model: Model) -> str | None:
    """Why ``analysis`` does not apply to ``model`` at all (None: it applies). Only the
    reasons known without running anything; the analyses refuse the rest themselves."""
    soft_heads = not model.is_hard
    if analysis in ("harden", "uniform", "soft-certify", "sensitivity") and not soft_heads:
        return (
            "the model has only hard-attention heads: Lemma 5, Theorem 6 and the soft "
            "analyses are about softmax attention"
            if analysis != "harden"
            else "the model has only hard-attention heads: there is nothing to harden"
        )
    return None


def run_cell(spec: CellSpec, model: Model, source: dict[str, Any]) -> dict[str, Any]:
    """Run one cell in this process (module docstring). ``source`` says where the model
    can be found again: ``{"zoo": NAME}`` or ``{"path": PATH}`` (relative to a
    certificate in ``certs/``)."""
    t0 = time.perf_counter()
    why = applies(spec.analysis, model)
    if why is not None:
        return _outcome("not-applicable", None, why, {}, None, t0)
    try:
        verdict, data, cert = _ANALYSIS[spec.analysis](spec, model, source)
    except (UnsupportedError, InputError, ParameterError) as err:
        return _outcome("not-applicable", None, str(err), {}, None, t0)
    except CellTimeout as err:
        return _outcome("timeout", None, str(err), {}, None, t0)
    except Exception as err:  # a cell's failure is reported in its section, never fatal
        out = _outcome("failed", None, f"{type(err).__name__}: {err}", {}, None, t0)
        out["traceback"] = traceback.format_exc(limit=-4)[-2000:]
        return out
    return _outcome("ok", verdict, "", _finite(data), cert, t0)


class CellTimeout(BaseException):
    """The cell's time limit ran out (raised in-process by :mod:`attncert.report.run`'s
    timer). A BaseException, like KeyboardInterrupt, so that no ``except Exception`` inside
    an analysis swallows it."""


def _outcome(status, verdict, reason, data, cert, t0) -> dict[str, Any]:
    return {
        "status": status,
        "verdict": verdict,
        "reason": reason,
        "data": data,
        "certificate": cert,
        "seconds": round(time.perf_counter() - t0, 3),
    }


def _finite(obj: Any) -> Any:
    """JSON without NaN/inf (written as null / strings) and without numpy scalars."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else (None if math.isnan(obj) else str(obj))
    if isinstance(obj, np.generic):
        return _finite(obj.item())
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


# ----- the analyses ------------------------------------------------------------------------


def _limit(spec: CellSpec, share: float) -> float:
    """An analysis's own time limit: its share of the cell's (at least 1 s)."""
    return max(1.0, share * spec.time_limit)


def _every_string(model: Model, n: int) -> list[str]:
    import itertools

    return ["".join(p) for p in itertools.product(model.alphabet, repeat=n)]


def _cheap(model: Model, n: int, seconds: float, passes: float = 1.0) -> bool:
    """All |Σ|ⁿ strings fit: |Σ|ⁿ ≤ :data:`EXACT_MAX` and ``passes`` float forward passes
    over them, extrapolated from a probe of :data:`PROBE` strings, take ≤ ``seconds``."""
    total = len(model.alphabet) ** n
    if total > EXACT_MAX:
        return False
    if total <= PROBE:
        return True
    from attncert.model import forward

    probe = random_strings(model, n, 0, PROBE)
    t0 = time.perf_counter()
    forward(model, probe)
    return passes * (time.perf_counter() - t0) * total / PROBE <= seconds


def _measured_strings(model: Model, spec: CellSpec, share: float, passes: float = 1.0):
    """(strings, exact): every string of length n when cheap (:func:`_cheap`), else the
    sampled ones of :func:`_strings`."""
    if _cheap(model, spec.n, share * spec.time_limit, passes):
        return _every_string(model, spec.n), True
    return random_strings(model, spec.n, spec.seed), False


def _harden(spec: CellSpec, model: Model, source: dict) -> tuple[str, dict, None]:
    from attncert.model.importers import hardening_report

    strings, exact = _measured_strings(model, spec, HARDEN_EXACT_SHARE, passes=2.0)
    a = hardening_report(model, strings).accept
    return MEASURED, {"strings": a.strings, "agree": a.agree, "rate": a.rate, "exact": exact}, None


def _certify(spec: CellSpec, model: Model, source: dict) -> tuple[str, dict, str | None]:
    from attncert.errors import SolverTimeout
    from attncert.hard.certificate import certificate_to_json
    from attncert.hard.checker import check
    from attncert.hard.pipeline import CertificationFailed, certify
    from attncert.hard.verdict import assess, dependence_text
    from attncert.kernel.verdict import not_found
    from attncert.model import harden

    soft, hard, src = None, model, dict(source)
    if not model.is_hard:
        soft, hard = model, harden(model)
        src["harden"] = "leftmost"
    try:
        cert = certify(
            hard,
            verify=False,
            model_source=src,
            n=spec.n,
            language=spec.language,
            time_limit=_limit(spec, CERTIFY_SHARE),
            seed=spec.seed,
        )
    except SolverTimeout as err:
        a = not_found(f"solver time-out: {err}")
        return (
            a.verdict.value,
            {"no_certificate": a.reasons[0], "search_limit": _limit(spec, CERTIFY_SHARE)},
            None,
        )
    except CertificationFailed as err:
        a = err.assessment()  # a search that found nothing is UNDECIDED, never REFUTED
        return (
            a.verdict.value,
            {"no_certificate": a.reasons[0], "search_limit": _limit(spec, CERTIFY_SHARE)},
            None,
        )
    report = check(cert, hard)
    cert.trace["seconds_check"] = round(report.seconds, 3)
    assessment = assess(cert, hard, report)
    rho = cert.final_restriction
    data: dict[str, Any] = {
        "model": cert.model_name,
        "hardened": soft is not None,
        "accepted": report.accepted,
        "reasons": list(assessment.reasons),
        "free": rho.num_free,
        "fixed": spec.n - rho.num_free,
        "free_fraction": rho.free_fraction,
        "output_dependency": [u + 1 for u in cert.output_dependency],
        "nonconstant": report.nonconstant,
        "misclassified": None
        if cert.misclassified is None
        else {
            "strings": list(cert.misclassified.strings),
            "membership": list(cert.misclassified.membership),
            "decisions": list(cert.misclassified.decisions),
        },
        "note": cert.note,
        "seconds_search": cert.trace.get("seconds_search"),
        "seconds_check": cert.trace.get("seconds_check"),
        "search_limit": _limit(spec, CERTIFY_SHARE),
    }
    if report.accepted:
        data["depends"] = dependence_text(cert, report)
        if soft is not None and cert.misclassified is not None and spec.n <= 1024:
            from attncert.hard.soft_pair import confirm_on_soft

            pair = confirm_on_soft(soft, cert)
            if pair is not None:
                data["soft_pair"] = {
                    **pair.to_dict(),
                    "misclassified": pair.misclassified,
                    "text": pair.sentence(spec.language),
                }
    return assessment.verdict.value, data, certificate_to_json(cert) if report.accepted else None


def _verify(spec: CellSpec, model: Model, source: dict) -> tuple[str, dict, str | None]:
    from attncert.languages import language
    from attncert.model import forward
    from attncert.soft.verify import refusal, verify
    from attncert.soft.verify.certificate import certificate_to_json

    name = spec.language
    lang = language("dfa", path=name[4:]) if name.startswith("dfa:") else language(name)
    strings, exact = _measured_strings(model, spec, SAMPLED_EXACT_SHARE)
    decisions = forward(model, strings).accept
    right = sum(bool(d) == lang.contains(s) for s, d in zip(strings, decisions, strict=True))
    sampled = {
        "strings": len(strings),
        "right": int(right),
        "accuracy": right / len(strings),
        "exact": exact,  # every string of length n (float forward), not a sample
        "accepts": int(np.count_nonzero(decisions)),
    }
    why = refusal(model, lang, spec.n)
    if why:
        raise UnsupportedError(f"{why} (measured accuracy {sampled['accuracy']:.3f})")
    limit = _limit(spec, VERIFY_SHARE)
    res = verify(
        model,
        lang,
        spec.n,
        time_limit=limit,
        seed=spec.seed,
        source=source,
        progress=False,
    )
    d = res.to_dict()
    data = {
        "sampled": sampled,
        "proved": d["proved"],
        "accepted": d["accepted"],
        "lower": float(res.lower),
        "upper": float(res.upper),
        "accuracy": d["accuracy"],
        "undecided_measure": d["undecided_measure"],
        "nodes": d["nodes"],
        "witnesses": d["witnesses"][:2],
        "summary": res.summary().splitlines()[-1],
        "search_limit": limit,  # measured: the search's own budget, what it used, why it stopped
        "search_seconds": d.get("search_seconds"),
        "stopped": d.get("stopped") or "",
    }
    return res.verdict, data, certificate_to_json(res.certificate)


def _sensitivity(spec: CellSpec, model: Model, source: dict) -> tuple[str, dict, str | None]:
    from attncert.soft.certified.certify import lemma5_failures
    from attncert.soft.certified.table import certified_rows, row_assessment
    from attncert.soft.parity_rate import accepted_parity
    from attncert.soft.report import sensitivity_report

    limit = max(0.5, SENSITIVITY_SHARE * spec.time_limit)
    rep = sensitivity_report(model, [spec.n], seed=spec.seed, restarts=4, time_budget=limit)
    row = rep.rows()[0]
    wit = rep.profile.results[0].witness
    data: dict[str, Any] = {
        "measured": float(row["logit_change"]),
        "witness": {"strings": [wit.x, wit.x_prime], "position": wit.position},
        "method": row["method"],
        "lemma5_log10": row["bound_log10"],
        "lemma5_not_applicable": rep.not_applicable,
        "outside": list(lemma5_failures(model)),
        "search_limit": limit,
    }
    # Theorem 6's cross-entropy is PARITY's: against the report's language when it is PARITY
    # or its complement, else (for comparison) the parity the model itself accepts
    if spec.language in ("parity", "parity-odd"):
        even = spec.language == "parity"
    else:
        even = accepted_parity(model)[0]
    cheap = set(model.alphabet) == {"0", "1"} and _cheap(
        model, spec.n, CE_EXACT_SHARE * spec.time_limit
    )
    rows = certified_rows(
        model,
        rep,
        source=_text_source(source),
        accepts_even=True if even is None else even,
        samples=max(2 * MIN_SAMPLES, min(300, 2 * SAMPLE_WORK // spec.n)),
        seed=spec.seed,
        exhaustive_max=EXACT_MAX if cheap else 0,
    )
    r = rows[0]
    d = r.as_dict()
    data.update(
        {
            "certified_bound": d["certified_bound"],
            "source": d["certified_source"],
            "range_cap": d["range_cap"],
            "propagated": d["propagated"],
            "checked": d["checked"],
            "floor": d["cross_entropy_floor"],
            "measured_ce": d["measured_cross_entropy"],
            "ce": None
            if r.ce is None
            else {
                "mean": r.ce.mean,
                "half_width": r.ce.half_width,
                "strings": r.ce.samples,
                "exact": r.ce.exact,
                "language": r.ce.language,
            },
            "diagnosis": d["diagnosis"],
            "undecided": d["undecided"],
        }
    )
    verdict = row_assessment(r, model, wit).verdict  # the kernel's (attncert.kernel.verdict)
    cert = None if r.certificate is None else r.certificate.to_json()
    return verdict.value, data, cert


def _uniform(spec: CellSpec, model: Model, source: dict) -> tuple[str, dict, str | None]:
    from attncert.kernel.uniform.dyadic import approx
    from attncert.soft.certified.uniform import certify_uniform

    ns = tuple(sorted(set(spec.lengths or (spec.n,))))
    u = certify_uniform(model, max(2, spec.n), source=_text_source(source), floor_at=ns)
    d = u.as_dict()
    data = {
        "reasons": list(u.reasons),
        "n0": u.n0,
        "K": d["K_approx"],
        "cap": u.cap,
        "nontrivial_from": _short_int(d["nontrivial_from"]),
        "published": d["published"],
        "notes": d["notes"],
        "rows": [
            {
                "n": n,
                "K_over_n": None if u.bound_at(n) is None else approx(u.k / n, 6),
                "K_over_n_log10": None if u.bound_at(n) is None else _log10(u.k / n),
                "bound": None if u.bound_at(n) is None else float(u.bound_at(n)),
                "floor": u.floor_at(n),
                "cap_only": u.bound_at(n) is not None and u.k / n >= u.cap,
            }
            for n in ns
        ],
    }
    cert = None
    if u.certificate is not None:
        cert = json.dumps(u.certificate, indent=1, ensure_ascii=False) + "\n"
    return u.verdict, data, cert


def _short_int(text: str | None) -> str | None:
    """An integer of more than 15 digits as ``d.ddddde+NN`` (exact digits are in the
    certificate)."""
    if text is None or len(text) <= 15:
        return text
    return f"{text[0]}.{text[1:6]}e+{len(text) - 1}"


def _log10(q) -> float:
    """log₁₀ of a positive Fraction of any size."""
    return math.log10(q.numerator) - math.log10(q.denominator)


def _soft_certify(spec: CellSpec, model: Model, source: dict) -> tuple[str, dict, str | None]:
    from attncert.soft.certified.certify import certify_soft

    if spec.language not in SOFT_LANGUAGES:
        raise UnsupportedError(
            f"the soft restriction's pair search does not know the language {spec.language!r}",
            expected=", ".join(SOFT_LANGUAGES),
        )
    res = certify_soft(
        model,
        spec.n,
        source=_text_source(source),
        restriction=True,
        language=spec.language,
        time_limit=_limit(spec, SOFT_SHARE),
        seed=spec.seed,
    )
    cert = res.certificate
    r = cert.restriction
    data = {
        "checked": res.check.accepted,
        "check": res.check.summary(),
        "bound": cert.sensitivity[0].bound,
        "free": None if r is None else r.rho.count("*"),
        "rho": None if r is None else r.rho,
        "decision": None if r is None else bool(r.decision),
        "method": None if r is None else r.method,
        "pair": None if cert.pair is None else list(cert.pair.strings),
        "pair_decision": None if cert.pair is None else bool(cert.pair.decision),
        "notes": list(res.notes),
        "outside": list(res.outside),
        "search_limit": _limit(spec, SOFT_SHARE),
    }
    return res.verdict, data, cert.to_json()


def _horizon(spec: CellSpec, model: Model, source: dict) -> tuple[str, dict, str | None]:
    from attncert.report.horizon_cell import run_horizon

    return run_horizon(spec, model, source)


def _text_source(source: dict) -> str:
    """A soft certificate's model source is text: ``zoo:NAME`` or a path."""
    return f"zoo:{source['zoo']}" if "zoo" in source else str(source["path"])


_ANALYSIS: dict[str, Callable[[CellSpec, Model, dict], tuple[str, dict, str | None]]] = {
    "harden": _harden,
    "certify": _certify,
    "verify": _verify,
    "sensitivity": _sensitivity,
    "uniform": _uniform,
    "soft-certify": _soft_certify,
    "horizon": _horizon,
}


# ----- as a sweep task (isolated child process, hard time limit) ---------------------------


def report_task(cell) -> dict[str, Any]:
    """``attncert.report.cells:report_task``: one report cell as an ``attncert sweep``
    task. The sweep cell's model is the report's model file (or ``zoo:NAME``); its
    params carry the analysis, language, time limit and the model's source."""
    from attncert.sweep.tasks import resolve_model

    p = cell.param_dict
    lengths = tuple(int(x) for x in str(p["lengths"]).split(",") if x)
    span = None
    if str(p.get("span") or ""):
        from attncert.report.horizon_cell import parse_span

        span = parse_span(str(p["span"]))
    spec = CellSpec(
        str(p["analysis"]), cell.n, str(p["language"]), float(p["time_limit"]), cell.seed,
        lengths, span,
    )  # fmt: skip
    model = resolve_model(cell.model)
    out = run_cell(spec, model, json.loads(str(p["source"])))
    out["verdict"] = out["verdict"] or out["status"]
    return out


report_task.sweep_defaults = {  # type: ignore[attr-defined]
    "analysis": "",
    "language": "",
    "time_limit": 60.0,
    "lengths": "",
    "span": "",
    "source": "{}",
}
