"""Compiled softmax transformers agree with the interpreter (issue 6, "Must show").

Every library formula in every regime it supports: every node's rounded output
coordinate equals the interpreter's value at every position of every string up to
length 8 (|Σ| ≤ 3; 6 for |Σ| = 4) — 10 (resp. 8) in the slow run — and on random
strings of lengths up to 200.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from logic_strategies import formulas

from attncert.compile import compile_formula
from attncert.compile.agreement import all_strings, disagreements, node_outputs
from attncert.errors import UnsupportedError
from attncert.logic import LIBRARY, evaluate_batch

__implements__ = (
    "Yang Lemma 9",
    "Yang Theorem 12",
    "Yang Theorem 13",
    "Yang Theorem 15",
    "Yang Theorem 16",
    "Yang Corollary 17",
    "Yang Corollary 18",
    "Yang Theorem 20",
    "Yang Theorem 21",
    "Yang Corollary 22",
    "Yang Corollary 23",
)

CASES = [(name, reg) for name, nf in LIBRARY.items() for reg in nf.regimes()]


def _exhaustive(name: str, regime: str, short: int, long: int):
    nf = LIBRARY[name]
    model = compile_formula(nf.formula, regime=regime, alphabet=nf.alphabet)
    max_len = short if len(nf.alphabet) <= 3 else long
    strings = [w for n in range(1, max_len + 1) for w in all_strings(nf.alphabet, n)]
    assert disagreements(model, strings) == []
    return model


@pytest.mark.slow
@pytest.mark.parametrize(("name", "regime"), CASES)
def test_library_all_short_strings(name, regime):
    """The constructions (Theorem 12, Theorem 13, Theorem 15, Theorem 16, Theorem 20,
    Theorem 21; Corollary 17, Corollary 18, Corollary 22, Corollary 23) compute every
    library formula on all short strings."""
    _exhaustive(name, regime, 8, 6)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "regime"), CASES)
def test_library_all_strings_up_to_10(name, regime):
    _exhaustive(name, regime, 10, 8)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "regime"), CASES)
def test_library_sampled_long_strings(name, regime):
    nf = LIBRARY[name]
    model = compile_formula(nf.formula, regime=regime, alphabet=nf.alphabet)
    rng = random.Random(hash((name, regime)) & 0xFFFF)
    strings = []
    for n in (11, 17, 32, 63, 100, 150, 200):
        strings += ["".join(rng.choice(nf.alphabet) for _ in range(n)) for _ in range(6)]
    # Strings that make the attention patterns hardest: long runs, a single late symbol.
    for n in (64, 200):
        for a in nf.alphabet:
            for b in nf.alphabet:
                strings.append(a * (n - 1) + b)
                strings.append(b + a * (n - 1))
    assert disagreements(model, strings) == []


def test_outputs_are_exact_booleans():
    """Lemma 9 rounding: every designated coordinate is 0 or 1 up to float error."""
    nf = LIBRARY["parity-nopred"]
    model = compile_formula(nf.formula, regime="temperature", alphabet=nf.alphabet)
    out = node_outputs(model, all_strings("01", 9))
    assert np.all(np.minimum(np.abs(out), np.abs(out - 1)) < 1e-9)


def test_the_check_detects_a_wrong_model():
    """disagreements() is not vacuous: a model compiled for since, read as until, fails."""
    since = compile_formula("Q_a S Q_b", regime="temperature", alphabet="abc")
    until = compile_formula("Q_a U Q_b", regime="temperature", alphabet="abc")
    swapped = type(since)(
        alphabet=since.alphabet,
        embedding=since.embedding,
        layers=since.layers,
        readout=since.readout,
        name="wrong",
        meta=until.meta,
    )
    bad = disagreements(swapped, all_strings("abc", 4))
    assert bad and all(d.node == "Q_a U Q_b" for d in bad)


@settings(max_examples=30, deadline=None)
@given(formulas("ab", max_leaves=5))
def test_random_formulas_agree(f):
    strings = [w for n in range(1, 6) for w in all_strings("ab", n)]
    for regime in ("temperature", "unbounded", "future-masked"):
        try:
            model = compile_formula(f, regime=regime, alphabet="ab")
        except UnsupportedError:
            continue
        assert disagreements(model, strings) == [], (str(f), regime)
        # the decision at the last position is the root coordinate
        trace_accept = np.array([bool(v) for v in _accepts(model, strings[-32:])])
        truth = evaluate_batch(f, strings[-32:])[:, -1]
        assert np.array_equal(trace_accept, truth)


def _accepts(model, strings):
    from attncert.model import accepts

    return accepts(model, strings)
