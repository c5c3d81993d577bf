"""The report as a value: :class:`Report`, its :class:`Section` s, built from the cells.

Each section instantiates one result and says, in one sentence each, its verdict, the
theorem and its limits; a section whose analysis does not apply to the model says why,
and a cell that failed or timed out is named in its section with the reason. The
renderings (:meth:`Report.to_html`, :meth:`Report.to_markdown`, :meth:`Report.to_json`)
carry the same content.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from attncert.model.spec import Model
from attncert.verdicts import Verdict

NOT_APPLICABLE = "NOT APPLICABLE"
INFO = "INFO"
#: verdicts from worst to best (a section's verdict is the worst of its cells')
ORDER = (
    Verdict.REFUTED.value,
    Verdict.UNDECIDED.value,
    Verdict.OUTSIDE_THEOREM.value,
    Verdict.CERTIFIED_TRIVIAL.value,
    Verdict.CERTIFIED.value,
    "MEASURED",
)


def worst(verdicts) -> str | None:
    found = [v for v in verdicts if v in ORDER]
    return min(found, key=ORDER.index) if found else None


@dataclass(frozen=True)
class Section:
    """One analysis across n: its verdict, theorem and limits, a table, notes, a plot."""

    key: str
    title: str
    verdict: str
    summary: str  # the verdict in one sentence
    theorem: str  # the result it instantiates, one sentence
    limits: str  # what it does not say, one sentence
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()
    plot: str | None = None  # name of a plot in Report.plots
    certificates: tuple[str, ...] = ()  # paths relative to the report directory
    rule: str = ""  # how the verdict follows from the rows (shown next to the badge)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "verdict": self.verdict,
            "rule": self.rule,
            "summary": self.summary,
            "theorem": self.theorem,
            "limits": self.limits,
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "notes": list(self.notes),
            "plot": self.plot,
            "certificates": list(self.certificates),
        }


@dataclass(frozen=True)
class Report:
    """A model's report: every analysis that applies, at every n (issue 33)."""

    model: Mapping[str, Any]
    language: str
    ns: tuple[int, ...]
    sections: tuple[Section, ...]
    cells: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    plots: Mapping[str, str] = field(default_factory=dict)  # name → SVG text
    directory: str | None = None
    where: str = ""
    ran: int = 0
    seconds: float = 0.0

    def section(self, key: str) -> Section:
        return next(s for s in self.sections if s.key == key)

    @property
    def complete(self) -> bool:
        """Every cell finished (ok or not applicable): none failed, timed out or missing."""
        return all(c.get("status") in ("ok", "not-applicable") for c in self.cells.values())

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(
            k for k, c in self.cells.items() if c.get("status") not in ("ok", "not-applicable")
        )

    @property
    def exit_code(self) -> int:
        """0 when every cell finished (whatever its verdict), 1 when one failed or timed out."""
        return 0 if self.complete else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "attncert-report-summary",
            "version": 1,
            "model": dict(self.model),
            "language": self.language,
            "ns": list(self.ns),
            "complete": self.complete,
            "sections": [s.to_dict() for s in self.sections],
            "cells": {k: dict(v) for k, v in self.cells.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False, allow_nan=False) + "\n"

    def to_markdown(self) -> str:
        from attncert.report.markdown import render_markdown

        return render_markdown(self)

    def to_html(self) -> str:
        from attncert.report.html import render_html

        return render_html(self)

    def summary(self) -> str:
        lines = [f"report of {self.model['name']} on {self.language}, n = {list(self.ns)}"]
        for s in self.sections:
            lines.append(f"  {s.title}: {s.verdict} — {s.summary}")
        bad = self.failed
        lines.append(
            f"{len(self.cells)} cells: {len(self.cells) - len(bad)} finished, {len(bad)} failed "
            f"or timed out ({self.ran} run now; {self.where}, {self.seconds:.1f} s)"
        )
        return "\n".join(lines)


# ----- the model ------------------------------------------------------------------------------


def describe_model(model: Model) -> dict[str, Any]:
    """Layers, heads (soft or hard), positional scheme, norms and readout, in words."""
    emb = model.embedding
    heads = []
    for li, layer in enumerate(model.layers):
        for hi, h in enumerate(layer.heads):
            t = h.temperature
            heads.append(
                {
                    "layer": li + 1,
                    "head": hi,
                    "kind": h.kind.value,
                    "soft": not h.kind.is_hard,
                    "mask": h.mask.value,
                    "temperature": None if t is None else str(t),
                }
            )
    features = [f.label for f in emb.features]
    if emb.table is not None:
        features.append(f"learned table ({int(emb.table.shape[0])} rows)")
    rotary = {h.rotary for layer in model.layers for h in layer.heads if h.rotary is not None}
    features += [
        f"rotary (RoPE, base {r.base:g}, {r.dim} dims"
        + (f", scale {r.scale:g})" if r.scale != 1 else ")")
        for r in sorted(rotary, key=lambda r: (r.base, r.dim, r.scale))
    ]
    slopes = [h.alibi for layer in model.layers for h in layer.heads if h.alibi is not None]
    if slopes:
        features.append("ALiBi (slopes " + ", ".join(f"{m:.4g}" for m in slopes) + ")")
    norms = sum(1 for layer in model.layers for name in ("norm1", "norm2") if getattr(layer, name))
    acts = sorted({layer.ffn.activation.value for layer in model.layers if layer.ffn is not None})
    return {
        "name": model.name,
        "sha256": model.digest,
        "alphabet": "".join(model.alphabet),
        "bos": model.bos,
        "eos": model.eos,
        "d": model.d,
        "layers": model.num_layers,
        "heads": heads,
        "soft_heads": sum(h["soft"] for h in heads),
        "hard_heads": sum(not h["soft"] for h in heads),
        "positional": features or ["none (NoPE: positions only through the mask)"],
        "scheme": model.positional_scheme,
        "kinds": list(model.new_kinds),
        "layernorms": norms + (model.final_norm is not None),
        "activations": acts,
        "readout": model.readout.position,
        "description": (model.meta or {}).get("description"),
    }


def _model_section(m: Mapping[str, Any]) -> Section:
    rows = tuple(
        (
            str(h["layer"]),
            str(h["head"]),
            h["kind"] + (" (soft)" if h["soft"] else " (hard)"),
            h["mask"],
            h["temperature"] or "—",
        )
        for h in m["heads"]
    )
    kind = (
        "only hard-attention heads"
        if not m["soft_heads"]
        else "only softmax heads"
        if not m["hard_heads"]
        else f"{m['soft_heads']} softmax and {m['hard_heads']} hard heads"
    )
    notes = [
        f"alphabet {m['alphabet']!r}, BOS {m['bos']!r}, EOS {m['eos']!r}, width d = {m['d']}",
        f"positional scheme {m.get('scheme', '?')}: " + ", ".join(m["positional"]),
        f"{m['layernorms']} norm(s); feed-forward activation(s): "
        + (", ".join(m["activations"]) or "none")
        + (f"; version-3 kinds: {', '.join(m['kinds'])}" if m.get("kinds") else ""),
        f"readout at the {m['readout']} token; content hash {m['sha256'][:16]}…",
    ]
    if m.get("description"):
        notes.append(str(m["description"]))
    return Section(
        "model",
        "The model",
        INFO,
        f"{m['layers']} layer(s), {len(m['heads'])} head(s): {kind}.",
        "What the analyses below are about; no claim is made here.",
        "A description of the weights file, not of what the model computes.",
        ("layer", "head", "attention", "mask", "inverse temperature β"),
        rows,
        tuple(notes),
    )


# ----- helpers --------------------------------------------------------------------------------


def _g(x: Any, digits: int = 4) -> str:
    if x is None:
        return "—"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}g}"


def _short(s: str | None, width: int = 40) -> str:
    if s is None:
        return "—"
    return s if len(s) <= width else s[: width // 2 - 1] + "…" + s[-(width // 2 - 1) :]


def _cells(cells: Mapping[str, Mapping], analysis: str, ns) -> list[tuple[int, Mapping]]:
    return [(n, cells[f"{analysis}-n{n}"]) for n in ns if f"{analysis}-n{n}" in cells]


def _verdict_of(rec: Mapping) -> str:
    st = rec.get("status")
    if st == "ok":
        return str(rec.get("verdict"))
    return {"not-applicable": NOT_APPLICABLE, "timeout": "TIMEOUT"}.get(st, str(st).upper())


def _common(key, title, theorem, limits, got, missing_ns=()) -> dict[str, Any] | Section:
    """The section when no cell ran (all not applicable, or all failed), else the parts
    every section shares: verdict over the ok cells, failure notes, certificates."""
    ok = [rec for _, rec in got if rec.get("status") == "ok"]
    notes = [
        f"n = {n}: {_verdict_of(rec)} — {rec.get('reason') or 'no reason given'}"
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
                theorem, limits, notes=tuple(notes),
            )  # fmt: skip
        verdict, rule = section_verdict(())
        return Section(
            key, title, verdict, "No cell of this analysis finished (reasons below): nothing "
            "was checked.", theorem, limits, notes=tuple(notes), rule=rule,
        )  # fmt: skip
    na_notes = [
        f"n = {n}: not applicable — {rec.get('reason')}"
        for n, rec in got
        if rec.get("status") == "not-applicable"
    ]
    if all(rec.get("verdict") == "MEASURED" for rec in ok):
        verdict, rule = "MEASURED", "measured, not proved: no verdict"
    else:
        verdict, rule = section_verdict(rec.get("verdict") for rec in ok)
    return {"verdict": verdict, "rule": rule, "notes": notes + na_notes, "certificates": certs}


def section_verdict(words) -> tuple[str, str]:
    """The section's verdict from its rows' verdict words, by the kernel's stated rule
    (:func:`attncert.kernel.verdict.section`), and the rule in words."""
    from attncert.kernel.verdict import section

    rows = []
    for w in words:
        try:
            rows.append(Verdict(w))
        except ValueError:  # MEASURED, NOT APPLICABLE: not counted
            continue
    v, rule = section(rows)
    return v.value, rule


def _cert_link(rec: Mapping) -> str:
    return rec.get("certificate") or "—"


# ----- the sections ---------------------------------------------------------------------------


def _harden_section(cells, ns) -> Section:
    got = _cells(cells, "harden", ns)
    title = "Hardening agreement by n"
    theorem = (
        "Hahn's Theorem 1 is about hard attention: the certificates below are for the hardened "
        "model (each softmax head replaced by argmax over the same scores, "
        "attncert.model.importers.hardening_report)."
    )
    limits = (
        "Measured on uniform random strings at each n, not proved: it says how often the "
        "hardened model decides as the soft one, not that it always does."
    )
    base = _common(
        "harden", title, theorem, limits, got, [n for n in ns if f"harden-n{n}" not in cells]
    )
    if isinstance(base, Section):
        return base
    rows = []
    rates = []
    for n, rec in got:
        d = rec.get("data") or {}
        if rec.get("status") == "ok":
            rates.append(d["rate"])
            rows.append((str(n), str(d["strings"]), str(d["agree"]), f"{100 * d['rate']:.1f} %"))
        else:
            rows.append((str(n), "—", "—", _verdict_of(rec)))
    summary = (
        f"the hardened model decides as the soft one on {100 * min(rates):.1f}–"
        f"{100 * max(rates):.1f} % of the sampled strings."
    )
    return Section(
        "harden", title, "MEASURED", summary[0].upper() + summary[1:], theorem, limits,
        ("n", "strings", "same decision", "agreement"), tuple(rows), tuple(base["notes"]),
        rule=base["rule"],
    )  # fmt: skip


def _certify_section(cells, ns, language) -> Section:
    got = _cells(cells, "certify", ns)
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
    base = _common(
        "certify", title, theorem, limits, got, [n for n in ns if f"certify-n{n}" not in cells]
    )
    if isinstance(base, Section):
        return base
    rows, notes = [], list(base["notes"])
    for n, rec in got:
        d = rec.get("data") or {}
        if rec.get("status") != "ok":
            rows.append((str(n), _verdict_of(rec), "—", "—", "—", "—", "—", "—"))
            continue
        if "no_certificate" in d:
            rows.append((str(n), rec["verdict"], "—", "—", "—", d["no_certificate"], "—", "—"))
            continue
        mis = d.get("misclassified")
        wrong = "—"
        if mis:
            k = next(
                (
                    i
                    for i, (m, dec) in enumerate(
                        zip(mis["membership"], mis["decisions"], strict=True)
                    )
                    if m != dec
                ),
                0,
            )
            wrong = (
                f"{_short(mis['strings'][k])} (model: {'accept' if mis['decisions'][k] else 'reject'}, "
                f"{language}: {'member' if mis['membership'][k] else 'non-member'})"
            )
        soft = d.get("soft_pair")
        soft_text = "—" if not soft else (
            "misclassifies it too" if soft.get("misclassified") else
            "undecided" if soft.get("misclassified") is None else "right on it"
        )  # fmt: skip
        rows.append(
            (
                str(n),
                rec["verdict"],
                str(d["fixed"]),
                f"{d['free']}/{n}",
                ", ".join(map(str, d["output_dependency"])) or "none",
                wrong,
                soft_text,
                _cert_link(rec),
            )
        )
        if d.get("depends"):
            notes.append(f"n = {n}: {d['depends']}")
        for r in d.get("reasons", []):
            notes.append(f"n = {n}: {r}")
        if soft:
            notes.append(f"n = {n}: {soft['text']}")
    verdict = base["verdict"]
    summary = {
        Verdict.CERTIFIED.value: "Checked by the trusted kernel at every n: a restriction and a "
        "misclassified pair, with the theorem's hypotheses holding.",
        Verdict.OUTSIDE_THEOREM.value: "Checked by the trusted kernel, but at some n a hypothesis "
        "or a quantitative invariant of the proof fails (reasons below): the facts hold, the "
        "theorem's statement is not instantiated.",
        Verdict.CERTIFIED_TRIVIAL.value: "Checked, but vacuous at some n (no free position, no "
        "non-constancy witness or no misclassified pair).",
    }.get(verdict, f"At some n the result is {verdict} (see the table).")
    return Section(
        "certify", title, verdict, summary, theorem, limits,
        ("n", "verdict", "fixed (restriction size)", "free", "decision depends on",
         "misclassified string", "soft model on it", "certificate"),
        tuple(rows), tuple(notes), None, base["certificates"], base["rule"],
    )  # fmt: skip


def _verify_section(cells, ns, language) -> Section:
    got = _cells(cells, "verify", ns)
    title = "Certified accuracy (verify) beside sampled accuracy"
    theorem = (
        f"Accuracy on {language} over all |Σ|ⁿ strings of length n (uniform), by "
        "branch-and-bound over cubes re-derived leaf by leaf by the kernel (attncert.kernel."
        "verify); on PARITY, Theorems 1 and 6 say every decided cube with a free position "
        "holds exactly half errors."
    )
    limits = (
        "Bounds found within the cell's time limit: CERTIFIED means proved correct on every "
        "string of length n, REFUTED proved wrong (a witness decided in arb), UNDECIDED an "
        "interval with an undecided measure; sampled accuracy is measured, not proved."
    )
    base = _common(
        "verify", title, theorem, limits, got, [n for n in ns if f"verify-n{n}" not in cells]
    )
    if isinstance(base, Section):
        # the sampled accuracy is computed before verify refuses; say it anyway
        return base
    rows = []
    for n, rec in got:
        d = rec.get("data") or {}
        if rec.get("status") != "ok":
            rows.append((str(n), _verdict_of(rec), "—", "—", "—", "—"))
            continue
        s = d["sampled"]
        rows.append(
            (
                str(n),
                rec["verdict"],
                f"[{d['accuracy']['lower']}, {d['accuracy']['upper']}]",
                d["undecided_measure"],
                f"{s['accuracy']:.3f} ({s['strings']} strings)",
                _cert_link(rec),
            )
        )
    verdict = base["verdict"]
    summary = {
        Verdict.CERTIFIED.value: "Proved correct on every string at every n in the report.",
        Verdict.REFUTED.value: f"Proved wrong on {language} at some n (a misclassified string "
        "decided in arb), with the certified accuracy interval.",
        Verdict.UNDECIDED.value: "At some n the budget ran out: the certified interval and the "
        "undecided measure are printed.",
    }.get(verdict, f"{verdict}.")
    return Section(
        "verify", title, verdict, summary, theorem, limits,
        ("n", "verdict", "certified accuracy", "undecided measure", "sampled accuracy", "certificate"),
        tuple(rows), tuple(base["notes"]), "accuracy", base["certificates"], base["rule"],
    )  # fmt: skip


def _lemma5_section(cells, ns) -> Section:
    got = _cells(cells, "sensitivity", ns)
    uni = next((rec for name, rec in cells.items() if name.startswith("uniform-")), None)
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
    parts = got + ([(0, uni)] if uni is not None else [])
    base = _common(
        "lemma5", title, theorem, limits, parts, [n for n in ns if f"sensitivity-n{n}" not in cells]
    )
    if isinstance(base, Section):
        return base
    urows = {}
    udata = (uni or {}).get("data") or {}
    if uni is not None and uni.get("status") == "ok":
        urows = {r["n"]: r for r in udata.get("rows", [])}
    rows, notes = [], list(base["notes"])
    caps, outside = [], set()
    for n, rec in got:
        d = rec.get("data") or {}
        u = urows.get(n, {})
        kn = (
            "—"
            if u.get("K_over_n") is None
            else (u["K_over_n"] + (" (> Z: cap only)" if u.get("cap_only") else ""))
        )
        if rec.get("status") != "ok":
            rows.append((str(n), _verdict_of(rec), "—", "—", kn, "—", "—"))
            continue
        outside.update(d.get("outside") or [])
        cap = d.get("source") == "range cap"
        caps.append(cap)
        b = d.get("certified_bound")
        bound = "—" if b is None else f"{_g(b)}" + (" (range cap, not a bound)" if cap else "")
        rows.append(
            (
                str(n),
                rec["verdict"],
                _g(d.get("measured")),
                bound,
                kn,
                _g(d.get("floor"), 6),
                _g(d.get("measured_ce")),
            )
        )
        if d.get("diagnosis"):
            notes.append(f"n = {n}: {d['diagnosis']}")
    if uni is not None and uni.get("status") == "ok":
        outside.update(udata.get("reasons") or [])
        notes.append(
            f"uniform: {uni['verdict']}, K = {udata.get('K')} from N₀ = {udata.get('n0')}, "
            f"logit range Z = {_g(udata.get('cap'))}; K/n < Z only from n = "
            f"{udata.get('nontrivial_from')} on"
        )
        notes.extend(f"uniform: {t}" for t in udata.get("notes", []))
        pub = udata.get("published") or {}
        if pub.get("reason"):
            notes.append(f"Lemma 5's published constant: not computable ({pub['reason']})")
        elif pub.get("value"):
            notes.append(f"Lemma 5's published constant for these weights: {pub['value']}")
    elif uni is not None:
        notes.append(f"uniform: {_verdict_of(uni)} — {uni.get('reason')}")
    if uni is not None:  # the all-length bound is a row of its own: the badge follows the rows
        rows.append(
            (
                f"every n ≥ {udata.get('n0')}" if udata.get("n0") else "every n (uniform)",
                _verdict_of(uni),
                "—",
                "—",
                "—" if not udata.get("K") else f"K/n, K = {udata.get('K')}",
                "—",
                "—",
            )
        )
    cap_only = bool(caps) and all(caps) and all(r.get("cap_only", True) for r in urows.values())
    if outside:
        status = "outside Lemma 5's hypotheses: " + "; ".join(sorted(outside))
    elif cap_only:
        status = (
            "only the trivial cap: at every n the certified B(n) is the logit's range, and "
            "K/n exceeds it — no bound on one symbol's effect is certified at these lengths"
        )
    else:
        status = "applies: B(n) is certified below the logit's range at some n"
    notes.insert(0, f"Theorem's status: {status}.")
    return Section(
        "lemma5", title, base["verdict"], f"Theorem's status: {status}.", theorem, limits,
        ("n", "verdict", "measured largest change", "certified B(n)", "uniform K/n",
         "cross-entropy floor (nats)", "measured cross-entropy"),
        tuple(rows), tuple(notes), "lemma5", base["certificates"], base["rule"],
    )  # fmt: skip


def _soft_section(cells, ns, language) -> Section:
    got = _cells(cells, "soft-certify", ns)
    title = "Soft restriction (soft-certify)"
    theorem = (
        "Theorem 1's conclusion for the soft model itself at one n: positions fixed so that "
        "the decision is certified constant on every completion (Lemma 5's propagation), and "
        f"two completions of different membership in {language}, decided in arb."
    )
    limits = (
        "Found by a search within the cell's time limit (no restriction found is not a proof "
        "that none exists), and only at the lengths shown."
    )
    base = _common(
        "soft", title, theorem, limits, got, [n for n in ns if f"soft-certify-n{n}" not in cells]
    )
    if isinstance(base, Section):
        return base
    rows, notes = [], list(base["notes"])
    for n, rec in got:
        d = rec.get("data") or {}
        if rec.get("status") != "ok":
            rows.append((str(n), _verdict_of(rec), "—", "—", "—", "—"))
            continue
        free = d.get("free")
        rows.append(
            (
                str(n),
                rec["verdict"],
                "—" if free is None else f"{free}/{n}",
                "—" if d.get("decision") is None else ("accept" if d["decision"] else "reject"),
                "—" if not d.get("pair") else " / ".join(_short(s, 24) for s in d["pair"]),
                _cert_link(rec),
            )
        )
        notes.extend(f"n = {n}: {t}" for t in d.get("notes", []))
    found = any((rec.get("data") or {}).get("pair") for _, rec in got)
    summary = (
        "A certified soft restriction with a pair the model must confuse, at the n marked "
        "CERTIFIED." if found else "No soft restriction with a free position and a pair was "
        "certified at these n."
    )  # fmt: skip
    return Section(
        "soft", title, base["verdict"], summary, theorem, limits,
        ("n", "verdict", "free positions", "decision on every completion", "pair", "certificate"),
        tuple(rows), tuple(notes), None, base["certificates"], base["rule"],
    )  # fmt: skip


def build_report(
    model_info: Mapping[str, Any],
    language: str,
    ns,
    cells: Mapping[str, Mapping[str, Any]],
    *,
    directory: str | None = None,
    where: str = "",
    ran: int = 0,
    seconds: float = 0.0,
) -> Report:
    """The report from the cells' records (missing cells make sections say so)."""
    from attncert.report.plots import accuracy_plot, lemma5_plot

    ns = tuple(sorted(set(ns)))
    sections = (
        _model_section(model_info),
        _harden_section(cells, ns),
        _certify_section(cells, ns, language),
        _verify_section(cells, ns, language),
        _lemma5_section(cells, ns),
        _soft_section(cells, ns, language),
    )
    plots = {}
    for name, fn in (("accuracy", accuracy_plot), ("lemma5", lemma5_plot)):
        svg = fn(cells, ns)
        if svg is not None:
            plots[name] = svg
    sections = tuple(s if s.plot is None or s.plot in plots else _without_plot(s) for s in sections)
    return Report(
        dict(model_info), language, ns, sections, dict(cells), plots, directory, where, ran, seconds
    )


def _without_plot(s: Section) -> Section:
    from dataclasses import replace

    return replace(s, plot=None)
