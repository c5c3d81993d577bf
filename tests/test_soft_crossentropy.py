"""Theorem 6 cross-entropy: exact sums agree with a direct sum over all strings."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from attncert.errors import InputError
from attncert.languages.distributions import DyckDistribution, ParityDistribution
from attncert.model import forward, random_model, zoo_model
from attncert.soft.crossentropy import (
    bracket_type_excess,
    model_cross_entropy,
    next_symbol_logprobs,
)
from attncert.soft.missing_term import missing_term_table, pair_terms

__implements__ = (
    "Hahn Theorem 6",
    "Hahn S2 eq. (34)",
    "Hahn S2 eq. (35)",
)

PAR = ParityDistribution("1/4")
DYCK = DyckDistribution("3/10")
PAR_LM = zoo_model("soft_parity_lm")
DYCK_LM = zoo_model("soft_dyck2_lm")


def _direct(model, dist, n):
    """Σ over all |Σ|^n strings x of P(x | length ≥ n) · Σ_σ −P(σ|x) log q(σ|x), one
    forward call per string, probabilities from the string's own prefix probability."""
    total, z = 0.0, 0.0
    for t in itertools.product(dist.input_symbols, repeat=n):
        x = "".join(t)
        px = float(dist.prefix_probability(x))
        if px == 0:
            continue
        logits = forward(model, [x]).lm_logits[0, -1]
        logq = logits - np.logaddexp.reduce(logits)
        ce = 0.0
        for s, p in dist.next_symbol_probs(x).items():
            if p > 0:
                ce -= float(p) * logq[model.readout.lm_symbols.index(s)]
        total += px * ce
        z += px
    return total / z


@pytest.mark.parametrize(
    "model,dist,ns", [(PAR_LM, PAR, range(1, 7)), (DYCK_LM, DYCK, range(1, 5))]
)
def test_exact_cross_entropy_matches_direct_sum(model, dist, ns):
    for n in ns:
        pt = model_cross_entropy(model, dist, n, method="exact")
        assert pt.model_ce == pytest.approx(_direct(model, dist, n), rel=1e-10)
        assert pt.optimal <= pt.model_ce + 1e-12
        assert pt.half_width == 0 and pt.method == "exact"


def test_sampled_cross_entropy_agrees_with_exact_within_its_interval():
    exact = model_cross_entropy(PAR_LM, PAR, 8, method="exact")
    samp = model_cross_entropy(PAR_LM, PAR, 8, method="sample", samples=3000, seed=3)
    assert abs(samp.model_ce - exact.model_ce) <= samp.half_width


@pytest.mark.slow
def test_trained_parity_model_learns_short_prefixes_and_tends_to_chance():
    """Theorem 6 on the shipped model: near optimal at n = 1, near unigram chance at
    n = 256 (the gap optimum → chance is 0.096 nats at p = 1/4)."""
    short = model_cross_entropy(PAR_LM, PAR, 1)
    assert short.model_ce - short.optimal < 0.02
    long = model_cross_entropy(PAR_LM, PAR, 256, samples=600, seed=0)
    assert long.model_ce > long.unigram - 0.02 - long.half_width
    assert long.unigram - long.optimal == pytest.approx(0.0956, abs=1e-3)


def test_bracket_type_excess_on_dyck():
    frac, loss = bracket_type_excess(DYCK_LM, DYCK, 32, samples=300)
    assert 0.2 < frac < 0.8 and loss > 0
    assert not math.isnan(loss)


def test_models_without_a_matching_head_are_refused():
    with pytest.raises(InputError, match="no next-symbol head"):
        model_cross_entropy(random_model(1, 1, 4, kind="softmax"), PAR, 2)
    with pytest.raises(InputError, match="no symbol"):
        next_symbol_logprobs(PAR_LM, ["()"], DYCK)


def test_missing_term_triangle_inequality_and_published_failure():
    """On real pairs ‖Δb‖ ≤ original + extra always (S2's corrected inequality); the
    published inequality (original alone) fails on real pairs of the trained model."""
    rows = missing_term_table(PAR_LM, [8, 32], pairs=2)
    assert rows
    for r in rows:
        assert r.lhs <= r.original + r.extra + 1e-12
    assert any(r.published_fails for r in rows)
    rng = np.random.default_rng(0)
    model = random_model(2, 2, 6, kind="softmax", seed=9)
    for _ in range(5):
        x = rng.integers(0, 2, 10)
        for r in pair_terms(model, x, int(rng.integers(0, 9)), 1):
            assert r.lhs <= r.original + r.extra + 1e-12
