"""The kernel's full rigorous forward pass (attncert.kernel.core.trace) against the float
forward pass (attncert.model.forward), an independent evaluator, on every string up to
length 5 of softmax models — temperatures growing with N, every readout position, a learned
position table — and on exact rational models against attncert.model.exact (issue 25's
mutation analysis: the older trace tests used hard-attention models only)."""

from __future__ import annotations

import dataclasses
import itertools
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from attncert.errors import InputError
from attncert.kernel.core.trace import forward_rigorous, forward_rigorous_tokens, position_rows
from attncert.model import random_model
from attncert.model.exact import forward_exact
from attncert.model.forward import forward
from attncert.model.spec import Temperature

sys.path.insert(0, str(Path(__file__).parent))
from test_model_v2 import v2_model


def _with_temperature(model, temperature):
    layers = tuple(
        dataclasses.replace(
            layer,
            heads=tuple(dataclasses.replace(h, temperature=temperature) for h in layer.heads),
        )
        for layer in model.layers
    )
    return dataclasses.replace(model, layers=layers)


def _soft_models():
    yield "mean", v2_model(4)
    yield "last", v2_model(5, readout="last", activation="relu")
    yield "first-post", v2_model(6, readout="first", norm_position="post")
    yield "beta-n", _with_temperature(v2_model(7), Temperature(0.3, n_power=1))
    yield "beta-log", _with_temperature(v2_model(8), Temperature(0.7, log_power=1.5))
    yield "beta-both", _with_temperature(v2_model(9), Temperature(0.2, n_power=0.5, log_power=1))


SOFT = dict(_soft_models())


def _strings(max_len: int = 5):
    for n in range(1, max_len + 1):
        for s in itertools.product("01", repeat=n):
            yield "".join(s)


def _float_logits(model, strings) -> list[float]:
    """The float forward pass, one batch per length."""
    out = {}
    for n in sorted({len(s) for s in strings}):
        batch = [s for s in strings if len(s) == n]
        logits = forward(model, batch, keep_attention=False).logits.tolist()
        out.update(zip(batch, logits, strict=True))
    return [out[s] for s in strings]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SOFT))
def test_the_rigorous_trace_of_a_softmax_model_encloses_the_float_logit(name):
    model = SOFT[name]
    strings = list(_strings())
    floats = _float_logits(model, strings)
    for s, f in zip(strings, floats, strict=True):
        tr = forward_rigorous(model, s)
        lo, hi = tr.logit_interval()
        assert hi - lo < (1 + abs(lo)) / 10**5, (name, s)  # 53-bit balls through GELU, LN
        # the float pass is off by its rounding only (≪ 1e-9 on these tiny models)
        assert lo - Fraction(1, 10**9) <= Fraction(f) <= hi + Fraction(1, 10**9), (name, s)
        assert tr.accept == (lo > 0)
        # a softmax head attends to every visible position (causal mask: 0..i)
        for layer in tr.layers:
            for head in layer.chosen:
                assert head == tuple(tuple(range(i + 1)) for i in range(len(tr.tokens)))


def test_a_learned_position_table_enters_layer_zero_exactly():
    base = random_model(1, 1, 6, seed=2)
    rng = np.random.default_rng(0)
    table = rng.standard_normal((7, base.d))
    model = dataclasses.replace(base, embedding=dataclasses.replace(base.embedding, table=table))
    strings = [s for s in _strings(4)]
    floats = _float_logits(model, strings)
    for s, f in zip(strings, floats, strict=True):
        tr = forward_rigorous(model, s)
        ex = forward_exact(model, s)
        lo, hi = tr.logit_interval()
        assert lo == hi == Fraction(str(ex.logit)), s  # exact model: one rational
        assert abs(Fraction(f) - lo) < Fraction(1, 10**9)
    n_tok = len(model.encode("0000"))
    rows = position_rows(model, table.shape[0])  # exactly as long as the table: accepted
    assert len(rows) == table.shape[0]
    assert [float(v) for v in rows[3]] == pytest.approx(
        (base.embedding.pos_weight @ _phi(base, table.shape[0], 3) + table[3]).tolist(), abs=1e-12
    )
    assert n_tok <= table.shape[0]
    with pytest.raises(InputError, match="longer than the learned position table"):
        position_rows(model, table.shape[0] + 1)


def _phi(model, n_tok, t):
    from attncert.model.positional import feature_matrix

    return feature_matrix(model.embedding.features, n_tok)[t]


def test_an_empty_token_sequence_is_refused():
    with pytest.raises(InputError, match=r"no tokens \(empty input and no BOS/EOS\)"):
        forward_rigorous_tokens(SOFT["mean"], [])


def test_a_mean_readout_of_a_rational_model_is_exact():
    """The logit of a mean readout, w·(Σ_t y_t)/N + b, in exact rationals: the same rational
    as the mean of the exact evaluator's final rows (attncert.model.exact)."""
    last = random_model(2, 2, 6, seed=3)
    mean = dataclasses.replace(last, readout=dataclasses.replace(last.readout, position="mean"))
    w = [Fraction(v) for v in mean.readout.weight.tolist()]
    for s in _strings(4):
        tr = forward_rigorous(mean, s)
        lo, hi = tr.logit_interval()
        fin = forward_exact(last, s).final  # the final rows do not depend on the readout
        rows = [[Fraction(str(fin[i, j])) for j in range(fin.ncols())] for i in range(fin.nrows())]
        want = sum(
            (sum((a * b for a, b in zip(w, r, strict=True)), Fraction(0)) for r in rows),
            Fraction(0),
        ) / len(rows) + Fraction(mean.readout.bias)
        assert lo == hi == want, s
        assert tr.accept == (want > 0) and tr.precision is None


@pytest.mark.parametrize(("mid", "rad"), [(0, 0), (0.75, 0), (0, 0.25), (-1.5, 0.125)])
def test_the_logit_interval_of_a_ball_is_exactly_its_ends(mid, rad):
    """An arb logit's interval [mid − rad, mid + rad] in exact rationals (a ball's midpoint
    and radius are dyadic, so floats hold them exactly): a zero midpoint or radius is 0."""
    from flint import arb

    from attncert.kernel.core.trace import RigorousTrace

    x = arb(mid, rad)
    m, r = Fraction(float(x.mid())), Fraction(float(x.rad()))
    assert m == Fraction(mid) and (r == 0) == (rad == 0) and r >= Fraction(rad)
    tr = RigorousTrace((), 53, (), None, x, True)
    assert tr.logit_interval() == (m - r, m + r)


def test_rows_with_equal_identity_keys_have_equal_values():
    """The full pass ties two scores exactly, without comparing them, when the key rows'
    identity keys are equal: so equal keys must mean equal rows. A softmax layer under a
    causal mask, without position features, gives same-token positions different rows
    (different visible prefixes), which must then get different keys."""
    model = random_model(2, 1, 8, kind="softmax", mask="future", features=(), seed=3)
    d = model.d
    distinct = 0
    for s in ("0101", "0011", "1110"):
        tr = forward_rigorous(model, s)
        for layer in tr.layers:
            ents = layer.inputs.entries()
            for i, j in itertools.combinations(range(len(layer.keys)), 2):
                same = all(ents[i * d + c].overlaps(ents[j * d + c]) for c in range(d))
                if layer.keys[i] == layer.keys[j]:
                    assert same, (s, i, j)
                elif not same:
                    distinct += 1
    assert distinct > 0
