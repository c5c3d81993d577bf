"""§5: exact uniform–tieless detection and the Theorem-26 softmax simulation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from attncert.compile import compile_formula
from attncert.compile.agreement import all_strings
from attncert.compile.tieless import (
    check_uniform_tieless,
    error_bound,
    soft_simulation,
    to_average_hard,
    uniform_heads,
)
from attncert.errors import ParameterError, UnsupportedError
from attncert.logic import LIBRARY, holds
from attncert.model import accepts_exact, forward, forward_exact, zoo_model

__implements__ = (
    "Yang Definition 5",
    "Yang Lemma 24",
    "Yang Lemma 25",
    "Yang Theorem 26",
)


def _hard(name: str, regime: str = "unbounded"):
    nf = LIBRARY[name]
    return to_average_hard(compile_formula(nf.formula, regime=regime, alphabet=nf.alphabet)), nf


@pytest.mark.slow
@pytest.mark.parametrize("name", ["previous-symbol", "since", "parity", "dyck1"])
def test_compiled_unbounded_models_are_uniform_tieless(name):
    hard, nf = _hard(name)
    max_len = {"since": 5, "dyck1": 6}.get(name, 7)
    rep = check_uniform_tieless(hard, max_len)
    assert rep.uniform_tieless and len(rep.lengths) == max_len
    # the hard model computes the formula exactly (exact rational evaluation)
    for n in range(1, max_len + 1):
        for w in all_strings(nf.alphabet, n):
            assert accepts_exact(hard, w) == holds(nf.formula, w)
    # every reported gap is a real gap: recompute one from an exact trace
    rep_n = rep.lengths[-1]
    for (li, hi), g in rep_n.gaps.items():
        if g is None:
            continue
        head = hard.layers[li].heads[hi]
        best = None
        for w in all_strings(nf.alphabet, rep_n.n):
            tr = forward_exact(hard, w)
            sc = tr.layers[li].scores[hi]
            for i in range(len(w)):
                vis = [j for j in range(len(w)) if head.mask.allowed(i, j)]
                if len(vis) < 2:
                    continue
                vals = sorted(
                    (Fraction(int(sc[i, j].p), int(sc[i, j].q)) for j in vis), reverse=True
                )
                gap = vals[0] - vals[1]
                best = gap if best is None or gap < best else best
        assert best == g


def test_ties_are_found_with_a_real_witness():
    rep = check_uniform_tieless(zoo_model("ones_star"), 4)
    tie = rep.first_tie
    assert tie is not None and not rep.uniform_tieless
    tr = forward_exact(zoo_model("ones_star"), tie.string)
    scores = tr.layers[tie.layer].scores[tie.head]
    vals = [scores[tie.position - 1, j - 1] for j in tie.keys]
    assert len(tie.keys) >= 2 and all(v == vals[0] for v in vals)
    row_max = max(scores[tie.position - 1, j] for j in range(len(tie.string)))
    assert vals[0] == row_max
    # the sign heads of the bounded counting construction are not tieless (x < 0 case)
    hard, _ = _hard("majority", "temperature")
    assert check_uniform_tieless(hard, 4).first_tie is not None
    with pytest.raises(ParameterError, match="not uniform–tieless"):
        soft_simulation(hard, 4)


def test_the_enumeration_records_the_exact_decisions():
    """``LengthReport.accepted`` is exactly the set of enumerated inputs the model accepts
    (brute force with ``accepts_exact``); after a tie, of the inputs enumerated so far."""
    hard, _ = _hard("parity")
    for rep in check_uniform_tieless(hard, 5).lengths:
        strings = all_strings(hard.alphabet, rep.n)
        assert rep.strings == len(strings)
        assert rep.accepted == {s for s in strings if accepts_exact(hard, s)}
        assert 0 < len(rep.accepted) < len(strings)
    ones = zoo_model("ones_star")
    last = check_uniform_tieless(ones, 4).lengths[-1]
    seen = all_strings(ones.alphabet, last.n)[: last.strings]
    assert last.ties and last.accepted == {s for s in seen if accepts_exact(ones, s)}


def test_refusals():
    with pytest.raises(UnsupportedError):
        check_uniform_tieless(compile_formula("prev Q_a", alphabet="ab"), 3)
    with pytest.raises(ParameterError, match="strings"):
        check_uniform_tieless(zoo_model("ones_star"), 30)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["previous-symbol", "parity", "dyck1"])
def test_theorem_26_soft_model_matches_hard_model(name):
    hard, nf = _hard(name)
    max_len = 7 if name != "dyck1" else 6
    sim = soft_simulation(hard, max_len)
    soft = sim.model
    assert all(h.kind.value == "softmax" for L in soft.layers for h in L.heads)
    assert soft.meta["tieless"]["per_n"][-1]["n"] == max_len
    for n in range(1, max_len + 1):
        ws = all_strings(nf.alphabet, n)
        got = forward(soft, ws)
        for w, acc, final in zip(ws, got.accept, got.final, strict=True):
            tr = forward_exact(hard, w)
            assert bool(acc) == tr.accept == holds(nf.formula, w)
            # activations within the certified bound at the fitted temperature
            rep = sim.report.lengths[n - 1]
            bound = error_bound(
                hard,
                rep,
                soft.layers[0].heads[0].temperature(hard.n_tokens(n))
                if soft.layers[0].heads
                else 1.0,
            )
            if bound is not None:
                hard_final = np.array(
                    [[float(Fraction(int(v.p), int(v.q))) for v in row] for row in _rows(tr.final)]
                )
                assert np.max(np.abs(final - hard_final)) <= float(bound.upper()) + 1e-9


def _rows(m):
    return [[m[i, j] for j in range(m.ncols())] for i in range(m.nrows())]


def test_lower_temperature_than_derived_breaks_the_bound():
    """The per-n β is minimal for the certified bound: 1/4 of it no longer certifies."""
    hard, _ = _hard("parity")
    sim = soft_simulation(hard, 6)
    rep = sim.report.lengths[-1]
    beta = sim.per_n[-1]["beta_needed"]
    w1 = float(np.abs(hard.readout.weight).sum())
    e = error_bound(hard, rep, beta / 4)
    assert e is None or not (e.upper() * w1 < float(rep.margin))
    assert uniform_heads(hard)
