"""Claim 3 of the hard-attention checker (attncert.kernel.hard.layers) on two small cases the
oracle tests missed: an undetermined position whose *second* value outscores the query's
own key (the per-position maximum runs over every value slot), and an average-hard head
that ties on exactly two keys (its new activation's enclosure is their mean, not a single
value's) — issue 34: mutation score."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from flint import fmpq

from attncert.arith.field import Field
from attncert.arith.rows import RowGraph
from attncert.certificates.hard import Certificate
from attncert.kernel.core.failure import Failure
from attncert.kernel.hard import layers
from attncert.kernel.hard.checker import check
from attncert.model import random_model
from attncert.model.exact import forward_exact
from attncert.restriction import Restriction


def _free(n: int) -> Restriction:
    return Restriction(("0", "1"), (None,) * n, ("0", "1"))


def _completions(n: int):
    return ("".join(s) for s in itertools.product("01", repeat=n))


def test_a_position_whose_second_value_outscores_the_own_key_blocks_the_claim():
    """Position 0 claims to depend on x1 alone. Under x1 = 1 its leftmost head's own key
    can be outscored by position 1's key for x2 = 1 (its second value slot, not its
    first), so the claim is false — by brute force — and rejected at that assignment. Kills
    ``xǁ_Slotsǁ__init____mutmut_185`` (the running maximum over a position's value slots
    not kept: only the first slot counted, and the false claim accepted)."""
    n = 3
    model = random_model(1, 1, 4, seed=2)
    assert model.n_tokens(n) == n and model.input_offset() == 0
    everything = tuple(range(n))
    sets = tuple((0,) if t == 0 else everything for t in range(n))
    cert = Certificate(
        model_sha256=model.digest,
        model_name=model.name,
        n=n,
        alphabet=model.alphabet,
        restrictions=(_free(n),) * 2,
        dependency_sets=(sets,),
        output_position=model.readout.index(n),
        output_dependency=everything,
    )
    # false: two completions with x1 = 1 give y_0 different exact values
    outs = {s: forward_exact(model, s).layers[0].output for s in _completions(n)}
    row0 = {s: tuple(out[0, j] for j in range(out.ncols())) for s, out in outs.items()}
    assert len({row0[s] for s in row0 if s[0] == "1"}) > 1
    report = check(cert, model)
    assert report.failures == (
        Failure(
            "dependency_sets",
            "layer 1, token position 0, assignment {x1=1}, head 0",
            "token position 1, whose activation depends on input(s) {2} outside the claimed "
            "set, may be attended (it can score above the best determined key at position 0)",
        ),
    )


def _q(x) -> fmpq:
    return fmpq(*float(x).as_integer_ratio())


def _level_average(seed: int):
    """One average-hard layer whose keys all score 0: every query ties on every key."""
    model = random_model(1, 1, 4, seed=seed, kind="average", features=())
    first = model.layers[0]
    heads = tuple(dataclasses.replace(h, w_k=np.zeros_like(h.w_k)) for h in first.heads)
    return dataclasses.replace(model, layers=(dataclasses.replace(first, heads=heads),))


@pytest.mark.parametrize("seed", [13, 14])
def test_a_two_way_average_tie_gives_enclosures_of_the_exact_mean(seed):
    """n = 2, no BOS/EOS: each query ties on exactly its two keys and averages them. Every
    value of layer 1 the checker computes (its table entry for each completion) has a
    float enclosure that contains the exact activation. Kills
    ``x__check_layer__mutmut_273`` (only ties of three or more keys averaged: a two-way
    tie's enclosure is then value 0's, not the mean)."""
    n = 2
    model = _level_average(seed)
    assert model.n_tokens(n) == n
    rho = _free(n)
    graph = RowGraph(model, n, Field(None))
    tables, vals = layers._layer0(model, rho, graph)
    tables, vals = layers._check_layer(model, 1, tables, vals, [tuple(range(n))] * n, rho)
    for s in _completions(n):
        exact = forward_exact(model, s).layers[0].output
        sym = {u: int(c) for u, c in enumerate(s)}
        for i, t in enumerate(tables):
            v = t.vid[layers._row_of(t.deps, sym, 2)]
            for j in range(model.d):
                mid, rad = _q(vals.box.mid[v, j]), _q(vals.box.rad[v, j])
                assert abs(exact[i, j] - mid) <= rad, (s, i, j)
