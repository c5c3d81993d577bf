"""Artifact kind ``lll_report``: the LLL steps of Hahn 2020 Lemma 4 (Depth Reduction Lemma)
checked at concrete parameters (c, H, C, C′, η, q, δ) — the report of ``attncert lll``.

File: ``lll_report.json`` (:meth:`attncert.symbolic.Report.as_dict`).

Re-verification:

1. the report's parameters are Definition 5's exact completion of the manifest's;
2. the constants, independently of how they were found, in exact/arb arithmetic: for both
   versions of f, (12) holds at k_eq12 and fails at k_eq12 − 1
   (:func:`attncert.symbolic.eq12_holds`); Stage 2's 2^c·c/k ≤ ηC holds at k_stage2 and not
   below (exact rationals); (11) is feasible at k_eq11 and not below; k is their maximum;
   (11) holds at N and fails at N − 1 (:func:`attncert.symbolic.eq11_holds`);
   c_next = c(2^c·k·H + 1);
3. every stored counterexample is re-evaluated at its point (hypotheses true, conclusion
   false, decided exactly or with arb balls);
4. the claim checker (:func:`attncert.symbolic.check_claims`) is re-run and each claim's
   general and concrete verdicts must equal the report's, as must the counts (claims,
   proved, cited, refuted, undecided) and each displayed equation's verdict as printed; the
   refuted set must equal the manifest's ``expect.refuted``.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from attncert.io import write_atomic
from attncert.proofcheck.kinds import ArtifactKind, Context, Outcome, entry
from attncert.proofcheck.manifest import Manifest

REPORT = "lll_report.json"

CHECKED_MEANS = (
    "constants re-verified independently of the search with exact rationals / arb balls "
    "((12) at k and not k−1, Stage 2 and (11)-feasibility minimal, (11) at N and not N−1, "
    "c_next = c(2^c kH+1)); stored counterexamples re-evaluated at their points; sympy claim "
    "checker re-run and its verdicts compared claim by claim"
)


def _params(parameters: Any) -> Any:
    from attncert.symbolic import lll_params

    p = dict(parameters)
    return lll_params(
        p["c"], p["H"], p["C"], p["C_prime"], p.get("eta"), p.get("q"), p.get("delta")
    )


def generate(directory: Path, spec: Any) -> Manifest:
    from attncert.symbolic import check_claims

    params = _params(spec.parameters)
    rep = check_claims(params).as_dict()
    write_atomic(directory / REPORT, json.dumps(rep, indent=1, ensure_ascii=False) + "\n")
    return Manifest(
        kind=KIND.name,
        exhibits=spec.exhibits,
        files=(entry(directory, REPORT, "report"),),
        checked_by="attncert.symbolic (eq12_holds, eq11_holds, check_claims)",
        checked_means=CHECKED_MEANS,
        parameters=dict(spec.parameters),
        expect={"refuted": sorted(rep["refuted"])},
    )


def verify_lemma_constants(block: Any, p: Any, version: str) -> list[str]:
    """Re-verify one :class:`attncert.symbolic.LemmaConstants` dictionary at ``p``."""
    from attncert.symbolic.constants import eq11_feasible, eq11_holds, eq12_holds

    bad: list[str] = []
    where = f"constants[{version}]"
    try:
        k12, k2, k11, k, N = (
            int(block[x]) for x in ("k_eq12", "k_stage2", "k_eq11", "k", "N_eq11")
        )
        c_next = int(block["c_next"])
    except (KeyError, TypeError, ValueError) as err:
        return [f"{where}: malformed ({err})"]
    if not (eq12_holds(k12, p, version) and not eq12_holds(k12 - 1, p, version)):
        bad.append(f"{where}: k_eq12 = {k12} is not the smallest k satisfying (12)")

    def stage2(kk: int) -> bool:
        return kk >= 1 and Fraction(2**p.c * p.c, kk) <= p.eta * p.C

    if not (stage2(k2) and not stage2(k2 - 1)):
        bad.append(f"{where}: k_stage2 = {k2} is not the smallest k with 2^c c/k ≤ ηC")
    if not (eq11_feasible(k11, p) and not eq11_feasible(k11 - 1, p)):
        bad.append(f"{where}: k_eq11 = {k11} is not the smallest k making (11) feasible")
    if k != max(k12, k2, k11):
        bad.append(f"{where}: k = {k} ≠ max(k_eq12, k_stage2, k_eq11) = {max(k12, k2, k11)}")
    if not (eq11_holds(N, k, p) and not (N > 1 and eq11_holds(N - 1, k, p))):
        bad.append(f"{where}: N_eq11 = {N} is not the smallest n from which (11) holds")
    if c_next != p.c * (2**p.c * k * p.H + 1):
        bad.append(f"{where}: c_next = {c_next} ≠ c(2^c kH + 1) = {p.c * (2**p.c * k * p.H + 1)}")
    return bad


def _cex_ok(claim_id: str, values: Any, base: dict[str, Any]) -> str | None:
    from attncert.symbolic.claims import claim
    from attncert.symbolic.counterexample import evaluate_point

    env = {k: Fraction(v) for k, v in base.items()}
    env.update({k: Fraction(str(v)) for k, v in values.items()})
    if evaluate_point(claim(claim_id), env) is not False:
        return f"claim {claim_id}: the stored counterexample {values} is not one"
    return None


def check(ctx: Context) -> Outcome:
    from attncert.symbolic import check_claims

    rep = ctx.read_json("report")
    p = _params(ctx.manifest.parameters)
    failures: list[str] = []
    facts: list[str] = []
    if rep.get("params") != p.as_dict():
        return Outcome((f"report parameters {rep.get('params')} are not {p.as_dict()}",))
    consts = rep.get("constants") or {}
    for version in ("paper", "supplement"):
        if version not in consts:
            failures.append(f"constants[{version}] missing")
            continue
        failures.extend(verify_lemma_constants(consts[version], p, version))
    if not failures:
        s = consts["supplement"]
        facts.append(
            f"k(12) = {s['k_eq12']} minimal, N(11) = {s['N_eq11']} minimal (both versions of f)"
        )
    stored = {c.get("id"): c for c in rep.get("claims", []) if isinstance(c, dict)}
    for cid, c in stored.items():
        for key, base in (("general", {}), ("concrete", p.env())):
            values = c.get(f"{key}_counterexample")
            if values:
                try:
                    msg = _cex_ok(cid, values, base)
                except KeyError:
                    msg = f"unknown claim {cid!r}"
                if msg:
                    failures.append(msg)
    fresh = check_claims(p).as_dict()
    fresh_by_id = {c["id"]: c for c in fresh["claims"]}
    if set(fresh_by_id) != set(stored):
        missing = sorted(set(fresh_by_id) - set(stored))
        extra = sorted(set(stored) - set(fresh_by_id))
        failures.append(f"claims differ from the checker's: missing {missing}, unknown {extra}")
    for cid in sorted(set(fresh_by_id) & set(stored)):
        for key in ("general", "concrete"):
            if fresh_by_id[cid][key] != stored[cid].get(key):
                failures.append(
                    f"claim {cid}: report says {key} = {stored[cid].get(key)!r}, the claim "
                    f"checker says {fresh_by_id[cid][key]!r}"
                )
    stored_counts = (rep.get("counts") or {}).get("general")
    if stored_counts != fresh["counts"]["general"]:
        failures.append(
            f"report counts {stored_counts} differ from the claim checker's "
            f"{fresh['counts']['general']}"
        )
    fresh_disp = {d["label"]: d["verdict"] for d in fresh["displays"]}
    stored_disp = {
        d.get("label"): d.get("verdict") for d in rep.get("displays", []) if isinstance(d, dict)
    }
    if stored_disp != fresh_disp:
        bad = sorted(
            k for k in set(fresh_disp) | set(stored_disp) if fresh_disp.get(k) != stored_disp.get(k)
        )
        failures.append(f"display verdicts differ from the claim checker's at {bad[:5]}")
    want = ctx.manifest.expect.get("refuted")
    if want is not None and sorted(want) != sorted(fresh["refuted"]):
        failures.append(f"manifest expects refuted {sorted(want)}, checker: {fresh['refuted']}")
    if not failures:
        ct = fresh["counts"]["general"]
        facts.append(
            f"{ct['claims']} claims re-checked (proved {ct['proved']}, cited {ct['cited']}, "
            f"refuted {ct['refuted']}, undecided {ct['undecided']}); refuted at these "
            "parameters: " + (", ".join(fresh["refuted"]) or "none")
        )
    return Outcome(tuple(failures), tuple(facts))


KIND = ArtifactKind(
    name="lll_report",
    check=check,
    generate=generate,
    description="Hahn 2020 Lemma 4: LLL claims and constants k, N at concrete parameters",
)
