"""Restriction certificates for models people train (LayerNorm, GELU, biases, post-norm,
mean/first readouts): the kernel accepts what the search finds, brute force over every
compatible input agrees, mutated models are rejected with a reason, and the kernel does
not share the search's collapse (a bug planted there is caught)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from attncert.hard.bruteforce import confirm_by_enumeration
from attncert.hard.certificate import save_certificate
from attncert.hard.pipeline import certify
from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.hard.checker import check
from attncert.kernel.hard.decide import decide
from attncert.languages import language
from attncert.model import forward, harden, model_from_dict, model_to_dict, random_model

sys.path.insert(0, str(Path(__file__).parent))
from test_model_v2 import v2_model

VARIANTS = [
    {},
    {"norm_position": "post", "readout": "last"},
    {"activation": "gelu_tanh", "readout": "last"},
    {"activation": "relu", "readout": "first"},
]


@pytest.mark.slow
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
@pytest.mark.parametrize("seed", [0, 5])
def test_certificates_on_layernorm_gelu_models_agree_with_brute_force(seed, variant):
    m = harden(v2_model(seed, **VARIANTS[variant]))
    for n in (8, 10):  # n = 14 on more models: the slow sweep below
        cert = certify(m, n=n, language="parity")
        report = check(cert, m)
        assert report.accepted, report.summary()
        assert report.arithmetic.startswith("arb")
        bf = confirm_by_enumeration(m, cert, language("parity"))
        assert bf.decision_is_function, bf.counterexample
        if cert.misclassified is not None:
            a, b = cert.misclassified.strings
            assert decide(m, a) == decide(m, b)


@pytest.mark.slow
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
@pytest.mark.parametrize("seed", range(2, 8))
def test_brute_force_at_n_14_for_many_layernorm_models(seed, variant):
    m = harden(v2_model(seed, **VARIANTS[variant]))
    cert = certify(m, n=14, language="parity")
    assert check(cert, m).accepted
    assert confirm_by_enumeration(m, cert).decision_is_function


def test_rigorous_float_and_exact_evaluators_agree():
    """The rigorous pass encloses the float logit (LayerNorm/GELU models, soft and hard)
    and equals the exact rational evaluator on models of the original class."""
    from attncert.model import forward_exact

    rng = np.random.default_rng(0)
    for seed in range(3):
        for variant in VARIANTS:
            for m in (v2_model(seed, **variant), harden(v2_model(seed, **variant))):
                for n in (1, 5, 9):
                    s = "".join(rng.choice(["0", "1"], n))
                    tr = forward_rigorous(m, s)
                    lo, hi = tr.logit_interval()
                    fl = float(forward(m, [s]).logits[0])
                    assert float(lo) - 1e-9 <= fl <= float(hi) + 1e-9
                    assert hi - lo < 1e-6
    for seed in range(4):
        m = random_model(2, 2, 8, seed=seed)
        for s in ("0", "0110", "111000111"):
            a, b = forward_rigorous(m, s), forward_exact(m, s)
            assert a.precision is None and a.logit == b.logit and a.accept == b.accept


def _mutate(model, edit):
    d = model_to_dict(model)
    edit(d)
    return model_from_dict(d)


MUTATIONS = {
    "negate the first LayerNorm's weight": lambda d: d["layers"][0]["norm1"].__setitem__(
        "weight", [-w for w in d["layers"][0]["norm1"]["weight"]]
    ),
    "shift the second LayerNorm's bias": lambda d: d["layers"][0]["norm2"].__setitem__(
        "bias", [b + 3.0 for b in d["layers"][0]["norm2"]["bias"]]
    ),
    "negate the final norm": lambda d: d["final_norm"].__setitem__(
        "weight", [-w for w in d["final_norm"]["weight"]]
    ),
    "GELU → tanh-GELU": lambda d: d["layers"][1]["ffn"].__setitem__("activation", "gelu_tanh"),
    "ε × 10⁵": lambda d: d["layers"][1]["norm1"].__setitem__("eps", 1.0),
}


@pytest.mark.slow
def test_mutating_layernorm_or_gelu_weights_is_rejected():
    m = harden(v2_model(5, activation="gelu", readout="last"))
    cert = certify(m, n=10, language="parity")
    assert check(cert, m).accepted
    rejected_on_claims = 0
    for name, edit in MUTATIONS.items():
        bad = _mutate(m, edit)
        report = check(cert, bad)
        assert not report.accepted and report.failures[0].claim == "model", name
        assert "hashes to" in report.failures[0].reason
        # the same claims, re-addressed to the mutated model: rejected with a reason, or
        # (if accepted) true of the mutated model, as brute force confirms
        moved = dataclasses.replace(cert, model_sha256=bad.digest)
        report = check(moved, bad)
        if report.accepted:
            assert confirm_by_enumeration(bad, moved).decision_is_function, name
        else:
            f = report.failures[0]
            claims = ("dependency_sets", "output", "misclassified", "witness", "fixed_dependence")
            assert f.claim in claims, (name, f)
            assert f.reason and f.where
            rejected_on_claims += 1
    assert rejected_on_claims >= 2


def test_a_bug_planted_in_the_search_collapse_is_caught_by_the_kernel(monkeypatch):
    """Issue 18: the kernel does not share the search's code path. Make the search's
    collapse believe every head is captured by its blocker (it drops the candidates
    that could still win); the certificate it then produces claims too-small dependency
    sets, and the kernel rejects it."""
    import attncert.hard.collapse as search_collapse
    from attncert.hard.collapse import Capture

    model = random_model(1, 1, 8, seed=5)
    honest = certify(model, n=16, language="parity", k=3)  # k = 3 lets two keys stay live
    assert check(honest, model).accepted
    assert max(len(s) for layer in honest.dependency_sets for s in layer) >= 2

    real = search_collapse.analyze_head

    def buggy(*args, **kw):
        caps = real(*args, **kw)
        return tuple(tuple(Capture(c.blocker, (), c.tied, c.visible) for c in per) for per in caps)

    monkeypatch.setattr(search_collapse, "analyze_head", buggy)
    wrong = certify(model, n=16, language="parity", k=3, verify=False)
    assert wrong.dependency_sets != honest.dependency_sets
    monkeypatch.undo()
    report = check(wrong, model)
    assert not report.accepted
    f = report.failures[0]
    assert f.claim in ("dependency_sets", "output", "misclassified"), f
    assert "may be attended" in f.reason or "differ" in f.reason or "answers" in f.reason


def test_the_kernel_imports_neither_the_search_nor_a_solver():
    import subprocess

    code = (
        "import sys, attncert.kernel.hard.checker, attncert.kernel.hard.decide;"
        "bad=[m for m in sys.modules if m.startswith(('pysat','z3','attncert.hard.collapse',"
        "'attncert.hard.tables','attncert.hard.search','attncert.hard.stages',"
        "'attncert.hard.pipeline','attncert.soft','attncert.prove','attncert.cli'))];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_certificates_record_their_model_and_recheck_alone(tmp_path, capsys):
    from attncert.cli.main import main
    from attncert.hard.certificate import load_certificate, resolve_model
    from attncert.model import save_model

    m = harden(v2_model(1))
    cert = certify(m, n=8, language="parity")
    path = save_certificate(cert, tmp_path / "embedded.json")
    again = load_certificate(path)
    assert again.model_source and "embedded" in again.model_source
    assert resolve_model(again, path).digest == m.digest
    assert main(["check", str(path)]) in (0, 4, 5)
    capsys.readouterr()
    # a file model, by relative path
    soft = v2_model(1)
    mpath = save_model(soft, tmp_path / "models" / "soft.json")
    out = tmp_path / "certs" / "c.json"
    code = main(["certify", str(mpath), "--n", "8", "-o", str(out)])
    assert code in (0, 4, 5), capsys.readouterr()
    data = json.loads(out.read_text())
    assert data["model"]["source"] == {"path": "../models/soft.json", "harden": "leftmost"}
    assert main(["check", str(out)]) == code
    # the file changes: the hash no longer matches and the certificate is refused
    d = model_to_dict(soft)
    d["readout"]["bias"] = d["readout"]["bias"] + 1.0
    save_model(model_from_dict(d), mpath)
    capsys.readouterr()
    assert main(["check", str(out)]) == 1
    assert "hashes to" in capsys.readouterr().out
