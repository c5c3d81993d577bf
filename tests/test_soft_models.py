"""The exact soft PARITY transformer, the trained next-symbol models, the zoo entries."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from attncert.languages import language
from attncert.languages.distributions import ParityDistribution
from attncert.model import forward, forward_exact, zoo_names
from attncert.model.zoo import zoo_model
from attncert.soft import bounds as B
from attncert.soft.models import (
    _batch,
    _init_params,
    lm_loss_and_grad,
    soft_parity,
    soft_parity_exact_twin,
)
from attncert.soft.sensitivity import exhaustive_sensitivity, sensitivity_profile

PARITY = language("parity")


def test_zoo_registers_the_soft_models():
    assert {"soft_parity", "soft_parity_lm", "soft_dyck2_lm"} <= set(zoo_names())
    assert zoo_model("soft_parity").digest == soft_parity().digest


def test_soft_parity_is_correct_on_every_string_up_to_length_12():
    model = soft_parity()
    for n in range(13):
        xs = ["".join(t) for t in itertools.product("01", repeat=n)]
        tr = forward(model, xs)
        k = np.array([x.count("1") for x in xs])
        assert np.array_equal(tr.accept, np.array([PARITY.contains(x) for x in xs]))
        # the logit is (−1)^k / N², N = n + 2 tokens, up to float rounding
        assert np.allclose(tr.logits, (-1.0) ** k / (n + 2) ** 2, rtol=0, atol=1e-14)


def test_soft_parity_logit_is_exactly_minus_one_to_the_k_over_n_squared():
    """All scores are equal, so the average-hard twin computes the same function; the
    exact evaluator gives logit = (−1)^k / N² exactly."""
    twin = soft_parity_exact_twin()
    for n in range(0, 8):
        for t in itertools.product("01", repeat=n):
            x = "".join(t)
            logit = forward_exact(twin, x).logit
            assert Fraction(int(logit.p), int(logit.q)) == Fraction(
                (-1) ** x.count("1"), (n + 2) ** 2
            )


def test_soft_parity_gap_decays_like_one_over_n_squared():
    """Measured max |Δlogit| is 2/(n+2)² (exhaustive at n = 8; search for larger n);
    fitted exponent over n = 64…1024 within −2 ± 0.05.  (Lemma 5 only says O(1/n);
    this construction — like Chiang & Cholak's before layer norm — has gap Θ(1/n²), the
    best possible rate without layer norm: Proposition (PARITY rate), docs/parity-rate.md,
    tests/test_soft_parity_rate.py.)"""
    assert exhaustive_sensitivity(soft_parity(), 8).value == pytest.approx(2 / 100, rel=1e-12)
    ns = [64, 128, 256, 512, 1024]
    prof = sensitivity_profile(soft_parity(), ns, seed=0, restarts=1, candidates=4)
    for r in prof.results:
        assert r.value == pytest.approx(2 / (r.n + 2) ** 2, rel=1e-6)
    assert abs(prof.exponent + 2) < 0.05
    # and it is within Lemma 5's (decaying) bound at every n
    c = B.lemma5_constants(soft_parity())
    for r in prof.results:
        assert r.value <= float(B.induction_bounds(c, r.n + 2).readout_change)


def test_lm_backpropagation_matches_finite_differences():
    rng = np.random.default_rng(0)
    params = _init_params(rng, 4, 5)
    tokens, targets = _batch(rng, ParityDistribution("1/4"), 5, 3)
    _, grad = lm_loss_and_grad(params, tokens, targets)
    for key in params:
        idx = tuple(int(rng.integers(0, s)) for s in params[key].shape)
        plus = {k: v.copy() for k, v in params.items()}
        minus = {k: v.copy() for k, v in params.items()}
        plus[key][idx] += 1e-6
        minus[key][idx] -= 1e-6
        fd = (
            lm_loss_and_grad(plus, tokens, targets)[0] - lm_loss_and_grad(minus, tokens, targets)[0]
        ) / 2e-6
        assert fd == pytest.approx(grad[key][idx], rel=1e-4, abs=1e-8), key


def test_lm_loss_equals_the_model_forward():
    """The training forward pass is the attncert model that gets saved."""
    model = zoo_model("soft_parity_lm")
    xs = ["0110", "1110", "0000"]
    tr = forward(model, xs)
    assert tr.lm_logits.shape == (3, 5, 3)
    assert model.readout.lm_symbols == ("0", "1", "$")


@pytest.mark.parametrize("name", ["soft_parity_lm", "soft_dyck2_lm"])
def test_shipped_models_load_with_their_hash(name):
    m = zoo_model(name)
    assert len(m.digest) == 64 and m.meta["training"]["seed"] == 0
    B.lemma5_constants(m)  # within Lemma 5's hypotheses
