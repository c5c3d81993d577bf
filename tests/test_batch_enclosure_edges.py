"""The batched logit enclosure (:mod:`attncert.kernel.soft.batch`) against exact values.

Attention's error terms, one test each, on hand-built inputs whose exact output is
computed in arb at 256 bits: powers of two make the float scores exact (or wrong in a
known way), so each case sits where the float result misses the exact value by more
than every *other* term allows — the test fails if its term is dropped from
:func:`attend` (checked by mutation, tests/test_batch_enclosure_edges.py's docstring in
the report of issue 42). Then the table exponential, RoPE's rotation, a block that
overflows, and whole models of every kind — LayerNorm/GELU encoders, RoPE/RMSNorm/SwiGLU
and ALiBi decoders, a grouped-query Llama built by transformers, strict masks, mean
readouts, large temperatures — against the arb forward pass on many strings: the
enclosure must hold the exact logit every time, and be narrow.
"""

from __future__ import annotations

import numpy as np
import pytest
from flint import arb, ctx

from attncert.arith.field import escalate
from attncert.kernel.core import trace as T
from attncert.kernel.soft import batch
from attncert.kernel.soft.batch import Rows, attend, decisions, logit_bounds, tokens
from attncert.model import random_model, zoo_model
from attncert.model.forward import forward

PREC = 256


def rows(mid, rad=0.0) -> Rows:
    """One string, one head: rows (R, w) with one radius each (a scalar or per row)."""
    m = np.asarray(mid, dtype=np.float64)
    r = np.broadcast_to(np.asarray(rad, dtype=np.float64), (m.shape[0],)).copy()
    return Rows(m[None, None], r[None, None, :, None])


def exact_attend(q, k, v, beta, slopes=0.0, vis=None, q_pos=None):
    """Σ_j softmax(β(q_i·k_j − m(i − j)))_j v_j in arb at 256 bits, for exact float inputs
    (lists of rows); rows of ``vis`` False are masked; a query seeing no key gives 0."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    n_q, n_k = len(q), len(k)
    vis = np.ones((n_q, n_k), dtype=bool) if vis is None else vis
    q_pos = np.arange(n_q) if q_pos is None else q_pos
    out = []
    with ctx.workprec(PREC):
        b = arb(beta)
        for i in range(n_q):
            zs = []
            for j in range(n_k):
                s = sum((arb(x) * arb(y) for x, y in zip(q[i], k[j], strict=True)), arb(0))
                zs.append(b * (s - arb(slopes) * (int(q_pos[i]) - j)) if vis[i, j] else None)
            live = [z for z in zs if z is not None]
            if not live:
                out.append([arb(0)] * v.shape[1])
                continue
            top = max(live, key=lambda z: float(z.mid()))
            w = [(z - top).exp() if z is not None else arb(0) for z in zs]
            den = sum(w, arb(0))
            out.append([sum((w[j] * arb(v[j, c]) for j in range(n_k)), arb(0)) / den
                        for c in range(v.shape[1])])  # fmt: skip
    return out


def assert_holds(got, exact):
    """Every exact coordinate lies in mid ± rad (the arb ball inside the interval)."""
    y, rad = got
    y, rad = y[0, 0], rad[0, 0]
    for i, row in enumerate(exact):
        for c, x in enumerate(row):
            lo, hi = y[i, c] - rad[i, c], y[i, c] + rad[i, c]
            assert lo <= float(x.lower()) and float(x.upper()) <= hi, (i, c, y[i, c], rad[i, c], x)


def call(q, k, v, beta, slopes=0.0, vis=None, q_pos=None):
    n_q, n_k = q.mid.shape[2], k.mid.shape[2]
    vis = np.ones((n_q, n_k), dtype=bool) if vis is None else vis
    q_pos = np.arange(n_q) if q_pos is None else np.asarray(q_pos)
    lo, hi = beta if isinstance(beta, tuple) else (beta, beta)
    return attend(q, k, v, [(lo, hi)], np.array([slopes]), vis, q_pos)


# ----------------------------------------------------------------------------- attention


def test_the_dot_products_rounding_is_covered():
    """q·k = 2⁻⁵⁹ exactly, but every summation order (with or without FMA) rounds a
    product (1 + 2⁻³⁰)² = 1 + 2⁻²⁹ + 2⁻⁶⁰ away: the float score is 0 or 2⁻⁶⁰. With β = 2⁵⁵
    the exact weights are σ(1/16), the float ones σ(0) or σ(1/32): only γ_{d_k}Σ|q||k| covers
    it (every radius is 0)."""
    a = 1 + 2.0**-30
    q, k = [[a, -1.0, a, -1.0]], [[a, 1 + 2.0**-29, a, 1 + 2.0**-29], [0.0] * 4]
    v = [[1.0], [0.0]]
    s = (np.array(q)[None, None] @ np.array(k).T[None, None])[0, 0, 0, 0]
    assert s != 2.0**-59  # the float score is off
    got = call(rows(q), rows(k), rows(v), 2.0**55)
    assert_holds(got, exact_attend(q, k, v, 2.0**55))


@pytest.mark.parametrize("which", ["key", "query"])
def test_a_row_radius_is_covered_at_its_corner(which):
    """One of four keys (or the query) is known to 2⁻¹⁶; at the corner of its box the
    exact exponent is 2⁻⁶ above the float one, and only that key's value is nonzero: the
    weight moves by ≈ 2⁻⁶·3/16, more than the normalisation shift alone allows."""
    qm, km = [[1.0]], [[0.0], [0.0], [0.0], [0.0]]
    v = [[1.0], [0.0], [0.0], [0.0]]
    if which == "key":
        q, k = rows(qm), rows(km, [2.0**-16, 0, 0, 0])
        exact = exact_attend(qm, [[2.0**-16], [0.0], [0.0], [0.0]], v, 2.0**10)
    else:  # the query's radius reaches every key: give key 0 the only nonzero k̃
        km = [[1.0], [0.0], [0.0], [0.0]]
        q, k = rows([[0.0]], 2.0**-16), rows(km)
        exact = exact_attend([[2.0**-16]], km, v, 2.0**10)
    got = call(q, k, rows(v), 2.0**10)
    assert got[1][0, 0, 0, 0] < 0.01  # the tight bound, not the hull
    assert_holds(got, exact)


def test_both_radii_together_are_covered():
    """q̃ = k̃ = 0 with radii 2⁻⁸: the exact score at the corner is d_k·2⁻¹⁶, which only
    the second-order term d_k·r_q·r_k sees."""
    q, k, v = rows([[0.0] * 4], 2.0**-8), rows([[0.0] * 4, [0.0] * 4], [2.0**-8, 0]), [[1.0], [0.0]]
    got = call(q, k, rows(v), 2.0**6)
    assert_holds(got, exact_attend([[2.0**-8] * 4], [[2.0**-8] * 4, [0.0] * 4], v, 2.0**6))


def test_the_temperatures_radius_is_covered():
    """β ∈ [1 − 2⁻¹⁰, 1 + 2⁻¹⁰] (an arb ball): at β's upper end the weights are not the
    midpoint's."""
    q, k, v = [[1.0]], [[1.0], [0.0]], [[1.0], [0.0]]
    got = call(rows(q), rows(k), rows(v), (1 - 2.0**-10, 1 + 2.0**-10))
    assert_holds(got, exact_attend(q, k, v, 1 + 2.0**-10))
    assert_holds(got, exact_attend(q, k, v, 1 - 2.0**-10))


def test_a_value_radius_is_covered():
    """ṽ = 0 known to 2⁻²⁰: every float term is 0, the exact output is 2⁻²⁰·p."""
    q, k = [[1.0]], [[1.0], [0.0]]
    got = call(rows(q), rows(k), rows([[0.0], [0.0]], 2.0**-20), 1.0)
    assert_holds(got, exact_attend(q, k, [[2.0**-20], [2.0**-20]], 1.0))


def test_the_normalisation_shift_is_covered():
    """Key 0's exponent moves by 2⁻⁶ while its value is 0: the other keys' weights (value
    1) all move by the normaliser's change, which only the η̄·Σp̂|ṽ| term covers."""
    km = [[0.0], [0.0], [0.0], [0.0]]
    v = [[0.0], [1.0], [1.0], [1.0]]
    got = call(rows([[1.0]]), rows(km, [2.0**-16, 0, 0, 0]), rows(v), 2.0**10)
    assert_holds(got, exact_attend([[1.0]], [[2.0**-16], [0.0], [0.0], [0.0]], v, 2.0**10))


def test_keys_below_the_exponential_table_are_covered():
    """Key 1's exponent is −64.5 (ê = 0: below the table) but its value is 2¹⁰⁰, so its
    exact weight e^−64.5 contributes ≈ 124 to the output: the τ·max‖ṽ‖ term."""
    q, k, v = [[1.0]], [[0.0], [-64.5]], [[0.0], [2.0**100]]
    got = call(rows(q), rows(k), rows(v), 1.0)
    assert float(exact_attend(q, k, v, 1.0)[0][0].lower()) > 100
    assert_holds(got, exact_attend(q, k, v, 1.0))


def test_a_key_below_the_table_that_its_error_could_lift_gives_the_hull():
    """Key 1's float exponent is −70 (ê = 0) but its radius 40 could lift it to −30,
    and its value 2⁶⁰ would then add ≈ 10⁵: not a negligible tail key — the row is the
    hull, which holds the exact output at that corner."""
    q, v = [[1.0]], [[0.0], [2.0**60]]
    got = call(rows(q), rows([[0.0], [-70.0]], [0, 40.0]), rows(v), 1.0)
    exact = exact_attend(q, [[0.0], [-30.0]], v, 1.0)
    assert float(exact[0][0].lower()) > 1e4
    assert_holds(got, exact)


def test_large_exponent_errors_short_of_the_hull():
    """Exponent errors up to the hull's threshold 1/16 on several keys, at the corner that
    moves every weight towards the largest values (the worst case for the bound)."""
    rng = np.random.default_rng(17)
    for _trial in range(40):
        n_k = int(rng.integers(2, 7))
        km = rng.normal(size=(n_k, 1))
        vm = rng.normal(size=(n_k, 1)) * 4
        r_k = rng.uniform(0, 1 / 17, size=n_k) * (rng.random(n_k) < 0.7)
        got = call(rows([[1.0]]), rows(km, r_k), rows(vm), 1.0)
        if got[1][0, 0, 0, 0] >= 4 * np.abs(vm).max():  # the hull: nothing to test
            continue
        for sign in (1.0, -1.0):  # raise the keys with large (or small) values
            ke = km + np.sign(vm) * sign * r_k[:, None]
            assert_holds(got, exact_attend([[1.0]], ke, vm, 1.0))


def test_a_large_exponent_error_gives_the_hull_and_a_blind_query_exact_zero():
    """η > 1/16 (a key radius of 2⁻⁴ at β = 4): the row is the hull 0 ± (max‖ṽ‖ + r_V),
    which holds; a query at position 0 under a strict causal mask sees no key: output 0,
    radius 0."""
    km = [[0.0], [0.0]]
    got = call(rows([[1.0], [1.0]]), rows(km, [2.0**-4, 0]), rows([[3.0], [-1.0]]), 4.0,
               vis=np.array([[False, False], [True, True]]), q_pos=[0, 1])  # fmt: skip
    y, rad = got[0][0, 0], got[1][0, 0]
    assert y[0, 0] == 0 and rad[0, 0] == 0
    assert y[1, 0] == 0 and rad[1, 0] >= 3.0  # the hull
    exact = exact_attend([[1.0], [1.0]], [[2.0**-4], [0.0]], [[3.0], [-1.0]], 4.0,
                         vis=np.array([[False, False], [True, True]]))  # fmt: skip
    assert_holds(got, exact)


def test_alibi_scores_are_covered():
    """ALiBi's −m(i − j) with m = fl(1/3) (not a dyadic fraction of small numerator: the
    product m·(i − j) rounds) and β = 2⁴⁴: exact and float exponents differ."""
    m = 1 / 3
    q, k = [[1.0]], [[0.0], [0.0], [0.0], [0.0]]
    v = [[1.0], [-1.0], [2.0], [0.5]]
    got = call(rows(q), rows(k), rows(v), 2.0**44, slopes=m, q_pos=[3])
    assert_holds(got, exact_attend(q, k, v, 2.0**44, slopes=m, q_pos=[3]))


def test_random_attention_against_arb():
    """Many random heads (radii, masks, temperatures, ALiBi) against the exact output at a
    random corner of every box."""
    rng = np.random.default_rng(7)
    for _trial in range(30):
        n_k, d_k, d_v = int(rng.integers(1, 6)), int(rng.integers(1, 5)), 2
        qm, km, vm = (
            rng.normal(size=(2, d_k)),
            rng.normal(size=(n_k, d_k)),
            rng.normal(size=(n_k, d_v)),
        )
        rq, rk, rv = (10.0 ** rng.uniform(-12, -4, size=x) for x in (2, n_k, n_k))
        beta = float(2.0 ** rng.integers(-2, 6))
        slope = float(rng.choice([0.0, 0.25, 1 / 3]))
        vis = rng.random((2, n_k)) < 0.8
        q_pos = np.array([n_k - 1, max(0, n_k - 2)])
        sign = lambda x: rng.choice([-1.0, 1.0], size=x.shape)  # noqa: E731
        qe = qm + sign(qm) * rq[:, None]
        ke = km + sign(km) * rk[:, None]
        ve = vm + sign(vm) * rv[:, None]
        got = call(rows(qm, rq), rows(km, rk), rows(vm, rv), beta, slope, vis, q_pos)
        assert_holds(got, exact_attend(qe, ke, ve, beta, slope, vis, q_pos))


# ----------------------------------------------------------------------------- pieces


def test_the_table_exponential_against_arb():
    t = np.concatenate(
        [
            [0.0, -(2.0**-16), -(2.0**-17), -1.0, -63.99999, -64.0, -(2.0**-1070)],
            -np.arange(1, 200) / 65536.0,
            -np.random.default_rng(3).uniform(0, 64, 2000),
        ]
    )
    got = batch._exp(t)
    eps = batch._exp_table()[2]
    assert 0 < eps < 1e-14
    with ctx.workprec(PREC):
        for x, e in zip(t.tolist(), got.tolist(), strict=True):
            ex = arb(x).exp()
            assert e * (1 - eps) <= float(ex.lower()) and float(ex.upper()) <= e * (1 + eps), x
    assert (batch._exp(np.array([-64.5, -np.inf, np.inf, np.nan])) == 0).all()


def test_rope_rotation_covers_the_exact_rotation():
    """Rotated rows (b, P, G, d_k) at a corner of their boxes, with cos and sin in arb."""
    from attncert.model.spec import Rotary

    rot = Rotary(base=10000.0, dim=4)
    rng = np.random.default_rng(5)
    m = rng.normal(size=(1, 6, 1, 6)) * 8
    r = 10.0 ** rng.uniform(-14, -6, size=(1, 6, 1))
    out, rad = batch._rotate(rot, m, r, np.arange(6))
    with ctx.workprec(PREC):
        for p in range(6):
            x = [arb(float(v)) + arb(float(r[0, p, 0])) * (1 if v >= 0 else -1) for v in m[0, p, 0]]
            y = list(x)
            for c in range(2):
                th = arb(p) * arb(10000.0) ** (arb(-2 * c) / 4)
                y[c] = x[c] * th.cos() - x[c + 2] * th.sin()
                y[c + 2] = x[c + 2] * th.cos() + x[c] * th.sin()
            for c, yc in enumerate(y):
                lo, hi = out[0, p, 0, c] - rad[0, p, 0], out[0, p, 0, c] + rad[0, p, 0]
                assert lo <= float(yc.lower()) and float(yc.upper()) <= hi, (p, c)


def test_an_overflowing_block_is_left_to_arb():
    """Embeddings of 10³⁰⁰: scores overflow, attention falls back to the hull and the
    interval still holds the arb logit; a readout of 10³⁰⁰ on top makes the enclosure
    itself overflow, and every string gets [−∞, ∞] rather than an error."""
    m = random_model(1, 1, 4, kind="softmax", seed=2)
    emb, r = m.embedding, m.readout
    big = type(emb)(emb.vocab, emb.word * 1e300, emb.features, emb.pos_weight, emb.table)
    m2 = type(m)(m.alphabet, big, m.layers, r, m.bos, m.eos, "huge")
    with np.errstate(all="ignore"):
        lo, hi = logit_bounds(m2, tokens(m2, ["01", "10"]))
    for s, a, b in zip(["01", "10"], lo, hi, strict=True):
        x = arb_logit(m2, s)
        assert np.isfinite(a) and a <= float(x.lower()) and float(x.upper()) <= b
    r3 = type(r)(r.weight * 1e300, r.bias, r.position)
    m3 = type(m)(m.alphabet, big, m.layers, r3, m.bos, m.eos, "overflow")
    with np.errstate(all="ignore"):
        lo, hi = logit_bounds(m3, tokens(m3, ["01", "10"]))
    assert np.all(lo == -np.inf) and np.all(hi == np.inf)


def test_the_mean_readout_covers_row_radii_and_cancellation():
    """Rows z̃ = (1, 2⁻⁶⁰, −1): exact mean 2⁻⁶⁰/3, the float sum 0 (the γ_N term); and
    rows known to 2⁻²⁰ each, exact at the corner (the Σ r term)."""
    from attncert.arith.filter import Enclosed

    z = Enclosed(np.array([[1.0], [2.0**-60], [-1.0], [0.5], [0.25], [0.0]]), np.zeros((6, 1)))
    z.rad[3:] = 2.0**-20
    mid, rad = batch._mean_rows(z, 2, 3)
    with ctx.workprec(PREC):
        exact = [arb(2.0**-60) / 3, (arb(0.75) + 3 * arb(2.0**-20)) / 3]
    for m, r, x in zip(mid, rad, exact, strict=True):
        assert m - r <= float(x.lower()) and float(x.upper()) <= m + r


def test_the_heads_output_biases_are_summed_with_their_rounding():
    """48 heads whose b_O are 1 and 47 times 3·2⁻⁵⁵ (under half an ulp of 1): the float
    sum is 1, the exact one 1 + 35.25u, and the logit w·Σb_O − 1 is that 35.25u — beyond
    the radii of the rounded additions around it."""
    from attncert.model.spec import Embedding, Head, Layer, Model, Readout

    e = 3 * 2.0**-55
    zeros = np.zeros((1, 2))
    heads = [
        Head(zeros, zeros, zeros, np.zeros((2, 1)), kind="softmax", b_o=np.array([b, 0.0]))
        for b in [1.0] + [e] * 47
    ]
    model = Model(
        ("a",),
        Embedding(("a",), np.array([[0.5, 0.25]])),
        (Layer(tuple(heads), residual=False),),
        Readout(np.array([1.0, 0.0]), bias=-1.0),
        name="bias-sum",
    )
    lo, hi = logit_bounds(model, tokens(model, ["aa"]))
    x = arb_logit(model, "aa")
    assert float(x.lower()) > 0 and lo[0] <= float(x.lower()) and float(x.upper()) <= hi[0]


# ----------------------------------------------------------------------------- whole models


def arb_logit(model, s: str):
    """The exact logit's arb ball at 256 bits (more when its sign needs them)."""
    return escalate(
        lambda f: T._forward(model, model.encode(s), f),
        rational=False,
        precisions=[PREC, 1024, 4096],
    ).logit


def _llama_gqa():
    from lazy_import import lazy_importorskip

    torch = lazy_importorskip("torch")
    tf = lazy_importorskip("transformers")
    from attncert.model.importers import model_from_hf

    torch.manual_seed(0)
    cfg = tf.LlamaConfig(vocab_size=6, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         num_labels=2, pad_token_id=5, bos_token_id=1)  # fmt: skip
    cfg._attn_implementation = "eager"
    hf = tf.LlamaForSequenceClassification(cfg).double().eval()
    return model_from_hf(hf, alphabet="01", token_ids={"0": 3, "1": 4, "^": 1}, bos="^")


def _gqa_decoder():
    """A RoPE decoder whose heads share key/value projections in pairs (grouped-query
    attention as the importers write it: equal copies of W_K, W_V)."""
    import dataclasses

    from attncert.model.decoders import random_decoder

    m = random_decoder(2, 4, 16, positions="rope", seed=3)
    layers = []
    for layer in m.layers:
        hs = list(layer.heads)
        for h in (1, 3):
            hs[h] = dataclasses.replace(hs[h], w_k=hs[h - 1].w_k.copy(), w_v=hs[h - 1].w_v.copy())
        layers.append(dataclasses.replace(layer, heads=tuple(hs)))
    return dataclasses.replace(m, layers=tuple(layers), name="gqa")


def _decoder(**kw):
    from attncert.model.decoders import random_decoder

    return random_decoder(2, 2, 8, seed=5, **kw)


MODELS = {
    "LayerNorm/GELU encoder (trained_parity)": lambda: zoo_model("trained_parity"),
    "RoPE/RMSNorm/SwiGLU decoder": lambda: zoo_model("trained_rope_majority"),
    "RoPE, annealed to β = 64": lambda: zoo_model("trained_hard_rope_first_last"),
    "ALiBi decoder": lambda: zoo_model("trained_alibi_dyck1"),
    "final LayerNorm (soft_parity_ln)": lambda: zoo_model("soft_parity_ln"),
    "large β, strict masks (dyck2_program_soft)": lambda: zoo_model("dyck2_program_soft"),
    "random strict-future mask |Σ| = 3": lambda: random_model(
        2, 2, 6, kind="softmax", seed=4, alphabet="abc", mask="future_strict"
    ),
    "grouped-query RoPE decoder": _gqa_decoder,
    "ALiBi, LayerNorm, GELU, parallel residual": lambda: _decoder(
        positions="alibi", norm="layer", mlp="gelu", parallel=True
    ),
    "grouped-query Llama built by transformers": pytest.param(_llama_gqa, marks=pytest.mark.slow),
}


@pytest.mark.slow
@pytest.mark.parametrize("build", list(MODELS.values()), ids=list(MODELS))
def test_whole_models_enclose_the_arb_logit(build):
    model = build()
    name = model.name
    rng = np.random.default_rng(11)
    for n in (1, 7, 14):
        strings = ["".join(rng.choice(list(model.alphabet), n)) for _ in range(24)]
        lo, hi = logit_bounds(model, tokens(model, strings))
        z = forward(model, strings).logits
        assert np.all((lo <= z) & (z <= hi)), name
        assert np.median(hi - lo) < 1e-3, (name, np.median(hi - lo))  # not the hull
        for s, a, b in list(zip(strings, lo, hi, strict=True))[:4]:
            x = arb_logit(model, s)
            assert a <= float(x.lower()) and float(x.upper()) <= b, (name, s)
        acc, undecided = decisions(model, strings)
        assert not undecided.any() and np.array_equal(acc, z > 0), name


def test_a_mean_readout_and_a_post_norm_model():
    from test_model_v2 import v2_model

    for model in (
        v2_model(0),
        v2_model(1, norm_position="post", activation="relu", readout="last"),
    ):
        rng = np.random.default_rng(2)
        strings = ["".join(rng.choice(list(model.alphabet), 6)) for _ in range(30)]
        lo, hi = logit_bounds(model, tokens(model, strings))
        for s, a, b in list(zip(strings, lo, hi, strict=True))[:6]:
            x = arb_logit(model, s)
            assert a <= float(x.lower()) and float(x.upper()) <= b
