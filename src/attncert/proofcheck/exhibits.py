"""What a proof artifact claims to exhibit, checked against what it is (issue 19).

A manifest's ``exhibits`` names a paper and results. Wherever the artifact lies — inside
``proofs/`` or copied out of it — :func:`exhibit_problems` refuses

- a result the paper does not have (``"Theorem 7"`` of Hahn 2020), via
  :func:`attncert.proofcheck.results.resolve`;
- a result this *kind* of artifact cannot exhibit (a restriction certificate does not show
  Lemma 5), and one its *content* does not support: Corollary 2 needs a misclassified pair
  in the certificate, Theorem 1 a unique-hard model; a z3 agreement proof exhibits the
  theorem of its formula's fragment (TL[◁,▷]: Theorem 12; TL[S,U]: Theorem 15; LTL:
  Corollary 17; counting: Theorem 20; all: Corollary 22 — and the decoder-style variants 13,
  16, 18, 21, 23 when every head is future-masked and no positional feature involves n;
  Proposition 11 for ``first``/``last``).

Called by :func:`attncert.proofcheck.tree.check_artifact` before the kind's checker.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from attncert.io import read_json
from attncert.proofcheck.manifest import Manifest
from attncert.proofcheck.results import HAHN, YANG, resolve

__all__ = ["allowed_results", "exhibit_problems"]

_LLL = {
    "Lemma 4", "eq. (4)", "eq. (5)", "eq. (6)", "eq. (7)", "eq. (8)", "eq. (9)", "eq. (10)",
    "eq. (11)", "eq. (12)", "S1 Lemma 4", "S1 Definition 5", "S1 Lemma 6", "S1 Lemma 9",
    "S1 Lemma 15", "S1 Lemma 17", "S1 Corollary 18", "S1 Lemma 21", "S1 Lemma 22",
    "S1 Lemma 23", "S1 Corollary 24", *(f"S1 eq. ({i})" for i in range(1, 34)),
}  # fmt: skip


def _hard_certificate(directory: Path, manifest: Manifest, model: Any) -> set[str]:
    out = {"Lemma 4", "S1 Lemma 4", "Definition 3", "S1 Definition 2"}
    unique = model is not None and all(
        h.kind.value in ("leftmost", "rightmost") for layer in model.layers for h in layer.heads
    )
    if unique:
        out |= {"Theorem 1", "S1 Theorem 1"}
    try:
        cert = read_json(directory / manifest.file("certificate").path)
    except Exception:  # the kind's checker reports a missing or malformed certificate
        return out
    if (
        unique
        and cert.get("misclassified")
        and cert.get("language")
        in (
            "parity",
            "dyck1",
            "dyck2",
        )
    ):
        out.add("Corollary 2")
    return out


def _fragment(formula: str) -> tuple[bool, bool, bool]:
    """(uses ◁/▷, uses S/U, uses counting or numerical predicates)."""
    from attncert.logic import parse
    from attncert.logic import syntax as s

    f = parse(formula)
    subs = list(f.subformulas())
    return (
        any(isinstance(x, (s.Prev, s.Next)) for x in subs),
        any(isinstance(x, (s.Since, s.Until)) for x in subs),
        any(isinstance(x, (s.Compare, s.CountPred, s.PosPred)) for x in subs),
    )


def _causal(model: Any) -> bool:
    """Decoder style (Theorems 13, 16, 21, Corollaries 18, 23; the regimes of
    :mod:`attncert.compile.regime`): every head future-masked, no positional feature
    involving n."""
    import re

    heads = [h for layer in model.layers for h in layer.heads]
    n_feature = any(re.search(r"\bn\b", f.name) for f in model.embedding.features)
    return not n_feature and all(h.mask.value in ("future", "future_strict") for h in heads)


def _z3_agreement(directory: Path, manifest: Manifest, model: Any) -> set[str]:
    formula = manifest.formula or ""
    if manifest.parameters.get("construction") == "proposition11":
        return {"Proposition 11"} if formula.strip() in ("first", "last") else set()
    try:
        prev, temporal, counting = _fragment(formula)
    except Exception:
        return set()
    out = {"Lemma 9"}  # every compiled model rounds with Lemma 9's FFN
    # a model of the unmasked theorems' class; if also decoder style, of the masked ones
    variants = [("12", "15", "17", "20", "22")]
    if model is not None and _causal(model):
        variants.append(("13", "16", "18", "21", "23"))
    for tl, su, ltl, cnt, all_ in variants:
        if not temporal and not counting:
            out.add(f"Theorem {tl}")
        if not prev and not counting:
            out.add(f"Theorem {su}")
        if not counting:
            out.add(f"Corollary {ltl}")
        if not prev and not temporal:
            out.add(f"Theorem {cnt}")
        out.add(f"Corollary {all_}")
    return out


def _uniform(directory: Path, manifest: Manifest, model: Any) -> set[str]:
    """Lemma 5 always; Theorem 6 when the certificate carries the PARITY floor."""
    try:
        cert = read_json(directory / manifest.file("certificate").path)
    except Exception:  # the kind's checker reports a missing or malformed certificate
        return {"Lemma 5"}
    return {"Lemma 5", "Theorem 6"} if cert.get("floor") else {"Lemma 5"}


def _all_lengths(directory: Path, manifest: Manifest, model: Any) -> set[str]:
    """As a z3 agreement proof (the same theorems, now for every length), plus the lemmas
    the closed-form bounds rest on (6: off-target mass; 8: tie-breaking; 7: lookups)."""
    out = _z3_agreement(directory, manifest, model)
    if manifest.parameters.get("construction") != "proposition11":
        out |= {"Lemma 6", "Lemma 8"}
        if _fragment(manifest.formula or "")[2]:
            out.add("Lemma 7")
    return out


_KINDS: dict[str, tuple[str, Callable[[Path, Manifest, Any], set[str]]]] = {
    "hard_certificate": (HAHN, _hard_certificate),
    "lll_report": (HAHN, lambda d, m, model: set(_LLL)),
    "constants_report": (
        HAHN,
        lambda d, m, model: {
            "Theorem 1",
            "Lemma 4",
            "S1 Theorem 1",
            "S1 Lemma 4",
            "eq. (11)",
            "eq. (12)",
        },
    ),
    "lemma5": (HAHN, lambda d, m, model: {"Lemma 5", "S2 eq. (34)", "S2 eq. (35)"}),
    "soft_certificate": (HAHN, lambda d, m, model: {"Lemma 5", "Theorem 6"}),
    "uniform_sensitivity": (HAHN, _uniform),
    "z3_agreement": (YANG, _z3_agreement),
    "all_lengths": (YANG, _all_lengths),
    "tieless_simulation": (YANG, lambda d, m, model: {"Theorem 26", "Lemma 24", "Lemma 25"}),
}


def allowed_results(directory: Path, manifest: Manifest, model: Any) -> tuple[str, set[str]] | None:
    """(paper, labels) this artifact can exhibit, or None for a kind without a rule."""
    rule = _KINDS.get(manifest.kind)
    if rule is None:
        return None
    paper, fn = rule
    return paper, fn(directory, manifest, model)


def exhibit_problems(directory: Path, manifest: Manifest, model: Any) -> list[str]:
    """Reasons the manifest's ``exhibits`` overclaim (empty if none; see the module doc)."""
    ex = manifest.exhibits
    problems = []
    for label in ex.results:
        if resolve(ex.paper, label) is None:
            problems.append(
                f"exhibits {label!r} of {ex.paper!r}, a result that paper does not have"
            )
    rule = allowed_results(directory, manifest, model)
    if rule is None:
        return problems
    paper, allowed = rule
    if ex.paper != paper:
        problems.append(f"a {manifest.kind} artifact exhibits results of {paper}, not {ex.paper!r}")
        return problems
    canon = {resolve(paper, a).label for a in allowed if resolve(paper, a) is not None}
    for label in ex.results:
        r = resolve(ex.paper, label)
        if r is not None and r.label not in canon:
            shown = sorted(canon)
            listed = ", ".join(shown[:8]) + (f", … ({len(shown)} in all)" if len(shown) > 8 else "")
            problems.append(
                f"exhibits {r.name} ({r.title}), which this {manifest.kind} artifact does not "
                f"show (it can exhibit: {listed or 'nothing'})"
            )
    return problems
