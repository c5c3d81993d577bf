"""The certified-accuracy section (``verify``): over every string of length n, an exact
count when nothing is left undecided, a misclassified string when the model is proved
wrong, beside the accuracy measured in floating point."""

from __future__ import annotations

from collections.abc import Mapping

from attncert.report.constancy import Constancy
from attncert.report.section import Section
from attncert.report.sections.common import (
    base,
    budget,
    budget_notes,
    by_verdict,
    cells_of,
    dedupe,
    verdict_of,
)
from attncert.report.text import Inline, fraction, inline, share, string
from attncert.verdicts import Verdict

#: exact counts up to this many strings are printed as fractions
FRACTION_MAX = 10**15


def member(language: str, s: str) -> bool | None:
    """``s`` ∈ ``language`` (None if the language cannot be built here)."""
    from attncert.errors import AttncertError
    from attncert.languages import language as make

    try:
        lang = make("dfa", path=language[4:]) if language.startswith("dfa:") else make(language)
        return bool(lang.contains(s))
    except (AttncertError, OSError):
        return None


def witness(language: str, w: str) -> Inline:
    """A misclassified string (decided in arb) with what the model and the language say:
    the model is wrong on it, so it accepts exactly the non-members."""
    m = member(language, w)
    if m is None:
        return string(w)
    what = "rejects it, a member" if m else "accepts it, not a member"
    return inline(string(w), f" (model {what} of {language})")


def certified(d: Mapping) -> str:
    """The certified accuracy: an exact fraction when no string is undecided, else the
    interval; decimals where the counts are astronomically large."""
    ex = d.get("exact") or {}
    try:
        right, und, total = int(ex["right"]), int(ex["undecided"]), int(ex["total"])
    except (KeyError, TypeError, ValueError):
        acc = d.get("accuracy") or {}
        return f"[{acc.get('lower', '—')}, {acc.get('upper', '—')}]"
    if total <= FRACTION_MAX:
        if und == 0:
            return fraction(right, total)
        return f"[{fraction(right, total)}, {fraction(right + und, total)}]"
    acc = d.get("accuracy") or {}
    if und == 0:  # the exact count is in the certificate; its value here, exactly if it can
        from fractions import Fraction

        dec = f"{right / total:.6g}"
        if Fraction(right, total) == Fraction(dec):
            return f"{dec} exactly"
        return f"≈ {dec} (the exact count is in the certificate)"
    return f"[{acc.get('lower')}, {acc.get('upper')}]"


def _undecided(d: Mapping) -> str:
    ex = d.get("exact") or {}
    try:
        und, total = int(ex["undecided"]), int(ex["total"])
    except (KeyError, TypeError, ValueError):
        return str(d.get("undecided_measure") or "—")
    if total <= FRACTION_MAX:
        return "none" if und == 0 else f"{und} of {total} strings"
    return "none" if und == 0 else f"measure {d.get('undecided_measure')}"


def verify_section(cells: Mapping, ns, language: str, const: Constancy) -> Section:
    got = cells_of(cells, "verify", ns)
    title = "Certified accuracy (verify) beside measured accuracy"
    theorem = (
        f"Accuracy on {language} over all |Σ|ⁿ strings of length n (uniform), by "
        "branch-and-bound over cubes re-derived leaf by leaf by the kernel (attncert.kernel."
        "verify); on PARITY, Theorems 1 and 6 say every decided cube with a free position "
        "holds exactly half errors."
    )
    limits = (
        "Bounds found within the cell's time budget: CERTIFIED means proved correct on every "
        "string of length n, REFUTED proved wrong (a witness decided in arb), UNDECIDED an "
        "interval with undecided strings; the measured accuracy (floating point) is not "
        "proved."
    )
    about = language
    missing = [n for n in ns if f"verify-n{n}" not in cells]
    b = base("verify", title, theorem, limits, got, missing, about)
    if isinstance(b, Section):
        return b
    rows, parts, notes = [], [], list(b["notes"])
    for n, rec in got:
        d = rec.get("data") or {}
        word = verdict_of(rec)
        if rec.get("status") != "ok":
            rows.append((str(n), word, "—", "—", "—", "—", budget(rec), "—"))
            continue
        s = d.get("sampled") or {}
        measured = "—"
        if s.get("strings"):
            measured = share(int(s["right"]), int(s["strings"]), exact=bool(s.get("exact")))
        wits = d.get("witnesses") or []
        wit = witness(language, wits[0]) if wits else "—"
        acc = certified(d)
        rows.append(
            (
                str(n), word, acc, _undecided(d), wit, measured, budget(rec),
                rec.get("certificate") or "—",
            )
        )  # fmt: skip
        what = {
            Verdict.CERTIFIED.value: f"proved correct on every string ({acc})",
            Verdict.REFUTED.value: f"proved wrong (certified accuracy {acc})",
            Verdict.UNDECIDED.value: f"not every string decided (certified accuracy {acc})",
        }.get(word)
        if what:
            parts.append(f"{word} at n = {n}: {what}")
        if d.get("stopped"):
            notes.append(f"n = {n}: the search stopped early: {d['stopped']}")
    notes += budget_notes(got)
    for n in const.lengths(ns):
        notes.insert(
            0,
            f"n = {n}: the model decides every string alike, so its accuracy is only the share "
            f"of strings of length n {'in' if const.at.get(n) == 'accept' else 'not in'} "
            f"{language}"
            if n in const.at
            else f"n = {n}: the model is constant, so its accuracy is only the share of "
            f"strings of length n it happens to match",
        )
    summary = "; ".join(parts)
    if len(got) > len(parts):  # rows not described above: say which verdict is where
        summary = by_verdict((n, verdict_of(rec)) for n, rec in got) + (
            f". {summary}" if summary else ""
        )
    summary += "."
    return Section(
        "verify", title, b["verdict"], summary, theorem, limits,
        ("n", "verdict", "certified accuracy", "undecided strings", "misclassified string",
         "measured accuracy (float)", "time used / budget", "certificate"),
        tuple(rows), dedupe(notes), "accuracy", b["certificates"], b["rule"], about,
    )  # fmt: skip


__all__ = ["certified", "member", "verify_section", "witness"]
