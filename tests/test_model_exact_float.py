"""Exact (rational) and float evaluation agree wherever the float argmax is not a near-tie;
hand-built exact ties follow the leftmost / rightmost / average-hard definitions in both."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from attncert.errors import UnsupportedError
from attncert.model import (
    AttentionKind,
    Embedding,
    Head,
    Layer,
    Mask,
    Model,
    PosFeature,
    Readout,
    forward,
    forward_exact,
    random_model,
)
from attncert.model.exact import to_fraction

REL_GAP = 1e-9  # a case is checked only if every exact decision margin exceeds this (relative)


def exact_margin(model: Model, et) -> float:
    """Smallest relative margin of any decision in the exact trace: for every head and
    query, (top score − next distinct score) / (1 + max |score|), 0 for an exact tie among
    several maxima of a unique-hard head; and |logit| / (1 + Σ|w|·max|y|) for the readout."""
    n_tok = len(et.tokens)
    margin = float("inf")
    for li, layer in enumerate(model.layers):
        for hi, head in enumerate(layer.heads):
            s = et.layers[li].scores[hi]
            for i in range(n_tok):
                vis = [j for j in range(n_tok) if head.mask.allowed(i, j)]
                if len(vis) < 2:
                    continue
                vals = sorted((to_fraction(s[i, j]) for j in vis), reverse=True)
                scale = 1 + max(abs(v) for v in vals)
                if vals[0] == vals[1]:
                    return 0.0  # an exact tie: float rounding may break it either way
                margin = min(margin, float((vals[0] - vals[1]) / scale))
    y = et.final
    ymax = max(abs(to_fraction(y[i, c])) for i in range(y.nrows()) for c in range(y.ncols()))
    wsum = sum(abs(Fraction(w)) for w in model.readout.weight.tolist())
    margin = min(margin, float(abs(et.logit_fraction()) / (1 + wsum * ymax)))
    return margin


CONFIGS = [
    (kind, mask, frame)
    for kind in ("leftmost", "rightmost", "average")
    for mask in Mask
    for frame in ("none", "bos", "bos+eos")
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "mask", "frame"), CONFIGS)
def test_exact_and_float_agree_on_random_models(kind, mask, frame):
    bos = "^" if frame != "none" else None
    eos = "$" if frame == "bos+eos" else None
    total = checked = 0
    for seed in (0, 1):
        model = random_model(2, 2, 6, kind=kind, mask=mask, seed=seed, bos=bos, eos=eos)
        rng = np.random.default_rng(100 + seed)
        for n in (1, 3, 6):
            strings = ["".join(rng.choice(list("01"), size=n)) for _ in range(4)]
            ft = forward(model, strings)
            for b, s in enumerate(strings):
                et = forward_exact(model, s)
                total += 1
                if exact_margin(model, et) <= REL_GAP:
                    continue
                checked += 1
                for li, layer in enumerate(model.layers):
                    for hi in range(len(layer.heads)):
                        w = ft.layers[li].weights[b, hi]
                        float_choice = [tuple(np.flatnonzero(row)) for row in w]
                        assert float_choice == list(et.layers[li].chosen[hi]), (s, li, hi)
                        # the float scores approximate the exact ones where visible
                        vis = mask.matrix(len(et.tokens))
                        exact_s = np.array(
                            [
                                [
                                    float(to_fraction(et.layers[li].scores[hi][i, j]))
                                    for j in range(w.shape[1])
                                ]
                                for i in range(w.shape[0])
                            ]
                        )
                        assert np.allclose(
                            ft.layers[li].scores[b, hi][vis], exact_s[vis], rtol=1e-12, atol=1e-12
                        )
                assert bool(ft.accept[b]) is et.accept, s
                exact_logit = float(et.logit_fraction())
                assert abs(ft.logits[b] - exact_logit) <= 1e-9 * (1 + abs(exact_logit))
                y = np.array(
                    [
                        [float(to_fraction(et.final[i, c])) for c in range(model.d)]
                        for i in range(len(et.tokens))
                    ]
                )
                assert np.allclose(ft.final[b], y, rtol=1e-12, atol=1e-12)
    assert total == 24
    assert checked >= 0.9 * total, f"only {checked}/{total} cases had no near-tie"


# ----- hand-constructed exact ties -------------------------------------------------------


def tie_model(kind: str, mask: Mask, bos: str | None = None) -> Model:
    """score(i, j) = [x_j = 1]: all 1s tie (all positions tie if there is no 1); the head
    copies the attended position i (feature "i") into coordinate 3.
    Coordinates: 0 is1, 1 one, 2 position i, 3 head output."""
    d = 4
    vocab = ("0", "1") + ((bos,) if bos else ())
    word = np.zeros((len(vocab), d))
    word[:, 1] = 1.0
    word[1, 0] = 1.0
    pos_weight = np.zeros((d, 1))
    pos_weight[2, 0] = 1.0
    e = np.eye(d)
    head = Head(w_q=e[[1]], w_k=e[[0]], w_v=e[[2]], w_o=e[:, [3]], kind=kind, mask=mask)
    return Model(
        alphabet=("0", "1"),
        embedding=Embedding(
            vocab=vocab, word=word, features=(PosFeature("i"),), pos_weight=pos_weight
        ),
        layers=(Layer((head,)),),
        readout=Readout(weight=e[3]),
        bos=bos,
    )


def expected_choice(tokens_is1: list[int], kind: str, mask: Mask, i: int) -> tuple[int, ...]:
    vis = [j for j in range(len(tokens_is1)) if mask.allowed(i, j)]
    if not vis:
        return ()
    top = max(tokens_is1[j] for j in vis)
    maxima = [j for j in vis if tokens_is1[j] == top]
    return {"leftmost": (maxima[0],), "rightmost": (maxima[-1],), "average": tuple(maxima)}[kind]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["leftmost", "rightmost", "average"])
@pytest.mark.parametrize("mask", list(Mask))
@pytest.mark.parametrize("bos", [None, "^"])
def test_exact_ties_follow_the_definitions(kind, mask, bos):
    model = tie_model(kind, mask, bos)
    for n in range(1, 7):
        strings = ["".join(t) for t in itertools.product("01", repeat=n)]
        ft = forward(model, strings)
        for b, s in enumerate(strings):
            is1 = ([0] if bos else []) + [int(c) for c in s]
            et = forward_exact(model, s)
            for i in range(len(is1)):
                want = expected_choice(is1, kind, mask, i)
                assert et.layers[0].chosen[0][i] == want, (s, i)
                assert tuple(np.flatnonzero(ft.layers[0].weights[b, 0, i])) == want, (s, i)
                # head output = mean of the attended 1-based positions (0 if none visible)
                value = Fraction(sum(j + 1 for j in want), len(want)) if want else Fraction(0)
                assert to_fraction(et.layers[0].output[i, 3]) == value
                assert ft.final[b, i, 3] == pytest.approx(float(value), rel=1e-15, abs=0)


def test_tie_examples_spelled_out():
    """'0110': the 1s are at positions 2 and 3."""
    picks = {
        k: forward_exact(tie_model(k, Mask.NONE), "0110").layers[0].chosen[0][0]
        for k in ("leftmost", "rightmost", "average")
    }
    assert picks == {"leftmost": (1,), "rightmost": (2,), "average": (1, 2)}
    avg = forward_exact(tie_model("average", Mask.NONE), "0110")
    assert to_fraction(avg.logit) == Fraction(5, 2)
    # no 1 at all: every position ties at score 0
    assert forward_exact(tie_model("average", Mask.NONE), "000").layers[0].chosen[0][0] == (0, 1, 2)
    # strict future mask: position 1 sees nothing and gets a zero head output
    et = forward_exact(tie_model("leftmost", Mask.FUTURE_STRICT), "11")
    assert et.layers[0].chosen[0][0] == () and to_fraction(et.layers[0].output[0, 3]) == 0


def test_exact_softmax_is_refused():
    model = random_model(1, 1, 4, kind=AttentionKind.SOFTMAX, seed=0)
    with pytest.raises(UnsupportedError, match="softmax"):
        forward_exact(model, "01")
