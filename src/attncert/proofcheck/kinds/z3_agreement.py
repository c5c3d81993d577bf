"""Artifact kind ``z3_agreement``: a compiled softmax transformer agrees with a temporal-logic
formula on every string of every length 1…N (Yang, Strobl, Chiang, Angluin: the
constructions of Theorems 12–21, proved on a concrete model by :mod:`attncert.prove`).

Files: ``model.json`` (the compiled model — or, with ``parameters.construction =
"proposition11"``, :func:`attncert.compile.first_last.first_last_model`; its hash is
checked by the tree), ``proof.json``
(the proof object of :func:`attncert.prove_agreement`, timings removed: every query, per n,
with its verdict and ``.smt2`` file) and the ``smt2/*.smt2`` queries themselves.

Re-verification:

1. the proof object is for the manifest's formula and this model (content hash), covers
   every n = 1…N, and every n is ``proved``;
2. every stored ``.smt2`` query is re-decided by z3 in a fresh process and must give the
   recorded verdict;
3. the queries are re-derived from (formula, model) by the prover and must be identical, byte
   for byte, to the stored ones — so the stored queries really encode *this* formula and
   model (a changed formula or model yields other queries or a counterexample);
4. for n ≤ ``cross_check`` the verdict is re-decided by exhaustive interval enumeration.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from attncert.io import write_atomic
from attncert.proofcheck.kinds import ArtifactKind, Context, Outcome, entry, scrub_timings
from attncert.proofcheck.manifest import Manifest, ModelRef

PROOF = "proof.json"
MODEL_FILE = "model.json"
SMT2 = "smt2"

CHECKED_MEANS = (
    "every stored .smt2 query re-decided by a fresh z3 process with the recorded verdict; the "
    "queries re-derived from (formula, model) by attncert.prove and identical to the stored "
    "ones; all n = 1…N proved; n ≤ cross_check re-decided by exhaustive interval enumeration"
)


def _prove(formula: str, model: Any, p: dict, smt2_dir: Path | None, cross_check: int = 0):
    from attncert.prove import prove_agreement

    return prove_agreement(
        formula,
        model,
        max_len=p["max_len"],
        positions=p.get("positions", "all"),
        smt2_dir=smt2_dir,
        cross_check=cross_check,
        jobs=1,
    )


def spec_model(formula: str, p: dict) -> Any:
    """The model an artifact's parameters name: Yang et al. Proposition 11's construction
    (``construction = "proposition11"``, not compiled) or the formula compiled in
    ``regime`` over ``alphabet``."""
    if p.get("construction") == "proposition11":
        from attncert.compile.first_last import first_last_model

        return first_last_model(formula, p["alphabet"])
    from attncert.compile import compile_formula

    return compile_formula(formula, regime=p["regime"], alphabet=p["alphabet"])


def relative_queries(result_dict: dict, directory: Path) -> dict:
    """Query file paths relative to the artifact directory (deterministic)."""
    for length in result_dict["lengths"]:
        for q in length["queries"]:
            if q.get("file"):
                q["file"] = Path(q["file"]).relative_to(directory).as_posix()
    return result_dict


def generate(directory: Path, spec: Any) -> Manifest:
    from attncert.model import save_model

    p = dict(spec.parameters)
    model = spec_model(spec.formula, p)
    save_model(model, directory / MODEL_FILE)
    result = _prove(spec.formula, model, p, directory / SMT2, cross_check=p.get("cross_check", 0))
    if result.verdict != "proved":
        raise ValueError(f"{spec.path}: the prover says {result.verdict}, not proved")
    data = relative_queries(scrub_timings(result.to_dict()), directory)
    write_atomic(directory / PROOF, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    files = [entry(directory, MODEL_FILE, "model"), entry(directory, PROOF, "proof")]
    for f in sorted((directory / SMT2).glob("*.smt2")):
        files.append(entry(directory, f"{SMT2}/{f.name}", "query"))
    return Manifest(
        kind=KIND.name,
        exhibits=spec.exhibits,
        files=tuple(files),
        checked_by="z3 (fresh process) + attncert.prove + exhaustive interval enumeration",
        checked_means=CHECKED_MEANS,
        model=ModelRef(MODEL_FILE, model.digest, model.name),
        formula=spec.formula,
        parameters=p,
        expect={"verdict": "proved", "queries": len(files) - 2},
    )


def check(ctx: Context) -> Outcome:
    from attncert.logic import parse, to_text
    from attncert.prove.smt import recheck_files

    m = ctx.manifest
    model = ctx.model
    assert model is not None
    proof = ctx.read_json("proof")
    failures: list[str] = []
    p = dict(m.parameters)
    N = p["max_len"]
    if m.formula is None:
        return Outcome(("the manifest names no formula",))
    if to_text(parse(proof.get("formula", ""))) != to_text(parse(m.formula)):
        failures.append(f"{PROOF} proves {proof.get('formula')!r}, the manifest says {m.formula!r}")
    if proof.get("digest") != model.digest:
        failures.append(f"{PROOF} is for model {str(proof.get('digest'))[:12]}…, not this model")
    lengths = {row["n"]: row for row in proof.get("lengths", [])}
    missing = [n for n in range(1, N + 1) if n not in lengths]
    if missing:
        failures.append(f"{PROOF} has no result for n = {missing[:5]}")
    unproved = [n for n, row in lengths.items() if row["verdict"] != "proved"]
    if unproved:
        failures.append(f"{PROOF}: n = {unproved[:5]} not proved")
    recorded = {
        q["file"]: q["verdict"] for row in lengths.values() for q in row["queries"] if q.get("file")
    }
    listed = {f.path for f in m.files if f.role == "query"}
    if set(recorded) != listed:
        failures.append("the queries in the proof object and in the manifest differ")
    if failures:
        return Outcome(tuple(failures))
    # 2. fresh z3 process
    paths = [str(ctx.directory / f) for f in sorted(recorded)]
    verdicts = recheck_files(paths)
    bad = [
        f"{f}: fresh z3 says {verdicts.get(str(ctx.directory / f), 'nothing')}, the proof records {v}"
        for f, v in sorted(recorded.items())
        if verdicts.get(str(ctx.directory / f)) != v
    ]
    failures += bad[:5]
    # 3. re-derive the queries and compare; 4. exhaustive cross-check for small n
    with tempfile.TemporaryDirectory() as tmp:
        again = _prove(m.formula, model, p, Path(tmp), cross_check=p.get("cross_check", 0))
        if again.verdict != "proved":
            failures.append(
                f"re-deriving the proof from the formula and model gives {again.verdict}"
            )
        fresh = {f.name: f.read_bytes() for f in Path(tmp).glob("*.smt2")}
        stored = {Path(f).name: (ctx.directory / f).read_bytes() for f in recorded}
        differ = sorted(k for k in set(fresh) | set(stored) if fresh.get(k) != stored.get(k))
        if differ:
            failures.append(
                f"{len(differ)} stored queries are not the encoding of this formula and model "
                f"(e.g. {differ[0]})"
            )
        k = p.get("cross_check", 0)
        crossed = [row for row in again.lengths if row.n <= k]
        disagree = [
            f"n = {row.n}: {row.cross_check}" for row in crossed if row.cross_check != "agree"
        ]
        if disagree:
            failures.append("exhaustive interval enumeration disagrees: " + "; ".join(disagree[:3]))
    if failures:
        return Outcome(tuple(failures))
    facts = (
        f"{len(recorded)} z3 queries re-decided in a fresh process and re-derived from the formula "
        f"and model; {m.formula} holds on all strings of length 1…{N}"
        + (f" (n ≤ {k} also by exhaustive enumeration)" if k else ""),
    )
    return Outcome((), facts)


KIND = ArtifactKind(
    name="z3_agreement",
    check=check,
    generate=generate,
    description="Yang et al.: a compiled soft transformer agrees with a formula up to length N",
    needs_model=True,
)
