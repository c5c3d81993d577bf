"""Artifact kind ``all_lengths``: a compiled softmax transformer agrees with a temporal-logic
formula at every position of every string of *every* length n ≥ 1 (Yang, Strobl, Chiang,
Angluin: Proposition 11, Theorems 12–21, Corollaries 17, 18, 22, 23 on a concrete model;
issue 23, :mod:`attncert.prove.all_lengths`).

Files: ``model.json`` (the compiled model, or Proposition 11's construction when
``parameters.construction = "proposition11"``; its hash is checked by the tree),
``certificate.json`` (the all-length certificate: gadgets, closed-form error bounds and
their proofs, N₀), ``bounded.json`` (the bounded proof object for n < N₀, timings removed)
and the ``smt2/*.smt2`` queries of that bounded part.

Re-verification:

1. the certificate names the manifest's formula and this model (content hash), and the
   trusted kernel :mod:`attncert.kernel.all_lengths.checker` accepts it: every gadget against the
   exact weights, every closed-form bound re-derived from them and compared with the
   stored one, every proof checked by rules R1–R5 — the statement for every n ≥ N₀;
2. n < N₀: every stored ``.smt2`` query re-decided by a fresh z3 process with the recorded
   verdict, and the queries re-derived from (formula, model) by :mod:`attncert.prove`
   identical to the stored ones, every n proved;
3. n ≤ ``cross_check``: exhaustive interval enumeration agrees (an independent evaluator).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from attncert.io import write_atomic
from attncert.proofcheck.kinds import ArtifactKind, Context, Outcome, entry, scrub_timings
from attncert.proofcheck.kinds.z3_agreement import relative_queries, spec_model
from attncert.proofcheck.manifest import Manifest, ModelRef

MODEL_FILE = "model.json"
CERT = "certificate.json"
BOUNDED = "bounded.json"
SMT2 = "smt2"

CHECKED_MEANS = (
    "n ≥ N0: the trusted kernel re-derives every gadget and every closed-form error bound "
    "from the model's exact weights and checks each bound's proof for all n ≥ N0 (arb "
    "points, Sturm sequences, monotone terms); n < N0: every stored .smt2 query re-decided "
    "by a fresh z3 process and re-derived identically by attncert.prove; n ≤ cross_check "
    "also by exhaustive interval enumeration"
)


def generate(directory: Path, spec: Any) -> Manifest:
    from attncert.model import save_model
    from attncert.prove.all_lengths import prove_all_lengths
    from attncert.prove.all_lengths_certificate import certificate_to_dict

    p = dict(spec.parameters)
    model = spec_model(spec.formula, p)
    save_model(model, directory / MODEL_FILE)
    res = prove_all_lengths(
        spec.formula, model, model_source={"path": MODEL_FILE}, smt2_dir=str(directory / SMT2)
    )
    if res.verdict != "proved" or res.certificate is None:
        raise ValueError(f"{spec.path}: the all-length prover says {res.statement}")
    cert = scrub_timings(certificate_to_dict(res.certificate))
    cert["trace"] = {}
    write_atomic(directory / CERT, json.dumps(cert, indent=1, ensure_ascii=False) + "\n")
    bounded = relative_queries(scrub_timings(res.bounded.to_dict()), directory)
    write_atomic(directory / BOUNDED, json.dumps(bounded, indent=1, ensure_ascii=False) + "\n")
    files = [
        entry(directory, MODEL_FILE, "model"),
        entry(directory, CERT, "certificate"),
        entry(directory, BOUNDED, "bounded"),
    ]
    for f in sorted((directory / SMT2).glob("*.smt2")):
        files.append(entry(directory, f"{SMT2}/{f.name}", "query"))
    return Manifest(
        kind=KIND.name,
        exhibits=spec.exhibits,
        files=tuple(files),
        checked_by="attncert.kernel.all_lengths (n ≥ N0) + z3 in a fresh process (n < N0)",
        checked_means=CHECKED_MEANS,
        model=ModelRef(MODEL_FILE, model.digest, model.name),
        formula=spec.formula,
        parameters=p,
        expect={
            "statement": "for all n ≥ 1",
            "N0": res.certificate.n0,
            "inequalities": len(res.certificate.inequalities),
        },
    )


def check(ctx: Context) -> Outcome:
    from attncert.certificates.all_lengths import certificate_from_dict
    from attncert.kernel.all_lengths.checker import check as kernel_check
    from attncert.logic import parse, to_text
    from attncert.prove.all_lengths import recheck_bounded
    from attncert.prove.enumerate import enumerate_agreement
    from attncert.prove.smt import recheck_files

    m = ctx.manifest
    model = ctx.model
    assert model is not None
    if m.formula is None:
        return Outcome(("the manifest names no formula",))
    cert = certificate_from_dict(ctx.read_json("certificate"), CERT)
    failures: list[str] = []
    if cert.formula_text != to_text(parse(m.formula)):
        failures.append(f"{CERT} is for {cert.formula_text!r}, the manifest says {m.formula!r}")
    expect = dict(m.expect)
    if cert.n0 != expect.get("N0") or len(cert.inequalities) != expect.get("inequalities"):
        failures.append(
            f"{CERT} has N0 = {cert.n0} and {len(cert.inequalities)} inequalities, the manifest "
            f"expects {expect.get('N0')} and {expect.get('inequalities')}"
        )
    # 1. the kernel, n ≥ N0
    rep = kernel_check(cert, model)
    failures += [f"kernel: {f.line()}" for f in rep.failures[:5]]
    # 2. the bounded part, n < N0
    bounded = ctx.read_json("bounded")
    lengths = {row["n"]: row for row in bounded.get("lengths", [])}
    if sorted(lengths) != list(range(1, cert.n0)) or any(
        r["verdict"] != "proved" for r in lengths.values()
    ):
        failures.append(f"{BOUNDED} does not prove every n < N0 = {cert.n0}")
    recorded = {
        q["file"]: q["verdict"] for row in lengths.values() for q in row["queries"] if q.get("file")
    }
    if set(recorded) != {f.path for f in m.files if f.role == "query"}:
        failures.append("the queries in the bounded proof and in the manifest differ")
    if failures:
        return Outcome(tuple(failures))
    verdicts = recheck_files([str(ctx.directory / f) for f in sorted(recorded)])
    failures += [
        f"{f}: fresh z3 says {verdicts.get(str(ctx.directory / f), 'nothing')}, recorded {v}"
        for f, v in sorted(recorded.items())
        if verdicts.get(str(ctx.directory / f)) != v
    ][:5]
    with tempfile.TemporaryDirectory() as tmp:
        again = recheck_bounded(cert, model, smt2_dir=tmp)
        if again.verdict != "proved":
            failures.append(f"re-deriving the bounded proof gives {again.verdict}")
        fresh = {f.name: f.read_bytes() for f in Path(tmp).glob("*.smt2")}
        stored = {Path(f).name: (ctx.directory / f).read_bytes() for f in recorded}
        differ = sorted(k for k in set(fresh) | set(stored) if fresh.get(k) != stored.get(k))
        if differ:
            failures.append(
                f"{len(differ)} stored queries are not the encoding of this formula and model "
                f"(e.g. {differ[0]})"
            )
    # 3. exhaustive cross-check at small n
    k = int(m.parameters.get("cross_check", 0))
    f = parse(m.formula)
    for n in range(1, k + 1):
        res = enumerate_agreement(model, f, n)
        if res.verdict != "proved":
            failures.append(f"exhaustive interval enumeration at n = {n} says {res.verdict}")
            break
    if failures:
        return Outcome(tuple(failures))
    facts = (
        f"n ≥ {cert.n0}: {len(cert.gadgets)} gadgets and {len(cert.inequalities)} closed-form "
        f"error bounds re-derived and proved by the kernel; n < {cert.n0}: {len(recorded)} z3 "
        "queries re-decided and re-derived"
        + (f"; n ≤ {k} also by exhaustive enumeration" if k else ""),
        f"{m.formula} holds at every position of every string of every length n ≥ 1",
    )
    return Outcome((), facts)


KIND = ArtifactKind(
    name="all_lengths",
    check=check,
    generate=generate,
    description="Yang et al.: a compiled soft transformer agrees with a formula at every length",
    needs_model=True,
)
