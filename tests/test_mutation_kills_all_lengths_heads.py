"""The score-profile rules of the all-length checker (kernel/all_lengths/heads) on small
hand-built heads (issue 34): each rule's exact closed-form bound and case description for
a head of the right shape, and a refusal for a head that only looks like one."""

from __future__ import annotations

import pytest
from flint import fmpq

from attncert.kernel.all_lengths import heads as H
from attncert.kernel.all_lengths.closed_form import Atom, LogLin, RatFn
from attncert.kernel.all_lengths.view import HeadView, NotSupported, Val
from attncert.logic import syntax as s
from attncert.model.spec import Mask

ONE, X_MINUS_1 = RatFn.const(1), RatFn.poly([-1, 1])


def _pe(feature: str, level: int = 0) -> Val:
    return Val(level, pe=((feature, fmpq(1)),))


KNOWN = {
    0: Val(0, const=fmpq(1), pe=(("1", fmpq(1)),)),  # the constant 1
    1: _pe("(-1)^i"),
    2: _pe("i/n"),
    3: _pe("i"),
    4: _pe("i^2"),
    5: _pe("[i=1]"),
    6: Val(0, formula=s.Atom("a")),  # a proved Boolean
    10: _pe("1/i^2"),
    11: _pe("1/i"),
}


def _head(qk, mask, n_power=0, layer=1):
    return HeadView(layer, 0, qk, {}, mask, fmpq(2), n_power, 0)


def test_key_weights_need_constants_known_before_the_layer():
    h = _head({(0, 2): fmpq(3)}, Mask.NONE, layer=0)
    assert H.key_weights(h, KNOWN) == {2: fmpq(3)}
    with pytest.raises(NotSupported, match="not a known constant"):
        H.key_weights(h, {0: Val(1, const=fmpq(1))})  # the constant only from layer 1 on
    with pytest.raises(NotSupported, match="not a known constant"):
        H.key_weights(_head({(6, 2): fmpq(3)}, Mask.NONE), KNOWN)  # a Boolean, not a constant


@pytest.mark.parametrize("prev", [True, False])
@pytest.mark.parametrize("wp", [fmpq(1), fmpq(-1)])
def test_prev_parity_names_its_case(prev, wp):
    mask = Mask.FUTURE_STRICT if prev else Mask.PAST_STRICT
    w = fmpq(1, 4) if prev else fmpq(-1, 4)  # i/n favours the nearest key on that side
    h = _head({(0, 1): wp, (0, 2): w}, mask, n_power=1)
    parity, hb = H.prev_parity(h, KNOWN, prev, 1, 2)
    assert parity == (0 if wp > 0 else 1)
    side, name = ("-" if prev else "+"), ("even" if wp > 0 else "odd")
    assert hb.what == f"rows whose target j = i{side}1 is {name}" and hb.var == "n"
    same = LogLin.of(RatFn.x_pow(1).scale(2)).times(RatFn.x_pow(-1).scale(fmpq(1, 2)))
    other = LogLin.of(RatFn.x_pow(1).scale(2)).times(RatFn.const(2))
    assert hb.atoms == (Atom(ONE, same, same, 1), Atom(X_MINUS_1, other))


def test_prev_shift_bound():
    # scores 2(i − 1)j − j² (K = 1), constant β = 2: GAUSS with Φ = 2, Ψ = 6
    h = _head({(3, 3): fmpq(2), (0, 3): fmpq(-2), (0, 4): fmpq(-1)}, Mask.FUTURE_STRICT)
    hb = H.prev_shift(h, KNOWN, True)
    phi = LogLin.of(RatFn.const(2))
    assert hb == H.HeadBound((1, 0), "rows with a key at j = i-1", "n", (
        Atom(ONE, phi, LogLin.of(RatFn.const(6)), 1),
    ))  # fmt: skip


def test_since_shift_accepts_a_small_tie_weight_and_refuses_a_heavy_one():
    h = _head({(3, 6): fmpq(2), (0, 3): fmpq(1, 2)}, Mask.FUTURE_STRICT)
    hb = H.since_shift(h, KNOWN, True, 6)
    same = LogLin.of(RatFn.const(1))  # β·|T| = 2·½
    other = LogLin.of(RatFn.poly([2, 3]))  # β(2|T| + (W − |T|)·i)
    assert hb == H.HeadBound((1, 0), "rows with a χ-position on the visible side", "i", (
        Atom(ONE, same, same, 1), Atom(X_MINUS_1, other),
    ))  # fmt: skip
    heavy = _head({(3, 6): fmpq(1, 2), (0, 3): fmpq(1)}, Mask.FUTURE_STRICT)
    with pytest.raises(NotSupported, match=r"are not W·i·χ_j ± T·j with W > \|T\|"):
        H.since_shift(heavy, KNOWN, True, 6)


def test_since_tie_bound_and_a_missing_tie_term():
    h = _head({(0, 6): fmpq(2), (0, 2): fmpq(1, 2)}, Mask.FUTURE_STRICT)
    hb = H.since_tie(h, KNOWN, True, 6, 2)
    assert hb.what == "rows with a χ-position on the visible side" and hb.var == "n"
    no_tie = _head({(0, 6): fmpq(2)}, Mask.FUTURE_STRICT)
    with pytest.raises(NotSupported, match="favours the farthest key"):
        H.since_tie(no_tie, KNOWN, True, 6, 2)


def test_lookup_needs_every_entry_of_the_table():
    full = {(7, 10): -2, (8, 10): -2, (9, 10): -2, (8, 11): 4, (9, 11): 4}
    h = _head({k: fmpq(v) for k, v in full.items()}, Mask.FUTURE)
    assert H.lookup(h, KNOWN, 7, 8, 9) == (True, fmpq(2))
    partial = _head({(8, 10): fmpq(-2)}, Mask.FUTURE)
    with pytest.raises(NotSupported, match="not a table lookup"):
        H.lookup(partial, KNOWN, 7, 8, 9)


def test_sign_query_refuses_a_constant_key_without_its_mark():
    ok = _head({(7, 5): fmpq(2), (7, 0): fmpq(-1)}, Mask.NONE)
    assert H.sign_query(ok, KNOWN, 5, 0) == {7: fmpq(1)}
    bad = _head({(7, 0): fmpq(-1)}, Mask.NONE)
    with pytest.raises(NotSupported, match="the key is not 2\\[j=1\\] − 1"):
        H.sign_query(bad, KNOWN, 5, 0)
