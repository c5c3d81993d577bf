"""Artifact kind ``uniform_sensitivity``: Hahn 2020 Lemma 5 (and, over {0, 1}, Theorem 6) for
one softmax model at **every** length n ≥ N₀ (issue 23).

File: ``certificate.json`` — an ``attncert-uniform-sensitivity`` certificate: a constant K
with |z(x) − z(x^i)| ≤ K/n for every n ≥ N₀, every string and every changed position, the
position classes and their feature ranges over all lengths, the per-step bounds of the
one propagation valid for every n ≥ N₀, the logit's range Z over every length, the length
from which K/n < Z, and Theorem 6's PARITY floor log(1 + e^{−min(K/n, Z)/2}) at a few n.

Re-verification: :func:`attncert.kernel.uniform.checker.check` re-derives every number from
the model and the file (never re-running the search over bins); the artifact also requires
the parameters it was generated with (N₀, bins) to be the file's. A second of work.

Parameters: ``n0``; ``bins`` (relative-position bins; omitted: the producer's best of
1, 2, 4, …, 32); ``floor_at`` (lengths at which the floor is tabulated).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attncert.proofcheck.kinds import ArtifactKind, Context, Outcome, entry
from attncert.proofcheck.manifest import Manifest, ModelRef

CERT = "certificate.json"
CHECKED_MEANS = (
    "K with B(n) ≤ K/n for every n ≥ N₀, the position classes' feature ranges over every "
    "length, each head's one-key constant, the per-step change coefficients, the logit's "
    "range over every length, the length from which K/n is below it, and Theorem 6's floor "
    "re-derived from the model and the file by the kernel's length-uniform propagation"
)


def generate(directory: Path, spec: Any) -> Manifest:
    from attncert.io import write_atomic
    from attncert.model import zoo_model
    from attncert.soft.certified.uniform import certify_uniform

    p = dict(spec.parameters)
    model = spec.model if not isinstance(spec.model, str) else zoo_model(spec.model[4:])
    out = certify_uniform(
        model,
        int(p["n0"]),
        bins=p.get("bins"),
        source=spec.model if isinstance(spec.model, str) else None,
        floor_at=tuple(p.get("floor_at", (64, 256, 1024, 4096))),
    )
    if out.certificate is None:
        raise ValueError(f"no uniform certificate for {model.name}: {out.verdict} {out.reasons}")
    data = dict(out.certificate)
    data["trace"] = {k: v for k, v in data["trace"].items() if k != "seconds"}
    write_atomic(directory / CERT, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    ref = spec.model if isinstance(spec.model, str) else "model.json"
    p.setdefault("bins", data["bins"])
    return Manifest(
        kind=KIND.name,
        exhibits=spec.exhibits,
        files=(entry(directory, CERT, "certificate"),),
        # the name proofs/ records (now attncert.kernel.uniform.checker; docs/trust.md)
        checked_by="attncert.kernel.soft_uniform (check)",
        checked_means=CHECKED_MEANS,
        model=ModelRef(ref, model.digest, model.name),
        parameters=p,
        expect={"verdict": out.verdict, "K": data["K"]},
    )


def check(ctx: Context) -> Outcome:
    from attncert.kernel.uniform.checker import check as check_uniform

    model = ctx.model
    assert model is not None
    data = ctx.read_json("certificate")
    failures: list[str] = []
    for name in ("n0", "bins"):
        if data.get(name) != ctx.param(name):
            failures.append(
                f"{CERT}: {name} = {data.get(name)!r}, the manifest says {ctx.param(name)}"
            )
    want = ctx.manifest.expect.get("K")
    if want is not None and data.get("K") != want:
        failures.append(f"{CERT}: K = {data.get('K')!r}, the manifest expects {want}")
    report = check_uniform(data, model)
    if not report.accepted:
        failures += [f"{CERT}: {f}" for f in report.failures]
    return Outcome(tuple(failures), report.facts)


KIND = ArtifactKind(
    name="uniform_sensitivity",
    check=check,
    generate=generate,
    description="Hahn 2020 Lemma 5 / Theorem 6 on one softmax model at every n ≥ N₀, certified",
    needs_model=True,
)
