"""Artifact kind ``constants_report``: Theorem 1's constant chain (Hahn 2020, Lemma 4 applied
once per layer: c_{ℓ+1} = c_ℓ(2^{c_ℓ} k_ℓ H + 1), C shrinking per layer) for an L-layer,
H-head model — the report of ``attncert constants``.

File: ``constants.json`` (:meth:`attncert.symbolic.Chain.as_dict`).

Re-verification:

1. the chain is linked: c₁ = 1, C₁ = 1, each layer's c is the previous c_next, each C is
   the previous C′, the final free fraction is ≥ the target C;
2. every layer whose constants are exact integers is re-verified independently of the search
   (Definition 5's equation exactly; k for (12), Stage 2 and (11)-feasibility minimal; N for
   (11) minimal; c_next = c(2^c kH + 1)) — as for ``lll_report``;
3. layers whose constants are only bracketed (log₂ bounds from arb balls) are recomputed with
   :func:`attncert.symbolic.constants` and must match the report exactly.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from attncert.io import write_atomic
from attncert.proofcheck.kinds import ArtifactKind, Context, Outcome, entry
from attncert.proofcheck.kinds.lll_report import verify_lemma_constants
from attncert.proofcheck.manifest import Manifest

REPORT = "constants.json"

CHECKED_MEANS = (
    "chain links checked; exact layers re-verified independently ((12), Stage 2, "
    "(11)-feasibility and (11) minimal at k and N, Definition 5 exactly, c_next = c(2^c kH+1)); "
    "bracketed layers recomputed with rigorous arb bounds and compared"
)


def _chain(parameters: Any) -> Any:
    from attncert.symbolic import constants

    p = dict(parameters)
    return constants(
        p["layers"],
        p["heads"],
        p["C"],
        schedule=p.get("schedule", "geometric"),
        version=p.get("version", "supplement"),
    )


def generate(directory: Path, spec: Any) -> Manifest:
    chain = _chain(spec.parameters).as_dict()
    write_atomic(directory / REPORT, json.dumps(chain, indent=1, ensure_ascii=False) + "\n")
    return Manifest(
        kind=KIND.name,
        exhibits=spec.exhibits,
        files=(entry(directory, REPORT, "report"),),
        checked_by="attncert.symbolic (eq12_holds, eq11_holds, constants)",
        checked_means=CHECKED_MEANS,
        parameters=dict(spec.parameters),
        expect={"n_applies": chain["n_applies"]},
    )


def _exact(mag: Any) -> int | None:
    if isinstance(mag, dict) and mag.get("level") == 0:
        return int(mag["exact"])
    return None


def check(ctx: Context) -> Outcome:
    from attncert.symbolic import lll_params

    rep = ctx.read_json("report")
    params = ctx.manifest.parameters
    version = params.get("version", "supplement")
    failures: list[str] = []
    facts: list[str] = []
    rows = rep.get("rows")
    if not isinstance(rows, list) or len(rows) != params["layers"]:
        return Outcome((f"expected {params['layers']} layer rows in {REPORT}",))
    exact_layers = 0
    for i, row in enumerate(rows):
        where = f"layer {i + 1}"
        if i == 0 and (_exact(row["c"]) != 1 or Fraction(row["C"]) != 1):
            failures.append(f"{where}: the chain must start at c = 1, C = 1")
        if i > 0:
            prev = rows[i - 1]
            if row["c"] != prev["c_next"]:
                failures.append(f"{where}: c ≠ the previous layer's c_next")
            if row["C"] != prev["C_prime"]:
                failures.append(f"{where}: C ≠ the previous layer's C′")
        c = _exact(row["c"])
        k = _exact(row["k"])
        if c is None or k is None:
            continue
        try:
            p = lll_params(
                c, params["heads"], row["C"], row["C_prime"], row["eta"], row["q"], row["delta"]
            )
        except Exception as err:
            failures.append(f"{where}: parameters violate Lemma 4 / Definition 5: {err}")
            continue
        block = {
            "k_eq12": _exact(row["k_eq12"]),
            "k_stage2": _exact(row["k_stage2"]),
            "k_eq11": _exact(row["k_eq11"]),
            "k": k,
            "N_eq11": row["N_eq11"],
            "c_next": _exact(row["c_next"]),
        }
        failures.extend(f"{where}: {m}" for m in verify_lemma_constants(block, p, version))
        exact_layers += 1
    if Fraction(rep.get("C_final", "0")) < Fraction(str(params["C"])):
        failures.append(f"final free fraction {rep.get('C_final')} < target C = {params['C']}")
    fresh = _chain(params).as_dict()
    if fresh != rep:
        diff = sorted(k for k in set(fresh) | set(rep) if fresh.get(k) != rep.get(k))
        failures.append(f"{REPORT} differs from the recomputed chain in {diff}")
    want = ctx.manifest.expect.get("n_applies")
    if want is not None and want != fresh["n_applies"]:
        failures.append("manifest's n_applies differs from the recomputed chain")
    if not failures:
        facts.append(
            f"{exact_layers} exact layer(s) re-verified, {len(rows) - exact_layers} bracketed "
            f"layer(s) recomputed; the argument applies from n = "
            f"{fresh['n_applies'].get('describe', fresh['n_applies'].get('exact'))}"
        )
    return Outcome(tuple(failures), tuple(facts))


KIND = ArtifactKind(
    name="constants_report",
    check=check,
    generate=generate,
    description="Hahn 2020 Theorem 1: the constants chain c, k, N per layer",
)
