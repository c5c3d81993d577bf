"""Claim 3 of the hard-attention checker (attncert.kernel.hard.layers, via kernel.hard.check)
against a brute-force oracle: a claimed dependency set S of activation y⁽ˡ⁾ᵢ under ρ_ℓ is
true iff any two completions of ρ_ℓ that agree on S give y⁽ˡ⁾ᵢ the same exact value
(attncert.model.exact, every completion enumerated). Every certificate the kernel accepts
after a dependency is dropped from one claimed set must be true by the oracle — on models
full of ties (no positional features: equal tokens tie structurally), under leftmost,
rightmost and average-hard heads and masks (issue 25's mutation analysis)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from attncert.arith.field import Field
from attncert.certificates.hard import Certificate
from attncert.hard.pipeline import certify
from attncert.kernel.hard import checker as hard
from attncert.kernel.hard import layers
from attncert.kernel.hard.checker import check
from attncert.model import random_model
from attncert.model.exact import forward_exact
from attncert.model.spec import Embedding, Head, Layer, Model, Readout
from attncert.restriction import Restriction

N = 8

MODELS = {
    "leftmost, ties": lambda: random_model(2, 2, 6, seed=2, features=()),
    "rightmost, ties": lambda: random_model(2, 1, 6, seed=5, kind="rightmost", features=()),
    "average, ties": lambda: random_model(2, 2, 6, seed=1, kind="average", features=()),
    "leftmost, causal": lambda: random_model(2, 2, 6, seed=3, mask="future"),
    "rightmost, anticausal": lambda: random_model(2, 1, 6, seed=4, kind="rightmost", mask="past"),
}


def _completions(rho):
    free = [i for i in range(rho.n) if rho.fixed[i] is None]
    for syms in itertools.product(rho.symbols, repeat=len(free)):
        s = list(rho.fixed)
        for u, c in zip(free, syms, strict=True):
            s[u] = c
        yield "".join(s)


def _holds(outputs: dict[str, list], i: int, deps: tuple[int, ...]) -> bool:
    """y_i is a function of the inputs at ``deps`` over the enumerated completions."""
    seen: dict[tuple[str, ...], object] = {}
    for s, rows in outputs.items():
        key = tuple(s[u] for u in deps)
        if seen.setdefault(key, rows[i]) != rows[i]:
            return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("path", ["fast", "slow"])
@pytest.mark.parametrize("name", list(MODELS))
def test_accepted_dependency_claims_are_true_by_brute_force(name, path, monkeypatch):
    """``slow``: the float facts never settle a head, so every attention choice goes
    through the key-by-key comparison (kernel.hard.layers._attend)."""
    if path == "slow":
        monkeypatch.setattr(layers, "_attend_fast", lambda *args, **kwargs: None)
    model = MODELS[name]()
    cert = certify(model, n=N, language="parity")
    assert check(cert, model).accepted
    # exact layer outputs of every completion of each ρ_ℓ
    outputs = []
    for ell in range(1, model.num_layers + 1):
        rho = cert.restrictions[ell]
        per = {}
        for s in _completions(rho):
            out = forward_exact(model, s).layers[ell - 1].output
            per[s] = [tuple(out[i, j] for j in range(out.ncols())) for i in range(out.nrows())]
        outputs.append(per)
    for ell, claimed in enumerate(cert.dependency_sets, start=1):
        for i, deps in enumerate(claimed):
            assert _holds(outputs[ell - 1], i, deps), (name, ell, i, deps)
    rejected = tampers = 0
    for ell, claimed in enumerate(cert.dependency_sets, start=1):
        for i, deps in enumerate(claimed):
            subsets = (
                [c for r in range(len(deps)) for c in itertools.combinations(deps, r)]
                if len(deps) <= 4
                else [tuple(v for v in deps if v != u) for u in deps]
            )
            for fewer in subsets:
                sets = list(cert.dependency_sets)
                sets[ell - 1] = tuple(fewer if t == i else s for t, s in enumerate(claimed))
                tampered = dataclasses.replace(cert, dependency_sets=tuple(sets))
                tampers += 1
                report = check(tampered, model)
                if report.accepted:
                    assert _holds(outputs[ell - 1], i, fewer), (name, ell, i, fewer)
                else:
                    rejected += 1
                    assert report.failures[0].claim == "dependency_sets", report.failures
                    assert report.failures[0].where.startswith(f"layer {ell}, "), report.failures
    # the tampering reached the checker's claim-3 logic
    assert rejected > 0 or tampers == 0, (name, tampers)


def _level_keys(model):
    """Every key of layer 1 scores 0: all keys tie exactly, but their values differ (not a
    structural tie) — the tie rule alone decides, and it decides the value."""
    first = model.layers[0]
    heads = tuple(dataclasses.replace(h, w_k=np.zeros_like(h.w_k)) for h in first.heads)
    layers = (dataclasses.replace(first, heads=heads), *model.layers[1:])
    return dataclasses.replace(model, layers=layers)


LEVEL = {
    "leftmost": lambda: _level_keys(random_model(2, 1, 4, seed=11, features=())),
    "rightmost": lambda: _level_keys(random_model(2, 1, 4, seed=12, kind="rightmost", features=())),
    "average": lambda: _level_keys(random_model(2, 1, 4, seed=13, kind="average", features=())),
    "leftmost, causal": lambda: _level_keys(
        random_model(2, 1, 4, seed=14, mask="future", features=())
    ),
    "rightmost, anticausal": lambda: _level_keys(
        random_model(2, 1, 4, seed=15, kind="rightmost", mask="past", features=())
    ),
    # position 0 sees no key, position 1 only position 0
    "average, strictly causal": lambda: _level_keys(
        random_model(2, 1, 4, seed=16, kind="average", mask="future_strict", features=())
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("path", ["fast", "slow"])
@pytest.mark.parametrize("name", list(LEVEL))
def test_claims_under_exact_non_structural_ties_against_brute_force(name, path, monkeypatch):
    """Every position free, every claimed set full (true), then every proper subset of
    every layer-1 set claimed instead: accepted only if true by brute force, and the
    subsets that drop the tie rule's winner are rejected."""
    if path == "slow":
        monkeypatch.setattr(layers, "_attend_fast", lambda *args, **kwargs: None)
    model = LEVEL[name]()
    n = 4
    free = Restriction(("0", "1"), (None,) * n, ("0", "1"))
    everything = tuple(range(n))
    cert = Certificate(  # every position free, every claim the full set: true
        model_sha256=model.digest,
        model_name=model.name,
        n=n,
        alphabet=model.alphabet,
        restrictions=(free,) * (model.num_layers + 1),
        dependency_sets=tuple((everything,) * n for _ in model.layers),
        output_position=model.readout.index(model.n_tokens(n)),
        output_dependency=everything,
    )
    assert check(cert, model).accepted
    per = {}
    for s in _completions(free):
        out = forward_exact(model, s).layers[0].output
        per[s] = [tuple(out[i, j] for j in range(out.ncols())) for i in range(out.nrows())]
    rejected = 0
    for i in range(n):
        for r in range(n):
            for fewer in itertools.combinations(everything, r):
                if i not in fewer:
                    continue  # the own input: rejected for a reason outside attention
                sets = list(cert.dependency_sets)
                sets[0] = tuple(fewer if t == i else everything for t in range(n))
                report = check(dataclasses.replace(cert, dependency_sets=tuple(sets)), model)
                true = _holds(per, i, fewer)
                if report.accepted:
                    assert true, (name, i, fewer)
                else:
                    rejected += 1
                    assert not true or name.startswith("average"), (name, i, fewer)
                    f = report.failures[0]
                    assert (f.claim, f.where.split(",")[:2]) == (
                        "dependency_sets",
                        ["layer 1", f" token position {i}"],
                    ), f
    assert rejected > 0


@pytest.mark.slow
@pytest.mark.parametrize("path", ["fast", "slow"])
@pytest.mark.parametrize("name", list(MODELS))
def test_the_checkers_decision_tables_equal_the_exact_forward_pass(name, path, monkeypatch):
    """The decisions the checker derives from its own tables (kernel.hard.checker._check_claims),
    for every completion of ρ_L, against the exact evaluator run on that completion."""
    if path == "slow":
        monkeypatch.setattr(layers, "_attend_fast", lambda *args, **kwargs: None)
    model = MODELS[name]()
    cert = certify(model, n=N, language="parity")
    _, (deps, base, decisions) = hard._check_claims(cert, model, Field(None), [])
    final = cert.final_restriction
    alpha = {c: k for k, c in enumerate(final.symbols)}
    for s in _completions(final):
        row = layers._row_of(deps, {u: alpha[s[u]] for u in deps}, base)
        assert decisions[row] == forward_exact(model, s).accept, (name, s)


@pytest.mark.parametrize("fix", [(2,), (5,), (2, 9), ()])
def test_restricting_a_table_is_looking_up_the_completed_assignment(fix):
    """A table over inputs {2, 5, 9} restricted by a ρ that fixes some of them: for every
    assignment of the inputs left free, the value is the original table's at that
    assignment completed by ρ — also when only part of the inputs is fixed."""
    from attncert.kernel.hard.layers import _assignments, _restrict, _row_of, _Table

    deps = (2, 5, 9)
    table = _Table(deps, tuple(range(100, 100 + 3**3)))  # every assignment its own value
    fixed = [None] * 12
    for u in fix:
        fixed[u] = "ab"[u % 2]
    rho = Restriction("abc", tuple(fixed))
    out = _restrict(table, rho)
    assert out.deps == tuple(u for u in deps if u not in fix)
    alpha = {"a": 0, "b": 1, "c": 2}
    for combo in _assignments(out.deps, 3):
        sym = dict(zip(out.deps, combo, strict=True))
        full = {u: sym[u] if u in sym else alpha[fixed[u]] for u in deps}
        assert out.vid[_row_of(out.deps, sym, 3)] == table.vid[_row_of(deps, full, 3)]


def _masked_constant_model():
    """One leftmost head under the causal mask, no positional features: the query of
    token 0 scores key 1 at 1 and key 0 at 0, the query of token 1 scores every key 0
    (a tie, leftmost wins); the value of token 1 adds 1 to coordinate 2."""
    head = Head(
        w_q=np.array([[1.0, 0.0]]),
        w_k=np.array([[0.0, 1.0]]),
        w_v=np.array([[0.0, 1.0]]),
        w_o=np.array([[0.0], [1.0]]),
        kind="leftmost",
        mask="future",
    )
    return Model(
        alphabet=("0", "1"),
        embedding=Embedding(vocab=("0", "1"), word=np.eye(2)),
        layers=(Layer((head,)),),
        # y₂ = (1, 1) when x₂ = 0 (rejected), (0, 2) when x₂ = 1 (accepted)
        readout=Readout(weight=np.array([-2.5, -1.0]), bias=3.0, position=2),
    )


@pytest.mark.parametrize("path", ["fast", "slow"])
def test_a_visible_fixed_key_beats_a_determined_free_key_despite_masked_fixed_keys(
    path, monkeypatch
):
    """ρ = 1·0 (x₂ free), claim S₂ = {2}: the query at position 2 sees the fixed 1 at
    position 1 (score 1 when x₂ = 0) and the free key x₂ (score 0), but not the fixed
    position 3 (causal mask). The fast path must keep the visible fixed key among the
    candidates although a masked fixed key shares its row of the constant pre-screen
    (kernel.hard.layers._Slots): the decision table equals the exact forward pass on every
    completion, and a certificate claiming the decision constant is refused."""
    if path == "slow":
        monkeypatch.setattr(layers, "_attend_fast", lambda *args, **kwargs: None)
    model = _masked_constant_model()
    rho = Restriction(("0", "1"), ("1", None, "0"))
    cert = Certificate(
        model_sha256=model.digest,
        model_name=model.name,
        n=3,
        alphabet=model.alphabet,
        restrictions=(rho, rho),
        dependency_sets=(((), (1,), (1,)),),
        output_position=1,
        output_dependency=(1,),
    )
    assert check(cert, model).accepted
    _, (deps, base, decisions) = hard._check_claims(cert, model, Field(None), [])
    exact = {s: forward_exact(model, s).accept for s in _completions(rho)}
    assert sorted(exact.values()) == [False, True]  # the decision does depend on x₂
    alpha = {c: k for k, c in enumerate(rho.symbols)}
    for s, accept in exact.items():
        assert decisions[layers._row_of(deps, {u: alpha[s[u]] for u in deps}, base)] == accept
    report = check(dataclasses.replace(cert, output_dependency=()), model)
    assert not report.accepted
    assert report.failures[0].claim == "output", report.failures
    assert "input position(s) {2}" in report.failures[0].reason, report.failures
