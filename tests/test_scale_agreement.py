"""The fast paths of search and kernel agree with the slow ones and with brute force on
small instances: the kernel's float-facts path (``_attend_fast``) against its key-by-key
field check, the lean rigorous decision against the exact evaluator on every compatible
string, and certificates of the LayerNorm/GELU stand-ins of the benchmark against brute
force — plus mutated certificates rejected the same way by both kernel paths."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from attncert.hard.bruteforce import confirm_by_enumeration
from attncert.hard.pipeline import certify
from attncert.kernel.hard.checker import check
from attncert.kernel.hard.decide import decide
from attncert.languages import language
from attncert.model import forward_exact, harden, random_model

sys.path.insert(0, str(Path(__file__).parent))
from test_model_v2 import v2_model

HERE = Path(__file__).parent


def _bench_scale():
    spec = importlib.util.spec_from_file_location(
        "bench_scale", HERE.parent / "benchmarks" / "bench_scale.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = mod
    spec.loader.exec_module(mod)
    return mod


def _slow_kernel(monkeypatch):
    import attncert.kernel.hard.layers as kl

    monkeypatch.setattr(kl, "_attend_fast", lambda *a, **k: None)


MODELS = {
    "random-L2-H2-d8": lambda: random_model(2, 2, 8, seed=4),
    "random-average": lambda: random_model(2, 2, 8, seed=11, kind="average"),
    "random-rightmost-future": lambda: random_model(
        2, 2, 8, seed=2, kind="rightmost", mask="future"
    ),
    "v2-gelu-mean": lambda: harden(v2_model(5)),
    "standin-small": lambda: _bench_scale().standin_model(32, seed=2, d=16),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_kernel_fast_and_slow_paths_agree(name, monkeypatch):
    model = MODELS[name]()
    for n in (9, 12):
        cert = certify(model, n=n, language="parity")
        fast = check(cert, model)
        assert fast.accepted, fast.summary()
        with monkeypatch.context() as mp:
            _slow_kernel(mp)
            slow = check(cert, model)
        assert slow.accepted and slow.facts == fast.facts
        bf = confirm_by_enumeration(model, cert, language("parity"))
        assert bf.decision_is_function, bf.counterexample


@pytest.mark.slow
@pytest.mark.parametrize("name", ["random-L2-H2-d8", "random-average", "random-rightmost-future"])
def test_lean_decision_equals_the_exact_evaluator_on_every_compatible_string(name):
    model = MODELS[name]()
    cert = certify(model, n=10, language="parity")
    rho = cert.final_restriction
    for s in list(rho.completions())[:256]:
        assert decide(model, s) == forward_exact(model, s).accept, s


def test_a_shrunk_dependency_set_is_rejected_by_both_kernel_paths(monkeypatch):
    model = random_model(1, 1, 8, seed=5)
    cert = certify(model, n=16, language="parity", k=3)
    layer = cert.dependency_sets[0]
    i = max(range(len(layer)), key=lambda t: len(layer[t]))
    assert len(layer[i]) >= 2
    own = set(cert.restrictions[0].free_positions) & set(layer[i])
    drop = next(u for u in layer[i] if u != i or len(own) == 1)
    shrunk = tuple(tuple(u for u in s if u != drop) if t == i else s for t, s in enumerate(layer))
    bad = dataclasses.replace(cert, dependency_sets=(shrunk,))
    fast = check(bad, model)
    with monkeypatch.context() as mp:
        _slow_kernel(mp)
        slow = check(bad, model)
    for report in (fast, slow):
        assert not report.accepted
        assert report.failures[0].claim == "dependency_sets", report.failures[0]
    assert fast.failures[0].where == slow.failures[0].where
