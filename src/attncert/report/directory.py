"""A report directory sealed, and checked against its certificates (issue 41).

**Sealing** (:func:`seal`, the last step of ``attncert report``): the manifest
(``report-manifest.json``) records the SHA-256 of every file the report consists of —
each certificate (``certs/``), each bound cell (``cells/``), each plot, ``model.json``,
``report.json``, ``report.md`` and ``index.html``. Files of an earlier run that the
current plan does not contain (cells and certificates of another ``--n``) are removed
before sealing (:func:`drop_stale`), so the directory holds one report.

**Checking** (:func:`check_report`, ``attncert check DIR``) fails, naming the file, on:

1. a file the manifest lists that is missing, or whose hash differs (an edited page, cell
   or certificate); a manifest without hashes is a run that was interrupted (or is still
   running): its finished cells are checked and the report is INCOMPLETE;
2. a file in ``cells/``, ``certs/`` or ``plots/`` the manifest does not list (a stale
   certificate from an earlier ``--n``, or an added one);
3. a cell whose verdict or certified numbers differ from what the kernel re-derives from
   its certificate (:func:`attncert.report.binding.bind`) — even when its hash was
   updated to match;
4. a page (``report.json``, ``report.md``, ``index.html``, a plot) that differs from the
   page rebuilt from the re-derived cells — so no verdict the page shows can differ from
   the kernel's.

Its verdict (:func:`attncert.kernel.verdict.combine`) is the worst re-derived verdict of
the cells; any failure above is REFUTED (the directory is not what its certificates
say); cells that failed, timed out or never ran count as UNDECIDED, and a directory in
which nothing was checked is UNDECIDED — never CERTIFIED.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attncert.errors import AttncertError, SpecError
from attncert.io import read_json
from attncert.kernel import verdict as V
from attncert.verdicts import Verdict

INCOMPLETE = "INCOMPLETE"
#: the report's files besides cells/, certs/ and plots/
PAGES = ("report.json", "report.md", "index.html")
FOLDERS = ("cells", "certs", "plots")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def report_files(root: Path) -> list[str]:
    """Every file of the report (relative paths, sorted), the manifest excluded."""
    out = [p for p in (*PAGES, "model.json") if (root / p).is_file()]
    for folder in FOLDERS:
        d = root / folder
        if d.is_dir():
            out += [f"{folder}/{p.name}" for p in d.iterdir() if p.is_file()]
    return sorted(out)


def drop_stale(root: Path, cells: list[str]) -> list[str]:
    """Remove the cell and certificate files of cells not in ``cells`` (an earlier run of
    this directory with other lengths); return what was removed."""
    keep = set(cells)
    gone = []
    for folder in ("cells", "certs"):
        d = root / folder
        if not d.is_dir():
            continue
        for p in sorted(d.glob("*.json")):
            if p.stem not in keep:
                p.unlink()
                gone.append(f"{folder}/{p.name}")
    d = root / "plots"
    if d.is_dir():  # plots are rewritten by every run; a plot this run did not draw is old
        for p in sorted(d.glob("*.svg")):
            gone.append(f"plots/{p.name}")
            p.unlink()
    return gone


def seal(root: Path) -> dict[str, str]:
    """Record the hash of every report file in the manifest (module docstring)."""
    from attncert.io import write_json
    from attncert.report.run import MANIFEST

    manifest = read_json(root / MANIFEST)
    files = {rel: sha256(root / rel) for rel in report_files(root)}
    write_json(root / MANIFEST, {**manifest, "files": files})
    return files


# ----- checking --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One line of the check: a file, its verdict (or INCOMPLETE / a cell's status) and
    why."""

    path: str
    verdict: str
    reason: str

    def line(self) -> str:
        return f"{self.verdict:<17} {self.path}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "verdict": self.verdict, "reason": self.reason}


@dataclass(frozen=True)
class ReportCheck:
    """A report directory checked: per cell its re-derived verdict; every problem found."""

    directory: str
    cells: tuple[Finding, ...]  # one per cell of the manifest: the re-derived verdict
    problems: tuple[Finding, ...]  # files that differ from what their certificates say
    missing: tuple[str, ...]  # cells of the manifest without a finished result
    sealed: bool = True  # False: the run was interrupted (or is running): no file hashes

    @property
    def complete(self) -> bool:
        return not self.missing and self.sealed

    @property
    def verdict(self) -> str:
        if self.problems:
            return Verdict.REFUTED.value
        got = []
        for f in self.cells:
            try:
                got.append(Verdict(f.verdict))
            except ValueError:  # MEASURED, NOT APPLICABLE, FAILED, TIMEOUT
                if f.verdict in ("FAILED", "TIMEOUT", "LOST"):
                    got.append(Verdict.UNDECIDED)
        if not self.complete:
            got.append(Verdict.UNDECIDED)
        a = V.combine(got)
        if not self.complete and a.verdict is Verdict.UNDECIDED:
            return INCOMPLETE
        return a.verdict.value

    @property
    def exit_code(self) -> int:
        v = self.verdict
        return Verdict.UNDECIDED.exit_code if v == INCOMPLETE else Verdict(v).exit_code

    def lines(self) -> list[str]:
        out = [f.line() for f in self.cells]
        out += [f.line() for f in self.problems]
        out += [
            f"{INCOMPLETE:<17} cells/{name}.json: not finished (run the report again)"
            for name in self.missing
        ]
        if not self.sealed:
            out.append(
                f"{INCOMPLETE:<17} report-manifest.json: not sealed (no file hashes: the run "
                "was interrupted or is still running; run the report again)"
            )
        checked = sum(1 for f in self.cells if f.verdict in {v.value for v in Verdict})
        head = (
            f"report {self.directory}: {checked} cell verdict(s) re-derived from their "
            f"certificates by the kernel"
            + (f"; {len(self.problems)} problem(s)" if self.problems else "")
            + (f"; INCOMPLETE: {len(self.missing)} cell(s) not finished" if self.missing else "")
        )
        tail = f"verdict: {self.verdict}"
        if not checked and not self.problems:
            tail += f" ({V.NOT_CHECKED})"
        return [head, *out, tail]

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "verdict": self.verdict,
            "complete": self.complete,
            "cells": [f.to_dict() for f in self.cells],
            "problems": [f.to_dict() for f in self.problems],
            "missing": list(self.missing),
            "sealed": self.sealed,
        }


def is_report(path: str | os.PathLike[str]) -> bool:
    from attncert.report.run import MANIFEST

    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def _manifest(root: Path) -> dict:
    from attncert.report.run import MANIFEST, MANIFEST_FORMAT

    m = read_json(root / MANIFEST)
    where = str(root / MANIFEST)
    if not isinstance(m, dict) or m.get("format") != MANIFEST_FORMAT:
        raise SpecError("not a report manifest", where=f"{where}: format")
    for key, kind in (("cells", list), ("model", dict), ("ns", list), ("language", str)):
        if not isinstance(m.get(key), kind):
            raise SpecError(
                f"field {key!r} is missing or not a {kind.__name__}",
                where=f"{where}: {key}",
                expected="a manifest written by attncert report",
            )
    return m


def _hashes(root: Path, manifest: dict, problems: list[Finding]) -> bool:
    """Check the sealed hashes; False when the report is not sealed (a run that was
    interrupted, or is still running: its cells are checked, the report is INCOMPLETE)."""
    files = manifest.get("files")
    if files is None:
        return False
    if not isinstance(files, dict):
        problems.append(
            Finding("report-manifest.json", Verdict.REFUTED.value, "files: not a JSON object")
        )
        return True
    for rel, want in sorted(files.items()):
        p = root / str(rel)
        if not p.is_file():
            problems.append(Finding(rel, Verdict.REFUTED.value, "listed in the manifest, missing"))
        elif sha256(p) != want:
            problems.append(
                Finding(rel, Verdict.REFUTED.value, "edited: its hash differs from the manifest's")
            )
    for rel in report_files(root):
        if rel not in files:
            problems.append(
                Finding(
                    rel,
                    Verdict.REFUTED.value,
                    "not part of this report (the manifest does not list it): a stale file "
                    "from an earlier run, or an added one",
                )
            )
    return True


def _model(root: Path, manifest: dict):
    from attncert.model import load_model, zoo_model

    src = manifest["model"].get("source") or {}
    model = zoo_model(src["zoo"]) if "zoo" in src else load_model(root / "model.json")
    if model.digest != manifest["model"].get("sha256"):
        raise SpecError(
            f"the report's model has hash {model.digest[:12]}…, the manifest says "
            f"{str(manifest['model'].get('sha256'))[:12]}…",
            where=f"{root / 'report-manifest.json'}: model.sha256",
        )
    return model


def check_report(directory: str | os.PathLike[str]) -> ReportCheck:
    """Check a report directory against its certificates (module docstring)."""
    from attncert.report.binding import CERTIFIED, Unbound, bind
    from attncert.report.cells import ANALYSES

    root = Path(directory)
    manifest = _manifest(root)
    problems: list[Finding] = []
    sealed = _hashes(root, manifest, problems)
    model = _model(root, manifest)
    ns = tuple(int(n) for n in manifest["ns"])
    cells: list[Finding] = []
    missing: list[str] = []
    bound: dict[str, dict] = {}
    for name in manifest["cells"]:
        name = str(name)
        rel = f"cells/{name}.json"
        analysis, _, n_text = name.rpartition("-n")
        if analysis not in ANALYSES or not n_text.isdigit():
            problems.append(Finding(rel, Verdict.REFUTED.value, "not a cell name of a report"))
            continue
        try:
            rec = read_json(root / rel) if (root / rel).is_file() else None
        except AttncertError:
            rec = None
        if not isinstance(rec, dict) or rec.get("status") is None:
            missing.append(name)
            continue
        try:
            b = bind(analysis, rec, model, root, int(n_text), ns)
        except Unbound as err:
            problems.append(Finding(rel, Verdict.REFUTED.value, err.message))
            continue
        except (AttncertError, KeyError, TypeError, ValueError) as err:
            problems.append(Finding(rel, Verdict.REFUTED.value, f"cannot be re-checked: {err}"))
            continue
        bound[name] = b
        cells.append(_cell_finding(rel, rec, b))
        if b.get("rejected"):  # the kernel refuses the certificate itself
            problems.append(
                Finding(str(rec.get("certificate")), Verdict.REFUTED.value, b["rejected"])
            )
        diff = _differs(rec, b, CERTIFIED.get(analysis, ()))
        if diff:
            problems.append(Finding(rel, Verdict.REFUTED.value, diff))
    if sealed and bound and not problems and not missing:
        problems += _pages(root, manifest, model, ns, bound)
    return ReportCheck(str(root), tuple(cells), tuple(problems), tuple(missing), sealed)


def _cell_finding(rel: str, rec: dict, b: dict) -> Finding:
    status = b.get("status")
    if status == "not-applicable":
        return Finding(rel, "NOT APPLICABLE", str(b.get("reason") or "")[:200])
    if status != "ok":
        return Finding(rel, str(status).upper(), str(b.get("reason") or "")[:200])
    cert = b.get("certificate")
    why = f"re-derived by the kernel from {cert}" if cert else "no certificate"
    return Finding(rel, str(b.get("verdict")), why)


def _differs(rec: dict, b: dict, fields: tuple[str, ...]) -> str | None:
    """Where the stored cell says something other than its re-derivation."""
    if rec.get("status") == "ok" and rec.get("verdict") != b.get("verdict"):
        return (
            f"verdict: the cell says {rec.get('verdict')!r}, the kernel re-derives "
            f"{b.get('verdict')!r} from its certificate"
        )
    got, want = rec.get("data") or {}, b.get("data") or {}
    for key in fields:
        if got.get(key) != want.get(key):
            return (
                f"data.{key}: the cell says {_short(got.get(key))}, the certificate gives "
                f"{_short(want.get(key))}"
            )
    return None


def _short(x: Any) -> str:
    t = repr(x)
    return t if len(t) <= 80 else t[:77] + "…"


def _pages(root: Path, manifest: dict, model, ns, bound: dict) -> list[Finding]:
    """Rebuild the pages from the re-derived cells and compare them byte for byte."""
    from attncert.report.document import build_report, describe_model

    cells = {name: bound[name] for name in manifest["cells"] if name in bound}
    rep = build_report(describe_model(model), manifest["language"], ns, cells)
    want = {
        "report.json": rep.to_json(),
        "report.md": rep.to_markdown(),
        "index.html": rep.to_html(),
        **{f"plots/{k}.svg": v for k, v in rep.plots.items()},
    }
    out = []
    for rel, text in want.items():
        p = root / rel
        if not p.is_file():
            out.append(Finding(rel, Verdict.REFUTED.value, "missing"))
        elif p.read_text(encoding="utf-8") != text:
            out.append(
                Finding(
                    rel,
                    Verdict.REFUTED.value,
                    "differs from the page rebuilt from the re-derived cells: it shows "
                    "something its certificates do not say",
                )
            )
    return out


__all__ = ["Finding", "ReportCheck", "check_report", "drop_stale", "is_report", "seal"]
