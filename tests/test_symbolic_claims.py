"""Issue 4: every claim of attncert.symbolic.claims is checked; verdicts come from the checker."""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from attncert.symbolic.claims import CLAIMS, Claim, Kind, Slack, claim
from attncert.symbolic.counterexample import _points, evaluate_point, find_counterexample
from attncert.symbolic.params import lll_params
from attncert.symbolic.prover import prove
from attncert.symbolic.rigorous import decide, to_arb
from attncert.symbolic.runner import Verdict, check_claim, check_claims

__implements__ = (
    "Hahn Lemma 4",
    "Hahn eq. (8)",
    "Hahn eq. (9)",
    "Hahn eq. (10)",
    "Hahn eq. (12)",
    "Hahn S1 Lemma 17",
    "Hahn S1 Lemma 21",
    "Hahn S1 Lemma 22",
    "Hahn S1 Lemma 23",
)

#: The claims the checker must find false as written (the finding of issue 4).
EXPECTED_REFUTED = {
    "def5.suggested-choice",  # supplement: 2η = 1 − 2C′/C gives η ≤ 0 when C′/C ≥ ½
    "stage2.free-bits[extract]",  # extract drops the factor c: cU ≤ 2^c c n/k, not 2^c n/k
    "stage2.choice-of-k[paper]",  # 2^c c/k ≤ η does not give (1−2η)C unless C = 1
    "stage2.choice-of-k[extract]",
    "stage3.chernoff[Definition 5 range δ>0]",  # Chernoff (8) needs δ ≤ 1
    "stage3.independent-events[as written]",  # ≤ d dependencies ⇒ only ≥ k/(d+1)
    "stage2.subsequence-exists[paper]",  # activations sharing inputs: no private inputs
    "stage3.neighbour-events[paper]",  # f counts neighbouring heads, each has 2^c events
}


@pytest.fixture(scope="module")
def report():
    return check_claims(lll_params(c=1, H=2, C=1, C_prime="1/2"))


@pytest.mark.slow
def test_expected_refutations(report):
    refuted = {r.claim.id for r in report.results if r.general is Verdict.REFUTED}
    assert refuted == EXPECTED_REFUTED


@pytest.mark.parametrize("cl", CLAIMS, ids=lambda c: c.id)
def test_each_claim(cl: Claim, report):
    r = report.result(cl.id)
    if cl.id in EXPECTED_REFUTED:
        cex = r.general_counterexample
        assert cex is not None
        env = dict(cex.values)
        # independent re-check: hypotheses hold, conclusion fails
        for h in cl.hypotheses:
            assert decide(h, env) is True
        assert evaluate_point(cl, env) is False
    else:
        assert r.general in (Verdict.PROVED, Verdict.CITED, Verdict.HOLDS), r.general_evidence
        # admissible, non-vacuous parameters where the claim holds
        if cl.kind in (Kind.LIMIT, Kind.CUSTOM):
            return
        hits = 0
        for env in _points(cl, {}):
            if all(decide(h, env) is True for h in cl.hypotheses):
                got = evaluate_point(cl, env)
                if cl.conclusion.has(sp.Eq) and got is None:
                    # an equality of transcendental numbers: arb can refute, not confirm;
                    # not refuted at 4096 bits is what we can check here.
                    hits += 1
                    continue
                assert got is True
                hits += 1
            if hits >= 3:
                break
        assert hits >= 1, "no admissible sample point"


@pytest.mark.parametrize(
    "cid", ["lll.limit-A", "lll.limit-1-A-f", "lll.limit-E2", "lll.rhs12-limit"]
)
def test_limits_numerically(cid):
    """The proved limits agree with interval evaluation at k = 10^8 (E = 5)."""
    cl = claim(cid)
    expr = cl.conclusion.lhs.args[0]
    env = {"k": 10**8, "E": 5}
    val = to_arb(expr, env)
    assert abs(val - 1) < 1e-5
    assert prove(cl).proved


def test_rhs12_monotone_matches_interval_values():
    """RHS(12) increases on k = 2..60 for E = 1 (mpmath.iv), as the custom proof says."""
    mpmath.iv.dps = 40
    vals = []
    for kk in range(2, 60):
        k = mpmath.iv.mpf(kk)
        vals.append(
            mpmath.iv.exp(
                -(2 * mpmath.iv.log(k) + mpmath.iv.log(2)) / k + k * mpmath.iv.log(1 - 1 / k**2)
            )
        )
    for a, b in itertools.pairwise(vals):
        assert b.a > a.b
    assert prove(claim("lll.rhs12-monotone")).proved


def test_mutated_claims_are_not_proved():
    """Sabotaged statements must not be proved; the search refutes them."""
    base = claim("stage2.choice-of-k[supplement]")
    flipped = Claim(
        id="mut",
        source=base.source,
        hypotheses=base.hypotheses,
        conclusion=sp.Gt((1 - sp.Symbol("eta", positive=True) * 0) * 0, 1),  # 0 > 1
        parameters=base.parameters,
    )
    assert not prove(flipped).proved
    assert find_counterexample(flipped).counterexample is not None
    # a wrong slack hint (claims k ≥ 2^c c/η suffices for the supplement's conclusion
    # under the paper's weaker hypothesis) must not pass the coverage check
    paper = claim("stage2.choice-of-k[paper]")
    lie = Claim(
        id="lie",
        source=paper.source,
        hypotheses=paper.hypotheses,
        conclusion=paper.conclusion,
        parameters=paper.parameters,
        slacks=(Slack("k", "ratio_ge", base.slacks[0].bound),),
    )
    r = prove(lie)
    assert not r.proved and "slack" in r.evidence


def test_concrete_verdicts_depend_on_parameters():
    """choice-of-k[paper] holds at C = 1 but is refuted at C = 9/10 (with a verified k)."""
    cl = claim("stage2.choice-of-k[paper]")
    at1 = check_claim(cl, lll_params(1, 2, 1, "1/2"))
    assert at1.concrete is Verdict.PROVED
    at09 = check_claim(cl, lll_params(1, 2, "9/10", "1/2"))
    assert at09.concrete is Verdict.REFUTED
    env = dict(at09.concrete_counterexample.values)
    k, eta, C = env["k"], env["eta"], env["C"]
    assert Fraction(2) / k <= eta  # hypothesis (c = 1)
    assert (1 - eta) * C - Fraction(2) / k < (1 - 2 * eta) * C  # conclusion fails, exactly


def test_chernoff_counterexample_exact():
    """The refuted δ > 0 Chernoff claim: exact binomial tail vs exp bound (mpmath.iv)."""
    r = find_counterexample(claim("stage3.chernoff[Definition 5 range δ>0]"))
    env = r.counterexample.values
    m, q, d = int(env["m"]), env["q"], env["delta"]
    from math import comb

    tail = sum(
        Fraction(comb(m, x)) * q**x * (1 - q) ** (m - x)
        for x in range(m + 1)
        if x > (1 + d) * q * m
    )
    mpmath.iv.dps = 30

    def iv(x: Fraction):
        return mpmath.iv.mpf(x.numerator) / x.denominator

    expo = -(iv(d) ** 2) * iv(q) * (1 - 2 * iv(env["eta"])) * iv(env["C"]) * int(env["n"]) / 3
    assert iv(tail).a > mpmath.iv.exp(expo).b
    assert d > 1  # the δ ≤ 1 version is not contradicted


def test_independent_events_witness():
    """The as-written step fails on a clique K_{d+1}; the refined count survives it."""
    r = find_counterexample(claim("stage3.independent-events[as written]"))
    env = r.counterexample.values
    d = env["c"] ** 2 / (env["eta"] * env["C"])
    k = int(env["k"])
    # a complete graph on k ≤ d+1 vertices: max degree k−1 ≤ d, independence number 1 < k/d
    assert k - 1 <= d and Fraction(1) < Fraction(k) / d
    assert find_counterexample(claim("stage3.independent-events[refined]")).counterexample is None
