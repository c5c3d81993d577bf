"""All-length agreement proofs (issue 23): the closed-form checker, the kernel, tampering.

The kernel (:mod:`attncert.kernel.all_lengths.checker`) must accept the finder's certificates,
reject every edited inequality, exponent, coefficient or N0 naming what changed, and refuse
a lowered temperature with the length where the bound breaks; the closed-form bounds must
dominate the true soft-attention errors measured by the float evaluator at small n.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json

import numpy as np
import pytest
from flint import fmpq, fmpq_poly

from attncert.certificates.all_lengths import certificate_from_dict
from attncert.compile import compile_formula
from attncert.kernel.all_lengths import checker as K
from attncert.kernel.all_lengths.closed_form import (
    Atom,
    Inequality,
    LogLin,
    ProofFailure,
    RatFn,
    TailProof,
    check_inequality,
    roots_above,
    tail_conditions,
)
from attncert.kernel.all_lengths.view import PREDICATE_COLUMNS
from attncert.logic.numpred import PREDICATES
from attncert.model.forward import forward
from attncert.model.positional import PosFeature
from attncert.model.spec import Temperature
from attncert.prove.all_lengths import prove_all_lengths
from attncert.prove.all_lengths_certificate import certificate_to_dict

# ----- the closed-form checker --------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_sturm_counts_match_numpy(seed):
    rng = np.random.default_rng(seed)
    roots = sorted(rng.integers(-6, 7, size=rng.integers(1, 5)).tolist())
    p = fmpq_poly([1])
    for r in roots:
        p *= fmpq_poly([-r, 1])
    p *= fmpq_poly([1, 0, 1])  # no real root
    for a in (-7, -2, 0, 3, 7):
        a_q = fmpq(2 * a + 1, 2)  # never a root
        assert roots_above(p, a_q) == len({r for r in roots if r > a_q})


def test_ratfn_arithmetic_is_exact_and_canonical():
    x = RatFn.poly([0, 1])
    r = (x * x - RatFn.const(1)) / (x - RatFn.const(1))  # = x + 1
    assert r == RatFn.poly([1, 1])
    assert (RatFn.x_pow(-1) * x) == RatFn.const(1)
    d = (RatFn.const(1) / x).derivative()
    assert d == RatFn.x_pow(-2).scale(-1)
    assert RatFn.from_json(r.to_json(), "r") == r


def _prev_like(c: fmpq) -> Inequality:
    one = RatFn.const(1)
    geo = Atom(one, LogLin.of(RatFn.const(2 * c)), LogLin.of(RatFn.const(2 * c)), 1)
    tail = Atom(RatFn.poly([-1, 1]), LogLin.of(RatFn.poly([0, 2 * c])))
    return Inequality("n", (geo, tail), fmpq(1, 4), 2)


def test_inequality_proof_accepts_and_names_the_failing_point():
    ineq = _prev_like(fmpq(11, 8))
    check_inequality(ineq, TailProof(2, fmpq(0), tuple(tail_conditions(ineq))))
    low = _prev_like(fmpq(4, 5))  # geo part 1/(e^1.6 − 1) ≈ 0.253 > 1/4 at every n
    with pytest.raises(ProofFailure) as err:
        check_inequality(low, TailProof(2, fmpq(0), tuple(tail_conditions(low))))
    assert err.value.rule == "R1" and err.value.x == 2


def test_log_lower_bound_must_be_below_log_x1():
    ineq = _prev_like(fmpq(11, 8))
    with pytest.raises(ProofFailure, match="log_lower"):
        check_inequality(ineq, TailProof(2, fmpq(7, 10), tuple(tail_conditions(ineq))))


def test_monotonicity_rule_refuses_an_increasing_term():
    # (n − 1)·n^(−1/2): increasing, so the tail rule R4 must fail wherever it starts
    at = Atom(RatFn.poly([-1, 1]), LogLin.of(RatFn.const(0), RatFn.const(fmpq(1, 2))))
    ineq = Inequality("n", (at,), fmpq(100), 2)
    for x1 in (2, 10, 1000):
        with pytest.raises(ProofFailure, match="Phi' - P'/P"):
            check_inequality(ineq, TailProof(x1, fmpq(0), tuple(tail_conditions(ineq))))


def test_predicate_columns_match_the_registry_and_the_definitions():
    for (name, shift), combo in PREDICATE_COLUMNS.items():
        reg = {
            k: fmpq(*float(v).as_integer_ratio())
            for k, v in PREDICATES[name].columns[shift].items()
        }
        assert reg == combo
        theta = PREDICATES[name]
        for n in range(1, 120):
            for j in range(1, n + 1):
                vals = [(c, PosFeature(f).exact(j, n)) for f, c in combo.items()]
                val = sum((c * fmpq(v.numerator, v.denominator) for c, v in vals), fmpq(0))
                if j - shift >= 0:
                    assert val == int(theta(j - shift, n)), (name, shift, j, n)


# ----- end to end: ◁ with temperature scaling (Theorem 12a) ------------------------------------


@pytest.fixture(scope="module")
def prev_cert():
    res = prove_all_lengths("prev Q_1", regime="temperature", alphabet="01")
    assert res.verdict == "proved" and res.statement == "for all n ≥ 1"
    return res


def test_prev_temperature_is_proved_for_all_lengths(prev_cert):
    cert = prev_cert.certificate
    assert cert.n0 == 2 and cert.bounded["max_len"] == 1
    assert [g["kind"] for g in cert.gadgets] == ["prev-parity"]
    assert len(cert.inequalities) == 2
    again = certificate_from_dict(json.loads(json.dumps(certificate_to_dict(cert))))
    rep = K.check(again, compile_formula("prev Q_1", regime="temperature", alphabet="01"))
    assert rep.accepted, rep.summary()


def _tampered(cert, edit):
    d = copy.deepcopy(certificate_to_dict(cert))
    edit(d)
    return certificate_from_dict(d)


TAMPER = {
    "coefficient P": (
        lambda d: d["inequalities"][0]["atoms"][1]["P"][0].__setitem__(0, "-2"),
        "coefficient P",
    ),
    "exponent Phi": (
        lambda d: d["inequalities"][0]["atoms"][1]["Phi"]["a"][0].__setitem__(1, "3"),
        "exponent Phi",
    ),
    "exponent Psi": (
        lambda d: d["inequalities"][1]["atoms"][0]["Psi"]["a"][0].__setitem__(0, "5"),
        "exponent Psi",
    ),
    "power k": (lambda d: d["inequalities"][0]["atoms"][0].__setitem__("k", 2), "power k"),
    "bound": (lambda d: d["inequalities"][0].__setitem__("bound", "1/3"), "bound"),
    "start": (lambda d: d["inequalities"][1].__setitem__("start", 1), "start"),
    "N0": (lambda d: d.__setitem__("N0", 3), "bounded"),
    "N0 and bounded": (
        lambda d: (d.__setitem__("N0", 1), d["bounded"].__setitem__("max_len", 0)),
        "N0",
    ),
    "text": (lambda d: d["inequalities"][0].__setitem__("text", "0 <= 1"), "text"),
    "tail condition": (
        lambda d: d["inequalities"][0]["proof"]["conditions"][4]["U"][0].__setitem__(0, "-1"),
        "tail condition",
    ),
    "log lower bound": (
        lambda d: d["inequalities"][0]["proof"].__setitem__("log_lower", "1"),
        "log_lower",
    ),
    "budget": (lambda d: d["gadgets"][0].__setitem__("budget", "1/3"), "budget"),
    "gadget coordinate": (lambda d: d["gadgets"][0].__setitem__("raws", [6, 5]), "gadget 0"),
    "formula": (
        lambda d: d.update(formula=["prev", ["atom", "0"]], formula_text="prev Q_0"),
        "readout",
    ),
}


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_kernel_rejects_every_edit_naming_it(prev_cert, name):
    edit, needle = TAMPER[name]
    model = compile_formula("prev Q_1", regime="temperature", alphabet="01")
    rep = K.check(_tampered(prev_cert.certificate, edit), model)
    assert not rep.accepted
    text = " ".join(f.line() for f in rep.failures)
    assert needle in text, text


def _with_coef(model, coef):
    layers = []
    for layer in model.layers:
        hs = tuple(
            dataclasses.replace(h, temperature=Temperature(coef, n_power=1)) for h in layer.heads
        )
        layers.append(dataclasses.replace(layer, heads=hs))
    return dataclasses.replace(model, layers=tuple(layers))


def test_lowered_temperature_is_refused_with_the_failing_length():
    base = compile_formula("prev Q_1", regime="temperature", alphabet="01")
    ok = prove_all_lengths("prev Q_1", _with_coef(base, 0.85))
    assert ok.verdict == "proved" and ok.n0 == 3  # the bound needs n ≥ 3; z3 does n ≤ 2
    low = prove_all_lengths("prev Q_1", _with_coef(base, 0.8))
    assert low.verdict == "partial" and low.statement.startswith("proved for n ≤ ")
    assert low.failures and all(f.first == 2 for f in low.failures)
    assert any("insufficient" in n for n in low.notes)  # n = 2 is right: the bound is loose
    bad = prove_all_lengths("prev Q_1", _with_coef(base, 0.1))
    assert bad.verdict == "counterexample"
    w = bad.counterexample["string"]
    assert bad.statement.startswith("refuted") and len(w) <= 12


def test_a_certificate_for_a_lowered_temperature_is_rejected(prev_cert):
    """The stored β is not what the kernel uses: it reads the weights."""
    base = compile_formula("prev Q_1", regime="temperature", alphabet="01")
    low = _with_coef(base, 0.8)
    d = certificate_to_dict(prev_cert.certificate)
    d["model"]["sha256"] = low.digest
    rep = K.check(certificate_from_dict(d), low)
    assert not rep.accepted
    assert any("exponent" in f.reason for f in rep.failures)


def test_unsupported_model_is_refused():
    from attncert.errors import UnsupportedError
    from attncert.model import zoo_model

    with pytest.raises(UnsupportedError, match="compiler record"):
        prove_all_lengths("prev Q_1", zoo_model("soft_parity"))


# ----- the bounds dominate the true soft errors at small n --------------------------------------


def test_prev_bounds_dominate_measured_errors(prev_cert):
    model = compile_formula("prev Q_1", regime="temperature", alphabet="01")
    cert = prev_cert.certificate
    g = cert.gadgets[0]
    items = K.expected_inequalities(cert, model)
    for n in range(2, 9):
        strings = ["".join(p) for p in itertools.product("01", repeat=n)]
        tr = forward(model, strings)
        hv = tr.layers[0].head_values
        for item in items:
            head = item["head"][1]
            parity = 0 if "even" in item["what"] else 1
            raw = g["raws"][head]
            bound = float(item["inequality"].ball(n).upper())
            worst = 0.0
            for b, w in enumerate(strings):
                for i in range(2, n + 1):
                    if (i - 1) % 2 != parity:
                        continue
                    hard = 1.0 if w[i - 2] == "1" else 0.0
                    worst = max(worst, abs(hv[b, head, i - 1, raw] - hard))
            assert worst <= bound, (n, item["id"], worst, bound)
            if n >= 4:
                assert worst > 0  # the comparison is not vacuous
