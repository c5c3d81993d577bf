"""The independent checker of soft certificates (attncert.kernel.soft.checker): it accepts what
the certifier produced, rejects every edited field with a reason, evaluates pairs in arb
like the float evaluator, and imports nothing of the code that produced the claims."""

from __future__ import annotations

import ast
import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attncert.kernel.soft import checker as K
from attncert.model import random_model, zoo_model
from attncert.soft.certified.certificate import load_certificate
from attncert.soft.certified.certify import certify_soft

__implements__ = (
    "Hahn Lemma 5",
    "Hahn Theorem 6",
)

SRC = Path(__file__).resolve().parents[1] / "src" / "attncert"


@pytest.fixture(scope="module")
def outcome():
    return certify_soft(zoo_model("soft_parity_lm"), 24, restriction=True, time_limit=30)


@pytest.fixture(scope="module")
def cert(outcome):
    assert outcome.check.accepted, outcome.check.summary()
    data = outcome.certificate.to_dict()
    assert data["restriction"]["free"] > 0 and data["pair"] is not None
    return data


def _rejected(data, model, claim, match):
    rep = K.check(data, model)
    assert not rep.accepted
    text = rep.summary()
    assert claim in text and match in text, text
    return text


def test_the_certificate_is_accepted_and_says_what_it_checked(outcome, cert):
    rep = K.check(cert, zoo_model("soft_parity_lm"))
    assert rep.accepted and "B(24)" in rep.summary() and "cross-entropy floor" in rep.summary()
    assert outcome.verdict == "CERTIFIED"


def test_json_round_trip(tmp_path, outcome):
    path = outcome.certificate.save(tmp_path / "c.json")
    data = load_certificate(path)
    assert K.check(data, zoo_model("soft_parity_lm")).accepted
    assert data["model"]["sha256"] == zoo_model("soft_parity_lm").digest


@pytest.mark.parametrize(
    ("edit", "claim", "match"),
    [
        (
            lambda d: d["sensitivity"][0].__setitem__("bound", d["sensitivity"][0]["bound"] * 0.9),
            "sensitivity",
            "not sound",
        ),
        (
            lambda d: d["sensitivity"][0].__setitem__("bound", d["sensitivity"][0]["bound"] * 1.1),
            "sensitivity",
            "not what the propagation gives",
        ),
        (
            lambda d: d["sensitivity"][0]["per_symbol"][0].__setitem__("propagated", 1e-3),
            "sensitivity",
            "not sound",
        ),
        (
            lambda d: d["sensitivity"][0]["per_symbol"][1]["z_range"].__setitem__(1, -10.0),
            "sensitivity",
            "z_hi",
        ),
        (
            lambda d: d["sensitivity"][0]["per_symbol"][1]["z_range"].__setitem__(0, -100.0),
            "sensitivity",
            "z_lo",
        ),
        (
            lambda d: d["sensitivity"][0]["per_symbol"].pop(),
            "sensitivity",
            "one entry per readout symbol",
        ),
        (lambda d: d["sensitivity"][0]["floor"].__setitem__("nats", 0.5), "floor", "exceeds"),
        (
            lambda d: d["sensitivity"][0]["floor"].__setitem__("nats", 0.0),
            "floor",
            "not what B gives",
        ),
        (
            lambda d: d["sensitivity"][0]["floor"].__setitem__("kind", "dyck2-bracket-type"),
            "floor",
            "2-Dyck floor needs",
        ),
        (
            lambda d: d["restriction"].__setitem__("decision", not d["restriction"]["decision"]),
            "restriction",
            "does not exclude 0",
        ),
        (
            lambda d: d["restriction"]["z_range"].__setitem__(
                0, d["restriction"]["z_range"][0] + 0.05
            ),
            "restriction",
            "z_lo",
        ),
        (
            lambda d: d["restriction"]["z_range"].__setitem__(
                1, d["restriction"]["z_range"][1] - 0.05
            ),
            "restriction",
            "z_hi",
        ),
        (
            lambda d: d["restriction"].__setitem__("rho", d["restriction"]["rho"][:-1]),
            "restriction",
            "length-24",
        ),
        (
            lambda d: d["restriction"].__setitem__(
                "rho", d["restriction"]["rho"].replace("*", "0", 1)
            ),
            "restriction",
            "not what the propagation gives",
        ),
        (lambda d: d["method"].__setitem__("tolerance", 0.5), "method", "outside"),
        (lambda d: d["method"].__setitem__("lp", "yes"), "format", "wrong type"),
        (lambda d: d["model"].__setitem__("sha256", "0" * 64), "model", "hash"),
        (lambda d: d.__setitem__("n", 25), "sensitivity", ""),
        (lambda d: d.__setitem__("version", 2), "format", "version"),
        (lambda d: d["pair"]["precisions"].__setitem__(0, 106), "pair", "decided at 53 bits"),
        (lambda d: d["pair"].__setitem__("precisions", [53]), "pair", "two precisions"),
        (
            lambda d: d["pair"]["logits"].__setitem__(0, d["pair"]["logits"][1]),
            "pair",
            "recorded enclosure",
        ),
        (lambda d: d["pair"]["strings"].__setitem__(1, d["pair"]["strings"][0]), "pair", "equal"),
        (lambda d: d["pair"].__setitem__("language", "parity-odd"), "pair", "membership"),
        (lambda d: d["pair"].__setitem__("membership", [True, True]), "pair", "membership"),
        (
            lambda d: d["pair"].__setitem__("decision", not d["pair"]["decision"]),
            "pair",
            "decision",
        ),
        (lambda d: d["pair"].__setitem__("language", "anbn"), "pair", "the model over"),
        (lambda d: d.__setitem__("restriction", None), "pair", "needs a restriction"),
    ],
    ids=lambda x: x if isinstance(x, str) else "",
)
@pytest.mark.slow
def test_every_edited_field_is_rejected_with_a_reason(cert, edit, claim, match):
    data = copy.deepcopy(cert)
    edit(data)
    _rejected(data, zoo_model("soft_parity_lm"), claim, match)


def test_a_changed_weight_is_rejected(cert):
    import dataclasses

    m = zoo_model("soft_parity_lm")
    w = m.readout.weight.copy()
    w[0] += 1e-9
    other = dataclasses.replace(m, readout=dataclasses.replace(m.readout, weight=w))
    _rejected(copy.deepcopy(cert), other, "model", "hash")


def test_a_flipped_pair_string_outside_rho_is_rejected(cert):
    data = copy.deepcopy(cert)
    rho = data["restriction"]["rho"]
    k = next(i for i, c in enumerate(rho) if c != "*")
    s = data["pair"]["strings"][0]
    data["pair"]["strings"][0] = s[:k] + ("1" if s[k] == "0" else "0") + s[k + 1 :]
    _rejected(data, zoo_model("soft_parity_lm"), "pair", "not a completion")


def test_an_undecidable_sign_is_refused():
    """Σ_k LN(y)_k = 0 exactly (γ = 1, β = 0), but its arb enclosure has a radius at every
    precision: the sign is undecided and nothing is guessed."""
    import dataclasses

    from attncert.model.spec import LayerNorm

    m = random_model(1, 1, 4, kind="softmax", seed=1)
    zero = dataclasses.replace(
        m,
        readout=dataclasses.replace(m.readout, weight=np.ones(4), bias=0.0),
        final_norm=LayerNorm(np.ones(4), np.zeros(4), 1e-5),
    )
    assert K.decide(zero, "0101") == (None, None)


KERNEL = [
    "kernel/__init__.py",
    "kernel/soft/checker.py",
    "kernel/soft/propagate.py",
    "kernel/soft/heads.py",
    "kernel/soft/readout.py",
    "kernel/core/bounds.py",
    "kernel/soft/affine/bound.py",
    "kernel/soft/affine/forms.py",
    "kernel/soft/affine/rows.py",
    "kernel/soft/affine/heads.py",
]
ALLOWED = (
    "__future__",
    "dataclasses",
    "math",
    "functools",
    "numpy",
    "flint",
    "attncert.errors",
    "attncert.certificates.soft",
    "attncert.languages.registry",
    "attncert.kernel",
    "attncert.arith",
    "attncert.model.spec",
    "attncert.model.serialize",
    "attncert.model.positional",
    "attncert.arith",
)


@pytest.mark.parametrize("rel", KERNEL)
def test_the_kernel_imports_only_the_trusted_base(rel):
    tree = ast.parse((SRC / rel).read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    bad = [n for n in names if not n.startswith(ALLOWED)]
    assert not bad, f"{rel} imports {bad}"


def test_importing_the_kernel_loads_no_search_or_solver():
    code = (
        "import sys, attncert.kernel.soft.checker as k; k.check;"
        "bad=[m for m in sys.modules if m.startswith(('attncert.soft', 'pysat', 'z3', "
        "'attncert.hard', 'attncert.prove'))];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_a_dyck_certificate_with_the_bracket_type_floor(tmp_path):
    m = zoo_model("soft_dyck2_lm")
    out = certify_soft(m, 12)
    assert out.check.accepted, out.check.summary()
    data = out.certificate.to_dict()
    assert data["sensitivity"][1]["readout"] == {"lm_difference": [")", "]"]}
    floor = data["sensitivity"][1]["floor"]
    assert floor["kind"] == "dyck2-bracket-type" and 0 < floor["nats"] < floor["P_U"]
    for key, value, match in (
        ("p", "1/10", "P(U_n)"),
        ("p", "3/5", "outside"),
        ("P_U", 0.9, "P(U_n)"),
        ("nats", 1.0, "exceeds"),
    ):
        bad = copy.deepcopy(data)
        bad["sensitivity"][1]["floor"][key] = value
        _rejected(bad, m, "floor", match)
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    assert K.check(load_certificate(path), m).accepted


@pytest.mark.slow
def test_the_proof_artifact_kind(tmp_path):
    """A soft certificate as a proofs/ artifact: generated once, re-verified by the
    kernel; an edited file is caught by the manifest hash or by the checker."""
    from attncert.proofcheck.catalog import ArtifactSpec
    from attncert.proofcheck.manifest import Exhibits
    from attncert.proofcheck.regenerate import add_artifact
    from attncert.proofcheck.tree import check_artifact

    spec = ArtifactSpec(
        "hahn2020/theorem6/soft_parity_lm-n32",
        "soft_certificate",
        Exhibits("Hahn 2020", ("Lemma 5", "Theorem 6"), "certified B(32) and the PARITY floor"),
        {"n": 32, "restriction": True, "time_limit": 10},
        "zoo:soft_parity_lm",
    )
    target = add_artifact(tmp_path, spec)
    assert check_artifact(target, spec.path).ok
    cert = target / "certificate.json"
    data = json.loads(cert.read_text())
    data["sensitivity"][0]["bound"] /= 2
    cert.write_text(json.dumps(data))
    assert not check_artifact(target, spec.path).ok
