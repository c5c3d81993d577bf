"""Survivors of kernel/soft/affine/bound (issue 34): the refusal for cost names its layer,
the boxed-entry diagnosis adds up over layers, and a parallel layer appends its FFN's new
private symbols instead of identifying them with the attention's."""

from __future__ import annotations

import numpy as np

from attncert.arith import enclose
from attncert.kernel.soft.affine import forms as A
from attncert.kernel.soft.affine.bound import _ffn, _finish, applicable, restriction_range
from attncert.kernel.soft.affine.heads import attention_layer, first_layer
from attncert.kernel.soft.affine.rows import make_rows
from attncert.model.decoders import random_decoder


def test_the_refusal_for_cost_names_the_layer_and_its_sizes():
    model = random_decoder(3, 2, 8, seed=0)  # layer 2 is not the last: every row queries
    assert applicable(model, 1024) == (
        "layer 2 would need every row as a query (1281 × 1281 rows × 288 columns): "
        "beyond the affine method's budget"
    )


def test_the_boxed_count_is_the_sum_over_layers():
    model = random_decoder(2, 2, 8, seed=3, norm="layer", mlp="gelu")
    rho, base = "***101*1**", "1111010111"  # layer 1 keeps 14 entries as boxes
    rows = make_rows(model, rho, base)
    every = np.arange(len(rows.pos))
    f, b1 = first_layer(model, rows, every)
    x = enclose.embed(model, rows.tok, rows.pos, rows.n_tok)
    f = _finish(model, 0, f, A.point(x.mid, x.rad, rows.m, rows.a))
    readout = np.flatnonzero(rows.pos == model.readout.index(rows.n_tok))
    _, b2 = attention_layer(model, 1, f, rows, readout)
    got = restriction_range(model, rho, base)
    assert b1 > 0 and got.boxed == b1 + b2


def test_a_parallel_layer_appends_its_ffn_symbols():
    """y + attn(LN₁y) + FFN(LN₂y): the FFN's symbols (LN₂'s, the activation's) are new;
    only the layer input's are shared with the attention branch."""
    model = random_decoder(1, 2, 8, positions="rope", norm="layer", mlp="gelu", parallel=True)
    rho, base = "01*1*0", "011100"
    rows = make_rows(model, rho, base)
    every = np.arange(len(rows.pos))
    f, _ = first_layer(model, rows, every)
    x = enclose.embed(model, rows.tok, rows.pos, rows.n_tok)
    xf = A.point(x.mid, x.rad, rows.m, rows.a)
    layer = model.layers[0]
    ff = _ffn(layer.ffn, A.layer_norm(xf, layer.norm2))
    out = _finish(model, 0, f, xf)
    assert xf.E.shape[-1] == 0 and f.E.shape[-1] > 0 and ff.E.shape[-1] > 0
    assert out.E.shape[-1] == f.E.shape[-1] + ff.E.shape[-1]
    np.testing.assert_array_equal(out.E[..., : f.E.shape[-1]], f.E)
    np.testing.assert_array_equal(out.E[..., f.E.shape[-1] :], ff.E)
