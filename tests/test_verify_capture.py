"""The capture split ranking of the verify search (attncert.soft.verify.capture, issue 22).

The ranking is untrusted (it only chooses where to split), but what it computes is checked
against the float forward pass: on a one-layer model a free position's potential is
exactly how far its best symbol's score at the readout row is above the best fixed
token's, as the forward pass of the changed string scores them. And the proofs it enables
are re-checked by the kernel and, at small n, by brute force.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from attncert.compile import compile_formula
from attncert.languages import language
from attncert.model import forward, random_model, zoo_model
from attncert.soft.verify import verify
from attncert.soft.verify.capture import capture_order, exact_for, potentials


def _exact_models():
    """Models on which the potentials are exact: one layer, or no head before the last."""
    return [
        zoo_model("trained_hard_first_last"),
        random_model(1, 2, 8, kind="softmax", seed=3),
        random_model(1, 1, 8, kind="softmax", seed=11, bos="^"),
        compile_formula("Q_1 S Q_0", "temperature", alphabet="01"),  # FFN layer, then a head
    ]


@pytest.mark.parametrize("model", _exact_models(), ids=lambda m: m.name)
def test_potentials_are_the_forward_pass_scores_where_exact(model):
    assert exact_for(model)
    n = 12
    rng = np.random.default_rng(0)
    for _ in range(3):
        base = "".join(rng.choice(list(model.alphabet), n))
        free = rng.random(n) < 0.5
        free[model.readout.index(model.n_tokens(n)) - model.input_offset()] = False
        rho = "".join("*" if f else c for c, f in zip(base, free, strict=True))
        got = potentials(model, rho, base)
        off, n_tok = model.input_offset(), model.n_tokens(n)
        r = model.readout.index(n_tok)
        fixed = np.ones(n_tok, dtype=bool)
        fixed[off : off + n][free] = False
        want = np.full(n, -np.inf)
        for p in np.flatnonzero(free):
            for a in model.alphabet:
                s = base[:p] + a + base[p + 1 :]
                scores = forward(model, [s]).layers[-1].scores[0]  # (H, N, N)
                for h, head in enumerate(model.layers[-1].heads):
                    row = scores[h, r]
                    pot = head.temperature(n_tok) * (row[off + p] - np.max(row[fixed]))
                    want[p] = max(want[p], pot)
        assert np.all(np.isneginf(got[~free]))
        np.testing.assert_allclose(got[free], want[free], rtol=1e-9, atol=1e-9)


def test_two_layer_models_are_not_exact():
    assert not exact_for(zoo_model("trained_hard_dyck1"))


def test_a_free_readout_position_is_split_first():
    model = zoo_model("trained_hard_first_last")
    n = 10
    assert capture_order(model, "*" * n, "0" * n)[0] == n - 1
    # nothing fixed to compete with (BOS-less, only the readout fixed… and it is free):
    # no other position is ranked
    assert list(capture_order(model, "*" * n, "0" * n)) == [n - 1]


def test_the_first_capturable_position_ranks_first():
    """First symbol 1, last 0: the readout looks for the leftmost 0 — the first free
    position can take its attention, and ranks first."""
    model = zoo_model("trained_hard_first_last")
    n = 16
    rho = "11" + "*" * (n - 3) + "0"
    order = capture_order(model, rho, "11" + "1" * (n - 3) + "0")
    assert order[0] == 2 and all(rho[p] == "*" for p in order)


@pytest.mark.slow
def test_a_trained_model_is_proved_correct_along_the_capture_chain():
    """trained_hard_first_last at n = 20: proved correct on all 2²⁰ strings (kernel-checked
    tree); the leaves form the capture chains (a few per position, not 2ⁿ; the same at
    n = 24, in 6 s rather than 4).
    (At n = 64 the blame order alone left the chains open past their middle: 24,933 open
    cubes after 54 s, docs/benchmarks.md.)"""
    model = zoo_model("trained_hard_first_last")
    out = verify(model, "first_last", 20, progress=False)
    assert out.check.accepted and out.proved == "correct" and out.undecided == 0
    # a model proved correct runs no witness search (was tests/test_verify_witness.py's,
    # at n = 16: the same run, to save one)
    assert out.stats.witness is None and "witness" not in out.stats.split_rules
    counts = out.leaf_counts()
    assert counts["open"] == 0 and counts["bound"] + counts["exhaustive"] <= 2 * 20
    # every split was chosen by the capture rule, and the summary says so
    assert out.stats.split_rules == {"capture": out.stats.splits} and out.stats.splits > 0
    assert f"splits: {out.stats.splits} ({out.stats.splits} capture, 0 blame" in out.summary()
    assert out.to_dict()["split_rules"] == {"capture": out.stats.splits}


def test_capture_trees_agree_with_brute_force():
    """At n = 10 the certified accuracy (exact, a point) equals brute force over every
    string, on models where the capture ranking chooses the splits."""
    lang = language("first_last")
    for model in (
        zoo_model("trained_hard_first_last"),
        random_model(1, 2, 8, kind="softmax", seed=3),
    ):
        out = verify(model, lang, 10, exhaustive=0, progress=False)
        assert out.leaf_counts()["bound"] > 0
        strings = ["".join(p) for p in itertools.product(model.alphabet, repeat=10)]
        acc = forward(model, strings, keep_attention=False).accept
        right = sum(bool(a) == lang.contains(s) for a, s in zip(acc, strings, strict=True))
        assert out.check.accepted and out.lower <= right / len(strings) <= out.upper


def test_a_perturbed_trained_model_is_not_proved_correct():
    """The chain proof must say no when the model is wrong: with the [i=1] feature's
    embedding weight halved, trained_hard_first_last errs on a quarter of the strings, and
    verify proves it wrong (an arb-confirmed witness) with brute force inside its
    interval."""
    model = zoo_model("trained_hard_first_last")
    emb = model.embedding
    k = [f.name for f in emb.features].index("[i=1]")
    w = emb.pos_weight.copy()
    w[:, k] *= 0.5
    bad = dataclasses.replace(model, embedding=dataclasses.replace(emb, pos_weight=w))
    lang, n = language("first_last"), 10
    strings = ["".join(p) for p in itertools.product(bad.alphabet, repeat=n)]
    acc = forward(bad, strings, keep_attention=False).accept
    right = sum(bool(a) == lang.contains(s) for a, s in zip(acc, strings, strict=True))
    assert 0 < right < len(strings)
    out = verify(bad, lang, n, exhaustive=0, progress=False)
    assert out.check.accepted and out.proved == "wrong" and out.verdict == "REFUTED"
    assert out.lower <= right / len(strings) <= out.upper and out.lower < 1
    assert out.leaf_counts()["bound"] > 0 and out.stats.split_rules.get("capture", 0) > 0


def test_the_string_by_string_budget_shrinks_with_the_square_of_n():
    from attncert.soft.verify.search import Budget

    b = Budget(exhaustive=4096, direct=64)
    assert b.at(16) == (4096, 64) and b.at(64) == (4096, 64)
    assert b.at(128) == (1024, 16) and b.at(1024) == (16, 1)
    assert Budget(exhaustive=0).at(4096) == (0, 1)  # one string is always evaluated
