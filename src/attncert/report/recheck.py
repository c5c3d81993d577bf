"""Re-checking any certificate the project writes, and a whole report directory.

:func:`check_certificate` dispatches on the JSON file's ``format`` field and has the
trusted kernel re-derive it:

===============================  =========================================  ==============
format                           kind (command that writes it)              checker
===============================  =========================================  ==============
``attncert-certificate``         hard (``certify -o``)                      kernel.hard
``attncert-soft-certificate``    soft (``soft-certify -o``,                 kernel.soft
                                 ``sensitivity --certify --save``)
``attncert-uniform-sensitivity`` uniform (``sensitivity --save-uniform``)   kernel.uniform.checker
``attncert-verify-certificate``  verify tree (``verify -o``)                kernel.verify
``attncert-all-lengths-…``       all lengths (``prove --all-lengths -o``)   kernel.all_lengths
``attncert-horizon-certificate`` length horizon (``verify --lengths -o``)   kernel.horizon
===============================  =========================================  ==============

Each gives a :class:`FileCheck`: the verdict the re-derived certificate supports (REFUTED
when the kernel rejects it, with the claim and the reason). For a soft certificate
whose B(n) is only the logit's range (a cap), or whose restriction has no free position
or no pair, that is CERTIFIED-TRIVIAL; OUTSIDE-THEOREM when a hypothesis of Lemma 5 fails
for the model. A verify tree the kernel accepts is CERTIFIED (its accuracy interval,
whatever it is, is re-derived; the reason says what it is).

:func:`check_report` (:mod:`attncert.report.directory`) checks a report directory
(``attncert report -o DIR``) against its certificates: hashes, stale files, every cell's
verdict and certified numbers re-derived by the kernel, the pages rebuilt and compared.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attncert.errors import InputError, SpecError
from attncert.io import read_json
from attncert.kernel.verdict import rejected
from attncert.model.spec import Model
from attncert.verdicts import EXIT_BAD_INPUT, Verdict

INCOMPLETE = "INCOMPLETE"
#: worst first; INCOMPLETE exits like UNDECIDED (no verdict either way on what is missing)
ORDER = (
    Verdict.REFUTED.value,
    Verdict.UNDECIDED.value,
    INCOMPLETE,
    Verdict.OUTSIDE_THEOREM.value,
    Verdict.CERTIFIED_TRIVIAL.value,
    Verdict.CERTIFIED.value,
)
EXIT = {**{v.value: v.exit_code for v in Verdict}, INCOMPLETE: Verdict.UNDECIDED.exit_code}

KINDS = {
    "attncert-certificate": "hard",
    "attncert-soft-certificate": "soft",
    "attncert-uniform-sensitivity": "uniform",
    "attncert-verify-certificate": "verify",
    "attncert-all-lengths-certificate": "all-lengths",
    "attncert-horizon-certificate": "horizon",
}


@dataclass(frozen=True)
class FileCheck:
    """One certificate file re-checked: its kind, verdict and the reason in one line."""

    path: str
    kind: str
    verdict: str
    reason: str

    @property
    def accepted(self) -> bool:
        return self.verdict not in (Verdict.REFUTED.value, Verdict.UNDECIDED.value)

    def line(self) -> str:
        return f"{self.verdict:<17} {self.path} ({self.kind}): {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "verdict": self.verdict,
            "reason": self.reason,
        }


def worst(verdicts) -> str:
    """The worst of ``verdicts`` (words of :data:`ORDER`); none at all is UNDECIDED —
    nothing checked is never CERTIFIED (:func:`attncert.kernel.verdict.combine`)."""
    found = [v for v in verdicts if v in ORDER]
    return min(found, key=ORDER.index) if found else Verdict.UNDECIDED.value


def kind_of(data: Any, source: str) -> str:
    """The certificate kind named by the JSON object's ``format`` field."""
    fmt = data.get("format") if isinstance(data, dict) else None
    if fmt not in KINDS:
        said = "it has no 'format' field" if fmt is None else f"format {fmt!r}"
        raise SpecError(
            f"{said}: not a certificate format attncert knows",
            where=f"{source}: format",
            expected=", ".join(sorted(KINDS)),
        )
    return KINDS[fmt]


def load_source_model(source: Any, cert_path: str | os.PathLike[str], where: str) -> Model:
    """A soft / uniform certificate's model: ``zoo:NAME`` or a path (relative paths are
    looked up next to the certificate first, then from the working directory)."""
    from attncert.model import load_model, zoo_model

    if not isinstance(source, str) or not source:
        raise InputError(
            f"{where}: the certificate does not say where its model is",
            expected="an explicit model (attncert check CERT MODEL)",
        )
    if source.startswith("zoo:"):
        return zoo_model(source[4:])
    p = Path(source)
    if not p.is_absolute():
        near = Path(cert_path).parent / p
        p = near if near.exists() else p
    return load_model(p)


def check_certificate(path: str | os.PathLike[str], model: Model | None = None) -> FileCheck:
    """Re-check one certificate file of any kind (module docstring). ``model`` overrides the
    one the certificate names (its content hash must still match)."""
    data = read_json(path)
    kind = kind_of(data, str(path))
    return _CHECKS[kind](Path(path), data, model)


def _hard(path: Path, data: dict, model: Model | None) -> FileCheck:
    from attncert.certificates.hard import load_certificate
    from attncert.certificates.locate import resolve_model
    from attncert.hard.checker import check  # the kernel's check, heads in threads
    from attncert.kernel.verdict import hard_certificate

    cert = load_certificate(path)
    model = model if model is not None else resolve_model(cert, path)
    report = check(cert, model)
    a = hard_certificate(cert, model, report)
    if report.accepted:
        free = cert.final_restriction.num_free
        reason = f"re-derived by kernel.hard: {free}/{cert.n} free positions, n = {cert.n}"
        if a.reasons:
            reason += "; " + "; ".join(a.reasons)
    else:
        reason = "; ".join(a.reasons) or report.summary()
    return FileCheck(str(path), "hard", a.verdict.value, reason)


def _hash_matches(model: Model, data: dict, path: Path) -> str | None:
    want = (data.get("model") or {}).get("sha256")
    if model.digest != want:
        return (
            f"model hash {model.digest[:12]}… differs from the certificate's "
            f"{str(want)[:12]}… (model.sha256)"
        )
    return None


def _soft(path: Path, data: dict, model: Model | None) -> FileCheck:
    from attncert.kernel.soft.checker import check
    from attncert.kernel.verdict import soft
    from attncert.soft.certified.certificate import load_certificate

    data = load_certificate(path)
    if model is None:
        model = load_source_model(data["model"].get("source"), path, f"{path}: model.source")
    bad = _hash_matches(model, data, path)
    if bad:
        return FileCheck(str(path), "soft", rejected(bad).verdict.value, bad)
    report = check(data, model)
    a = soft(
        report,
        model,
        widths=report.widths if report.accepted else (),
        restriction=data.get("restriction") is not None,
        free=report.free,
        pair=report.pair,
    )
    if not report.accepted:
        return FileCheck(str(path), "soft", a.verdict.value, "; ".join(a.reasons))
    n = data.get("n")
    b = max((min(w, c) for w, c in report.widths), default=None)
    head = f"re-derived by kernel.soft at n = {n}" + ("" if b is None else f": B(n) = {b:.6g}")
    why = "; ".join(a.reasons) or "B(n)" + (", restriction and pair" if report.pair else "")
    return FileCheck(str(path), "soft", a.verdict.value, f"{head}; {why}")


def _uniform(path: Path, data: dict, model: Model | None) -> FileCheck:
    from fractions import Fraction

    from attncert.io import check_header
    from attncert.kernel.uniform import checker as soft_uniform
    from attncert.kernel.verdict import uniform

    check_header(data, str(path), soft_uniform.FORMAT, soft_uniform.VERSION)
    if not isinstance(data.get("model"), dict):
        raise SpecError("missing field 'model'", where=str(path))
    if model is None:
        model = load_source_model(data["model"].get("source"), path, f"{path}: model.source")
    bad = _hash_matches(model, data, path)
    if bad:
        return FileCheck(str(path), "uniform", rejected(bad).verdict.value, bad)
    report = soft_uniform.check(data, model)
    cap = Fraction(data["cap"]) if report.accepted else None
    a = uniform(report, model, cap=cap)
    if not report.accepted:
        return FileCheck(str(path), "uniform", a.verdict.value, "; ".join(a.reasons))
    return FileCheck(
        str(path),
        "uniform",
        a.verdict.value,
        f"re-derived by kernel.uniform.checker: B(n) ≤ K/n for every n ≥ {data.get('n0')}"
        + "".join(f"; {r}" for r in a.reasons),
    )


def _verify(path: Path, data: dict, model: Model | None) -> FileCheck:
    from fractions import Fraction

    from attncert.certificates.locate import resolve_source
    from attncert.certificates.verify import load_certificate
    from attncert.kernel.verdict import verify
    from attncert.kernel.verify.checker import check
    from attncert.soft.verify.outcome import sci, sci_up

    cert = load_certificate(path)
    if model is None:
        model = resolve_source(cert.model_source, path, f"{path}: model.source")
    report = check(cert, model)
    a = verify(report)  # CERTIFIED only when proved correct on every string
    if not report.accepted:
        return FileCheck(str(path), "verify", a.verdict.value, "; ".join(a.reasons))
    total = report.total or 1
    lo, hi = Fraction(report.right, total), Fraction(report.right + report.undecided, total)
    what = (
        "proved correct"
        if report.wrong == 0 and report.undecided == 0
        else "proved wrong on some strings"
        if report.wrong
        else "bounds with an undecided measure"
    )
    return FileCheck(
        str(path),
        "verify",
        a.verdict.value,
        f"re-derived by kernel.verify at n = {cert.n}: certified accuracy ∈ [{sci(lo)}, "
        f"{sci_up(hi)}] ({what})",
    )


def _all_lengths(path: Path, data: dict, model: Model | None) -> FileCheck:
    from attncert.certificates.all_lengths import load_certificate
    from attncert.certificates.locate import resolve_source
    from attncert.kernel.all_lengths.checker import check
    from attncert.kernel.verdict import all_lengths
    from attncert.prove.all_lengths import recheck_bounded

    cert = load_certificate(path)
    if model is None:
        model = resolve_source(cert.model_source, path, "model.source")
    report = check(cert, model)
    bounded = recheck_bounded(cert, model) if report.accepted else None
    a = all_lengths(report, None if bounded is None else bounded.verdict)
    if a.verdict is Verdict.CERTIFIED:
        return FileCheck(
            str(path), "all-lengths", a.verdict.value,
            f"{cert.formula_text} for all n ≥ 1 (kernel for n ≥ {cert.n0}, z3 below)",
        )  # fmt: skip
    return FileCheck(str(path), "all-lengths", a.verdict.value, "; ".join(a.reasons))


def _horizon(path: Path, data: dict, model: Model | None) -> FileCheck:
    from attncert.certificates.horizon import certificate_from_dict
    from attncert.certificates.locate import resolve_source
    from attncert.kernel.horizon.checker import check
    from attncert.kernel.verdict import horizon

    cert = certificate_from_dict(data, str(path))
    if model is None:
        model = resolve_source(cert.model_source, path, f"{path}: model.source")
    report = check(cert, model)
    a = horizon(report)
    if not report.accepted:
        return FileCheck(str(path), "horizon", a.verdict.value, "; ".join(a.reasons))
    hi = "∞" if cert.hi is None else cert.hi
    first = "" if report.first_refuted is None else f", wrong first at n = {report.first_refuted}"
    up = "none" if report.proved_up_to is None else report.proved_up_to
    return FileCheck(
        str(path), "horizon", a.verdict.value,
        f"re-derived by kernel.horizon over n ∈ [{cert.lo}, {hi}]: proved up to {up}{first}",
    )  # fmt: skip


_CHECKS = {
    "hard": _hard,
    "soft": _soft,
    "uniform": _uniform,
    "verify": _verify,
    "all-lengths": _all_lengths,
    "horizon": _horizon,
}


# ----- a report directory: attncert.report.directory (sealed, bound to its certificates) --

from attncert.report.directory import ReportCheck, check_report, is_report  # noqa: E402

__all__ = [
    "EXIT_BAD_INPUT",
    "FileCheck",
    "ReportCheck",
    "check_certificate",
    "check_report",
    "is_report",
    "kind_of",
]
