"""Certified soft bounds against brute force over every string (n ≤ 12).

For every model of the table and every n: the certified range of the logit contains the
logit of every string (per readout symbol), B(n) ≥ the true largest one-position change,
every certified restriction gets its decision on every completion, and the independent
checker's propagation agrees with the certifier's. The fractional program is exact
against enumeration. The big sweep (≥ 20 models) is marked slow; a representative
subset runs by default."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_model_v2 import v2_model

from attncert.kernel.soft import checker as K
from attncert.kernel.soft import propagate as KP
from attncert.model import forward, random_model, zoo_model
from attncert.model.spec import Mask
from attncert.soft.certified import rigorous as R
from attncert.soft.certified.fractional import first_layer_range
from attncert.soft.certified.propagate import propagate, restriction_inputs
from attncert.soft.certified.restriction import certify
from attncert.soft.certified.sensitivity import certify_sensitivity

__implements__ = ("Hahn Lemma 5",)


def _models_default():
    return [
        random_model(1, 1, 6, kind="softmax", seed=11),
        random_model(2, 2, 8, kind="softmax", seed=3, bos="B"),
        random_model(2, 1, 6, kind="softmax", seed=4, alphabet="abc", mask=Mask.FUTURE),
        v2_model(0),
        v2_model(1, norm_position="post", activation="relu", readout="last"),
        zoo_model("soft_parity_lm"),
        zoo_model("soft_parity_ln"),
    ]


def _models_sweep():
    out = []
    for seed in range(8):
        out.append(
            random_model(1 + seed % 2, 1 + seed % 3, 6 + 2 * (seed % 3), kind="softmax", seed=seed)
        )
        out.append(
            random_model(
                2,
                2,
                6,
                kind="softmax",
                seed=100 + seed,
                mask=[Mask.NONE, Mask.FUTURE][seed % 2],
                eos="E",
            )
        )
    for seed, kw in enumerate(
        [
            {},
            {"norm_position": "post"},
            {"activation": "gelu_tanh", "readout": "last"},
            {"activation": "relu", "readout": "mean"},
            {"norm_position": "post", "activation": "gelu", "readout": "first"},
        ]
    ):
        out.append(v2_model(10 + seed, **kw))
    out += [
        zoo_model("soft_parity"),
        zoo_model("soft_parity_lm"),
        zoo_model("soft_dyck2_lm"),
        zoo_model("soft_parity_ln"),
    ]
    return out


def _logits(model, strings):
    return forward(model, strings).logits


def _within(model, s: str, z: float, lo: float, hi: float) -> bool:
    """z (float) in [lo, hi]; if the float falls just outside, decide with arb."""
    if lo <= z <= hi:
        return True
    if min(abs(z - lo), abs(z - hi)) > 1e-9 * max(1.0, abs(z)):
        return False
    ball = K.logit_ball(model, s, 212)
    return bool(ball >= lo) and bool(ball <= hi)


def _brute(model, n: int):
    """{readout symbol: (strings, logits)} and the true largest one-position change."""
    strings = ["".join(t) for t in itertools.product(model.alphabet, repeat=n)]
    z = _logits(model, strings)
    index = {s: k for k, s in enumerate(strings)}
    r = KP.readout_index(model, n)
    off = model.input_offset()
    fixed = r - off if r is not None and 0 <= r - off < n else None
    change = 0.0
    for k, s in enumerate(strings):
        for p in range(n):
            if p == fixed:
                continue
            for c in model.alphabet:
                if c != s[p]:
                    change = max(change, abs(z[k] - z[index[s[:p] + c + s[p + 1 :]]]))
    groups = {}
    for k, s in enumerate(strings):
        groups.setdefault(None if fixed is None else s[fixed], []).append(k)
    return strings, z, groups, change


def _check_model(model, n):
    strings, z, groups, change = _brute(model, n)
    cs = certify_sensitivity(model, n)
    assert cs.bound >= change, (model.name, n, cs.bound, change)
    r = KP.readout_index(model, n)
    shared = None
    if cs.per_symbol[0].symbol is not None and not KP.split_by_symbol(model, r):
        shared = KP.propagate(model, "*" * n, True)[4]  # one pass, the readout's rows
    for j, sb in enumerate(cs.per_symbol):
        for k in groups[sb.symbol]:
            assert _within(model, strings[k], z[k], sb.z_lo, sb.z_hi), (model.name, n, strings[k])
        # the checker's own propagation re-derives the same numbers
        rho = ["*"] * n
        if shared is not None:
            _, k_lo, k_hi, k_ch, _ = shared[j]
        else:
            if sb.symbol is not None:
                rho[r - model.input_offset()] = sb.symbol
            k_lo, k_hi, k_ch, _, _ = KP.propagate(model, "".join(rho), True)
        assert k_lo == pytest.approx(sb.z_lo, rel=1e-9, abs=1e-12)
        assert k_hi == pytest.approx(sb.z_hi, rel=1e-9, abs=1e-12)
        assert k_ch == pytest.approx(sb.propagated, rel=1e-9, abs=1e-12)
    return strings, z


def _check_restrictions(model, n, strings, z, rng, tries=6):
    for _ in range(tries):
        base = strings[rng.integers(len(strings))]
        free = rng.random(n) < 0.35
        rho = "".join("*" if f else c for c, f in zip(base, free, strict=True))
        decision, p = certify(model, rho)
        comp = [
            k
            for k, s in enumerate(strings)
            if all(a in ("*", b) for a, b in zip(rho, s, strict=True))
        ]
        for k in comp:
            assert _within(model, strings[k], z[k], p.z_lo, p.z_hi)
            if decision is not None:
                assert (z[k] > 0) == decision or abs(z[k]) < 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("model", _models_default(), ids=lambda m: m.name)
def test_bounds_hold_on_every_string(model):
    rng = np.random.default_rng(0)
    for n in (3, 6) if len(model.alphabet) > 2 else (4, 8):
        strings, z = _check_model(model, n)
        _check_restrictions(model, n, strings, z, rng)


@pytest.mark.slow
@pytest.mark.parametrize("model", _models_sweep(), ids=lambda m: m.name)
def test_bounds_hold_on_every_string_sweep(model):
    rng = np.random.default_rng(1)
    ns = (2, 5, 7) if len(model.alphabet) > 2 else (2, 7, 12)
    for n in ns:
        strings, z = _check_model(model, n)
        _check_restrictions(model, n, strings, z, rng, tries=12)


def test_sweep_has_at_least_twenty_models():
    assert len(_models_sweep()) >= 20


def test_fractional_program_is_exact_against_enumeration():
    """The certified max/min of Σ e(τ_w) v(τ_w) / Σ e(τ_w) over one option per key equals
    the enumerated optimum up to the certification margin (points, no masking)."""
    rng = np.random.default_rng(5)
    for trial in range(6):
        w, kk, c = 7, 3, 4
        n_tok = w
        q = rng.standard_normal((n_tok, kk, 2))
        k = rng.standard_normal((n_tok, kk, 2)) * (1 + trial)
        v = rng.standard_normal((n_tok, kk, c))
        valid = np.ones((n_tok, kk), dtype=bool)
        valid[2, 2] = False
        lo, hi = first_layer_range(
            (q, q), (k, k), (v, v), valid, (1.0, 1.0), Mask.NONE, np.array([0])
        )
        best_hi, best_lo = np.full(c, -np.inf), np.full(c, np.inf)
        for qi in range(kk):
            opts = [range(kk) if j else [qi] for j in range(w)]
            for choice in itertools.product(*opts):
                if not all(valid[j, t] for j, t in enumerate(choice)):
                    continue
                s = np.array([q[0, qi] @ k[j, t] for j, t in enumerate(choice)])
                e = np.exp(s - s.max())
                avg = (e[:, None] * np.array([v[j, t] for j, t in enumerate(choice)])).sum(
                    0
                ) / e.sum()
                best_hi, best_lo = np.maximum(best_hi, avg), np.minimum(best_lo, avg)
        hi0 = np.where(valid[0][:, None], hi[0], -np.inf).max(axis=0)  # over query tokens
        lo0 = np.where(valid[0][:, None], lo[0], np.inf).min(axis=0)
        assert np.all(hi0 >= best_hi) and np.all(lo0 <= best_lo)
        assert np.allclose(hi0, best_hi, atol=1e-3) and np.allclose(lo0, best_lo, atol=1e-3)


def test_one_key_weight_bound_is_attained():
    """e^Δ/(e^Δ + n − 1): a uniform-query head whose key score is 0 or Δ for the two
    symbols — the certified α at the readout equals the weight of one high key among
    low ones (up to the exp table's 2⁻¹⁵)."""
    import dataclasses

    m = random_model(1, 1, 4, kind="softmax", seed=2)
    h = m.layers[0].heads[0]
    wq = np.zeros_like(h.w_q)
    wq[0, 0] = 1.0
    head = dataclasses.replace(h, w_q=wq, w_k=np.zeros_like(h.w_k))
    emb = dataclasses.replace(m.embedding, pos_weight=np.zeros_like(m.embedding.pos_weight))
    word = np.zeros_like(emb.word)
    word[:, 0] = 1.0
    word[1, 1] = 1.0  # symbol '1' carries a key direction
    wk = np.zeros_like(h.w_k)
    wk[0, 1] = 3.0
    head = dataclasses.replace(head, w_k=wk)
    layer = dataclasses.replace(m.layers[0], heads=(head,))
    model = dataclasses.replace(m, embedding=dataclasses.replace(emb, word=word), layers=(layer,))
    n = 50
    p = propagate(
        model,
        dataclasses.replace(restriction_inputs(model, "*" * n), changeable=np.ones(n, dtype=bool)),
    )
    delta = 3.0
    exact = np.exp(delta) / (np.exp(delta) + n - 1)
    assert exact <= max(p.alpha_readout) <= exact * (1 + 2**-14)


def test_rigorous_claims_are_outward():
    lo, hi = R.affine(np.zeros((1, 2)), np.ones((1, 2)), np.array([[1.0, -1.0]]), np.array([0.1]))
    assert lo[0, 0] < -0.9 and hi[0, 0] > 1.1 and lo[0, 0] > -0.9 - 1e-12


def test_doctests():
    import doctest
    import importlib

    for name in (
        "attncert.soft.certified.propagate",
        "attncert.soft.certified.sensitivity",
        "attncert.soft.certified.certify",
    ):
        result = doctest.testmod(importlib.import_module(name))
        assert result.failed == 0 and result.attempted > 0, name
