"""What every section shares: its cells across n, a row's verdict word, the section's
verdict by the kernel's stated rule, a summary of the verdicts by n, and each cell's time
budget (what it had, what it used, and the flag that raises it when it ran out)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from attncert.report.section import Section
from attncert.report.text import seconds
from attncert.verdicts import Verdict

NOT_APPLICABLE = "NOT APPLICABLE"
INFO = "INFO"
MEASURED = "MEASURED"
TIMEOUT = "TIMEOUT"
MEASURED_RULE = "measured, not proved: no verdict"
#: the flag that raises a cell's budget, on the command line and in Python
BUDGET_FLAG = "--cell-time-limit (attncert report; cell_time_limit= in Python)"
#: the verdict words a row can show besides the kernel's (their badges are styled too)
STATUS_WORDS = {"not-applicable": NOT_APPLICABLE, "timeout": TIMEOUT, "failed": "FAILED",
                "lost": "LOST"}  # fmt: skip
UNFINISHED = ("TIMEOUT", "FAILED", "LOST")
#: languages Theorem 6's floor is about (the floor is the same for PARITY and its complement)
FLOOR_LANGUAGES = ("parity", "parity-odd", "dyck2")


def cells_of(cells: Mapping[str, Mapping], analysis: str, ns) -> list[tuple[int, Mapping]]:
    return [(n, cells[f"{analysis}-n{n}"]) for n in ns if f"{analysis}-n{n}" in cells]


def uniform_cell(cells: Mapping[str, Mapping]) -> Mapping | None:
    return next((rec for name, rec in cells.items() if name.startswith("uniform-")), None)


def verdict_of(rec: Mapping) -> str:
    """A row's word: the bound verdict of a finished cell, else its status in capitals."""
    st = rec.get("status")
    if st == "ok":
        return str(rec.get("verdict"))
    return STATUS_WORDS.get(str(st), str(st).upper())


def section_verdict(words: Iterable[str]) -> tuple[str, str]:
    """The section's verdict from its rows' verdict words by the kernel's stated rule
    (:func:`attncert.kernel.verdict.section`), and the rule in words. A row that did not
    finish (TIMEOUT, FAILED, LOST) proved nothing at its n: it is an UNDECIDED row."""
    from attncert.kernel.verdict import section

    rows = []
    for w in words:
        if w in UNFINISHED:
            rows.append(Verdict.UNDECIDED)
            continue
        try:
            rows.append(Verdict(w))
        except ValueError:  # MEASURED, NOT APPLICABLE: not counted
            continue
    v, rule = section(rows)
    return v.value, f"{rule}; a row that did not finish ({', '.join(UNFINISHED)}) is UNDECIDED"


def label(n: int) -> str:
    """A row's label: its length, or for the once-per-report uniform cell (n = 0 here)
    "every n (uniform)"."""
    return str(n) if n else "every n (uniform)"


def at_lengths(ns: list) -> str:
    """ "n = 8", "n = 8 and 16", "n = 8, 16 and 64"; a row label that is not a length (the
    uniform row) as it is."""
    ns = [str(n) for n in ns]
    if len(ns) == 1:
        return ns[0] if not ns[0].isdigit() else f"n = {ns[0]}"
    return "n = " + ", ".join(ns[:-1]) + f" and {ns[-1]}"


def by_verdict(rows: Iterable[tuple[Any, str]]) -> str:
    """Which rows have which verdict, worst first: "REFUTED at n = 8; CERTIFIED at n = 64
    and 256" (rows are (n or label, word))."""
    from attncert.kernel.verdict import WORST_FIRST

    order = [v.value for v in WORST_FIRST]
    groups: dict[str, list] = {}
    for n, word in rows:
        groups.setdefault(word, []).append(n)
    keys = sorted(groups, key=lambda w: order.index(w) if w in order else len(order))
    return "; ".join(f"{w} at {at_lengths(groups[w])}" for w in keys)


def base(key, title, theorem, limits, got, missing_ns=(), about="") -> dict[str, Any] | Section:
    """The section when no cell finished (all not applicable, or all failed), else the
    parts every section shares: the verdict over the finished rows by the kernel's rule,
    notes for cells that did not finish (with their budget), certificates."""
    ok = [rec for _, rec in got if rec.get("status") == "ok"]
    notes: list = [
        f"{at_lengths([label(n)])}: {verdict_of(rec)} — {rec.get('reason') or 'no reason given'}"
        + (f" ({ran_out_text(rec)})" if ran_out(rec) else "")
        for n, rec in got
        if rec.get("status") not in ("ok", "not-applicable")
    ]
    notes += [f"n = {n}: not run yet (the report is incomplete)" for n in missing_ns]
    certs = tuple(rec["certificate"] for _, rec in got if rec.get("certificate"))
    if not ok:
        na = [rec for _, rec in got if rec.get("status") == "not-applicable"]
        if na and len(na) == len(got):
            reasons = sorted({str(rec.get("reason")) for rec in na})
            return Section(
                key, title, NOT_APPLICABLE, "Does not apply to this model: " + "; ".join(reasons),
                theorem, limits, notes=tuple(notes), rule="no row applies", about=about,
            )  # fmt: skip
        verdict, rule = section_verdict(verdict_of(rec) for _, rec in got)
        rows = tuple(
            (label(n), verdict_of(rec), str(rec.get("reason") or "—"), budget(rec))
            for n, rec in got
        )
        return Section(
            key, title, verdict, "No cell of this analysis finished (reasons below): nothing "
            "was checked.", theorem, limits, ("n", "verdict", "why", "time used / budget"),
            rows, tuple(notes), rule=rule, about=about,
        )  # fmt: skip
    notes += [
        f"{at_lengths([label(n)])}: not applicable — {rec.get('reason')}"
        for n, rec in got
        if rec.get("status") == "not-applicable"
    ]
    if all(rec.get("verdict") == MEASURED for rec in ok):
        verdict, rule = MEASURED, MEASURED_RULE
    else:
        verdict, rule = section_verdict(verdict_of(rec) for _, rec in got)
    return {"verdict": verdict, "rule": rule, "notes": notes, "certificates": certs}


# ----- time budgets ----------------------------------------------------------------------------


def ran_out(rec: Mapping) -> bool:
    """The cell ran out of time: it timed out, or its analysis stopped at its own time
    limit (verify's search, certify's solver)."""
    if rec.get("status") == "timeout":
        return True
    d = rec.get("data") or {}
    said = " ".join(str(d.get(k) or "") for k in ("stopped", "no_certificate", "undecided"))
    return "time limit" in said or "time-out" in said


def ran_out_text(rec: Mapping) -> str:
    """Where the time went and the flag that raises it."""
    limit = rec.get("time_limit")
    d = rec.get("data") or {}
    own = d.get("search_limit")
    if rec.get("status") == "timeout":
        what = "ran out of its budget" + (f" of {seconds(limit)}" if limit else "")
    elif own and limit:
        what = (
            f"its search stopped at its own time limit, {seconds(own)} of the cell's "
            f"{seconds(limit)}"
        )
    else:
        what = "its search stopped at its time limit"
    return f"{what}: raise it with {BUDGET_FLAG}"


def budget(rec: Mapping) -> str:
    """The time a cell used and had: "4.7 s of 8 s" (+ ", ran out")."""
    used, limit = rec.get("seconds"), rec.get("time_limit")
    if used is None and limit is None:
        return "—"
    text = seconds(used) + (f" of {seconds(limit)}" if limit else "")
    return text + (", ran out" if ran_out(rec) else "")


def budget_notes(got: Iterable[tuple[int, Mapping]]) -> list[str]:
    """A note for each finished cell whose analysis ran out of time (a cell that did not
    finish has its note from :func:`base`)."""
    return [
        f"n = {n}: {ran_out_text(rec)}"
        for n, rec in got
        if rec.get("status") == "ok" and ran_out(rec)
    ]


def dedupe(items: Iterable) -> tuple:
    """Each note once, in order (a reason the kernel and the search both give)."""
    seen, out = set(), []
    for it in items:
        k = it if isinstance(it, str) else repr(it)
        if k not in seen:
            seen.add(k)
            out.append(it)
    return tuple(out)


__all__ = [
    "BUDGET_FLAG",
    "FLOOR_LANGUAGES",
    "INFO",
    "MEASURED",
    "NOT_APPLICABLE",
    "TIMEOUT",
    "at_lengths",
    "base",
    "budget",
    "budget_notes",
    "by_verdict",
    "cells_of",
    "dedupe",
    "ran_out",
    "ran_out_text",
    "section_verdict",
    "uniform_cell",
    "verdict_of",
]
