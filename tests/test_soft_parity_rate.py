"""Proposition (PARITY rate): the one-residue-class family, the certified inequality (†)
margin ≤ Σ|Δ²O| / (4(K−1)), the exact profile of ``soft_parity`` and the rigorous
one-layer mass bound Σ_k |Δ²O(k)| ≤ C/N."""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from attncert.errors import ParameterError, UnsupportedError
from attncert.languages import language
from attncert.model import forward, forward_exact, random_model
from attncert.model.positional import PosFeature
from attncert.model.spec import FeedForward, Mask, Temperature
from attncert.soft.models import soft_parity, soft_parity_exact_twin
from attncert.soft.parity_rate import (
    family_logits,
    family_profile,
    one_layer_mass_bound,
    rate_table,
    residue_family,
)

PARITY = language("parity")


def _replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


# ----------------------------------------------------------------------------- family


@pytest.mark.parametrize("n", [1, 2, 5, 8, 11])
@pytest.mark.parametrize("residue", [1, 2])
def test_residue_family_is_the_prefixes_of_one_parity_class(n, residue):
    fam = residue_family(n, residue)
    cls = [p for p in range(1, n + 1) if p % 2 == residue % 2]
    assert len(fam) == len(cls) + 1
    for k, x in enumerate(fam):
        assert len(x) == n and set(x) <= {"0", "1"}
        assert [p for p in range(1, n + 1) if x[p - 1] == "1"] == cls[:k]
    if cls:
        assert residue_family(n, residue, exclude=cls[-1:]) == fam[:-1]


def test_residue_family_rejects_bad_parameters():
    with pytest.raises(ParameterError, match="residue"):
        residue_family(8, 3)
    with pytest.raises(ParameterError, match="n ≥ 1"):
        residue_family(0)


# ----------------------------------------------------------------------------- soft_parity


@pytest.mark.parametrize("n", [16, 64, 256])
def test_soft_parity_profile_is_exact_with_constant_second_differences(n):
    N = n + 2
    p = family_profile(soft_parity(), n)
    assert p.exact and p.sign_correct and p.first_failure is None
    K = (n + 1) // 2
    assert p.K == K and p.n_tokens == N
    assert p.logits == tuple(Fraction((-1) ** k, N * N) for k in range(K + 1))
    assert all(abs(v) == Fraction(4, N * N) for v in p.second_differences)
    assert len(p.second_differences) == K - 1
    assert p.margin == Fraction(1, N * N)
    assert p.second_difference_mass == Fraction(4 * (K - 1), N * N)
    # (†) holds with equality for this model
    assert p.inequality_holds and p.implied_margin_bound == p.margin


def test_soft_parity_rates_converge():
    """n·mass = 2n(n−2)/(n+2)² → 2 (increasing), n²·margin = n²/(n+2)² → 1."""
    t = rate_table(soft_parity(), [16, 64, 256])
    n_mass = [r.n_mass for r in t.rows]
    assert n_mass == pytest.approx([2 * n * (n - 2) / (n + 2) ** 2 for n in (16, 64, 256)])
    assert n_mass[0] < n_mass[1] < n_mass[2] < 2 and 2 - n_mass[2] < 0.05
    n2m = [r.n2_margin for r in t.rows]
    assert n2m[0] < n2m[1] < n2m[2] < 1 and 1 - n2m[2] < 0.02
    assert abs(t.margin_exponent + 2) < 0.1 and abs(t.mass_exponent + 1) < 0.15


def test_exact_path_agrees_with_the_exact_twin_and_with_float():
    """Three evaluators agree: the uniform-average exact path, forward_exact on the
    average-hard twin, and the float64 forward pass."""
    m, twin = soft_parity(), soft_parity_exact_twin()
    strings = residue_family(7, 2)
    exact, is_exact = family_logits(m, strings)
    assert is_exact
    assert exact == tuple(forward_exact(twin, x).logit_fraction() for x in strings)
    assert np.allclose(forward(m, list(strings)).logits, [float(v) for v in exact], atol=1e-15)


def test_inequality_on_every_string_pattern_small_n():
    """(†) is a statement about sign patterns: check it against brute force on the
    family of every n ≤ 10, both residues, for soft_parity (sign-correct everywhere)."""
    for n, res in itertools.product(range(3, 11), (1, 2)):
        p = family_profile(soft_parity(), n, res)
        assert p.sign_correct and p.inequality_holds is (True if p.K >= 2 else None)
        xs = residue_family(n, res)
        assert [PARITY.contains(x) for x in xs] == [v > 0 for v in p.logits]


def _mutants():
    m = soft_parity()
    flipped = _replace(m, readout=_replace(m.readout, weight=-m.readout.weight), name="flip")
    # break the cos(πi) FFN of layer 2: g = ReLU(B − ½ + ½cos) − ReLU(B − ½ + ½cos) = 0
    ffn = m.layers[1].ffn
    w1 = ffn.w1.copy()
    w1[1] = w1[0]
    broken = _replace(
        m,
        layers=(
            m.layers[0],
            _replace(m.layers[1], ffn=FeedForward(w1, ffn.b1, ffn.w2, ffn.b2)),
            *m.layers[2:],
        ),
        name="broken_cos",
    )
    # shift the layer-1 triangle by one position: B_i = [i = k+2]/N, so the sign flips
    l1 = m.layers[0].ffn
    w1s = l1.w1.copy()
    w1s[:, 3] = w1s[:, 3] + 1.0  # t + 1/N more: the peak moves one position right
    shifted = _replace(
        m,
        layers=(_replace(m.layers[0], ffn=FeedForward(w1s, l1.b1, l1.w2, l1.b2)), *m.layers[1:]),
        name="shifted",
    )
    return [flipped, broken, shifted]


@pytest.mark.parametrize("mutant", _mutants(), ids=lambda m: m.name)
def test_mutated_models_are_not_sign_correct_with_the_first_failing_k(mutant):
    n = 12
    p = family_profile(mutant, n)
    assert not p.sign_correct
    # independent: the first family string whose float decision disagrees with PARITY
    xs = residue_family(n, 1)
    acc = forward(mutant, list(xs)).accept
    first = next(k for k, x in enumerate(xs) if bool(acc[k]) != PARITY.contains(x))
    assert p.first_failure == first


def test_complement_convention():
    m = soft_parity()
    odd = _replace(m, readout=_replace(m.readout, weight=-m.readout.weight), name="odd")
    assert family_profile(odd, 10, accepts_even=False).sign_correct
    assert family_profile(m, 10, accepts_even=False).first_failure == 0


# ----------------------------------------------------------------------------- 1-layer bound


def _one_layer_models():
    out = []
    for seed in range(3):
        for kw in ({}, {"bos": "^"}, {"eos": "$"}, {"bos": "^", "eos": "$"}):
            out.append(random_model(1, 1, 4, kind="softmax", seed=seed, **kw))
    m = random_model(
        1,
        1,
        3,
        kind="softmax",
        seed=7,
        features=(PosFeature("1"), PosFeature("i/n"), PosFeature("cos(pi*i)"), PosFeature("1/n")),
        eos="$",
    )
    out.append(_replace(m, readout=_replace(m.readout, position="first")))
    out.append(
        random_model(
            1, 1, 3, kind="softmax", seed=8, features=(PosFeature("i/n"), PosFeature("(-1)^n"))
        )
    )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("model", _one_layer_models(), ids=lambda m: m.name)
def test_one_layer_bound_dominates_measured_mass(model):
    b = one_layer_mass_bound(model)
    assert b.C > 0
    lo, hi = b.score_range
    for n in (9, 32, 128):
        for res in (1, 2):
            p = family_profile(model, n, res)
            assert not p.exact
            N = model.n_tokens(n)
            assert float(p.second_difference_mass) <= b.bound(n, N - n)
            # enclosure of the scores (the base of ρ): every real score lies in it
            xs = residue_family(n, res, exclude=[] if not p.positions else _excluded(model, n))
            tr = forward(model, list(xs))
            r = model.readout.index(N)
            beta = model.layers[0].heads[0].temperature(N)
            sc = beta * tr.layers[0].scores[:, 0, r, :]
            assert lo <= sc.min() and sc.max() <= hi


def _excluded(model, n):
    r = model.readout.index(model.n_tokens(n)) - model.input_offset() + 1
    return [r] if 1 <= r <= n else []


@pytest.mark.slow
@pytest.mark.parametrize("model", _one_layer_models()[:6], ids=lambda m: m.name)
def test_channel_lemmas_hold_along_the_family(model):
    """Lemma R1 (|ΔR| ≤ P/N, |Δ²R| ≤ Q/N²) per channel, and Lemma R2 (the ReLU argument
    changes sign at most degree + 1 times), measured along the family."""
    b = one_layer_mass_bound(model)
    layer = model.layers[0]
    for n in (16, 64):
        for res in (1, 2):
            xs = residue_family(n, res, exclude=_excluded(model, n))
            N = model.n_tokens(n)
            r = model.readout.index(N)
            tr = forward(model, list(xs))
            c = tr.layers[0].head_values[:, 0, r, :]  # (K+1, d) head output at the readout
            u = tr.layers[0].after_attention[:, r, :]
            for cb in b.channels:
                if cb.name == "linear":
                    psi = model.readout.weight
                else:
                    j = int(cb.name[5:-1])
                    psi = layer.ffn.w1[j]
                    z = u @ layer.ffn.w1[j] + layer.ffn.b1[j]
                    nz = np.sign(z[z != 0])
                    assert int((nz[1:] != nz[:-1]).sum()) <= cb.degree + 1
                R = c @ psi
                assert np.abs(np.diff(R)).max(initial=0) <= float(cb.P) / N
                assert np.abs(np.diff(R, 2)).max(initial=0) <= float(cb.Q) / N**2


def test_one_layer_bound_refuses_models_outside_the_class():
    base = random_model(1, 1, 4, kind="softmax", seed=0)
    h = base.layers[0].heads[0]
    masked = _replace(
        base, layers=(_replace(base.layers[0], heads=(_replace(h, mask=Mask.FUTURE),)),)
    )
    with pytest.raises(UnsupportedError, match="masked") as e:
        one_layer_mass_bound(masked)
    assert e.value.where == "layers[0].heads[0]"
    unb = random_model(1, 1, 4, kind="softmax", seed=0, features=(PosFeature("1"), PosFeature("i")))
    with pytest.raises(ParameterError, match="unbounded") as e:
        one_layer_mass_bound(unb)
    assert e.value.where == "embedding.features[1]"
    with pytest.raises(UnsupportedError, match="2 layers"):
        one_layer_mass_bound(random_model(2, 1, 4, kind="softmax", seed=0))
    with pytest.raises(UnsupportedError, match="2 heads"):
        one_layer_mass_bound(random_model(1, 2, 4, kind="softmax", seed=0))
    with pytest.raises(UnsupportedError, match="'average'"):
        one_layer_mass_bound(random_model(1, 1, 4, kind="average", seed=0))
    growing = _replace(
        base,
        layers=(_replace(base.layers[0], heads=(_replace(h, temperature=Temperature(1.0, 1.0)),)),),
    )
    with pytest.raises(ParameterError, match="temperature"):
        one_layer_mass_bound(growing)
    inv_i = random_model(1, 1, 4, kind="softmax", seed=0, features=(PosFeature("1/i"),))
    with pytest.raises(UnsupportedError, match="not a polynomial"):
        one_layer_mass_bound(inv_i)


def test_bound_is_monotone_evidence_not_vacuous():
    """For a model with small scores the bound is within a modest factor of the truth
    (guards against a bound that is sound only because it is astronomically large)."""
    m = random_model(1, 1, 4, kind="softmax", seed=1)
    b = one_layer_mass_bound(m)
    measured = max(
        float(family_profile(m, 128, res).second_difference_mass) * 128 for res in (1, 2)
    )
    assert measured <= float(b.C) <= 1e4 * measured
    assert b.rho > 1 and mpmath.isfinite(b.C)


# ----- Lemmas A1 and A2 of docs/parity-rate.md (the all-depths proof) ------------------------


def _random_sequences(seed: int, count: int = 300):
    """Exact rational sequences of mixed shapes: random walks with drift, zigzags around 0,
    smooth-plus-zigzag, and sequences that touch 0 exactly."""
    from fractions import Fraction

    rng = np.random.default_rng(seed)
    for c in range(count):
        length = int(rng.integers(2, 40))
        kind = c % 4
        if kind == 0:
            steps = rng.integers(-5, 6, size=length)
            seq = np.cumsum(steps) + int(rng.integers(-10, 10))
        elif kind == 1:
            seq = (-1) ** np.arange(length) * rng.integers(0, 4, size=length)
        elif kind == 2:
            seq = np.arange(length) * int(rng.integers(-3, 4)) + 7 * (-1) ** np.arange(length)
            seq = seq - int(np.median(seq))
        else:
            seq = rng.integers(-2, 3, size=length)
        yield [Fraction(int(v), int(rng.integers(1, 5))) for v in seq]


def test_lemma_a1_crossing_mass_is_at_most_m_plus_v():
    from attncert.soft.parity_rate import crossing_mass, max_step, second_difference_mass

    tight = 0
    for h in _random_sequences(0):
        cm, m, v = crossing_mass(h), second_difference_mass(h), max_step(h)
        assert cm <= m + v, h
        tight += cm == m + v and cm > 0
    assert tight > 0  # the bound is attained (e.g. a single crossing, M = 0)


def test_lemma_a2_relu_keeps_the_mass_small():
    from fractions import Fraction

    from attncert.soft.parity_rate import max_step, second_difference_mass

    worst = Fraction(0)
    for h in _random_sequences(1):
        r = [max(v, Fraction(0)) for v in h]
        m, v = second_difference_mass(h), max_step(h)
        assert max_step(r) <= v
        assert second_difference_mass(r) <= 6 * m + 4 * v, h
        if m + v:
            worst = max(worst, second_difference_mass(r) / (6 * m + 4 * v))
    assert worst > Fraction(1, 10)  # not vacuous on these sequences
