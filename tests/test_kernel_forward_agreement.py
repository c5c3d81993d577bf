"""The kernel's lean rigorous decision (attncert.kernel.forward.decide) against the full
rigorous pass (attncert.kernel.trace, exact rationals here) and the exact rational evaluator
(attncert.model.exact, which has no mean pooling), on every string of length 4, where it matters
most: readout logits within one rounding of 0 (the readout bias set to minus the float
nearest a string's logit), so that the float enclosure straddles 0 and the field decides;
a logit exactly 0 (rejected: accept iff logit > 0); structural ties under leftmost,
rightmost and average-hard heads; every readout position (issue 25's mutation analysis)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from attncert.errors import InputError
from attncert.kernel.forward import decide, decide_tokens
from attncert.kernel.trace import forward_rigorous
from attncert.model import random_model
from attncert.model.exact import forward_exact

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
    "rightmost": lambda: random_model(2, 1, 8, seed=5, kind="rightmost", features=()),
    "average": lambda: random_model(2, 2, 8, seed=1, kind="average", features=()),
    "future-mask": lambda: random_model(2, 2, 8, seed=3, mask="future"),
}


def _with_readout(model, **change):
    return dataclasses.replace(model, readout=dataclasses.replace(model.readout, **change))


@pytest.mark.parametrize("position", ["last", "first", "mean"])
@pytest.mark.parametrize("name", list(MODELS))
def test_decisions_within_one_rounding_of_zero_equal_the_exact_ones(name, position):
    base = _with_readout(MODELS[name](), position=position, bias=0.0)
    logits = {s: forward_rigorous(base, s).logit_interval()[0] for s in STRINGS}
    for star in (STRINGS[5], STRINGS[12]):
        model = _with_readout(base, bias=-float(logits[star]))
        for s in STRINGS:
            want = forward_rigorous(model, s).accept
            if position != "mean":
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
    assert err.value.expected == "no softmax heads, or attncert.kernel.trace.forward_rigorous"
    with pytest.raises(InputError, match=r"no tokens \(empty input and no BOS/EOS\)"):
        decide_tokens(MODELS["leftmost"](), [])
