"""Survivors of kernel/soft/affine/heads (issue 34): every head's linearization errors in
layer 1 are private symbols of its own, appended — never identified with another head's;
a later layer's key kept as a box keeps the box's centre."""

from __future__ import annotations

import dataclasses

import numpy as np

from attncert.kernel.soft.affine import forms as A
from attncert.kernel.soft.affine.heads import _query, first_layer
from attncert.kernel.soft.affine.rows import Rows, make_rows
from attncert.kernel.soft.affine.rows import keys as key_rows
from attncert.model.decoders import random_decoder


def test_each_layer_1_head_appends_its_own_error_symbols():
    model = random_decoder(1, 2, 8, positions="rope", seed=2)
    layer = model.layers[0]
    single = dataclasses.replace(model, layers=(dataclasses.replace(layer, heads=layer.heads[:1]),))
    rows = make_rows(model, "0*1*01", "001101")
    every = np.arange(len(rows.pos))
    both, _ = first_layer(model, rows, every)
    one, _ = first_layer(single, rows, every)
    d = model.d
    assert one.E.shape[-1] == d and both.E.shape[-1] == 2 * d
    # head 1's symbols come first, exactly as without head 2 (which only appends its own)
    np.testing.assert_array_equal(both.E[..., :d], one.E)


def _one_moving_key(keys: int, g: float):
    """A later layer's query over ``keys`` fixed keys of score 0 and value 0, one free
    position's two rows (score 0, value 0), and its own row, whose key is g·(x − ½) for
    the free choice x and whose value is 1: y(x) = e^{g(x − ½)}/(keys + 1 + e^{g(x − ½)})."""
    n_tok = keys + 2
    pos = np.array([*range(n_tok), keys])  # the last row: the free position's alternative
    group = np.full(n_tok, -1)
    group[keys] = 0
    rows = Rows(
        n_tok, pos, np.array([0] * n_tok + [1]), np.arange(n_tok), np.array([keys]),
        np.array([[n_tok]]), group,
    )  # fmt: skip
    r = len(pos)
    kg = np.zeros((r, 1, 1, 1))
    kg[keys + 1, 0, 0, 0] = g
    k = A.Form(np.zeros((r, 1)), kg, np.zeros((r, 1, 0)), np.zeros((r, 1)))
    q = A.Form(np.ones((1, 1)), np.zeros((1, 1, 1, 1)), np.zeros((1, 1, 0)), np.zeros((1, 1)))
    oc = np.zeros((r, 1))
    oc[keys + 1, 0] = 1.0
    ov = A.Form(oc, np.zeros((r, 1, 1, 1)), np.zeros((r, 1, 0)), np.zeros((r, 1)))
    ov_abs = np.abs(ov.c) + A.gdev(ov.G) + ov.r
    kr, groups, alt = key_rows(rows, np.ones(n_tok, dtype=bool), keys + 1)
    used = np.concatenate([kr, alt.ravel()])
    beta = (1.0, 0.0, 1.0)
    return _query(q, k, ov, A.dev(k), ov_abs, beta, used, kr, groups, alt, rows)


def test_a_key_kept_as_a_box_keeps_the_box_s_centre():
    """The moving key's e^{s − M}·v is kept as its box (the linearization's remainder
    ½Δ²e^Δ is larger); the box's centre is the midpoint of about [e^{−3}, e^{3}], not the
    linearization's e⁰ — with the latter the range misses y(1) = e³/(101 + e³)."""
    c, g, e, r, err, _ = _one_moving_key(100, 6.0)
    for x in (0, 1):
        s = 6.0 * (x - 0.5)
        y = np.exp(s) / (101 + np.exp(s))
        centre = c[0] + g[0, 0, 0] * (x - 0.5)
        rad = np.abs(e).sum() + r[0] + err[0]
        assert centre - rad <= y <= centre + rad, (x, y, centre, rad)
