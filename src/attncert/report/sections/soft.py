"""The soft-restriction section (``soft-certify``): Theorem 1's conclusion for the softmax
model itself at one n — a restriction on which its decision is certified constant, and a
pair of completions of different membership."""

from __future__ import annotations

from collections.abc import Mapping

from attncert.report.constancy import Constancy
from attncert.report.section import Section
from attncert.report.sections.common import (
    at_lengths,
    base,
    budget,
    budget_notes,
    by_verdict,
    cells_of,
    dedupe,
    verdict_of,
)
from attncert.report.text import pair
from attncert.verdicts import Verdict


def soft_section(cells: Mapping, ns, language: str, const: Constancy) -> Section:
    got = cells_of(cells, "soft-certify", ns)
    title = "Soft restriction (soft-certify)"
    theorem = (
        "Theorem 1's conclusion for the soft model itself at one n: positions fixed so that "
        "the decision is certified constant on every completion (Lemma 5's propagation), and "
        f"two completions of different membership in {language}, decided in arb."
    )
    limits = (
        "Found by a search within the cell's time budget (no restriction found is not a proof "
        "that none exists), and only at the lengths shown."
    )
    about = f"{language}: the pair differs in membership in {language}"
    missing = [n for n in ns if f"soft-certify-n{n}" not in cells]
    b = base("soft", title, theorem, limits, got, missing, about)
    if isinstance(b, Section):
        return b
    rows, notes = [], list(b["notes"])
    with_pair, without = [], []
    for n, rec in got:
        d = rec.get("data") or {}
        if rec.get("status") != "ok":
            rows.append((str(n), verdict_of(rec), "—", "—", "—", budget(rec), "—"))
            continue
        free = d.get("free")
        strings = d.get("pair") or []
        cell = pair(strings[0], strings[1]) if len(strings) == 2 else "—"
        (with_pair if len(strings) == 2 else without).append(n)
        rows.append(
            (
                str(n),
                rec["verdict"],
                "—" if free is None else f"{free}/{n}",
                "—" if d.get("decision") is None else ("accept" if d["decision"] else "reject"),
                cell,
                budget(rec),
                rec.get("certificate") or "—",
            )
        )
        notes.extend(f"n = {n}: {t}" for t in d.get("notes") or [])
    notes += budget_notes(got)
    vac = const.vacuous(ns, "its decision is the same on every completion of any restriction")
    if vac:
        notes.insert(0, vac)
    found = (
        f"a certified restriction with a pair of different membership at {at_lengths(with_pair)}"
        if with_pair
        else "no restriction with a pair of different membership was certified"
    )
    if with_pair and without:
        found += f"; none at {at_lengths(without)}"
    certified = [n for n, rec in got if verdict_of(rec) == Verdict.CERTIFIED.value]
    if with_pair and set(with_pair) - set(certified):
        found += " (where such a row is not CERTIFIED, the notes say why)"
    summary = f"{by_verdict((n, verdict_of(rec)) for n, rec in got)}: {found}."
    return Section(
        "soft", title, b["verdict"], summary, theorem, limits,
        ("n", "verdict", "free positions", "decision on every completion",
         "pair of completions", "time used / budget", "certificate"),
        tuple(rows), dedupe(notes), None, b["certificates"], b["rule"], about,
    )  # fmt: skip


__all__ = ["soft_section"]
