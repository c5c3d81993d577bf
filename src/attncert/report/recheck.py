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
===============================  =========================================  ==============

Each gives a :class:`FileCheck`: the verdict the re-derived certificate supports (REFUTED
when the kernel rejects it, with the claim and the reason). For a soft certificate
whose B(n) is only the logit's range (a cap), or whose restriction has no free position
or no pair, that is CERTIFIED-TRIVIAL; OUTSIDE-THEOREM when a hypothesis of Lemma 5 fails
for the model. A verify tree the kernel accepts is CERTIFIED (its accuracy interval,
whatever it is, is re-derived; the reason says what it is).

:func:`check_report` re-checks a report directory (``attncert report -o DIR``): every
certificate file, each named with its verdict, and every cell the manifest lists; a
cell not finished makes the directory INCOMPLETE. The exit status is the worst verdict.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attncert.errors import AttncertError, InputError, SpecError
from attncert.io import read_json
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
    found = [v for v in verdicts if v in ORDER]
    return min(found, key=ORDER.index) if found else Verdict.CERTIFIED.value


def kind_of(data: Any, source: str) -> str:
    """The certificate kind named by the JSON object's ``format`` field."""
    fmt = data.get("format") if isinstance(data, dict) else None
    if fmt not in KINDS:
        raise SpecError(
            f"format {fmt!r} is not a certificate format attncert knows",
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
    from attncert.hard.verdict import assess
    from attncert.kernel.hard.checker import check

    cert = load_certificate(path)
    model = model if model is not None else resolve_model(cert, path)
    report = check(cert, model)
    a = assess(cert, model, report)
    if report.accepted:
        free = cert.final_restriction.num_free
        reason = f"re-derived by kernel.hard: {free}/{cert.n} free positions, n = {cert.n}"
    else:
        reason = "; ".join(str(f) for f in report.failures) or report.summary()
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
    from attncert.soft.certified.certificate import load_certificate
    from attncert.soft.certified.certify import lemma5_failures

    data = load_certificate(path)
    if model is None:
        model = load_source_model(data["model"].get("source"), path, f"{path}: model.source")
    bad = _hash_matches(model, data, path)
    if bad:
        return FileCheck(str(path), "soft", Verdict.REFUTED.value, bad)
    report = check(data, model)
    if not report.accepted:
        reason = "; ".join(f"{f.claim}: {f.reason}" for f in report.failures) or report.summary()
        return FileCheck(str(path), "soft", Verdict.REFUTED.value, reason)
    rest, pair = data.get("restriction"), data.get("pair")
    claims = data.get("sensitivity") or []
    cap = bool(claims) and all(
        s["propagated"] >= s["z_range"][1] - s["z_range"][0]
        for c in claims
        for s in c.get("per_symbol", [])
    )
    n = data.get("n")
    if rest is not None and (not str(rest.get("rho", "")).count("*") or pair is None):
        verdict, why = Verdict.CERTIFIED_TRIVIAL, "restriction without a free position or a pair"
    elif lemma5_failures(model):
        verdict, why = Verdict.OUTSIDE_THEOREM, "; ".join(lemma5_failures(model))
    elif rest is None and cap:
        verdict, why = Verdict.CERTIFIED_TRIVIAL, "B(n) is only the logit's range (a cap)"
    else:
        verdict, why = Verdict.CERTIFIED, "B(n)" + (", restriction and pair" if rest else "")
    bound = claims[0]["bound"] if claims else None
    return FileCheck(
        str(path),
        "soft",
        verdict.value,
        f"re-derived by kernel.soft at n = {n}: B(n) = {bound:.6g}; {why}"
        if bound is not None
        else f"re-derived by kernel.soft at n = {n}; {why}",
    )


def _uniform(path: Path, data: dict, model: Model | None) -> FileCheck:
    from attncert.io import check_header
    from attncert.kernel.uniform import checker as soft_uniform

    check_header(data, str(path), soft_uniform.FORMAT, soft_uniform.VERSION)
    if not isinstance(data.get("model"), dict):
        raise SpecError("missing field 'model'", where=str(path))
    if model is None:
        model = load_source_model(data["model"].get("source"), path, f"{path}: model.source")
    bad = _hash_matches(model, data, path)
    if bad:
        return FileCheck(str(path), "uniform", Verdict.REFUTED.value, bad)
    report = soft_uniform.check(data, model)
    if not report.accepted:
        reason = "; ".join(str(f) for f in report.failures) or report.summary()
        return FileCheck(str(path), "uniform", Verdict.REFUTED.value, reason)
    return FileCheck(
        str(path),
        "uniform",
        Verdict.CERTIFIED.value,
        f"re-derived by kernel.uniform.checker: B(n) ≤ K/n for every n ≥ {data.get('n0')}",
    )


def _verify(path: Path, data: dict, model: Model | None) -> FileCheck:
    from fractions import Fraction

    from attncert.certificates.locate import resolve_source
    from attncert.certificates.verify import load_certificate
    from attncert.kernel.verify.checker import check
    from attncert.soft.verify.outcome import sci, sci_up

    cert = load_certificate(path)
    if model is None:
        model = resolve_source(cert.model_source, path, f"{path}: model.source")
    report = check(cert, model)
    if not report.accepted:
        reason = "; ".join(str(f) for f in report.failures) or report.summary()
        return FileCheck(str(path), "verify", Verdict.REFUTED.value, reason)
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
        Verdict.CERTIFIED.value,
        f"re-derived by kernel.verify at n = {cert.n}: certified accuracy ∈ [{sci(lo)}, "
        f"{sci_up(hi)}] ({what})",
    )


def _all_lengths(path: Path, data: dict, model: Model | None) -> FileCheck:
    from attncert.certificates.all_lengths import load_certificate
    from attncert.certificates.locate import resolve_source
    from attncert.kernel.all_lengths.checker import check
    from attncert.prove.all_lengths import recheck_bounded

    cert = load_certificate(path)
    if model is None:
        model = resolve_source(cert.model_source, path, "model.source")
    report = check(cert, model)
    bounded = recheck_bounded(cert, model) if report.accepted else None
    if report.accepted and bounded is not None and bounded.verdict == "proved":
        return FileCheck(
            str(path), "all-lengths", Verdict.CERTIFIED.value,
            f"{cert.formula_text} for all n ≥ 1 (kernel for n ≥ {cert.n0}, z3 below)",
        )  # fmt: skip
    verdict = Verdict.UNDECIDED if report.undecided else Verdict.REFUTED
    reason = "; ".join(f.line() for f in report.failures) or (
        f"bounded part: {None if bounded is None else bounded.verdict}"
    )
    return FileCheck(str(path), "all-lengths", verdict.value, reason)


_CHECKS = {
    "hard": _hard,
    "soft": _soft,
    "uniform": _uniform,
    "verify": _verify,
    "all-lengths": _all_lengths,
}


# ----- a report directory ---------------------------------------------------------------------


@dataclass(frozen=True)
class ReportCheck:
    """Every certificate of a report directory re-checked, and the cells not finished."""

    directory: str
    files: tuple[FileCheck, ...]
    missing: tuple[str, ...]  # cells of the manifest without a finished result
    failed: tuple[str, ...]  # cells that failed or timed out (reported in their sections)

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def verdict(self) -> str:
        found = [f.verdict for f in self.files]
        if self.missing:
            found.append(INCOMPLETE)
        return worst(found)

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict]

    def lines(self) -> list[str]:
        out = [f.line() for f in self.files]
        for name in self.missing:
            out.append(f"{INCOMPLETE:<17} cells/{name}.json: not finished (run the report again)")
        for name in self.failed:
            out.append(f"{'(cell failed)':<17} cells/{name}.json: reported in its section")
        head = f"report {self.directory}: {len(self.files)} certificate(s) re-checked" + (
            f"; INCOMPLETE: {len(self.missing)} cell(s) not finished" if self.missing else ""
        )
        return [head, *out, f"verdict: {self.verdict}"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "verdict": self.verdict,
            "complete": self.complete,
            "files": [f.to_dict() for f in self.files],
            "missing": list(self.missing),
            "failed": list(self.failed),
        }


def is_report(path: str | os.PathLike[str]) -> bool:
    from attncert.report.run import MANIFEST

    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def check_report(directory: str | os.PathLike[str]) -> ReportCheck:
    """Re-check every certificate of a report directory (module docstring). A certificate
    that cannot be read is REFUTED with the reason (never a crash of the check)."""
    from attncert.report.run import MANIFEST

    root = Path(directory)
    manifest = read_json(root / MANIFEST)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("cells"), list):
        raise SpecError("not a report manifest", where=str(root / MANIFEST))
    missing, failed, certs = [], [], []
    for name in manifest["cells"]:
        p = root / "cells" / f"{name}.json"
        try:
            rec = read_json(p) if p.is_file() else None
        except AttncertError:
            rec = None
        if not isinstance(rec, dict):
            missing.append(str(name))
            continue
        if rec.get("status") not in ("ok", "not-applicable"):
            failed.append(str(name))
        if rec.get("certificate"):
            certs.append(str(rec["certificate"]))
    on_disk = (
        sorted(str(p.relative_to(root)) for p in (root / "certs").glob("*.json"))
        if (root / "certs").is_dir()
        else []
    )
    files = []
    for rel in sorted(set(certs) | set(on_disk)):
        p = root / rel
        if not p.is_file():
            files.append(FileCheck(rel, "?", Verdict.REFUTED.value, "certificate file missing"))
            continue
        try:
            fc = check_certificate(p)
        except (AttncertError, KeyError, TypeError, ValueError) as err:
            files.append(FileCheck(rel, "?", Verdict.REFUTED.value, f"unreadable: {err}"))
            continue
        files.append(FileCheck(rel, fc.kind, fc.verdict, fc.reason))
    return ReportCheck(str(root), tuple(files), tuple(missing), tuple(failed))


__all__ = [
    "EXIT_BAD_INPUT",
    "FileCheck",
    "ReportCheck",
    "check_certificate",
    "check_report",
    "is_report",
    "kind_of",
]
