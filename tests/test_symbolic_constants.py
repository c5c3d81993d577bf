"""Issue 4: constants k (12), N (11), the chain; Definition 5 parameters and their errors."""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import pytest

from attncert.cli.main import main
from attncert.errors import ParameterError
from attncert.symbolic import constants, lemma_constants, lll_params, smallest_k_eq12
from attncert.symbolic.constants import (
    Magnitude,
    _bracket_layer,
    eq11_holds,
    smallest_n_eq11,
)
from attncert.symbolic.params import default_def5

__implements__ = (
    "Hahn Theorem 1",
    "Hahn eq. (11)",
    "Hahn eq. (12)",
    "Hahn S1 Theorem 1",
    "Hahn S1 Definition 5",
    "Hahn S1 eq. (4)",
)

mpmath.iv.dps = 60


def iv(x) -> mpmath.iv.mpf:
    x = Fraction(x)
    return mpmath.iv.mpf(x.numerator) / x.denominator


def eq12_iv(k: int, p, version: str) -> bool | None:
    """(12) ⇔ log D ≤ log RHS, with mpmath interval arithmetic (independent of arb)."""
    c, H, C, eta, q = p.c, p.H, iv(p.C), iv(p.eta), iv(p.q)
    E = (2 ** (2 * c) if version == "paper" else 2**c) * c * c * H / (eta * C)
    logD = eta * C / (c * c) * mpmath.iv.log(1 - (q / 2) ** c)
    K = mpmath.iv.mpf(k)
    logR = -(2 * mpmath.iv.log(K) + mpmath.iv.log(2)) / K + E * K * mpmath.iv.log(1 - 1 / K**2)
    d = logR - logD
    if d.a >= 0:
        return True
    if d.b < 0:
        return False
    return None


def eq11_iv(n: int, k: int, p) -> bool | None:
    a = iv(p.delta) ** 2 * iv(p.q) * (1 - 2 * iv(p.eta)) * iv(p.C) / 3
    K = mpmath.iv.mpf(k)
    d = mpmath.iv.log(mpmath.iv.mpf(1) / 2) + 2**p.c * p.H * n * mpmath.iv.log(1 - 1 / K**2) + a * n
    if d.a >= 0:
        return True
    if d.b < 0:
        return False
    return None


CASES = [
    (1, 2, "1", "1/2", None, None, None),
    (1, 1, "9/10", "1/2", None, None, None),
    (2, 2, "1", "3/4", None, None, None),
    (3, 1, "1", "1/3", "1/10", "1/3", None),
    (1, 3, "1", "1/2", None, "1/5", "1/4"),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("version", ["paper", "supplement"])
def test_k_and_N_are_smallest(case, version):
    p = lll_params(*case)
    k = smallest_k_eq12(p, version)
    assert eq12_iv(k, p, version) is True
    assert eq12_iv(k - 1, p, version) is False
    lc = lemma_constants(p, version)
    assert lc.k == max(lc.k_eq12, lc.k_stage2, lc.k_eq11) and lc.k_eq12 == k
    assert (
        Fraction(2**p.c * p.c) / lc.k_stage2
        <= p.eta * p.C
        < Fraction(2**p.c * p.c) / (lc.k_stage2 - 1)
    )
    N = lc.N_eq11
    assert eq11_iv(N, lc.k, p) is True
    assert N == 1 or eq11_iv(N - 1, lc.k, p) is False
    assert lc.c_next == p.c * (2**p.c * lc.k * p.H + 1)


def test_paper_f_needs_larger_k():
    p = lll_params(1, 2, 1, "1/2")
    assert smallest_k_eq12(p, "paper") > smallest_k_eq12(p, "supplement")


def test_N_requires_feasible_k():
    p = lll_params(1, 2, 1, "1/2")
    with pytest.raises(ParameterError, match=r"\(11\) fails for every n"):
        smallest_n_eq11(2, p)
    assert not eq11_holds(10**6, 2, p)


def test_bracket_mode_agrees_with_exact():
    """For c = 64 both the exact bisection and the log2 bracket are available: they agree."""
    p = lll_params(64, 1, 1, "1/2")
    k = smallest_k_eq12(p)  # ~ 300-bit integer, exact
    kM, _, cN = _bracket_layer(Magnitude(0, exact=64), 1, p.C, p.eta, p.q, p.delta, "supplement")
    from flint import arb, ctx

    ctx.prec = 512
    lg = arb(k).log() / arb(2).log()
    assert lg > kM.lo.lower() and lg <= kM.hi.upper()
    lgc = arb(64 * (2**64 * k + 1)).log() / arb(2).log()
    assert lgc >= cN.lo.lower() and lgc <= cN.hi.upper()
    ctx.prec = 53


def test_chain_two_layers():
    ch = constants(2, 2, "0.9")
    r1, r2 = ch.rows
    assert r1.c.exact == 1 and r1.C == 1
    assert ch.C_final >= Fraction(9, 10) and r1.C_prime**2 == ch.C_final
    assert r1.c_next.exact == 1 * (2 * r1.k.exact * 2 + 1)
    p1 = lll_params(1, 2, r1.C, r1.C_prime)
    assert lemma_constants(p1).k == r1.k.exact
    assert r2.c.exact == r1.c_next.exact
    assert r2.k.level == 1 and r2.c_next.level == 1  # ~10^(2.8·10^7): bounds, not digits
    assert r2.k.lo.lower() < r2.k.hi.upper()
    # c_2 = c_1 (2^{c_1} k_2 H + 1) ⇒ log2 c_2 ≥ c_1 + log2 k_2
    assert r2.c_next.lo >= r1.c_next.exact + r2.k.lo - 1


def test_chain_deep_layers_do_not_overflow():
    ch = constants(4, 2, "0.9", schedule="linear")
    assert [r.c_next.level for r in ch.rows] == [0, 1, 1, 2]
    assert "2^(2^[" in ch.n_applies.describe()
    json.dumps(ch.as_dict())


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"eta": "1/2"}, "η ∈ (0, ½)"),
        ({"eta": "0"}, "η ∈ (0, ½)"),
        ({"q": "1"}, "q ∈ (0, 1)"),
        ({"q": "-1/3"}, "q ∈ (0, 1)"),
        ({"delta": "0"}, "δ > 0"),
        ({"eta": "2/5"}, "Definition 5 unsatisfiable"),
        ({"eta": "1/8", "q": "2/9", "delta": "1/3"}, "Definition 5 violated"),
        ({"q": "1/2", "delta": "1"}, "(1+δ)q"),
    ],
)
def test_bad_parameters(kwargs, field):
    with pytest.raises(ParameterError) as exc:
        lll_params(1, 2, 1, "1/2", **kwargs)
    assert field in str(exc.value)


def test_bad_fractions():
    with pytest.raises(ParameterError, match="C′ < C"):
        lll_params(1, 2, "1/2", "1/2")
    with pytest.raises(ParameterError, match="C ∈ \\(0, 1\\]"):
        lll_params(1, 2, "3/2", "1/2")
    with pytest.raises(ParameterError, match="c ≥ 1"):
        lll_params(0, 2, 1, "1/2")


@pytest.mark.parametrize(
    "r", [Fraction(1, 100), Fraction(1, 2), Fraction(9, 10), Fraction(999, 1000)]
)
def test_default_def5_exact(r):
    eta, q, delta = default_def5(r)
    assert 0 < eta < Fraction(1, 2) and 0 < q < 1 and 0 < delta < 1 and (1 + delta) * q < 1
    assert (1 - 2 * eta) * (1 - (1 + delta) * q) == r


def test_solve_for_missing_parameter_exactly():
    p = lll_params(1, 2, 1, "1/2", eta="1/10", q="1/4")
    assert (1 - 2 * p.eta) * (1 - (1 + p.delta) * p.q) == Fraction(1, 2)
    p = lll_params(1, 2, 1, "1/2", q="1/4", delta="1/2")
    assert (1 - 2 * p.eta) * (1 - (1 + p.delta) * p.q) == Fraction(1, 2)


# --- CLI ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_lll_exit_codes_and_json(capsys):
    argv = ["lll", "--c", "1", "--H", "2", "--C", "1", "--C-prime", "0.5"]
    assert main(argv) == 1  # e.g. the supplement's suggested choice gives η = 0 here
    capsys.readouterr()
    assert main([*argv, "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert set(d) >= {"params", "claims", "constants", "refuted", "exit_code"}
    assert d["params"]["eta"] == "1/8" and d["exit_code"] == 1
    ids = {c["id"] for c in d["claims"]}
    assert "stage2.choice-of-k[supplement]" in ids
    for c in d["claims"]:
        assert set(c) >= {"id", "version", "source", "general", "concrete", "general_evidence"}
    assert "def5.suggested-choice" in d["refuted"]
    assert d["constants"]["supplement"]["checks"]["eq12_at_k_eq12"] is True
    ign = [
        "--ignore",
        "def5.suggested-choice",
        "--ignore",
        "stage3.independent-events[as written]",
        "--ignore",
        "stage2.subsequence-exists[paper]",
        "--ignore",
        "stage3.neighbour-events[paper]",
    ]
    assert main([*argv, *ign]) == 0
    out = capsys.readouterr().out
    assert "refuted at these parameters" in out
    assert "claims in general: " in out and "undecided 0" in out
    assert main(["lll", "--c", "1", "--H", "2", "--C", "0.9", "--C-prime", "0.5", *ign]) == 1
    assert main([*argv, "--eta", "0.5"]) == 2
    assert "η ∈ (0, ½)" in capsys.readouterr().err
    assert main([*argv, "--ignore", "no-such-claim"]) == 2


def test_cli_constants(capsys):
    assert main(["constants", "--layers", "2", "--heads", "2", "--C", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "layer 2" in out and "10^[" in out
    assert main(["constants", "--layers", "2", "--heads", "2", "--C", "0.9", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["rows"]) == 2 and d["rows"][0]["k"]["level"] == 0
    assert main(["constants", "--layers", "2", "--heads", "2", "--C", "1.5"]) == 2
