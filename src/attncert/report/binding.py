"""A report cell bound to its certificate (issue 41): the verdict and every number the page
shows as certified are re-derived by the trusted kernel from the certificate file, never
read from the cell file.

:func:`bind` takes a cell record as a cell wrote it (``cells/<cell>.json``: status,
verdict, data, the certificate's path) and returns the record the report is built from:

* ``verdict`` — :mod:`attncert.kernel.verdict` on the kernel's re-check of the certificate
  (a cell without a certificate: the verdict of a search that found nothing, UNDECIDED; or
  what the model's weights alone decide, e.g. OUTSIDE-THEOREM for a uniform bound on a
  model outside Lemma 5);
* ``data`` — the *certified* fields of :data:`CERTIFIED` recomputed from the certificate
  and the kernel's report (a value the cell file holds under one of those names is
  discarded), and the cell's *measured* fields (sampled accuracy, a search's largest
  change, timings) kept: they are measurements, and the page labels them so.

``attncert report`` binds every record — the cells it just ran and those it resumes —
before it builds the page, and ``attncert check DIR`` binds them again and compares
(:mod:`attncert.report.recheck`). So a cell file or a page that says more than its
certificate is caught, naming the file and the field.

Binding is not trusted code: it decides nothing itself — the kernel checks and the kernel's
verdict functions do. It is the one place where a certificate becomes what a page prints.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from attncert.errors import AttncertError
from attncert.kernel import verdict as V
from attncert.model.spec import Model
from attncert.verdicts import Assessment

#: per analysis, the data fields a page shows as certified (recomputed by :func:`bind`)
CERTIFIED: dict[str, tuple[str, ...]] = {
    "certify": (
        "model", "hardened", "accepted", "reasons", "free", "fixed", "free_fraction",
        "output_dependency", "nonconstant", "misclassified", "note", "depends", "soft_pair",
        "no_certificate",
    ),
    "verify": (
        "proved", "accepted", "lower", "upper", "accuracy", "undecided_measure", "nodes",
        "witnesses", "summary", "exact", "one_decision",
    ),
    "sensitivity": (
        "certified_bound", "source", "range_cap", "propagated", "checked", "floor",
        "outside", "undecided",
    ),
    "uniform": ("reasons", "n0", "K", "cap", "nontrivial_from", "rows", "notes", "published"),
    "soft-certify": (
        "checked", "check", "bound", "free", "rho", "decision", "method", "pair",
        "pair_decision", "outside", "notes",
    ),
    "horizon": (
        "lengths", "accepted", "proved", "refuted", "undecided", "proved_up_to",
        "first_refuted", "witness", "witnesses", "nodes", "reasons", "no_certificate",
    ),
    "harden": (),
}  # fmt: skip


class Unbound(AttncertError):
    """A cell record that cannot be bound: its certificate is missing, unreadable or about
    another model (the message names the file)."""


def bind(
    analysis: str,
    rec: dict[str, Any],
    model: Model,
    root: Path,
    n: int,
    ns: tuple[int, ...] = (),
) -> dict[str, Any]:
    """The record ``rec`` of cell ``analysis`` at length ``n`` with its verdict and certified
    fields re-derived from its certificate (module docstring). ``model`` is the report's
    model; ``root`` the report directory; ``ns`` the report's lengths (the uniform bound's
    rows). A record whose status is not ``ok`` is returned without a verdict. Raises
    :class:`Unbound` naming the file when the certificate is missing, unreadable or about
    another model."""
    out = dict(rec)
    if rec.get("status") != "ok":
        out["verdict"] = None
        return out
    data = {
        k: v for k, v in (rec.get("data") or {}).items() if k not in CERTIFIED.get(analysis, ())
    }
    path = rec.get("certificate")
    if analysis == "harden":
        out["verdict"], out["data"] = "MEASURED", data
        return out
    fn = _BIND[analysis]
    if path:
        p = root / str(path)
        if not p.is_file():
            raise Unbound(f"{path}: the certificate the cell names is missing", where=str(path))
        try:
            a, fields = fn(p, model, rec, ns or (n,))
        except AttncertError as err:
            raise Unbound(f"{path}: {err.message}", where=str(path)) from err
    else:
        a, fields = _without_certificate(analysis, model, rec)
    rejected = fields.pop("rejected", None)
    out["verdict"] = a.verdict.value
    out["data"] = {**data, **fields}
    if rejected:
        out["rejected"] = f"{path}: the kernel rejects it: {rejected}"
    else:
        out.pop("rejected", None)
    return out


def _without_certificate(analysis: str, model: Model, rec: dict) -> tuple[Assessment, dict]:
    """A cell that produced no certificate: nothing is certified. A uniform bound on a
    model outside Lemma 5 is OUTSIDE-THEOREM (decided from the weights by the kernel);
    anything else is a search that found nothing: UNDECIDED."""
    d = rec.get("data") or {}
    if analysis == "uniform":
        a = V.uniform(None, model, cap=None)
        return a, {"reasons": list(a.reasons)}
    if analysis == "horizon":  # its "undecided" is a list of lengths: the reason goes apart
        why = _bare(d.get("no_certificate") or "the horizon produced no certificate")
        a = V.not_found(why)  # adds "no certificate: " once, however often it is re-bound
        lengths = (rec.get("key") or {}).get("lengths")  # what was asked: nothing certified
        return a, {"lengths": lengths, "no_certificate": a.reasons[0], "reasons": list(a.reasons)}
    reason = _bare(
        d.get("no_certificate") or d.get("undecided") or "the search produced no certificate"
    )
    a = V.not_found(reason)
    return a, {"no_certificate": a.reasons[0]} if analysis == "certify" else {"undecided": reason}


def _bare(reason) -> str:
    """A reason without the "no certificate: " prefixes :func:`attncert.kernel.verdict
    .not_found` puts in front (a cell re-bound from its own output must read the same)."""
    text = str(reason)
    while text.startswith("no certificate: "):
        text = text.removeprefix("no certificate: ")
    return text


def _same_model(what: str, digest: str, want: Model) -> None:
    if digest != want.digest:
        raise AttncertError(
            f"the {what} certificate is for model {digest[:12]}…, the report's model is "
            f"{want.digest[:12]}…",
            where="model.sha256",
        )


# ----- one function per analysis ---------------------------------------------------------------


def _certify(path: Path, model: Model, rec: dict, ns: tuple[int, ...]) -> tuple[Assessment, dict]:
    from attncert.certificates.hard import load_certificate
    from attncert.certificates.locate import resolve_model
    from attncert.hard.checker import check  # the kernel's check, heads in threads
    from attncert.hard.verdict import assess, dependence_text
    from attncert.model import harden

    cert = load_certificate(path)
    soft = None if model.is_hard else model
    hard = model if soft is None else harden(model)
    _same_model("restriction", cert.model_sha256, hard)
    report = check(cert, resolve_model(cert, path) if cert.model_source else hard)
    a = assess(cert, hard, report)
    rho = cert.final_restriction
    fields: dict[str, Any] = {
        "rejected": None if report.accepted else "; ".join(str(f) for f in report.failures),
        "model": cert.model_name,
        "hardened": soft is not None,
        "accepted": report.accepted,
        "reasons": list(a.reasons),
        "free": rho.num_free,
        "fixed": cert.n - rho.num_free,
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
    }
    if report.accepted:
        fields["depends"] = dependence_text(cert, report)
        if soft is not None and cert.misclassified is not None and cert.n <= 1024:
            from attncert.hard.soft_pair import confirm_on_soft

            pair = confirm_on_soft(soft, cert)
            if pair is not None:
                fields["soft_pair"] = {
                    **{k: v for k, v in pair.to_dict().items() if k != "seconds"},
                    "misclassified": pair.misclassified,
                    "text": pair.sentence(cert.language or ""),
                }
    return a, fields


def _verify(path: Path, model: Model, rec: dict, ns: tuple[int, ...]) -> tuple[Assessment, dict]:
    from attncert.certificates.verify import load_certificate
    from attncert.kernel.verify.checker import check
    from attncert.soft.verify.outcome import sci, sci_up

    cert = load_certificate(path)
    _same_model("verification", cert.model_sha256, model)
    report = check(cert, model)
    a = V.verify(report)
    if not report.accepted:
        why = "; ".join(a.reasons)
        return a, {"accepted": False, "summary": why, "rejected": why}
    total = report.total
    lo = Fraction(report.right, total)
    hi = Fraction(report.right + report.undecided, total)
    und = Fraction(report.undecided, total)
    witnesses = [nd.leaf.witness for nd in cert.nodes if nd.leaf and nd.leaf.witness]
    # every string gets one decision when every leaf is a bound leaf deciding the same way:
    # the kernel re-derived each such leaf's decision from its own range (a constant model)
    leaves = [nd.leaf for nd in cert.nodes if nd.leaf is not None]
    decisions = {bool(lf.decision) for lf in leaves if lf.kind == "bound"}
    one = None
    if leaves and all(lf.kind == "bound" for lf in leaves) and len(decisions) == 1:
        one = "accept" if decisions.pop() else "reject"
    proved = (
        "correct" if report.right == total else "wrong" if report.wrong else None
    )  # fmt: skip
    return a, {
        "proved": proved,
        "accepted": True,
        "lower": float(lo),
        "upper": float(hi),
        "accuracy": {"lower": sci(lo, 12), "upper": sci_up(hi, 12)},
        "exact": {"right": str(report.right), "undecided": str(report.undecided),
                  "total": str(total)},
        "undecided_measure": sci_up(und, 12),
        "nodes": len(cert.nodes),
        "witnesses": witnesses[:2],
        "one_decision": one,
        "summary": f"{a.verdict.value}: " + (
            "proved correct on every string" if proved == "correct"
            else "proved wrong (witness in arb)" if proved == "wrong"
            else f"undecided measure {sci_up(und)}"
        ),
    }  # fmt: skip


def _soft_report(path: Path, model: Model):
    from attncert.kernel.soft.checker import check
    from attncert.soft.certified.certificate import load_certificate

    data = load_certificate(path)
    _same_model("soft", str(data["model"].get("sha256")), model)
    return data, check(data, model)


def _sensitivity(
    path: Path, model: Model, rec: dict, ns: tuple[int, ...]
) -> tuple[Assessment, dict]:
    data, report = _soft_report(path, model)
    exceeded = _exceeded(rec, report, model)
    a = V.soft(
        report,
        model,
        widths=report.widths,
        restriction=False,
        free=0,
        pair=False,
        exceeded=exceeded,
    )
    fields: dict[str, Any] = {
        "checked": report.accepted,
        "outside": list(V.lemma5_outside(model)),
        "rejected": None if report.accepted else "; ".join(str(f) for f in report.failures),
    }
    if report.accepted and report.widths:
        bound = max(min(w, c) for w, c in report.widths)
        cap = all(c >= w for w, c in report.widths)
        claims = data.get("sensitivity") or []
        floor = (claims[0].get("floor") or {}).get("nats") if claims else None
        fields.update(
            {
                "certified_bound": bound,
                "source": "range cap" if cap else "propagated",
                "range_cap": max(w for w, _ in report.widths),
                "propagated": max(c for _, c in report.widths),
                "floor": floor,
            }
        )
    return a, fields


def _exceeded(rec: dict, report, model: Model) -> str | None:
    """A measured change above the certified bound, re-decided in arb from the pair the
    search recorded (``data.witness``): only a rigorous excess refutes the bound."""
    w = (rec.get("data") or {}).get("witness")
    if not report.accepted or not report.widths or not isinstance(w, dict):
        return None
    strings = w.get("strings")
    if not (isinstance(strings, list) and len(strings) == 2):
        return None
    from attncert.soft.certified.table import exceeded_text

    bound = max(min(a, b) for a, b in report.widths)
    return exceeded_text(model, str(strings[0]), str(strings[1]), bound)


def _uniform(path: Path, model: Model, rec: dict, ns: tuple[int, ...]) -> tuple[Assessment, dict]:
    from attncert.io import read_json
    from attncert.kernel.uniform import checker as KU
    from attncert.kernel.uniform.dyadic import approx
    from attncert.soft.certified.uniform import UniformOutcome, published_constant

    data = read_json(path)
    _same_model("uniform", str((data.get("model") or {}).get("sha256")), model)
    report = KU.check(data, model)
    a = V.uniform(report, model, cap=Fraction(data["cap"]) if report.accepted else None)
    if not report.accepted:
        return a, {"reasons": list(a.reasons), "rejected": "; ".join(a.reasons)}
    u = UniformOutcome(
        model.name, model.digest, a.verdict.value, a.reasons, data, report,
        published_constant(model),
    )  # fmt: skip
    d = u.as_dict()
    rows = []
    for m in ns:
        b = u.bound_at(m)
        rows.append(
            {
                "n": m,
                "K_over_n": None if b is None else approx(u.k / m, 6),
                "K_over_n_log10": None if b is None else _log10(u.k / m),
                "bound": None if b is None else float(b),
                "floor": u.floor_at(m),
                "cap_only": b is not None and u.k / m >= u.cap,
            }
        )
    return a, {
        "reasons": list(a.reasons),
        "n0": u.n0,
        "K": d["K_approx"],
        "cap": u.cap,
        "nontrivial_from": _short_int(d["nontrivial_from"]),
        "published": d["published"],
        "notes": d["notes"],
        "rows": rows,
    }


def _soft_certify(
    path: Path, model: Model, rec: dict, ns: tuple[int, ...]
) -> tuple[Assessment, dict]:
    data, report = _soft_report(path, model)
    rest, pair = data.get("restriction"), data.get("pair")
    if report.accepted and rest is None:
        a = V.not_found("no restriction whose decision is certified constant was found")
    else:
        a = V.soft(
            report,
            model,
            widths=report.widths,
            restriction=True,
            free=report.free,
            pair=report.pair,
        )
    bound = max((min(w, c) for w, c in report.widths), default=None)
    return a, {
        "rejected": None if report.accepted else "; ".join(str(f) for f in report.failures),
        "checked": report.accepted,
        "check": report.summary(),
        "bound": bound,
        "free": None if rest is None else report.free,
        "rho": None if rest is None else rest.get("rho"),
        "decision": None if rest is None else bool(rest.get("decision")),
        "method": None if rest is None else rest.get("method", "box"),
        "pair": None if pair is None else list(pair.get("strings") or []),
        "pair_decision": None if pair is None else bool(pair.get("decision")),
        "outside": list(V.lemma5_outside(model)),
        "notes": list(a.reasons),
    }


def _horizon(path: Path, model: Model, rec: dict, ns: tuple[int, ...]) -> tuple[Assessment, dict]:
    from attncert.certificates.horizon import load_certificate
    from attncert.kernel.horizon.checker import check

    cert = load_certificate(path)
    _same_model("horizon", cert.model_sha256, model)
    got = [cert.lo, "inf" if cert.hi is None else cert.hi]
    want = (rec.get("key") or {}).get("lengths")
    if want is not None and list(want) != got:
        raise AttncertError(
            f"the certificate covers the lengths {got}, the report asked for {want}",
            where="lengths",
        )
    report = check(cert, model)
    a = V.horizon(report)
    if not report.accepted:
        why = "; ".join(a.reasons)
        return a, {"accepted": False, "lengths": got, "reasons": list(a.reasons), "rejected": why}
    return a, {
        **horizon_fields(report, cert.lo, cert.hi),
        "nodes": len(cert.nodes),
        "reasons": list(a.reasons),
    }


def horizon_fields(report, lo: int, hi: int | None) -> dict[str, Any]:
    """What a page shows of an accepted horizon report (:class:`attncert.kernel.horizon
    .checker.HorizonReport`): its maximal intervals of lengths (``"inf"`` for ∞), the
    largest N proved from A, the least refuted length and its witness (a string, or
    run-length encoded [[symbol, count], …] beyond 64 symbols), and the witness of each
    refuted interval."""
    from attncert.soft.horizon import witness_json

    def runs(xs):
        return [[a, "inf" if b is None else b] for a, b in xs]

    return {
        "lengths": [lo, "inf" if hi is None else hi],
        "accepted": True,
        "proved": runs(report.proved),
        "refuted": runs(report.refuted),
        "undecided": runs(report.undecided),
        "proved_up_to": report.proved_up_to,
        "first_refuted": report.first_refuted,
        "witness": None if report.witness is None else witness_json(report.witness),
        "witnesses": [{"n": n, "witness": witness_json(w)} for n, w in report.witnesses],
    }


def _short_int(text: str | None) -> str | None:
    """An integer of more than 15 digits as ``d.ddddde+NN`` (exact digits are in the
    certificate)."""
    if text is None or len(text) <= 15:
        return text
    return f"{text[0]}.{text[1:6]}e+{len(text) - 1}"


def _log10(q: Fraction) -> float:
    import math

    return math.log10(q.numerator) - math.log10(q.denominator)


_BIND = {
    "certify": _certify,
    "verify": _verify,
    "sensitivity": _sensitivity,
    "uniform": _uniform,
    "soft-certify": _soft_certify,
    "horizon": _horizon,
}

__all__ = ["CERTIFIED", "Unbound", "bind", "horizon_fields"]
