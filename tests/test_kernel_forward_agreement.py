"""The kernel's lean rigorous decision (attncert.kernel.hard.decide.decide) against the full
rigorous pass (attncert.kernel.core.trace, exact rationals here) and the exact rational evaluator
(attncert.model.exact, which has no mean pooling), on every string of length 4, where it matters
most: readout logits within one rounding of 0 (the readout bias set to minus the float
nearest a string's logit), so that the float enclosure straddles 0 and the field decides;
a logit exactly 0 (rejected: accept iff logit > 0); structural ties under leftmost,
rightmost and average-hard heads; every readout position (issue 25's mutation analysis)."""

from __future__ import annotations

import dataclasses
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from flint import ctx

from attncert.arith.field import Field
from attncert.errors import InputError
from attncert.kernel.core import trace
from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.hard.decide import decide, decide_tokens
from attncert.model import harden, random_model
from attncert.model.exact import forward_exact

sys.path.insert(0, str(Path(__file__).parent))
from test_model_v2 import v2_model

STRINGS = ["".join(s) for s in itertools.product("01", repeat=4)]


def _halves(a):
    return None if a is None else np.round(np.asarray(a) * 2) / 2


def _quantized(model):
    """Every weight rounded to a multiple of ½: scores of different rows tie exactly, so
    the field compares them (they are not structurally equal)."""
    layers = []
    for layer in model.layers:
        heads = tuple(
            dataclasses.replace(
                h, **{f: _halves(getattr(h, f)) for f in ("w_q", "w_k", "w_v", "w_o")}
            )
            for h in layer.heads
        )
        ffn = layer.ffn and dataclasses.replace(
            layer.ffn, **{f: _halves(getattr(layer.ffn, f)) for f in ("w1", "b1", "w2", "b2")}
        )
        layers.append(dataclasses.replace(layer, heads=heads, ffn=ffn))
    emb = dataclasses.replace(model.embedding, word=_halves(model.embedding.word))
    return dataclasses.replace(model, layers=tuple(layers), embedding=emb)


def _level(model):
    first = model.layers[0]
    heads = tuple(dataclasses.replace(h, w_k=np.zeros_like(h.w_k)) for h in first.heads)
    return dataclasses.replace(
        model, layers=(dataclasses.replace(first, heads=heads), *model.layers[1:])
    )


def _table(model):
    table = np.random.default_rng(6).standard_normal((8, model.d))
    return dataclasses.replace(model, embedding=dataclasses.replace(model.embedding, table=table))


MODELS = {
    "leftmost": lambda: random_model(2, 2, 8, seed=2, features=()),
    "leftmost-halves": lambda: _quantized(random_model(2, 2, 6, seed=7, features=())),
    "average-halves": lambda: _quantized(
        random_model(2, 2, 6, seed=8, kind="average", features=())
    ),
    "average-strict-mask": lambda: random_model(
        2, 2, 6, seed=9, kind="average", mask="future_strict", features=()
    ),
    "table": lambda: _table(random_model(2, 2, 6, seed=10, features=())),
    # layer-1 keys all score 0: exact ties between keys of different values, decided by
    # the tie rule alone
    "leftmost-level": lambda: _level(random_model(2, 1, 6, seed=11, features=())),
    "rightmost-level": lambda: _level(random_model(2, 1, 6, seed=12, kind="rightmost")),
    "average-level": lambda: _level(random_model(2, 1, 6, seed=13, kind="average")),
    # LayerNorm and GELU: the field is arb, escalating
    "hardened-v2": lambda: harden(v2_model(3)),
    "rightmost": lambda: random_model(2, 1, 8, seed=5, kind="rightmost", features=()),
    "average": lambda: random_model(2, 2, 8, seed=1, kind="average", features=()),
    "future-mask": lambda: random_model(2, 2, 8, seed=3, mask="future"),
}


def _logit(model, s):
    """The logit: exact for a rational model, else the midpoint of a 300-bit ball (so that
    minus its float is within one rounding of the real logit)."""
    if model.is_rational:
        return forward_rigorous(model, s).logit_interval()[0]
    with ctx.workprec(300):
        tr = trace._forward(model, model.encode(s), Field(300))
    lo, hi = tr.logit_interval()
    return (lo + hi) / 2


def _with_readout(model, **change):
    return dataclasses.replace(model, readout=dataclasses.replace(model.readout, **change))


@pytest.mark.slow
@pytest.mark.parametrize("position", ["last", "first", "mean"])
@pytest.mark.parametrize("name", list(MODELS))
def test_decisions_within_one_rounding_of_zero_equal_the_exact_ones(name, position):
    base = _with_readout(MODELS[name](), position=position, bias=0.0)
    logits = {s: _logit(base, s) for s in STRINGS}
    for star in (STRINGS[5], STRINGS[12]):
        model = _with_readout(base, bias=-float(logits[star]))
        for s in STRINGS:
            want = forward_rigorous(model, s).accept
            if position != "mean" and model.is_rational:
                assert forward_exact(model, s).accept == want
            assert decide(model, s) == want, (name, position, star, s)
    # a logit exactly 0 on every string: rejected everywhere (accept iff logit > 0)
    zero = _with_readout(base, weight=np.zeros(base.d))
    assert not any(decide(zero, s) for s in STRINGS[:8])


def test_softmax_models_and_empty_inputs_are_refused_by_the_lean_decision():
    from attncert.model.spec import AttentionKind

    soft = random_model(1, 1, 4, seed=0, kind=AttentionKind.SOFTMAX)
    with pytest.raises(InputError) as err:
        decide(soft, "01")
    assert err.value.message == "the lean decision needs hard attention"
    assert err.value.expected == "no softmax heads, or attncert.kernel.core.trace.forward_rigorous"
    with pytest.raises(InputError, match=r"no tokens \(empty input and no BOS/EOS\)"):
        decide_tokens(MODELS["leftmost"](), [])


def test_a_mean_readout_within_one_rounding_of_zero_is_decided_in_arb():
    """A mean readout on a model with LayerNorm and GELU (the field is arb): with the bias
    minus the float nearest a string's logit, the logit plus bias is the rounding error of
    that float, far below the enclosure's width. Its sign, known from a 300-bit ball, is
    the decision — also for the strings where it differs from the sign of the bias alone."""
    base = _with_readout(harden(v2_model(3)), position="mean", bias=0.0)
    assert not base.is_rational
    checked = 0
    for star in STRINGS:
        real = _logit(base, star)
        near = float(real)
        if real == near or (real > near) == (near < 0):
            continue  # the sign of logit + bias equals the sign of the bias: not this test
        model = _with_readout(base, bias=-near)
        assert decide(model, star) == (real > near), star
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("name", ["leftmost", "leftmost-halves", "table"])
def test_the_row_graphs_scores_are_the_exact_scores(name):
    """RowGraph.score (what the lean decision compares when the float filter leaves more
    than one key) equals yᵢᵀ W_Qᵀ W_K yⱼ of the exact evaluator, for every query and key of
    the first layer."""
    from attncert.arith.rows import RowGraph

    model = MODELS[name]()
    for s in (STRINGS[6], STRINGS[11]):
        tokens = model.encode(s)
        n_tok = len(tokens)
        graph = RowGraph(model, n_tok, Field(None))
        ids = graph.add_embedding(tokens, np.arange(n_tok))
        scores = forward_exact(model, s).layers[0].scores
        for hi, exact in enumerate(scores):
            for i, j in itertools.product(range(n_tok), repeat=2):
                assert graph.score(int(ids[i]), int(ids[j]), 0, hi) == exact[i, j], (s, hi, i, j)
