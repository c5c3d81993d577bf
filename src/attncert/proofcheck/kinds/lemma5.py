"""Artifact kind ``lemma5``: Lemma 5's sensitivity bound next to the measured truth on one
softmax model (Hahn 2020, Lemma 5 with the supplement's correction S2).

File: ``lemma5.json`` — the model's Lemma 5 constants (D, F, A, L_fact, C), and per n the
rigorous bound on the change of the readout logit when one input symbol changes (the
corrected induction, evaluated in interval arithmetic) together with the measured largest
change: the exact maximum over all strings for small n (``exhaustive``) or the best pair a
search found (``search``), each with its witness pair (x, position, symbol).

Re-verification (never re-running the search):

1. the constants and every bound are recomputed from the model's weights and must equal the
   stored ones (a changed model, or an edited bound, is caught);
2. every witness pair is re-evaluated with the model, and its change must equal the stored
   measurement;
3. for ``exhaustive`` rows the maximum over all strings is recomputed and must equal it;
4. the measured change is at most the bound, with the bound at least twice the float
   measurement (so float rounding, which is many orders of magnitude smaller, cannot
   matter); a smaller margin is reported as a failure, not accepted.

What is *measured* rather than proved: for ``search`` rows the true maximum may be larger
than the witness (the bound still covers it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from attncert.io import write_atomic
from attncert.proofcheck.kinds import ArtifactKind, Context, Outcome, entry
from attncert.proofcheck.manifest import Manifest, ModelRef

REPORT = "lemma5.json"

CHECKED_MEANS = (
    "Lemma 5 constants and the corrected per-n bound recomputed soundly from the weights "
    "(exact rational norms, interval exp) and compared; each witness pair re-evaluated; "
    "exhaustive maxima recomputed over all strings; measured change ≤ bound with a ≥ 2× margin"
)


def _bound(consts: Any, model: Any, n: int) -> str:
    import mpmath

    from attncert.soft.bounds import induction_bounds

    with mpmath.workdps(30):
        b = induction_bounds(consts, model.n_tokens(n), corrected=True)
        return mpmath.nstr(b.readout_change, 17)


def _logit_change(model: Any, x: str, position: int, symbol: str) -> float:
    from attncert.model import forward

    y = x[: position - 1] + symbol + x[position:]
    tr = forward(model, [x, y])
    return float(abs(tr.logits[0] - tr.logits[1]))


def generate(directory: Path, spec: Any) -> Manifest:
    from attncert.model import zoo_model
    from attncert.soft.bounds import lemma5_constants
    from attncert.soft.sensitivity import exhaustive_sensitivity, search_sensitivity

    p = dict(spec.parameters)
    assert isinstance(spec.model, str) and spec.model.startswith("zoo:")
    model = zoo_model(spec.model[4:])
    consts = lemma5_constants(model)
    rows = []
    for n in p["exhaustive_n"]:
        r = exhaustive_sensitivity(model, n, "logit")
        rows.append(_row("exhaustive", n, r, _bound(consts, model, n)))
    for n in p["search_n"]:
        r = search_sensitivity(model, n, "logit", seed=p.get("seed", 0))
        rows.append(_row("search", n, r, _bound(consts, model, n)))
    report = {"constants": consts.as_dict(), "rows": rows}
    write_atomic(directory / REPORT, json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return Manifest(
        kind=KIND.name,
        exhibits=spec.exhibits,
        files=(entry(directory, REPORT, "report"),),
        checked_by="attncert.soft.bounds (lemma5_constants, induction_bounds)",
        checked_means=CHECKED_MEANS,
        model=ModelRef(spec.model, model.digest, model.name),
        parameters=p,
        expect={"rows": len(rows)},
    )


def _row(method: str, n: int, r: Any, bound: str) -> dict:
    w = r.witness
    return {
        "n": n,
        "method": method,
        "measured": float(r.value).hex(),
        "measured_approx": float(r.value),
        "witness": {"x": w.x, "position": w.position, "symbol": w.symbol},
        "bound": bound,
    }


def check(ctx: Context) -> Outcome:
    import mpmath

    from attncert.soft.bounds import lemma5_constants
    from attncert.soft.sensitivity import exhaustive_sensitivity

    model = ctx.model
    assert model is not None
    rep = ctx.read_json("report")
    failures: list[str] = []
    facts: list[str] = []
    consts = lemma5_constants(model)
    if consts.as_dict() != rep.get("constants"):
        failures.append(
            f"{REPORT}: Lemma 5 constants differ from those recomputed from the weights"
        )
    rows = rep.get("rows", [])
    if len(rows) != ctx.manifest.expect.get("rows", len(rows)):
        failures.append(
            f"{REPORT}: {len(rows)} rows, the manifest lists {ctx.manifest.expect['rows']}"
        )
    worst_ratio = np.inf
    for row in rows:
        n = row["n"]
        where = f"{REPORT}: n = {n} ({row['method']})"
        bound = _bound(consts, model, n)
        # the inequality below uses the recomputed bound; the stored one must describe it
        # (it is printed with 17 digits, so agreement to 1e-12 relative detects any edit)
        if abs(mpmath.mpf(row["bound"]) - mpmath.mpf(bound)) > mpmath.mpf("1e-12") * mpmath.mpf(
            bound
        ):
            failures.append(f"{where}: stored bound {row['bound']} ≠ recomputed {bound}")
            continue
        measured = float.fromhex(row["measured"])
        w = row["witness"]
        again = _logit_change(model, w["x"], w["position"], w["symbol"])
        if not np.isclose(again, measured, rtol=1e-9, atol=1e-15):
            failures.append(
                f"{where}: the witness pair changes the logit by {again!r}, not {measured!r}"
            )
            continue
        if row["method"] == "exhaustive":
            best = exhaustive_sensitivity(model, n, "logit").value
            if not np.isclose(best, measured, rtol=1e-9, atol=1e-15):
                failures.append(f"{where}: the exhaustive maximum is {best!r}, not {measured!r}")
                continue
        b = mpmath.mpf(bound)
        if not measured * 2 <= b:
            failures.append(
                f"{where}: measured change {measured:.3g} is not below half the bound {bound}"
            )
            continue
        worst_ratio = min(worst_ratio, float(b) / max(measured, 1e-300))
    if not failures:
        facts.append(
            f"{len(rows)} lengths: measured logit change ≤ Lemma 5 bound everywhere "
            f"(smallest bound/measured ratio {worst_ratio:.3g})"
        )
    return Outcome(tuple(failures), tuple(facts))


KIND = ArtifactKind(
    name="lemma5",
    check=check,
    generate=generate,
    description="Hahn 2020 Lemma 5: the sensitivity bound next to measured changes",
    needs_model=True,
)
