"""Lemma 5's hypotheses and the position classes (:mod:`attncert.kernel.uniform.classes`):
the exact sentence of every violated hypothesis and of every refused layout — the reasons a
user reads when a model is outside the length-uniform theorem (issue 34: mutation score)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from attncert.errors import UnsupportedError
from attncert.kernel.uniform.classes import count_fraction, hypotheses, layout
from attncert.model import random_model, zoo_model
from attncert.model.decoders import random_decoder
from attncert.model.positional import PosFeature
from attncert.model.spec import Mask, Temperature

MASKED = (
    "Lemma 5's proof assumes every query attends to all n positions, so that one key's "
    "weight is ≤ e^Δ/(e^Δ + n − 1); a query at position j of a masked head sees only about "
    "j keys"
)


def _alibi(m: float) -> str:
    return (
        f"layers[0].heads[{0 if m == 0.0625 else 1}] adds ALiBi's −m·(i − j) with m = {m!r} to "
        "its scores, unbounded in n: attention can stay concentrated on the nearest positions "
        "at every length, so a position near the query keeps a Θ(1) influence — Lemma 5's "
        "bounded-logit hypothesis fails (the lemma does not apply, not only its proof)"
    )


def test_a_model_inside_the_hypotheses_violates_none():
    assert hypotheses(zoo_model("soft_parity")) == ()


def test_hard_and_masked_heads_are_named():
    assert hypotheses(random_model(1, 2, 4, seed=0)) == (
        "layers[0].heads[0], layers[0].heads[1] are hard-attention heads: Lemma 5 is about "
        "softmax attention",
    )
    two = random_model(2, 1, 4, kind="softmax", seed=0, mask=Mask.FUTURE)
    assert hypotheses(two) == (
        f"layers[0].heads[0], layers[1].heads[0] are masked ('future'): {MASKED}",
    )
    one = random_model(1, 1, 4, kind="softmax", seed=0, mask=Mask.PAST)
    assert hypotheses(one) == (f"layers[0].heads[0] is masked ('past'): {MASKED}",)


def test_alibi_heads_come_first_then_their_mask():
    m = random_decoder(1, 2, 8, positions="alibi", norm="layer", mlp="gelu", seed=0)
    assert hypotheses(m) == (
        _alibi(0.0625),
        _alibi(0.00390625),
        f"layers[0].heads[0], layers[0].heads[1] are masked ('future'): {MASKED}",
    )


def test_a_growing_temperature_an_unbounded_feature_and_a_table_are_named():
    sp = zoo_model("soft_parity")
    hot = dataclasses.replace(
        sp,
        layers=tuple(
            dataclasses.replace(
                layer,
                heads=tuple(
                    dataclasses.replace(h, temperature=Temperature(1.0, n_power=1))
                    for h in layer.heads
                ),
            )
            for layer in sp.layers
        ),
    )
    assert hypotheses(hot) == (
        "layers[0].heads[0], layers[2].heads[0]: inverse temperature β(N) = 1.0·N^1 grows with "
        "n (Lemma 5 assumes parameters independent of n, so that attention scores stay "
        "bounded)",
    )
    feats = tuple(PosFeature("i") if f.name == "i/n" else f for f in sp.embedding.features)
    unbounded = dataclasses.replace(sp, embedding=dataclasses.replace(sp.embedding, features=feats))
    assert hypotheses(unbounded) == (
        "positional feature 'i' (embedding.features[1]) is unbounded: Lemma 5 needs bounded "
        "positional encodings (the k = 0 step of its proof)",
    )
    table = dataclasses.replace(
        sp, embedding=dataclasses.replace(sp.embedding, table=np.zeros((300, sp.d)))
    )
    assert hypotheses(table) == (
        "the model has a learned position table with 300 rows (embedding.table): it is not "
        "defined for longer inputs, so no statement for every n can be made",
    )


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ((4, 1, 2), "n_parity: N parity 2 (expected 0, 1 or none)"),
        ((4, 0), "bins: 0 bins (expected 1 to 256)"),
        ((4, 257), "bins: 257 bins (expected 1 to 256)"),
        (
            (1,),
            "n0: N₀ = 1 is too small: the length-uniform classes need N₀ ≥ 2 and "
            "N₀ + [BOS] + [EOS] ≥ 4 (head and tail positions disjoint) (expected N₀ ≥ 2)",
        ),
    ],
)
def test_a_layout_outside_its_range_is_refused_with_the_reason(args, text):
    with pytest.raises(UnsupportedError) as e:
        layout(zoo_model("soft_parity"), *args)
    assert str(e.value) == text
    assert layout(zoo_model("soft_parity"), 4, 256).bins == 256


def test_inverse_position_features_at_the_tail_are_tight():
    """At tail position N − k, 1/i ≤ 1/(N₀' − k), attained at N = N₀' (and → 0 as N grows)."""
    from fractions import Fraction

    from attncert.kernel.uniform.classes import feature_range

    model = zoo_model("soft_parity")
    lay = layout(model, 6, 2)
    tails = [c for c in lay.classes if c.kind == "tail"]
    assert tails
    for name, power in (("1/i", 1), ("1/i^2", 2)):
        f = PosFeature(name)
        for c in tails:
            top = Fraction(1, lay.n0_tokens - c.k) ** power
            assert feature_range(f, c, lay) == (Fraction(0), top)
            assert f.exact(lay.n0_tokens - c.k, lay.n0_tokens) == top  # attained


def test_class_names_and_which_positions_may_change():
    # (-1)^i used: the middle split by parity; the last token is the readout, not changeable
    m = random_model(1, 1, 4, kind="softmax", seed=0)
    assert [(c.name, c.changeable) for c in layout(m, 4, 1).classes] == [
        ("token 1 (input 1)", True),
        ("middle, i even", True),
        ("middle, i odd", True),
        ("token N (input n−0)", False),
    ]
    plain = random_model(
        1, 1, 4, kind="softmax", seed=0, features=(PosFeature("1"), PosFeature("i/n")), eos="E"
    )
    assert [(c.name, c.changeable) for c in layout(plain, 4, 1).classes] == [
        ("token 1 (input 1)", True),
        ("middle", True),
        ("token N−1 (input n−0)", True),
        ("EOS", False),
    ]


def test_an_unused_unbounded_feature_violates_nothing():
    sp = zoo_model("soft_parity")
    feats = tuple(PosFeature("i") if f.name == "i/n" else f for f in sp.embedding.features)
    w = sp.embedding.pos_weight.copy()
    w[:, 1] = 0.0  # the unbounded feature's column: unused
    unused = dataclasses.replace(
        sp, embedding=dataclasses.replace(sp.embedding, features=feats, pos_weight=w)
    )
    assert hypotheses(unused) == ()


def test_inverse_position_in_the_first_middle_bin_is_tight():
    from fractions import Fraction

    from attncert.kernel.uniform.classes import feature_range

    lay = layout(zoo_model("soft_parity"), 6, 2)
    first = [c for c in lay.classes if c.kind == "middle" and c.bin == 0]
    for c in first:  # i ≥ h + 1 there, attained at i = h + 1
        assert feature_range(PosFeature("1/i"), c, lay) == (Fraction(0), Fraction(1, lay.h + 1))


def _members(c, lay, n_tok: int) -> list[int]:
    """The token positions (1-based) of middle class ``c`` at N = ``n_tok``: h+1..N−t, in
    bin b (bN/M ≤ i < (b+1)N/M), of parity k when k ≥ 0 (the module docstring)."""
    return [
        i
        for i in range(lay.h + 1, n_tok - lay.t + 1)
        if c.bin * n_tok <= lay.bins * i < (c.bin + 1) * n_tok and (c.k < 0 or i % 2 == c.k)
    ]


@pytest.mark.parametrize(("n0", "bins"), [(7, 3), (30, 4)])
def test_the_count_fraction_is_a_lower_bound_at_every_length(n0, bins):
    """(|c| − 1)/(N − 1) ≥ count_fraction(c) for every middle class and N₀' ≤ N < N₀' + 200,
    by counting the class's positions; the readout 4 from the end makes the tail t = 4.
    At N₀' = 7 with 3 bins the interior bin 1 is cut by the tail (bin [7/3, 14/3) ∩ [2, 3]
    holds position 3 only), so its bound is 0 — N₀' ≥ M·t (12) fails. Kills
    ``x_count_fraction__mutmut_15`` (N₀' ≥ M/t instead: the bin counted whole, bound 1/18)."""
    base = random_model(1, 1, 4, kind="softmax", seed=0, features=())
    model = dataclasses.replace(base, readout=dataclasses.replace(base.readout, position=-4))
    lay = layout(model, n0, bins)
    assert (lay.h, lay.t, lay.n0_tokens) == (1, 4, n0)
    middle = [c for c in lay.classes if c.kind == "middle"]
    assert len(middle) == bins
    for c in middle:
        bound = count_fraction(c, lay)
        for n_tok in range(n0, n0 + 200):
            got = Fraction(max(len(_members(c, lay, n_tok)) - 1, 0), n_tok - 1)
            assert bound <= got, (c.name, n_tok, bound, got)
    if n0 == 7:
        assert _members(middle[1], lay, 7) == [3]
        assert count_fraction(middle[1], lay) == 0
    else:  # the bounds are not all 0
        assert [count_fraction(c, lay) for c in middle] == [
            Fraction(1, 58),
            Fraction(11, 58),
            Fraction(11, 58),
            Fraction(1, 58),
        ]
