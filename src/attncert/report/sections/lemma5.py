"""The Lemma 5 / Theorem 6 section: one symbol's certified effect on the logit at each n
(B(n)) and at every n (K/n), and Theorem 6's cross-entropy floor — PARITY's, labelled for
comparison when the report's language is another."""

from __future__ import annotations

from collections.abc import Mapping

from attncert.report.constancy import Constancy
from attncert.report.section import Section
from attncert.report.sections.common import (
    FLOOR_LANGUAGES,
    base,
    budget,
    by_verdict,
    cells_of,
    dedupe,
    uniform_cell,
    verdict_of,
)
from attncert.report.text import number


def floor_labels(language: str) -> tuple[str, str, str]:
    """(floor column, measured column, the floor's language in words) for ``language``."""
    if language in FLOOR_LANGUAGES:
        return (
            f"Theorem 6 floor on {language} (nats)",
            f"measured cross-entropy on {language} (nats)",
            language,
        )
    return (
        "PARITY floor, for comparison (nats)",
        "measured cross-entropy on PARITY, for comparison (nats)",
        f"PARITY, for comparison (the report is about {language})",
    )


def measured_ce(d: Mapping) -> str:
    """The measured PARITY cross-entropy: over every string, or sampled ± 3 s.e."""
    ce = d.get("ce")
    if isinstance(ce, Mapping) and ce.get("mean") is not None:
        label = f"; labels {ce['language']}" if ce.get("language") != "parity" else ""
        if ce.get("exact"):
            return f"{number(ce['mean'])} (all {ce['strings']} strings{label})"
        return (
            f"{number(ce['mean'])} ± {number(ce['half_width'], 2)} "
            f"({ce['strings']} sampled strings{label})"
        )
    return number(d.get("measured_ce"))


def bound_text(d: Mapping) -> str:
    b = d.get("certified_bound")
    if b is None:
        return "—"
    if d.get("source") == "range cap":
        return f"cap: {number(b)} = the logit's range (range cap, not a bound)"
    return number(b)


def _status(outside: set, caps: list[bool], urows: Mapping, got) -> str:
    if outside:
        return "outside Lemma 5's hypotheses: " + "; ".join(sorted(outside))
    if caps and all(caps) and all(r.get("cap_only", True) for r in urows.values()):
        return (
            "only the trivial cap: at every n the certified B(n) is the logit's range, and "
            "K/n exceeds it — no bound on one symbol's effect is certified at these lengths"
        )
    below = [n for n, rec in got if (rec.get("data") or {}).get("source") == "propagated"]
    below += [n for n, r in urows.items() if not r.get("cap_only", True) and n not in below]
    if below:
        return "applies: B(n) is certified below the logit's range at n = " + ", ".join(
            map(str, sorted(below))
        )
    return "no certified bound at these lengths (see the rows)"


def _uniform_notes(uni: Mapping, udata: Mapping) -> list[str]:
    notes = []
    if uni.get("status") == "ok" and udata.get("K"):
        notes.append(
            f"uniform: {uni['verdict']}, K = {udata['K']} from N₀ = {udata.get('n0')}, "
            f"logit range Z = {number(udata.get('cap'))}; K/n < Z only from n = "
            f"{udata.get('nontrivial_from') or '—'} on"
        )
    elif uni.get("status") == "ok":
        notes += [f"uniform: {uni['verdict']} — {r}" for r in udata.get("reasons") or []]
    else:
        notes.append(f"uniform: {verdict_of(uni)} — {uni.get('reason') or 'no reason given'}")
    notes.extend(f"uniform: {t}" for t in udata.get("notes") or [])
    pub = udata.get("published") or {}
    if pub.get("reason"):
        notes.append(f"Lemma 5's published constant: not computable ({pub['reason']})")
    elif pub.get("value"):
        notes.append(f"Lemma 5's published constant for these weights: {pub['value']}")
    return notes


def lemma5_section(cells: Mapping, ns, language: str, const: Constancy) -> Section:
    got = cells_of(cells, "sensitivity", ns)
    uni = uniform_cell(cells)
    floor_col, ce_col, floor_about = floor_labels(language)
    title = "Lemma 5 / Theorem 6: one symbol's effect and the cross-entropy floor"
    theorem = (
        "Hahn (2020) Lemma 5: one input symbol moves a softmax transformer's output by O(1/n) "
        "(here a certified B(n) at each n and a certified K with B(n) ≤ K/n for every n ≥ N₀), "
        "and Theorem 6: so the cross-entropy on PARITY tends to log 2."
    )
    limits = (
        "B(n) and K are sound but not tight, the measured change is a search's lower bound, "
        "and a bound that is only the logit's range is a cap — it says nothing about one "
        "symbol's effect and is labelled so."
    )
    about = f"B(n) and K/n: the model alone (no language); the floor: {floor_about}"
    parts = got + ([(0, uni)] if uni is not None else [])
    missing = [n for n in ns if f"sensitivity-n{n}" not in cells]
    b = base("lemma5", title, theorem, limits, parts, missing, about)
    if isinstance(b, Section):
        return b
    udata = (uni or {}).get("data") or {}
    urows = {}
    if uni is not None and uni.get("status") == "ok":
        urows = {r["n"]: r for r in udata.get("rows") or []}
    rows, notes, caps, outside = [], [], [], set()
    floors = False
    for n, rec in got:
        d = rec.get("data") or {}
        u = urows.get(n, {})
        kn = "—" if u.get("K_over_n") is None else u["K_over_n"]
        kn += " (> Z: cap only)" if u.get("cap_only") and kn != "—" else ""
        if rec.get("status") != "ok":
            rows.append((str(n), verdict_of(rec), "—", "—", kn, "—", "—", budget(rec)))
            continue
        outside.update(d.get("outside") or [])
        caps.append(d.get("source") == "range cap")
        floors = floors or d.get("floor") is not None
        rows.append(
            (
                str(n), rec["verdict"], number(d.get("measured")), bound_text(d), kn,
                number(d.get("floor"), 6), measured_ce(d), budget(rec),
            )
        )  # fmt: skip
        if d.get("diagnosis"):
            notes.append(f"n = {n}: {d['diagnosis']}")
    if uni is not None:
        if uni.get("status") == "ok":
            outside.update(udata.get("reasons") or [])
        notes += _uniform_notes(uni, udata)
        n0 = udata.get("n0")
        rows.append(
            (
                f"every n ≥ {n0}" if n0 else "every n (uniform)",
                verdict_of(uni),
                "—",
                "—",
                f"K/n, K = {udata['K']}" if udata.get("K") else "—",
                "—",
                "—",
                budget(uni),
            )
        )
    status = _status(outside, caps, urows, got)
    if floors and language not in FLOOR_LANGUAGES:
        notes.insert(
            0,
            f"Theorem 6 is about PARITY and 2-Dyck, not {language}: the floor and the measured "
            "cross-entropy are PARITY's, shown for comparison.",
        )
    vac = const.vacuous(ns, "any bound on one symbol's effect holds for it trivially")
    if vac:
        notes.insert(0, vac)
    columns = ["n", "verdict", "measured largest change (logit)", "certified B(n) (logit)",
               "uniform K/n (logit)", floor_col, ce_col, "time used / budget"]  # fmt: skip
    if not floors:  # no floor at any n (not a {0,1} model): the columns are left out
        columns = columns[:5] + columns[7:]
        rows = [r[:5] + r[7:] for r in rows]
    summary = by_verdict(
        [(n, verdict_of(rec)) for n, rec in got]
        + ([("every n (uniform)", verdict_of(uni))] if uni is not None else [])
    )
    return Section(
        "lemma5", title, b["verdict"], f"{summary}. Theorem's status: {status}.", theorem,
        limits, tuple(columns), tuple(rows), dedupe(b["notes"] + notes), "lemma5",
        b["certificates"], b["rule"], about,
    )  # fmt: skip


__all__ = ["bound_text", "floor_labels", "lemma5_section", "measured_ce"]
