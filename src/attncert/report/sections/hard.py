"""The sections about hard attention: how often the hardened model decides as the soft one
(measured), and Hahn's Theorem 1 on the hardened model (``certify``)."""

from __future__ import annotations

from collections.abc import Mapping

from attncert.report.constancy import Constancy
from attncert.report.section import Section
from attncert.report.sections.common import (
    MEASURED,
    at_lengths,
    base,
    budget,
    budget_notes,
    by_verdict,
    cells_of,
    dedupe,
    verdict_of,
)
from attncert.report.text import Inline, pair, share
from attncert.verdicts import Verdict


def harden_section(cells: Mapping, ns, const: Constancy) -> Section:
    got = cells_of(cells, "harden", ns)
    title = "Hardening agreement by n"
    theorem = (
        "Hahn's Theorem 1 is about hard attention: the certificates below are for the hardened "
        "model (each softmax head replaced by argmax over the same scores, "
        "attncert.model.importers.hardening_report)."
    )
    limits = (
        "Measured in floating point — over every string where that is cheap, else on uniform "
        "random strings with a 95 % Wilson interval — not proved: it says how often the "
        "hardened model decides as the soft one, not that it always does."
    )
    about = "no language: the soft and the hardened model's decisions, compared"
    missing = [n for n in ns if f"harden-n{n}" not in cells]
    b = base("harden", title, theorem, limits, got, missing, about)
    if isinstance(b, Section):
        return b
    rows, parts = [], []
    for n, rec in got:
        d = rec.get("data") or {}
        if rec.get("status") != "ok":
            rows.append((str(n), "—", "—", verdict_of(rec), budget(rec)))
            continue
        agree = share(int(d["agree"]), int(d["strings"]), exact=bool(d.get("exact")))
        rows.append((str(n), str(d["strings"]), str(d["agree"]), agree, budget(rec)))
        parts.append(f"n = {n}: {agree}")
    summary = "Measured: the hardened model decides as the soft one on " + "; ".join(parts) + "."
    notes = list(b["notes"])
    vac = const.vacuous(ns, "so is its hardened form: they agree on every string trivially")
    if vac:
        notes.insert(0, vac)
    return Section(
        "harden", title, MEASURED, summary, theorem, limits,
        ("n", "strings", "same decision", "agreement", "time used / budget"),
        tuple(rows), dedupe(notes), rule=b["rule"], about=about,
    )  # fmt: skip


def _misclassified(mis: Mapping, language: str) -> tuple[Inline, str]:
    """The pair with the positions where the strings differ marked (✗ the string the
    hardened model gets wrong), and what the model and the language say."""
    strings, member, dec = mis["strings"], mis["membership"], mis["decisions"]
    k = next((i for i, (m, d) in enumerate(zip(member, dec, strict=True)) if m != d), 0)
    labels = tuple("✗ " if i == k else "✓ " for i in range(2))
    cell = pair(strings[0], strings[1], labels=labels)  # type: ignore[arg-type]
    word = "accepts" if dec[k] else "rejects"
    same = "both" if dec[0] == dec[1] else "them differently"
    says = (
        f"{word} {same}; ✗ is {'in' if member[k] else 'not in'} {language}, "
        f"✓ is {'in' if member[1 - k] else 'not in'} it"
    )
    return cell, says


#: what a row verdict of Theorem 1 means, before the kernel's first reason
MEANING = {
    Verdict.CERTIFIED.value: "the kernel checked a restriction and a misclassified pair, with "
    "the theorem's hypotheses holding",
    Verdict.OUTSIDE_THEOREM.value: "the kernel checked every claim, but the theorem's statement "
    "is not instantiated",
    Verdict.CERTIFIED_TRIVIAL.value: "checked, but vacuous",
    Verdict.UNDECIDED.value: "nothing was certified",
    Verdict.REFUTED.value: "the kernel rejects the certificate",
}


def explain(word: str, ns: list, reason: str | None) -> str:
    """The rows of one verdict in a sentence: where, what it means, and (but for
    CERTIFIED) the kernel's first reason."""
    text = f"{word} at {at_lengths(ns)}: {MEANING.get(word, word.lower())}"
    why = reason if reason and word != Verdict.CERTIFIED.value else None
    return text + (f" — {why}" if why else "") + "."


def certify_section(cells: Mapping, ns, language: str, const: Constancy) -> Section:
    got = cells_of(cells, "certify", ns)
    title = "Theorem 1: the hardened certificate"
    theorem = (
        "Hahn (2020), Theorem 1 and Corollary 2 (Depth Reduction Lemma): a restriction fixing "
        "a few inputs under which the decision depends on few free ones, and two strings of "
        f"different membership in {language} the model cannot tell apart."
    )
    limits = (
        "One certificate per n, about the hardened model; the soft model is only decided on "
        "the misclassified pair (rigorously, in arb), nothing else about it is claimed."
    )
    about = f"{language}: the misclassified pair differs in membership in {language}"
    missing = [n for n in ns if f"certify-n{n}" not in cells]
    b = base("certify", title, theorem, limits, got, missing, about)
    if isinstance(b, Section):
        return b
    rows, notes, worst = [], list(b["notes"]), {}
    for n, rec in got:
        d = rec.get("data") or {}
        word = verdict_of(rec)
        if rec.get("status") != "ok":
            rows.append((str(n), word, "—", "—", "—", "—", "—", "—", budget(rec), "—"))
            continue
        reasons = list(d.get("reasons") or [])
        if "no_certificate" in d:
            reasons = [str(d["no_certificate"])]
        worst.setdefault(word, ([], reasons[0] if reasons else None))[0].append(n)
        if "no_certificate" in d:
            rows.append(
                (str(n), word, "—", "—", "—", d["no_certificate"], "—", "—", budget(rec), "—")
            )
            continue
        mis = d.get("misclassified")
        cell, says = ("—", "—") if not mis else _misclassified(mis, language)
        soft = d.get("soft_pair")
        soft_text = "—" if not soft else (
            "misclassifies it too" if soft.get("misclassified") else
            "undecided" if soft.get("misclassified") is None else "right on it"
        )  # fmt: skip
        rows.append(
            (
                str(n),
                word,
                str(d["fixed"]),
                f"{d['free']}/{n}",
                ", ".join(map(str, d["output_dependency"])) or "none",
                cell,
                says,
                soft_text,
                budget(rec),
                rec.get("certificate") or "—",
            )
        )
        if d.get("depends"):
            notes.append(f"n = {n}: {d['depends']}")
        notes.extend(f"n = {n}: {r}" for r in reasons)
        if soft:
            notes.append(f"n = {n}: {soft['text']}")
    notes += budget_notes(got)
    vac = const.vacuous(
        ns, "a restriction on which the decision is constant shows nothing about it"
    )
    if vac:
        notes.insert(0, vac)
    summary = " ".join(explain(w, ns_, r) for w, (ns_, r) in worst.items())
    if len(got) > sum(
        len(v[0]) for v in worst.values()
    ):  # more rows than explained: say which verdict is where
        summary = by_verdict((n, verdict_of(rec)) for n, rec in got) + ". " + summary
    return Section(
        "certify", title, b["verdict"], summary.strip(), theorem, limits,
        ("n", "verdict", "fixed (restriction size)", "free", "decision depends on",
         "misclassified pair (✗ wrong)", "hardened model on the pair", "soft model on ✗",
         "time used / budget", "certificate"),
        tuple(rows), dedupe(notes), None, b["certificates"], b["rule"], about,
    )  # fmt: skip


__all__ = ["certify_section", "explain", "harden_section"]
