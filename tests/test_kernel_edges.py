"""The kernel's acceptance edges, each pinned from both sides (issue 41; docs/trust.md,
"Acceptance edges"): an input exactly at the edge and one just across it.

Each test names the comparison it pins. The one-line soundness bugs issue 41 planted — a
bound leaf's claim inside the re-derived range by the tolerance, the same slack on the
uniform checker's soundness comparison, the near-tie filter narrowed from 2E to E, Sturm's
rule ignoring roots above the start — each fail a test here (see the docstrings).
"""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from flint import fmpq, fmpq_poly

from attncert.arith.field import Field
from attncert.arith.filter import Enclosed, row_bounds
from attncert.certificates.verify import certificate_from_dict
from attncert.kernel.all_lengths import closed_form as CF
from attncert.kernel.hard.decide import _choose_blockwise
from attncert.kernel.soft import checker as KS
from attncert.kernel.soft.propagate import propagate
from attncert.kernel.uniform import checker as KU
from attncert.kernel.uniform import dyadic as Q
from attncert.kernel.verify.checker import check as check_tree
from attncert.kernel.verify.checker import exhaustive_decisions
from attncert.model import random_model, zoo_model
from attncert.model.kinds import AttentionKind, Mask
from attncert.soft.certified.uniform import certify_uniform


def _constant(model, bias: float):
    """``model`` with a zero readout weight and readout bias ``bias``: its logit is ``bias``
    on every string, and the kernel's range is ``bias`` up to outward rounding."""
    r = model.readout
    return dataclasses.replace(
        model, readout=dataclasses.replace(r, weight=np.zeros_like(r.weight), bias=bias)
    )


BASE = random_model(1, 1, 8, kind="softmax", seed=5)
BELOW = _constant(BASE, -1e-5)  # the model rejects every string, by 10⁻⁵
ABOVE = _constant(BASE, 1e-5)  # and accepts every string, by 10⁻⁵


# ----- verify: a bound leaf decides from the re-derived range -------------------------------


def _bound_tree(model, decision: bool, z_range, tolerance: float = 1e-3) -> dict:
    """One box bound leaf over {0,1}³ for PARITY (4 members)."""
    right, wrong = ("4", "4")
    return {
        "format": "attncert-verify-certificate",
        "version": 1,
        "model": {"name": model.name, "sha256": model.digest},
        "language": "parity",
        "n": 3,
        "alphabet": "01",
        "tolerance": tolerance,
        "nodes": [
            {
                "parent": None,
                "symbol": None,
                "leaf": {
                    "kind": "bound",
                    "method": "box",
                    "decision": decision,
                    "z_range": list(z_range),
                    "members": "4",
                    "right": right,
                    "wrong": wrong,
                    "witness": "000" if not decision else "001",
                },
            }
        ],
        "totals": {"right": right, "wrong": wrong, "undecided": "0"},
    }


def test_a_bound_leaf_claiming_inside_the_re_derived_range_by_less_than_the_tolerance_is_refused():
    """Issue 41's first plant: the claim [5·10⁻⁶, …] sits inside the re-derived range
    [−10⁻⁵, …] by less than the tolerance 10⁻³, and says "accept"; the model rejects every
    string. The decision must follow from the re-derived range, so the tree is refused at
    the decision — whatever slack the fidelity check allows."""
    z_lo, z_hi = propagate(BELOW, "***", False)[:2]
    assert z_hi < 0 and z_lo > -2e-5
    claim = (5e-6, z_hi + 2e-5)
    rep = check_tree(certificate_from_dict(_bound_tree(BELOW, True, claim)), BELOW)
    assert not rep.accepted
    f = rep.failures[0]
    assert (f.claim, f.where) == ("bound", "nodes[0].leaf.decision")
    assert f.reason.startswith("the re-derived range [")


def test_a_bound_leaf_at_the_decision_edge():
    """accept iff the logit is > 0: a range whose lower end is just above 0 decides accept;
    the same leaf on the model just below 0 does not; reject needs z_hi ≤ 0."""
    z_lo, z_hi = propagate(ABOVE, "***", False)[:2]
    assert 0 < z_lo < 2e-5
    ok = check_tree(certificate_from_dict(_bound_tree(ABOVE, True, (z_lo, z_hi))), ABOVE)
    assert ok.accepted, ok.summary()
    z_lo, z_hi = propagate(BELOW, "***", False)[:2]
    ok = check_tree(certificate_from_dict(_bound_tree(BELOW, False, (z_lo, z_hi))), BELOW)
    assert ok.accepted, ok.summary()
    bad = check_tree(certificate_from_dict(_bound_tree(BELOW, True, (z_lo, z_hi))), BELOW)
    assert [f.where for f in bad.failures] == ["nodes[0].leaf.decision"]


def test_a_logit_of_exactly_zero_is_a_reject():
    """The readout's decision at 0: a logit that is exactly 0 (in arb: the exact zero
    ball) rejects. The float enclosure straddles 0, so arb decides it."""
    zero = _constant(BASE, 0.0)
    strings = ["000", "011", "101", "111"]
    assert exhaustive_decisions(zero, strings).tolist() == [False] * 4
    tiny = _constant(BASE, 5e-324)  # the smallest positive float: accept
    assert exhaustive_decisions(tiny, strings).tolist() == [True] * 4


# ----- soft certificates: a restriction decides from the re-derived range --------------------


def _soft_restriction(model, decision: bool, z_range, n: int = 3) -> dict:
    return {
        "format": KS.FORMAT,
        "version": KS.VERSION,
        "model": {"sha256": model.digest, "name": model.name, "source": None},
        "n": n,
        "method": {"lp": True, "tolerance": 1e-3},
        "sensitivity": [],
        "restriction": {"rho": "*" * n, "decision": decision, "z_range": list(z_range)},
        "pair": None,
    }


def test_a_soft_restriction_decides_from_the_re_derived_range():
    z_lo, z_hi = propagate(BELOW, "***", False)[:2]
    forged = _soft_restriction(BELOW, True, (5e-6, z_hi + 2e-5))
    f = KS.check(forged, BELOW).failures[0]
    assert (f.claim, f.where) == ("restriction", "restriction.decision")
    honest = KS.check(_soft_restriction(BELOW, False, (z_lo, z_hi)), BELOW)
    assert honest.accepted and honest.restriction_range == (z_lo, z_hi)
    z_lo, z_hi = propagate(ABOVE, "***", False)[:2]
    assert KS.check(_soft_restriction(ABOVE, True, (z_lo, z_hi)), ABOVE).accepted


# ----- the uniform checker: K and its parts are sound with no slack --------------------------


@pytest.fixture(scope="module")
def uniform_cert():
    u = certify_uniform(zoo_model("soft_parity"), 64, bins=1, floor_at=(64,))
    assert u.check.accepted, u.check.summary()
    return u.certificate


def _scaled(text: str, factor: Fraction) -> str:
    return Q.text(Q.up(Q.parse(text) * factor))


def test_a_uniform_k_below_the_re_derived_one_by_less_than_the_tolerance_is_refused(uniform_cert):
    """Issue 41's second plant: K (and every K_tokens and per-symbol K, consistently) set
    0.09 % below the re-derived values — inside the tolerance 10⁻³. Soundness is compared
    exactly, so the certificate is refused; the same numbers 0.09 % above are accepted (the
    fidelity tolerance)."""
    model = zoo_model("soft_parity")
    derived = KU.derive(model, uniform_cert["n0"], uniform_cert["bins"])
    for factor, ok in ((Fraction(9991, 10000), False), (Fraction(10009, 10000), True)):
        data = json.loads(json.dumps(uniform_cert))
        data["tolerance"] = 1e-3
        for case, g in zip(data["cases"], derived["cases"], strict=True):
            for p, gp in zip(case["per_symbol"], g["per_symbol"], strict=True):
                p["K_tokens"] = _scaled(gp["K_tokens"], factor)
                p["K"] = _scaled(gp["K"], factor)
        data["K"] = _scaled(derived["K"], factor)
        k = Q.parse(data["K"])
        cap = Fraction(data["cap"])
        data["nontrivial_from"] = str(KU.nontrivial_from(k, cap, data["n0"]))
        data["floor"]["at"] = [{"n": 64, "nats": KU.parity_floor(k, cap, 64)}]
        rep = KU.check(data, model)
        assert rep.accepted is ok, (factor, rep.summary())
        if not ok:
            assert "is not sound" in rep.failures[0].reason


def test_uniform_k_exactly_the_re_derived_one_is_accepted(uniform_cert):
    model = zoo_model("soft_parity")
    derived = KU.derive(model, uniform_cert["n0"], uniform_cert["bins"])
    data = {**json.loads(json.dumps(uniform_cert)), **derived, "tolerance": 0.0}
    k, cap = Q.parse(data["K"]), Fraction(data["cap"])
    data["floor"] = {"kind": "parity", "at": [{"n": 64, "nats": KU.parity_floor(k, cap, 64)}]}
    rep = KU.check(data, model)
    assert rep.accepted, rep.summary()


# ----- the hard decision's near-tie filter: top − 2E ------------------------------------------


class _Graph:
    """Exact scores for two keys of one query (the field's side of the near-tie filter)."""

    def __init__(self, exact):
        self.field = Field(None)
        self.keys = np.array([0, 1])
        self._exact = exact

    def score(self, qi, kj, li, hi):
        return self._exact[kj]


def _two_keys(gap_in_e: float, exact_in_e: tuple[float, float], kind: AttentionKind):
    """Two positions, one query vector; key 1's float score is ``gap_in_e``·E below key 0's;
    the exact scores are float + ``exact_in_e``·E (each within E of its float score, as the
    filter's bound promises). Returns the positions the query attends."""
    q = Enclosed(np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([[0.25, 0.25], [0.25, 0.25]]))
    k0 = np.array([4.0, 0.0])
    probe = Enclosed(np.array([k0, [1.0, 0.0]]), np.zeros((2, 2)))
    e = float(row_bounds(q.take(np.array([0])), probe)[0])
    k1 = np.array([4.0 - gap_in_e * e, 0.0])
    k = Enclosed(np.array([k0, k1]), np.zeros((2, 2)))
    assert float(row_bounds(q.take(np.array([0])), k)[0]) == e  # key 0 has the larger norm
    s = q.mid[0] @ k.mid.T
    exact = [Fraction(float(s[j])) + Fraction(exact_in_e[j]) * Fraction(e) for j in range(2)]
    head = SimpleNamespace(mask=Mask.NONE, kind=kind)
    return _choose_blockwise(_Graph(exact), head, q, k, np.array([0, 1]), 0, 0)


def test_a_key_between_e_and_2e_below_the_top_stays_a_candidate():
    """Issue 41's third plant: with the filter narrowed to top − E, key 1 (1.5E below the
    float top, but exactly above key 0) is dropped and key 0 is attended. The filter must
    keep every key within 2E of the top and decide in the field."""
    got = _two_keys(1.5, (-0.9, 0.9), AttentionKind.LEFTMOST)
    assert got == [(1,), (1,)]


def test_a_key_exactly_2e_below_the_top_stays_a_candidate_and_one_beyond_does_not():
    """The edge itself: a key exactly 2E below can tie the top exactly (both at the ends of
    their E-windows), and a rightmost head then attends it; a key beyond 2E certainly
    loses and is never compared."""
    assert _two_keys(2.0, (-1.0, 1.0), AttentionKind.RIGHTMOST) == [(1,), (1,)]
    assert _two_keys(2.0, (-1.0, 1.0), AttentionKind.LEFTMOST) == [(0,), (0,)]
    beyond = _two_keys(2.5, (-1.0, 1.0), AttentionKind.RIGHTMOST)
    assert beyond == [(0,), (0,)]


# ----- Sturm's rule R2: no real root above the start --------------------------------------------


def _poly(*roots_and_lead) -> fmpq_poly:
    *roots, lead = roots_and_lead
    p = fmpq_poly([lead])
    for r in roots:
        p *= fmpq_poly([-fmpq(r), 1])
    return p


def test_r2_counts_every_real_root_above_the_start():
    """Issue 41's fourth plant: R2 ignoring roots above the start. p = (x − 5)(x − 7) is
    positive at 2 and negative on (5, 7): not positive from 2; positive from 8; a root just
    above the start (2 + 1/1000) is found; a root exactly at the start makes p(a) = 0,
    which is not > 0."""
    p = _poly(5, 7, 1)
    assert p(fmpq(2)) > 0 and CF.roots_above(p, fmpq(2)) == 2
    assert not CF.positive_from(p, fmpq(2))
    assert CF.positive_from(p, fmpq(8)) and not CF.positive_from(p, fmpq(7))
    near = _poly(fmpq(2001, 1000), 9, 1)
    assert not CF.positive_from(near, fmpq(2)) and CF.positive_from(near, fmpq(10))
    assert not CF.positive_from(_poly(3, 1), fmpq(3))  # a root exactly at a
    assert CF.positive_from(_poly(3, 1), fmpq(3) + fmpq(1, 10**9))


def test_a_tail_proof_with_a_root_above_its_start_is_refused():
    """exp(−10n + n²/100) ≤ 1/4 "for every n ≥ 2": true at n = 2 (R1), but the left side is
    1 at n = 1000. R4 needs Φ′ = 10 − n/50 ≥ 0 from x₁ on, which R2 must refuse (a root at
    500); from x₁ = 2 the proof is refused, and the true statement for n ∈ [2, 400] has no
    tail proof either (it is not monotone from any point on)."""
    phi = CF.LogLin.of(CF.RatFn.poly([0, 10, fmpq(-1, 100)]))
    ineq = CF.Inequality("n", (CF.Atom(CF.RatFn.const(1), phi),), fmpq(1, 4), 2)
    proof = CF.TailProof(2, fmpq(1, 2), tuple(CF.tail_conditions(ineq)))
    with pytest.raises(CF.ProofFailure) as err:
        CF.check_inequality(ineq, proof)
    assert err.value.rule == "R2" and "Phi'" in err.value.where
    # the mirror image exp(n²/100 − 10n)… decreasing? no: exp(−(n²/100 − 10n)) with
    # Φ = n²/100 − 10n is non-increasing from n = 500 on, and R2 accepts Φ′ = n/50 − 10
    # from 501 (its root 500 lies below) but not from 499
    phi2 = CF.LogLin.of(CF.RatFn.poly([0, -10, fmpq(1, 100)]))
    cond = CF.Condition("Phi' >= 0", phi2.derivative()[0], CF.RatFn.const(0))
    CF.check_condition(cond, fmpq(501), fmpq(1))
    with pytest.raises(CF.ProofFailure):
        CF.check_condition(cond, fmpq(499), fmpq(1))
