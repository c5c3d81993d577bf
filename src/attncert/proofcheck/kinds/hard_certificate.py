"""Artifact kind ``hard_certificate``: a restriction certificate for one hard-attention model
at one length n (Hahn 2020, Theorem 1 and Corollary 2 on a concrete instance).

Files: ``certificate.json`` (the format of :mod:`attncert.hard.certificate`, with the
untrusted trace's timings removed so regeneration is byte-for-byte deterministic) and, for a
model that is not in the zoo, ``model.json``.

Re-verification (never re-running the search):

1. :func:`attncert.hard.checker.check` — the trust boundary — recomputes every layer
   collapse exactly from the model and accepts only if the restriction chain, every claimed
   dependency set, the output's dependency set and the misclassified pair hold;
2. the manifest's claims (n, language, output dependency set, number of free positions)
   must be the certificate's;
3. Corollary 2's expectation: ``misclassified`` — the certificate carries a pair the checker
   confirmed; ``no-separating-pair`` — :func:`attncert.hard.corollary.separating_pair` (an
   exact decision procedure: DFA product, Dyck interval DP, aⁿbⁿ's unique member) finds no
   ρ_L-compatible pair agreeing on the dependency set S with different membership, and on one
   representative per assignment of S the model's exact decision equals membership — so the
   model classifies *every* ρ_L-compatible string correctly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attncert.io import write_atomic
from attncert.proofcheck.kinds import ArtifactKind, Context, Outcome, entry, scrub_timings
from attncert.proofcheck.manifest import Manifest, ModelRef

CERTIFICATE = "certificate.json"
MODEL_FILE = "model.json"
MAX_REPRESENTATIVES = 4096

CHECKED_MEANS = (
    "independent checker attncert.hard.checker.check (imports no solver and no search code) "
    "recomputes every layer collapse in exact rational arithmetic and confirms the restriction "
    "chain, every dependency set, the output's dependency set and the misclassified pair "
    "(re-run through the exact model); for 'no-separating-pair' the exact decision procedure "
    "attncert.hard.corollary.separating_pair finds no separating pair and the model's exact "
    "decision equals membership on one representative per assignment of the dependency set"
)


def _resolve_model(directory: Path, spec: Any) -> tuple[Any, ModelRef]:
    from attncert.model import random_model, save_model, zoo_model

    if isinstance(spec, str) and spec.startswith("zoo:"):
        model = zoo_model(spec[4:])
        return model, ModelRef(spec, model.digest, model.name)
    from attncert.model.spec import Model

    if isinstance(spec, Model):  # a user's own model: stored next to the certificate
        save_model(spec, directory / MODEL_FILE)
        return spec, ModelRef(MODEL_FILE, spec.digest, spec.name)
    if isinstance(spec, dict) and "random" in spec:
        model = random_model(**spec["random"])
        save_model(model, directory / MODEL_FILE)
        return model, ModelRef(MODEL_FILE, model.digest, model.name)
    raise ValueError(f"unsupported model spec {spec!r}")


def generate(directory: Path, spec: Any) -> Manifest:
    """Run the (untrusted) search once and write the certificate and manifest data."""
    from attncert.certificates.hard import certificate_from_dict
    from attncert.hard.certificate import certificate_to_dict
    from attncert.hard.pipeline import certify

    p = dict(spec.parameters)
    model, ref = _resolve_model(directory, spec.model)
    cert = certify(
        model,
        n=p["n"],
        language=p["language"],
        method=p.get("method", "maxsat"),
        seed=p.get("seed", 0),
        time_limit=p.get("time_limit", 300.0),
        model_source={"zoo": ref.ref[4:]} if ref.is_zoo else {"path": MODEL_FILE},
    )
    data = scrub_timings(certificate_to_dict(cert))
    certificate_from_dict(data)  # still a valid certificate
    write_atomic(directory / CERTIFICATE, json.dumps(data, indent=1) + "\n")
    files = [entry(directory, CERTIFICATE, "certificate")]
    if not ref.is_zoo:
        files.append(entry(directory, MODEL_FILE, "model"))
    rho = cert.final_restriction
    expect = {
        "corollary2": "misclassified" if cert.misclassified is not None else "no-separating-pair",
        "output_dependency": [u + 1 for u in cert.output_dependency],
        "free": rho.num_free,
    }
    return Manifest(
        kind=KIND.name,
        exhibits=spec.exhibits,
        files=tuple(files),
        checked_by="attncert.hard.checker.check",
        checked_means=CHECKED_MEANS,
        model=ref,
        parameters=p,
        expect=expect,
    )


def check(ctx: Context) -> Outcome:
    from attncert.certificates.hard import certificate_from_dict
    from attncert.hard.checker import check as trusted_check

    m = ctx.manifest
    path = ctx.path("certificate")
    cert = certificate_from_dict(ctx.read_json("certificate"), source=str(path))
    failures: list[str] = []
    facts: list[str] = []
    if cert.n != ctx.param("n"):
        failures.append(f"certificate is for n = {cert.n}, the manifest says n = {ctx.param('n')}")
    if cert.language != ctx.param("language"):
        failures.append(
            f"certificate is for language {cert.language!r}, the manifest says "
            f"{ctx.param('language')!r}"
        )
    assert ctx.model is not None
    report = trusted_check(cert, ctx.model)
    if not report.accepted:
        failures.extend(f"checker rejected {path.name}: {f}" for f in report.failures)
        return Outcome(tuple(failures), tuple(report.facts))
    facts.extend(report.facts)
    exp = m.expect
    deps = [u + 1 for u in cert.output_dependency]
    if "output_dependency" in exp and list(exp["output_dependency"]) != deps:
        failures.append(
            f"manifest claims output dependency set {exp['output_dependency']}, "
            f"the certificate's is {deps}"
        )
    free = cert.final_restriction.num_free
    if "free" in exp and exp["free"] != free:
        failures.append(f"manifest claims {exp['free']} free positions, the certificate has {free}")
    want = exp.get("corollary2")
    if want == "misclassified":
        if cert.misclassified is None:
            failures.append("manifest expects a misclassified pair, the certificate has none")
        else:
            facts.append("Corollary 2: the checker confirmed the misclassified pair")
    elif want == "no-separating-pair":
        failures.extend(_check_no_pair(cert, ctx.model, facts))
    elif want is not None:
        failures.append(f"unknown expectation corollary2 = {want!r}")
    return Outcome(tuple(failures), tuple(facts))


def _check_no_pair(cert: Any, model: Any, facts: list[str]) -> list[str]:
    from attncert.hard.corollary import separating_pair
    from attncert.languages import language
    from attncert.model.exact import accepts_exact

    if cert.misclassified is not None:
        return ["manifest expects no separating pair, but the certificate has a misclassified pair"]
    lang = language(cert.language)
    rho = cert.final_restriction
    S = tuple(u for u in cert.output_dependency if rho.is_free(u))
    pair = separating_pair(lang, rho, cert.output_dependency)
    if pair is not None:
        return [
            f"a separating pair exists ({pair[0][:40]}… / {pair[1][:40]}…): the certificate "
            "should carry it"
        ]
    count = len(rho.alphabet) ** len(S)
    if count > MAX_REPRESENTATIVES:
        facts.append(f"no separating pair for {cert.language} (representatives not enumerated)")
        return []
    for s in rho.completions(S):
        member, decision = lang.contains(s), accepts_exact(model, s)
        if member != decision:
            return [
                f"the model answers {decision} on the ρ_L-compatible string {s[:60]}…, "
                f"membership in {cert.language} is {member}"
            ]
    facts.append(
        f"no separating pair for {cert.language}; the model is exactly right on all "
        f"{count} assignments of its free dependency positions, hence on every "
        f"ρ_L-compatible string ({rho.num_free} free positions)"
    )
    return []


KIND = ArtifactKind(
    name="hard_certificate",
    check=check,
    generate=generate,
    description="Hahn 2020 Theorem 1 / Corollary 2 restriction certificate",
    needs_model=True,
)
