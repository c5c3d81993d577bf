"""The length-horizon section (issue 40, item 5): over the report's range of lengths, the
maximal intervals at which the model is proved right on every string of every length, the
first length at which it is wrong (with its witness, in run-length form), the lengths that
stay undecided — all re-derived by the kernel from the horizon certificate — beside the
accuracy sampled in floating point at a few lengths (measured, labelled so)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from attncert.report.section import Section
from attncert.report.sections.common import (
    base,
    budget,
    dedupe,
    ran_out,
    ran_out_text,
    section_verdict,
)
from attncert.report.sections.verify import member
from attncert.report.text import Inline, Span, code, inline, seconds, share
from attncert.verdicts import Verdict

#: a witness up to this many symbols is built in full to say what the language says of it
MEMBER_MAX = 4096
#: a run of at least this many equal symbols is written with its count (``1^21``)
RUN_MIN = 4
#: each interval's verdict word: the kernel's for the lengths in it
WORDS = {
    "proved": Verdict.CERTIFIED.value,
    "refuted": Verdict.REFUTED.value,
    "undecided": Verdict.UNDECIDED.value,
}
WHAT = {
    "proved": "right on every string of every length",
    "refuted": "wrong on some string at every length (decided in arb)",
    "undecided": "not every string decided",
}

TITLE = "Length horizon: every length proved right, and the first where it is wrong"
THEOREM = (
    "Certified accuracy at every length of an interval, without enumerating lengths (attncert "
    "verify --lengths; issue 40): the kernel (attncert.kernel.horizon) re-derives a partition "
    "of every string of every length into patterns, each bounded for all of its lengths at "
    "once. Hahn's Lemma 5 caps one position's effect at K/n, so a fixed-β softmax model that "
    "relies on one position with score gap Δ fails once n − 1 outweighs e^Δ; with Yang et "
    "al.'s β ∝ log n a model can be right at every length."
)
LIMITS = (
    "The pattern bound is sound but not tight: it can leave lengths undecided at which the "
    "model is right, and within the cell's budget a trained model may be proved only up to a "
    "modest length; the sampled accuracy is measured in floating point, not proved."
)


def horizon_cell(cells: Mapping[str, Mapping]) -> Mapping | None:
    """The report's horizon cell (run once, at the least n), or None."""
    return next((rec for name, rec in cells.items() if name.startswith("horizon-")), None)


def bound(b) -> str:
    """An interval's end: an integer, or ∞ (``"inf"`` in the JSON)."""
    return "∞" if b in ("inf", None) else str(b)


def interval(a, b) -> str:
    """``[1, 21]``, ``[22, ∞]``; a single length as itself."""
    return str(a) if a == b else f"[{a}, {bound(b)}]"


def witness_runs(w) -> list[tuple[str, int]]:
    """A witness as runs (symbol, count): from a string or its run-length JSON form."""
    if isinstance(w, str):
        return [(s, len(list(g))) for s, g in itertools.groupby(w)]
    return [(str(s), int(k)) for s, k in w or []]


def runs_text(runs: Sequence[tuple[str, int]]) -> Inline:
    """Run-length form: a run of :data:`RUN_MIN` or more as the symbol with its count
    (``1^21``), shorter runs written out; tokens joined by ·, e.g. ``0·1^21``."""
    tokens: list[list[Span]] = []
    literal = ""
    for s, k in runs:
        if k >= RUN_MIN:
            if literal:
                tokens.append([code(literal)])
                literal = ""
            tokens.append([code(s), Span(str(k), "sup")])
        else:
            literal += s * k
    if literal:
        tokens.append([code(literal)])
    out: list = []
    for i, t in enumerate(tokens):
        out += ([Span("·")] if i else []) + t
    return inline(*out)


def witness_text(language: str, w) -> Inline:
    """A witness in run-length form, with what the model and the language say of it (the
    model is wrong on it) when it is short enough to build."""
    runs = witness_runs(w)
    n = sum(k for _, k in runs)
    m = member(language, "".join(s * k for s, k in runs)) if n <= MEMBER_MAX else None
    if m is None:
        return runs_text(runs)
    what = "rejects it, a member" if m else "accepts it, not a member"
    return inline(runs_text(runs), f" (model {what} of {language})")


def intervals(d: Mapping) -> list[tuple[int, object, str]]:
    """Every interval of the partition, in length order: (a, b, kind)."""
    out = [(a, b, kind) for kind in WORDS for a, b in d.get(kind) or []]
    return sorted(out, key=lambda t: t[0])


def _measured(sampled: list, a: int, b) -> Inline | str:
    rows = [s for s in sampled if s["n"] >= a and (b == "inf" or s["n"] <= b)]
    if not rows:
        return "—"
    parts: list = []
    for i, s in enumerate(rows):
        text = share(int(s["right"]), int(s["strings"]), exact=bool(s.get("exact")))
        parts += ([Span("", "br")] if i else []) + [f"n = {s['n']}: {text}"]
    return inline(*parts)


def _sentence(d: Mapping) -> str:
    """The section's verdict in words (plain text)."""
    from attncert.report.text import plain

    lo, _ = d["lengths"]
    up, first = d.get("proved_up_to"), d.get("first_refuted")
    proved = d.get("proved") or []
    if up is not None:
        head = f"Proved right on every string of every length in {interval(lo, up)}"
    elif proved:
        more = f" and {len(proved) - 3} more interval(s)" if len(proved) > 3 else ""
        head = (
            f"Not proved at n = {lo}; proved right on every string of every length in "
            + ", ".join(interval(*p) for p in proved[:3])
            + more
        )
    else:
        head = "No length is proved right on every string"
    parts = [head]
    if first is not None:
        w = d.get("witness")
        wit = f" (witness {plain(runs_text(witness_runs(w)))}, decided in arb)" if w else ""
        parts.append(f"wrong first at n = {first}{wit}")
    und = d.get("undecided") or []
    if und:
        more = f" and {len(und) - 1} more interval(s)" if len(und) > 1 else ""
        parts.append(f"undecided: {interval(*und[0])}{more}")
    return "; ".join(parts) + "."


def _notes(rec: Mapping, d: Mapping) -> list:
    notes: list = []
    lo, hi = d.get("lengths") or [None, None]
    if lo is not None:
        notes.append(
            f"Range n ∈ {interval(lo, hi)} (attncert report --lengths A:B; by default from 1 "
            "to 64× the longer of the longest length the model records being trained on and "
            "the report's largest n)."
        )
    if d.get("small"):
        nodes = f" ({d['nodes']} nodes)" if d.get("nodes") else ""
        notes.append(
            f"Lengths up to {d['small']} are decided string by string (every string re-decided "
            "by the kernel); longer ones as patterns, a bound for all of an interval's lengths "
            f"at once{nodes}."
        )
    if d.get("not_sampled"):
        notes.append(
            "Not sampled (a float forward pass costs O(n²) per string; these lengths would not "
            f"fit in the sampling's {seconds(d.get('sample_limit'))}): n = "
            + ", ".join(map(str, d["not_sampled"]))
            + "."
        )
    time = f"Time: the cell used {budget(rec)}"
    if d.get("search_seconds") is not None:
        time += (
            f" — the search {seconds(d.get('search_seconds'))} of its "
            f"{seconds(d.get('search_limit'))}, the kernel's check "
            f"{seconds(d.get('check_seconds'))}"
        )
    notes.append(time + ".")
    if ran_out(rec):
        notes.append(
            f"Undecided because {ran_out_text(rec)} (or run the horizon on its own: attncert "
            "verify MODEL --lengths A:B --time-limit S)."
        )
    return notes


def horizon_section(cells: Mapping, ns, language: str) -> Section:
    rec = horizon_cell(cells)
    if rec is None:  # no cell at all (an interrupted run): nothing checked
        verdict, rule = section_verdict(())
        return Section(
            "horizon", TITLE, verdict, "Not run yet (the report is incomplete): nothing was "
            "checked.", THEOREM, LIMITS, rule=rule, about=language,
        )  # fmt: skip
    b = base("horizon", TITLE, THEOREM, LIMITS, [(_label(rec), rec)], (), language)
    if isinstance(b, Section):
        return b
    d = rec.get("data") or {}
    columns = ("lengths", "verdict", "certified (kernel)", "witness (decided in arb)",
               "measured accuracy (float, sampled)")  # fmt: skip
    notes = list(b["notes"])
    if not d.get("accepted"):
        why = "; ".join(d.get("reasons") or []) or d.get("no_certificate") or "—"
        lo, hi = d.get("lengths") or (rec.get("key") or {}).get("lengths") or (1, "inf")
        measured = _measured(d.get("sampled") or [], lo, hi)
        rows = [(_label(rec), str(rec.get("verdict")), why, "—", measured)]
        summary = f"Nothing certified: {why}."
        notes += _notes(rec, d)
    else:
        sampled = d.get("sampled") or []
        wits = {w["n"]: w["witness"] for w in d.get("witnesses") or []}
        rows = []
        for a, bb, kind in intervals(d):
            w = wits.get(a) if kind == "refuted" else None
            rows.append(
                (
                    interval(a, bb), WORDS[kind], WHAT[kind],
                    witness_text(language, w) if w is not None else "—",
                    _measured(sampled, a, bb),
                )
            )  # fmt: skip
        summary = _sentence(d)
        notes += _notes(rec, d)
    verdict, rule = section_verdict(r[1] for r in rows)
    return Section(
        "horizon", TITLE, verdict, summary, THEOREM, LIMITS, columns, tuple(rows),
        dedupe(notes), "horizon", b["certificates"], rule, language,
    )  # fmt: skip


def _label(rec: Mapping) -> str:
    lo, hi = ((rec.get("data") or {}).get("lengths") or (rec.get("key") or {}).get("lengths")
              or [None, None])  # fmt: skip
    return "the length horizon" if lo is None else f"n ∈ {interval(lo, hi)}"


__all__ = [
    "horizon_cell",
    "horizon_section",
    "interval",
    "runs_text",
    "witness_runs",
    "witness_text",
]
