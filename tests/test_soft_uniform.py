"""Lemma 5 uniformly in n (issue 23, item 3): the length-uniform K against brute force.

* the feature ranges and count fractions of the position classes hold at every (i, N)
  enumerated, for every bounded feature kind;
* on a table of models (random softmax models with every bounded feature, BOS/EOS or not,
  integer readout positions; LayerNorm pre/post, GELU, ReLU, mean/first/last readouts; the
  zoo's soft models) and every n from N₀ to 9: every logit lies in the certified range and
  the largest one-position change over all strings is ≤ K/n;
* on two hand-made models the bound is nearly exact (ratio ≥ 0.75), so a lost factor would
  show;
* the measured maximum of the sensitivity search at n = 64 (and 256, 1024 in the slow test)
  is ≤ K/n on the zoo models;
* outside the hypothesis (a masked head, a growing temperature, an unbounded feature, a
  learned table, a hard head) the verdict is OUTSIDE-THEOREM with the reason, and the
  kernel refuses a certificate for such a model.

Tampering is in ``test_soft_uniform_kernel.py``.
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import numpy as np
import pytest
from test_model_v2 import v2_model

from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.soft import propagate as KP
from attncert.kernel.uniform import checker as KU
from attncert.kernel.uniform.classes import (
    _RULES,
    count_fraction,
    feature_ranges,
    layout,
    length_cases,
    minimum_n0,
    used_features,
)
from attncert.kernel.uniform.propagate import propagate_uniform
from attncert.model import forward, random_model, zoo_model
from attncert.model.positional import FEATURE_NAMES, PosFeature
from attncert.model.spec import (
    Embedding,
    Head,
    Layer,
    Mask,
    Model,
    Readout,
    Temperature,
)
from attncert.soft.certified.uniform import certify_uniform
from attncert.soft.sensitivity import search_sensitivity
from attncert.verdicts import Verdict

__implements__ = ("Hahn Lemma 5", "Hahn Theorem 6")

BOUNDED = tuple(
    PosFeature(n, 0.7 if n in ("sin", "cos") else None)
    for n in FEATURE_NAMES
    if PosFeature(n, 0.7 if n in ("sin", "cos") else None).bounded
)


def _unmask(m: Model) -> Model:
    layers = tuple(
        dataclasses.replace(
            layer, heads=tuple(dataclasses.replace(h, mask=Mask.NONE) for h in layer.heads)
        )
        for layer in m.layers
    )
    return dataclasses.replace(m, layers=layers)


def _with_readout(m: Model, position) -> Model:
    r = m.readout
    return dataclasses.replace(m, readout=Readout(r.weight, r.bias, position=position))


def mean_model(delta: float) -> Model:
    """z = Σ_i a_i x_i over x ∈ {0, 1}ⁿ with scores Δ·x_i: a single 1 among 0s takes weight
    e^Δ/(e^Δ + n − 1), so the largest change is (nearly) that — the bound's own shape."""
    word = np.array([[0.0, 1.0], [1.0, 1.0]])  # (x, 1)
    head = Head(
        w_q=np.array([[0.0, 1.0]]),
        w_k=np.array([[1.0, 0.0]]),
        w_v=np.array([[1.0, 0.0]]),
        w_o=np.array([[1.0], [0.0]]),
        kind="softmax",
        temperature=Temperature(delta),
    )
    return Model(
        alphabet=("0", "1"),
        embedding=Embedding(("0", "1"), word),
        layers=(Layer((head,), None, residual=False),),
        readout=Readout(np.array([1.0, 0.0]), 0.0, position="last"),
        name=f"mean-delta{delta}",
    )


def _models_default():
    feats = BOUNDED
    return [
        random_model(1, 1, 6, kind="softmax", seed=1, features=feats, eos="E"),
        random_model(2, 2, 6, kind="softmax", seed=2, features=feats, bos="B"),
        _with_readout(random_model(1, 2, 6, kind="softmax", seed=3, features=feats), 2),
        _unmask(v2_model(10)),
        _unmask(v2_model(11, norm_position="post", activation="relu", readout="first")),
        zoo_model("soft_parity"),
        zoo_model("soft_parity_ln"),
        mean_model(1.0),
    ]


def _models_sweep():
    feats = BOUNDED
    out = []
    for seed in range(6):
        out.append(
            random_model(
                1 + seed % 2,
                1 + seed % 3,
                6,
                kind="softmax",
                seed=20 + seed,
                features=feats[: 4 + 3 * (seed % 5)],
                temperature=Temperature([0.05, 0.3, 1.0][seed % 3]),
                bos="B" if seed % 2 else None,
                eos="E" if seed % 3 == 0 else None,
            )
        )
    out.append(_with_readout(random_model(1, 1, 6, kind="softmax", seed=40, features=feats), -2))
    out.append(random_model(1, 1, 6, kind="softmax", seed=41, features=feats, alphabet="abc"))
    for seed, kw in enumerate(
        [
            {},
            {"norm_position": "post"},
            {"activation": "gelu_tanh", "readout": "last"},
            {"activation": "relu", "readout": "mean"},
            {"norm_position": "post", "activation": "gelu", "readout": "first"},
        ]
    ):
        out.append(_unmask(v2_model(30 + seed, **kw)))
    out += [
        zoo_model(x)
        for x in ("soft_parity_lm", "soft_dyck2_lm", "trained_majority", "trained_first_last")
    ]
    out += [mean_model(0.0), mean_model(2.0)]
    return out


def _brute(model: Model, n: int):
    """({readout symbol: logits}, the largest one-position change over all strings)."""
    strings = ["".join(t) for t in itertools.product(model.alphabet, repeat=n)]
    z = forward(model, strings).logits
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
    groups: dict = {}
    for k, s in enumerate(strings):
        groups.setdefault(None if fixed is None else s[fixed], []).append((s, z[k]))
    return groups, change


def _inside(model: Model, s: str, z: float, lo: float, hi: float) -> bool:
    if lo <= z <= hi:
        return True
    if min(abs(z - lo), abs(z - hi)) > 1e-9 * max(1.0, abs(z)):
        return False
    ball = forward_rigorous(model, s).logit  # a float just outside: decide in arb
    return bool(ball >= lo) and bool(ball <= hi)


def _check_sound(model: Model, n0: int, bins: int, n_max: int = 9) -> float:
    """Brute force for n0 ≤ n ≤ n_max; returns the largest measured/(K/n)."""
    n0 = max(n0, minimum_n0(model))
    props = {p: propagate_uniform(model, n0, bins, p) for p in length_cases(model)}
    factor = KU.token_factor(model, n0)
    top = 9 if len(model.alphabet) == 2 else 6
    ratio = Fraction(0)
    for n in range(n0, min(n_max, top) + 1):
        prop = props.get(model.n_tokens(n) % 2, props.get(None))  # the case of this N
        k = max(r.k_tok for r in prop.rows) * factor
        groups, change = _brute(model, n)
        for row in prop.rows:
            for s, z in groups[row.symbol if row.symbol in groups else None]:
                assert _inside(model, s, z, row.z_lo, row.z_hi), (model.name, n, row, s, z)
        assert Fraction(change) <= k / n, (model.name, n0, bins, n, change, float(k / n))
        ratio = max(ratio, Fraction(change) * n / k)
    return float(ratio)


# ----------------------------------------------------------------------------- classes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bos", "eos", "position"),
    [
        (None, None, "last"),
        ("B", None, "first"),
        (None, "E", "mean"),
        ("B", "E", 3),
        (None, None, -2),
    ],
)
def test_feature_ranges_and_counts_hold_at_every_length(bos, eos, position):
    model = _with_readout(
        random_model(1, 1, 4, kind="softmax", seed=0, features=BOUNDED, bos=bos, eos=eos),
        position,
    )
    feats = [model.embedding.features[fi] for fi in used_features(model)]
    assert len(feats) == len(BOUNDED)
    for n0, bins, parity in [(5, 1, None), (7, 3, 0), (12, 4, 1), (6, 2, 1)]:
        lay = layout(model, n0, bins, parity)
        ranges = feature_ranges(model, lay)
        cls = {(c.kind, c.k, c.bin): i for i, c in enumerate(lay.classes)}
        split = lay.split_parity
        for big_n in [*range(lay.n0_tokens, lay.n0_tokens + 24), 997, 1000, 2048]:
            if parity is not None and big_n % 2 != parity:
                continue
            counts: dict[int, int] = {}
            for i in range(1, big_n + 1):
                if i <= lay.h:
                    key = ("head", i, 0)
                elif i > big_n - lay.t:
                    key = ("tail", big_n - i, 0)
                else:
                    key = ("middle", i % 2 if split else -1, (bins * i) // big_n)
                c = cls[key]
                counts[c] = counts.get(c, 0) + 1
                for f, (lo, hi) in zip(feats, ranges[c], strict=True):
                    v = f.exact(i, big_n)
                    assert lo <= v <= hi, (f.label, lay.classes[c].name, i, big_n, lo, hi, v)
            for c, x in enumerate(lay.classes):
                have = counts.get(c, 0)
                assert Fraction(have - 1, big_n - 1) >= count_fraction(x, lay) or have == 0
                if count_fraction(x, lay) > 0:
                    assert have >= 2


def test_every_bounded_feature_kind_has_a_rule():
    assert {f.name for f in BOUNDED} <= set(_RULES)


def test_classes_are_refused_below_their_size():
    m = zoo_model("soft_parity")
    with pytest.raises(Exception, match="N₀"):
        layout(_with_readout(random_model(1, 1, 4, kind="softmax", seed=0), 5), 2)
    assert layout(m, 2).n0_tokens == 4


# ----------------------------------------------------------------------------- soundness


@pytest.mark.parametrize("idx", range(8))
def test_uniform_bound_against_brute_force(idx):
    model = _models_default()[idx]
    for n0, bins in [(2, 1), (4, 2)]:
        _check_sound(model, n0, bins, n_max=8)


@pytest.mark.slow
@pytest.mark.parametrize("idx", range(19))
def test_uniform_bound_against_brute_force_sweep(idx):
    model = _models_sweep()[idx]
    for n0, bins in [(2, 1), (3, 2), (5, 4)]:
        _check_sound(model, n0, bins)


@pytest.mark.parametrize("delta", [0.0, 1.0])
def test_the_bound_is_nearly_exact_on_the_one_key_model(delta):
    """True largest change e^Δ/(e^Δ + N − 1) (a single 1 among 0s); K = e^Δ·N₀/(N₀ − 1)."""
    model = mean_model(delta)
    ratio = _check_sound(model, 9, 1, n_max=9)
    assert ratio >= (0.85 if delta == 0 else 0.7), ratio  # 8/9 and 8/(e + 8)
    u = certify_uniform(model, 9, bins=1)
    assert u.verdict == "CERTIFIED" and len(u.certificate["cases"]) == 1
    k = float(u.k)
    assert np.exp(delta) * 9 / 8 <= k <= np.exp(delta) * 9 / 8 * (1 + 1e-6)


# ----------------------------------------------------------------------------- zoo models


@pytest.fixture(scope="module")
def zoo_uniform():
    out = {}
    for name, bins in [("soft_parity", 8), ("soft_parity_lm", 8), ("soft_dyck2_lm", 8)]:
        out[name] = certify_uniform(zoo_model(name), 64, bins=bins)
    return out


@pytest.mark.slow
def test_zoo_models_certified_beside_the_published_constant(zoo_uniform):
    for name, u in zoo_uniform.items():
        assert u.verdict == "CERTIFIED", (name, u.check.summary())
        assert u.check.accepted
        assert u.published.value is not None
        assert u.k < Fraction(str(u.published.value)), name  # far below Hahn's constant
    sp = zoo_uniform["soft_parity"]
    assert 4.0 < float(sp.k) < 4.5
    assert sp.nontrivial_from == 64
    assert sp.floor_at(1024) > 0.692  # → log 2 = 0.6931…
    lm = zoo_uniform["soft_parity_lm"]
    assert lm.nontrivial_from > 10**12 and any("astronomically" in x for x in lm.notes())
    assert zoo_uniform["soft_dyck2_lm"].nontrivial_from < 10**4  # the split by N's parity
    assert lm.floor_at(64) == pytest.approx(KU.parity_floor(lm.k, Fraction(lm.cap), 10**9))
    assert zoo_uniform["soft_dyck2_lm"].certificate["floor"] is None  # not over {0, 1}


def test_measured_sensitivity_is_below_k_over_n_at_64(zoo_uniform):
    for name, u in zoo_uniform.items():
        m = zoo_model(name)
        r = search_sensitivity(m, 64, "logit", seed=0, restarts=1, time_budget=0.5)
        assert Fraction(r.value) <= u.k / 64, (name, r.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "soft_parity",
        "soft_parity_lm",
        "soft_dyck2_lm",
        "soft_parity_ln",
        "trained_parity",
        "trained_first_last",
        "trained_majority",
    ],
)
def test_measured_sensitivity_is_below_k_over_n(name):
    m = zoo_model(name)
    u = certify_uniform(m, 64)
    assert u.verdict == "CERTIFIED"
    for n in (64, 256, 1024):
        r = search_sensitivity(m, n, "logit", seed=0, restarts=2, time_budget=5.0)
        assert Fraction(r.value) <= u.k / n, (name, n, r.value)


def test_trained_models_get_an_astronomical_but_finite_k():
    u = certify_uniform(zoo_model("trained_majority"), 64, bins=1)
    assert u.verdict == "CERTIFIED" and u.k > Fraction(10) ** 200  # beyond float64
    assert u.published.value is None and "LayerNorm" in u.published.reason
    assert u.nontrivial_from > 10**200
    assert any("astronomically" in x for x in u.notes())


# ----------------------------------------------------------------------------- outside


def _outside(model: Model, needle: str):
    u = certify_uniform(model, 64)
    assert u.verdict == Verdict.OUTSIDE_THEOREM.value and u.certificate is None
    assert any(needle in r for r in u.reasons), u.reasons
    return u


def test_models_outside_the_hypothesis():
    _outside(zoo_model("trained_dyck1"), "masked ('future')")
    _outside(zoo_model("dyck2_program_soft"), "unbounded")
    sp = zoo_model("soft_parity")
    feats = tuple(PosFeature("i") if f.name == "i/n" else f for f in sp.embedding.features)
    unbounded = dataclasses.replace(sp, embedding=dataclasses.replace(sp.embedding, features=feats))
    _outside(unbounded, "positional feature 'i'")
    for temp, word in [
        (Temperature(1.0, n_power=1), "N^1"),
        (Temperature(1.0, log_power=1), "log"),
    ]:
        layers = tuple(
            dataclasses.replace(
                layer,
                heads=tuple(dataclasses.replace(h, temperature=temp) for h in layer.heads),
            )
            for layer in sp.layers
        )
        _outside(dataclasses.replace(sp, layers=layers), word)
    table = dataclasses.replace(
        sp, embedding=dataclasses.replace(sp.embedding, table=np.zeros((300, sp.d)))
    )
    _outside(table, "learned position table")
    _outside(random_model(1, 1, 4, seed=0), "hard-attention")


def test_a_decreasing_temperature_is_inside():
    sp = zoo_model("soft_parity")
    layers = tuple(
        dataclasses.replace(
            layer,
            heads=tuple(
                dataclasses.replace(h, temperature=Temperature(1.0, n_power=-0.5))
                for h in layer.heads
            ),
        )
        for layer in sp.layers
    )
    m = dataclasses.replace(sp, layers=layers)
    assert certify_uniform(m, 8, bins=2).verdict == "CERTIFIED"
    _check_sound(m, 3, 2, n_max=8)


def test_the_kernel_refuses_a_model_outside_the_hypothesis():
    sp = zoo_model("soft_parity")
    cert = certify_uniform(sp, 64, bins=2).certificate
    feats = tuple(PosFeature("n*i") if f.name == "1/n" else f for f in sp.embedding.features)
    bad = dataclasses.replace(sp, embedding=dataclasses.replace(sp.embedding, features=feats))
    data = dict(cert, model=dict(cert["model"], sha256=bad.digest))
    report = KU.check(data, bad)
    assert not report.accepted
    assert report.failures[0].claim == "hypotheses" and "'n*i'" in report.failures[0].reason
