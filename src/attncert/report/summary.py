"""The paragraph a person reads first (issue 42, item 1): what the theory says about this
model, in words, derived from the sections' verdicts and the bound cells — never a verdict
of its own. Each sentence is inline text whose terms link to their definitions on the page
(:mod:`attncert.report.terms`) and to the sections.

In order: whether the model is constant (:mod:`attncert.report.constancy`); what verify
proved (correct on every string, or wrong with a witness); the length horizon (every
length proved right up to N, the first wrong one with its witness, or what stays
undecided); what Theorem 1's certificate
says about the hardened model (a misclassified pair with the differing positions marked);
what Lemma 5 could and could not certify and why (the diagnosis); Theorem 6's floor where
the language is PARITY or 2-Dyck; the soft restriction; the analyses that do not apply,
and the cells that did not finish with the flag that raises their budget.
"""

from __future__ import annotations

from collections.abc import Mapping

from attncert.report.constancy import Constancy
from attncert.report.section import Section
from attncert.report.sections.common import (
    FLOOR_LANGUAGES,
    NOT_APPLICABLE,
    at_lengths,
    cells_of,
    ran_out,
    ran_out_text,
    uniform_cell,
    verdict_of,
)
from attncert.report.sections.verify import certified, witness
from attncert.report.terms import term
from attncert.report.text import Inline, Span, inline, link, number, pair, positions
from attncert.verdicts import Verdict

CERTIFIED = Verdict.CERTIFIED.value
REFUTED = Verdict.REFUTED.value
OUTSIDE = Verdict.OUTSIDE_THEOREM.value
TRIVIAL = Verdict.CERTIFIED_TRIVIAL.value
UNDECIDED = Verdict.UNDECIDED.value
#: a clause longer than this is cut (the section has it in full)
CLAUSE = 220


def clause(text: str, limit: int = CLAUSE) -> str:
    """A reason short enough for a sentence: up to ``limit`` characters, cut at a word."""
    text = str(text).strip().rstrip(".")
    if len(text) <= limit:
        return text
    cut = text[:limit]
    for sep in ("; ", ", ", " "):
        if sep in cut[limit // 2 :]:
            return cut[: cut.rindex(sep)] + " (…)"
    return cut + " (…)"


def head(reason: str) -> str:
    """A hypothesis that fails, without the explanation of why the proof needs it."""
    for sep in (": Lemma 5", " (Lemma 5", ": Hahn"):
        if sep in reason:
            return reason[: reason.index(sep)]
    return reason


def _badge(word: str) -> Span:
    return Span(word, "strong")


def _constant(const: Constancy, ns) -> list[Inline]:
    if const.everywhere:
        return [
            inline(
                _badge("The model is constant"), ": ", const.everywhere, ". So ",
                term("theorem1", "Theorem 1"), "'s restriction, ", term("lemma5", "Lemma 5"),
                "'s bound and the ", term("soft-restriction"), " are vacuous for it (true of "
                "any ", term("constant", "constant function"), "); only its accuracy says "
                "something, and that is the share of strings it happens to match.",
            )
        ]  # fmt: skip
    out = []
    for n, dec in const.at.items():
        out.append(
            inline(
                _badge(f"At n = {n} the model is constant"), ": verify's tree, re-derived by "
                f"the kernel, gives every string the decision {dec}; at that n the restriction "
                "and bound statements are vacuous (see ", term("constant", "constant model"),
                ").",
            )
        )  # fmt: skip
    for n, what in const.measured.items():
        if not const.proved(n):
            out.append(
                inline(
                    f"At n = {n} {what}: it may be ",
                    term("constant"),
                    " (not proved).",
                )
            )
    return out


def _verify(cells: Mapping, ns, language: str) -> list[Inline]:
    got = [(n, rec) for n, rec in cells_of(cells, "verify", ns) if rec.get("status") == "ok"]
    out = []
    right = [n for n, rec in got if rec.get("verdict") == CERTIFIED]
    if right:
        accs = [certified(rec.get("data") or {}) for n, rec in got if n in right]
        out.append(
            inline(
                _badge("Proved correct"), f" on {language} on every string of length "
                f"{at_lengths(right).removeprefix('n = ')} (", link("certified accuracy", "verify"),
                " " + ", ".join(accs) + ").",
            )
        )  # fmt: skip
    wrong = [(n, rec) for n, rec in got if rec.get("verdict") == REFUTED]
    if wrong:
        n, rec = wrong[-1]  # the witness at the longest length
        wits = (rec.get("data") or {}).get("witnesses") or []
        at = f" at n = {n}" if len(wrong) > 1 else ""
        ex = inline(f": e.g.{at} ", witness(language, wits[0]), ", ", term("arb")) if wits else ""
        accs = ", ".join(
            certified(r.get("data") or {}) + (f" at n = {m}" if len(wrong) > 1 else "")
            for m, r in wrong
        )
        out.append(
            inline(
                _badge(f"Proved wrong on {language}"), f" at {at_lengths([m for m, _ in wrong])}",
                ex, "; ", link("certified accuracy", "verify"), f" {accs}.",
            )
        )  # fmt: skip
    for n, rec in got:
        if rec.get("verdict") == UNDECIDED:
            why = f" — {ran_out_text(rec)}" if ran_out(rec) else ""
            out.append(
                inline(
                    f"At n = {n} verify decided not every string: ",
                    link("certified accuracy", "verify"),
                    f" {certified(rec.get('data') or {})}{why}.",
                )
            )
    return out


def _horizon(cells: Mapping, language: str) -> list[Inline]:
    """One sentence: every length proved right up to N; wrong first at n = M (witness …);
    what stays undecided — from the bound horizon cell."""
    from attncert.report.sections.horizon import horizon_cell, interval, runs_text, witness_runs

    rec = horizon_cell(cells)
    d = (rec or {}).get("data") or {}
    if rec is None or rec.get("status") != "ok":
        return []
    lo, hi = d.get("lengths") or (rec.get("key") or {}).get("lengths") or ("—", "—")
    if not d.get("accepted"):  # cut, or a certificate the kernel rejects: nothing certified
        why = "; ".join(d.get("reasons") or []) or d.get("no_certificate") or "—"
        return [
            inline(
                term("horizon", "Length horizon"), f" on {language} over ",
                link(f"n ∈ {interval(lo, hi)}", "horizon"), ": nothing certified — ",
                clause(why), ".",
            )
        ]  # fmt: skip
    up, first = d.get("proved_up_to"), d.get("first_refuted")
    if up is None:
        said: list = [f"not proved at n = {lo}"]
    elif up == hi == "inf":
        said = [f"proved right on every string of every length from {lo} on"]
    elif up == hi:
        said = [f"proved right on every string of every length in {interval(lo, hi)}"]
    else:
        said = [f"proved right on every string of every length {'' if lo == 1 else f'from {lo} '}"
                f"up to {up}"]  # fmt: skip
    if first is not None:
        w = d.get("witness")
        wit = inline(" (witness ", runs_text(witness_runs(w)), ", ", term("arb"), ")") if w else ""
        said += ["; ", inline(_badge(f"wrong first at n = {first}"), wit)]
    und = d.get("undecided") or []
    if und:
        rest = f" and {len(und) - 1} more interval(s)" if len(und) > 1 else ""
        said.append(f"; lengths {interval(*und[0])}{rest} stay undecided")
    return [
        inline(
            term("horizon", "Length horizon"), f" on {language} over ",
            link(f"n ∈ {interval(lo, hi)}", "horizon"), ": ", *said, ".",
        )
    ]  # fmt: skip


def _harden(cells: Mapping, ns, const: Constancy) -> list[Inline]:
    got = [(n, rec) for n, rec in cells_of(cells, "harden", ns) if rec.get("status") == "ok"]
    got = [(n, rec) for n, rec in got if not const.proved(n)]
    if not got:
        return []
    parts = []
    for n, rec in got:
        d = rec.get("data") or {}
        k, m = int(d.get("agree", 0)), int(d.get("strings", 0))
        how = f"all {m} strings" if d.get("exact") else f"{m} sampled strings"
        parts.append(f"{100 * k / max(m, 1):.1f} % of the strings at n = {n} ({how})")
    return [
        inline(
            "Its ", term("hardened", "hardened form"), " decides as the softmax model on ",
            ", ".join(parts), " — ", term("measured"), ", not proved.",
        )
    ]  # fmt: skip


def _theorem1(cells: Mapping, ns, language: str, const: Constancy) -> list[Inline]:
    got = [(n, rec) for n, rec in cells_of(cells, "certify", ns) if rec.get("status") == "ok"]
    got = [(n, rec) for n, rec in got if not const.proved(n)]
    groups: dict[tuple, list] = {}
    for n, rec in got:  # one sentence per kind of row, about its longest length
        d = rec.get("data") or {}
        kind = (str(rec.get("verdict")), "no_certificate" in d, bool(d.get("misclassified")))
        groups.setdefault(kind, []).append((n, rec))
    return [_theorem1_sentence(rows, language) for rows in groups.values()]


def _theorem1_sentence(rows: list, language: str) -> Inline:
    n, rec = rows[-1]
    d = rec.get("data") or {}
    word = str(rec.get("verdict"))
    at = f"at n = {n} " if len(rows) > 1 else ""
    reasons = list(d.get("reasons") or [])
    if not d.get("misclassified"):  # said in the sentence itself
        reasons = [r for r in reasons if "nothing is misclassified" not in r]
    form = (
        inline("its ", term("hardened", "hardened form"))
        if d.get("hardened", True)
        else inline("the model")
    )
    head = inline(
        term("theorem1", "Theorem 1"), f" ({word} at {at_lengths([m for m, _ in rows])}): "
    )
    if "no_certificate" in d:
        return inline(head, "nothing certified — ", clause(d["no_certificate"]), ".")
    mis = d.get("misclassified")
    if mis:
        member, dec = mis["membership"], mis["decisions"]
        k = next((i for i, (m, x) in enumerate(zip(member, dec, strict=True)) if m != x), 0)
        soft = d.get("soft_pair") or {}
        soft_says = {True: "; the soft model misclassifies it too (", False: "; the "
                     "soft model is right on it (", None: "; the soft model's sign on it "
                     "stays undecided ("}  # fmt: skip
        tail = inline(soft_says[soft.get("misclassified")], term("arb"), ")") if soft else ""
        labels = ("✗ " if k == 0 else "✓ ", "✓ " if k == 0 else "✗ ")
        body = inline(
            form, f" does not compute {language}: {at}it decides two strings of different "
            "membership alike — ", pair(mis["strings"][0], mis["strings"][1], labels=labels),
            " — so it is wrong on ✗", tail,
        )  # fmt: skip
    else:
        deps = d.get("output_dependency") or []
        on = f"only on {positions(deps)}" if deps else "on no free position"
        body = inline(
            f"{at}the kernel checked a ", term("restriction"), f" fixing {d.get('fixed')} of "
            f"{n} positions under which ", form, f"'s decision depends {on}, but found no ",
            term("pair", "misclassified pair"), f": consistent with it computing {language}",
        )  # fmt: skip
    qual = {
        CERTIFIED: inline(", as Theorem 1 predicts."),
        OUTSIDE: inline(
            ". The checked facts hold, but the theorem's statement is not instantiated: ",
            clause(reasons[0]) if reasons else "a hypothesis fails",
            ".",
        ),
        TRIVIAL: inline(". Vacuous: ", clause(reasons[0]), ".") if reasons else inline("."),
    }.get(word, inline("."))
    return inline(head, body, qual)


def _why_cap(diagnosis: str) -> str:
    parts = [p for p in str(diagnosis).split("; ") if p]
    if parts and "range cap" in parts[0]:
        parts = parts[1:]
    two = "; ".join(parts[:2])
    return clause(two if len(two) <= CLAUSE else parts[0] if parts else "")


def _lemma5(cells: Mapping, ns, language: str, section: Section, const) -> list[Inline]:
    if section.verdict == NOT_APPLICABLE or const.everywhere:
        return []
    got = [(n, rec) for n, rec in cells_of(cells, "sensitivity", ns) if rec.get("status") == "ok"]
    out = []
    outside = sorted({r for _, rec in got for r in (rec.get("data") or {}).get("outside") or []})
    uni = uniform_cell(cells) or {}
    udata = uni.get("data") or {}
    if uni.get("status") == "ok" and uni.get("verdict") == OUTSIDE:
        outside = sorted(set(outside) | set(udata.get("reasons") or []))
    if outside:
        more = (
            inline(f" (and {len(outside) - 1} more in ", link("its section", "lemma5"), ")")
            if len(outside) > 1
            else ""
        )
        out.append(
            inline(
                term("lemma5", "Lemma 5"), " does not apply to this model: ",
                clause(head(outside[0])), more, ".",
            )
        )  # fmt: skip
    caps = [(n, rec) for n, rec in got if (rec.get("data") or {}).get("source") == "range cap"]
    below = [(n, rec) for n, rec in got if (rec.get("data") or {}).get("source") == "propagated"]
    if caps and not outside:
        n, rec = caps[-1]
        d = rec.get("data") or {}
        why = _why_cap(d.get("diagnosis") or "")
        out.append(
            inline(
                term("lemma5", "Lemma 5"), " certifies only the trivial ", term("cap"),
                f" at {at_lengths([m for m, _ in caps])}: ", term("bn"), " is the logit's whole "
                f"range ({number(d.get('certified_bound'))} at n = {n})",
                f", because {why}" if why else "", ".",
            )
        )  # fmt: skip
    if below and not outside:
        out.append(
            inline(
                term("lemma5", "Lemma 5"), ": one symbol moves the ", term("logit"), " by at "
                "most ", ", ".join(f"B({n}) = {number((rec.get('data') or {}).get('certified_bound'))}"
                                   for n, rec in below), " (certified below the logit's range).",
            )
        )  # fmt: skip
    if uni.get("status") == "ok" and udata.get("nontrivial_from") and not outside:
        out.append(
            inline(
                "The ", term("uniform"), f" (K = {udata.get('K')}) falls below the logit's "
                f"range only from n = {udata['nontrivial_from']} on.",
            )
        )  # fmt: skip
    floors = [(n, (rec.get("data") or {}).get("floor")) for n, rec in got]
    floors = [(n, f) for n, f in floors if f is not None]
    if floors and language in FLOOR_LANGUAGES:
        out.append(
            inline(
                term("theorem6", "Theorem 6"), f": on {language} the cross-entropy is at least ",
                ", ".join(f"{number(f, 4)} nats at n = {n}" for n, f in floors),
                " (a coin scores log 2 ≈ 0.693).",
            )
        )  # fmt: skip
    return out


def _soft(cells: Mapping, ns, const: Constancy) -> list[Inline]:
    got = [(n, rec) for n, rec in cells_of(cells, "soft-certify", ns) if rec.get("status") == "ok"]
    got = [(n, rec) for n, rec in got if not const.proved(n)]
    found = [
        (n, rec) for n, rec in got
        if len((rec.get("data") or {}).get("pair") or []) == 2 and (rec.get("data") or {}).get("free")
    ]  # fmt: skip
    if not found:
        return []
    n, rec = found[-1]  # the longest length
    d = rec.get("data") or {}
    x, y = d["pair"]
    dec = "accept" if d.get("decision") else "reject"
    words = sorted({str(r.get("verdict")) for _, r in found})
    at = f"at n = {n} " if len(found) > 1 else ""
    return [
        inline(
            "The ", term("soft-restriction"), f" ({'/'.join(words)} at "
            f"{at_lengths([m for m, _ in found])}): {at}the softmax model's decision is "
            f"certified {dec} on every completion of a restriction with {d['free']} free "
            "positions, yet two completions differ in membership — ", pair(x, y), ".",
        )
    ]  # fmt: skip


def _not_applicable(sections) -> list[Inline]:
    na = [s for s in sections if s.verdict == NOT_APPLICABLE]
    if not na:
        return []
    parts = []
    for k, s in enumerate(na):
        why = clause(s.summary.removeprefix("Does not apply to this model: "), 160)
        parts += (["; "] if k else []) + [link(s.title, s.key), f" ({why})"]
    return [inline("Does not apply: ", *parts, ".")]


def _unfinished(cells: Mapping) -> list[Inline]:
    bad = [(name, rec) for name, rec in cells.items() if rec.get("status") not in
           ("ok", "not-applicable")]  # fmt: skip
    if not bad:
        return []
    parts = []
    for k, (name, rec) in enumerate(bad):
        why = ran_out_text(rec) if ran_out(rec) else clause(rec.get("reason") or "", 120)
        parts.append(("; " if k else "") + f"{name} {verdict_of(rec)} ({why})")
    return [inline("Did not finish: ", *parts, ".")]


def lead(model: Mapping, language: str, ns, sections, cells: Mapping, const: Constancy):
    """The summary paragraph's sentences (module docstring)."""
    by_key = {s.key: s for s in sections}
    out: list[Inline] = _constant(const, ns)
    out += _verify(cells, ns, language)
    out += _horizon(cells, language)
    out += _theorem1(cells, ns, language, const)
    out += _harden(cells, ns, const)
    if "lemma5" in by_key:
        out += _lemma5(cells, ns, language, by_key["lemma5"], const)
    out += _soft(cells, ns, const)
    out += _not_applicable(sections)
    out += _unfinished(cells)
    if not out:
        out.append(inline("Nothing was certified or measured at these lengths."))
    return tuple(out)


__all__ = ["clause", "lead"]
