"""Artifact kind ``soft_certificate``: Hahn 2020 Lemma 5 / Theorem 6 for one softmax model
at one n, certified (issue 15).

File: ``certificate.json`` — an ``attncert-soft-certificate``: the certified sensitivity
B(n) (every string, every changed position), Theorem 6's cross-entropy floor for that B,
and optionally a restriction whose decision is constant on every completion with a pair
of completions of different membership.

Re-verification: :func:`attncert.kernel.soft.checker.check` re-derives every number from the
model and the file (never re-running the search); the artifact also requires the
parameters it was generated with (n, the restriction's presence) to match the file.

Parameters: ``n``; ``restriction`` (bool); ``language`` (of the pair, default parity);
``time_limit`` (seconds for the restriction search); ``seed``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attncert.proofcheck.kinds import ArtifactKind, Context, Outcome, entry, scrub_timings
from attncert.proofcheck.manifest import Manifest, ModelRef

CERT = "certificate.json"
CHECKED_MEANS = (
    "the certified sensitivity B(n), its per-readout-symbol logit ranges and propagated "
    "bounds, the cross-entropy floor, the restriction's certified logit range and the pair's "
    "logits (rigorous forward pass) re-derived from the model and the file by the "
    "independent soft-certificate checker"
)


def generate(directory: Path, spec: Any) -> Manifest:
    import json

    from attncert.io import write_atomic
    from attncert.model import zoo_model
    from attncert.soft.certified.certify import certify_soft

    p = dict(spec.parameters)
    model = spec.model if not isinstance(spec.model, str) else zoo_model(spec.model[4:])
    out = certify_soft(
        model,
        int(p["n"]),
        source=spec.model if isinstance(spec.model, str) else None,
        restriction=bool(p.get("restriction", False)),
        language=p.get("language", "parity"),
        time_limit=float(p.get("time_limit", 60.0)),
        seed=int(p.get("seed", 0)),
    )
    data = out.certificate.to_dict()
    data["trace"] = scrub_timings(data["trace"])
    write_atomic(directory / CERT, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    ref = spec.model if isinstance(spec.model, str) else "model.json"
    return Manifest(
        kind=KIND.name,
        exhibits=spec.exhibits,
        files=(entry(directory, CERT, "certificate"),),
        checked_by="attncert.kernel.soft (check)",
        checked_means=CHECKED_MEANS,
        model=ModelRef(ref, model.digest, model.name),
        parameters=p,
        expect={"verdict": out.verdict},
    )


def check(ctx: Context) -> Outcome:
    from attncert.kernel.soft.checker import check as check_soft

    model = ctx.model
    assert model is not None
    data = ctx.read_json("certificate")
    failures: list[str] = []
    n = ctx.param("n")
    if data.get("n") != n:
        failures.append(f"{CERT}: n = {data.get('n')!r}, the manifest says {n}")
    wants = bool(ctx.manifest.parameters.get("restriction", False))
    if (
        wants
        and data.get("restriction") is None
        and ctx.manifest.expect.get("verdict") == "CERTIFIED"
    ):
        failures.append(f"{CERT}: the manifest promises a restriction; the file has none")
    report = check_soft(data, model)
    if not report.accepted:
        failures += [f"{CERT}: {f}" for f in report.failures]
    return Outcome(tuple(failures), report.facts)


KIND = ArtifactKind(
    name="soft_certificate",
    check=check,
    generate=generate,
    description="Hahn 2020 Lemma 5 / Theorem 6 on one softmax model and one n, certified",
    needs_model=True,
)
