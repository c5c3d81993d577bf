"""Every number of the kernel's S1 statements (attncert.kernel.s1) re-derived here from the
certificate alone, with Python fractions and mpmath — an independent evaluator of Hahn's
S1 bounds on the instance (issue 25's mutation analysis: the older tests checked which
statements appear, not their values)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import mpmath
import pytest

from attncert.hard.pipeline import certify
from attncert.kernel.s1 import S1Statement, s1_statements
from attncert.model import random_model


@pytest.fixture(scope="module")
def instance():
    model = random_model(2, 2, 16, seed=0)
    cert = certify(model, n=128, language="parity")
    return model, cert, s1_statements(cert, model)


def _one(st, name: str, layer: int, asserts: str = "") -> S1Statement:
    found = [s for s in st if s.statement == name and s.layer == layer and asserts in s.asserts]
    assert len(found) == 1, (name, layer, asserts, found)
    return found[0]


def _close(text: str, value: float) -> bool:
    """A value printed with 4 significant digits (`:.4g`) is the number to 4 digits."""
    return float(text) == pytest.approx(value, rel=6e-4)


def test_every_stage_number_is_the_formula_on_the_certificate(instance):
    model, cert, st = instance
    n = cert.n
    sigma = len(cert.restrictions[0].symbols)
    t = cert.trace
    k, eta, q, delta = int(t["k"]), *(Fraction(str(t[x])) for x in ("eta", "q", "delta"))
    d5 = _one(st, "S1 Definition 5", 0)
    assert d5.value == f"η = {eta}, q = {q}, δ = {delta}, k = {k}" and d5.status == "holds"
    for ell in range(1, model.num_layers + 1):
        before, rho = cert.restrictions[ell - 1], cert.restrictions[ell]
        s1, s2 = cert.stages[ell - 1]
        C = Fraction(before.num_free, n)
        c = int(_one(st, "S1 Definition 2", ell).value.removeprefix("c = "))
        if ell == 1:
            assert c == 1  # a layer-0 activation depends on its own input only
        assert _one(st, "S1 eq. (6)", ell).bound == f"|Σ|^c = {sigma**c}"
        lem6 = _one(st, "S1 Lemma 6", ell, "feeds")
        assert lem6.bound == str(c / (eta * C))
        assert lem6.status == ("holds" if int(lem6.value) <= c / (eta * C) else "fails")
        eq5 = _one(st, "S1 Lemma 6", ell, "eq. (5)")
        assert (eq5.value, eq5.bound) == (str(s1.num_free), str((1 - eta) * C * n))
        assert eq5.status == ("holds" if s1.num_free >= (1 - eta) * C * n else "fails")
        d16 = _one(st, "S1 Definition 16", ell)
        assert d16.value == f"{s1.num_free - s2.num_free} inputs fixed by Stage 2"
        assert d16.asserts == "Stage 2's sequence runs from σ₁ to σ₂"
        lem17 = _one(st, "S1 Lemma 17", ell)
        assert lem17.bound == str((1 - 2 * eta) * C * n) and lem17.value == str(s2.num_free)
        need = sigma**c * c / (eta * C)
        assert ("outside the lemma's range" in lem17.asserts) == (k < need)
        if k < need:
            assert lem17.asserts.endswith(f"= {float(need):.4g})")
        d19 = _one(st, "S1 Definition 19", ell)
        assert d19.value == f"{float(q * s2.num_free):.4g} expected"
        assert d19.asserts == "Stage 3 fixes each σ₂-free input w.p. q"
        assert d19.status == "evaluated"
        d20 = _one(st, "S1 Definition 20", ell)
        x0 = (1 + delta) * q * s2.num_free
        assert d20.value == f"{s2.num_free - rho.num_free} fixed"
        assert d20.bound == f"{float(x0):.4g}"
        with mpmath.workprec(200):
            f = lambda x: mpmath.mpf(x.numerator) / x.denominator  # noqa: E731
            chern = mpmath.exp(-(f(delta) ** 2) * f(q) * f(1 - 2 * eta) * f(C) * n / 3)
            lem22 = (1 - (f(q) / sigma) ** c) ** (f(k * eta * C) / (c * c))
        assert _close(_one(st, "S1 Lemma 21", ell).value, float(chern))
        l22 = _one(st, "S1 Lemma 22", ell)
        assert _close(l22.value, float(lem22)) and l22.status == "evaluated"
        assert l22.asserts == "P(X) ≤ (1 − (q/|Σ|)^c)^{kηC/c²} for every event X"
        cor = _one(st, "S1 Corollary 24", ell)
        target = (1 - 2 * eta) * (1 - (1 + delta) * q) * C * n
        assert cor.bound == f"{float(target):.4g}"
        assert cor.status == ("holds" if rho.num_free >= target else "fails")
        heads = len(model.layers[ell - 1].heads)
        assert _one(st, "S1 Lemma 4", ell).bound == str(c * (sigma**c * k * heads + 1))


def test_every_statement_is_a_named_s1_result_with_its_text(instance):
    from attncert.kernel import s1

    _, _, st = instance
    implemented = {name.removeprefix("Hahn ") for name in s1.__implements__}
    extra = {"S1 eq. (6)", "S1 Lemma 4", "S1 Theorem 1"}  # quoted, not implemented here
    for s in st:
        assert s.statement in implemented | extra, s.statement
        assert isinstance(s.asserts, str) and s.asserts.strip(), s
        assert isinstance(s.value, str) and s.value.strip(), s
        assert isinstance(s.bound, str)
        assert s.status in ("holds", "fails", "evaluated", "not re-derivable"), s
    d3 = [s for s in st if s.statement == "S1 Definition 3"]
    assert d3 and all(
        s.asserts == "ρ_{ℓ−1} ≼ σ₁ ≼ σ₂ ≼ ρ_ℓ (each stage only fixes more inputs)" for s in d3
    )
    assert {s.statement for s in st} == implemented | extra  # every one re-derived here


def test_parameters_outside_definition_5_are_reported(instance):
    model, cert, _ = instance
    for bad in ({"q": 0}, {"q": 1}, {"eta": "1/2"}, {"eta": 0}, {"delta": 0}, {"delta": 1}):
        trace = {**cert.trace, **bad}
        st = s1_statements(dataclasses.replace(cert, trace=trace), model)
        d5 = _one(st, "S1 Definition 5", 0)
        # (1 + δ)q < 1 fails for δ = 1 only together with q ≥ ½
        want = "holds" if bad == {"delta": 1} and Fraction(str(cert.trace["q"])) < 0.5 else "fails"
        assert d5.status == want, bad
        if want == "fails":  # the stage statements assume Definition 5: not derived
            assert not any(s.statement == "S1 Lemma 17" for s in st)
            assert _one(st, "S1 Lemma 6", 1).value == (
                "the certificate's proof parameters are outside Definition 5"
            )


def test_check_of_a_certificate_with_eta_0_reports_instead_of_crashing(instance, tmp_path, capsys):
    """Regression (found by the mutation analysis): η = 0 in the certificate's recorded
    proof parameters made `attncert check` crash in S1 Lemma 6's bound c/(ηC)."""
    from attncert.cli.main import main

    _, cert, _ = instance
    path = dataclasses.replace(cert, trace={**cert.trace, "eta": 0}).save(tmp_path / "c.json")
    main(["check", str(path)])
    out = capsys.readouterr().out
    assert "✗ S1 Definition 5" in out
    assert "outside Definition 5" in out


def test_statement_lines_mark_their_status():
    s = S1Statement("S1 Lemma 6", 2, "claim", "3", "4")
    assert s.line() == "✓ S1 Lemma 6: layer 2: claim — 3 (bound 4)"
    assert dataclasses.replace(s, status="fails").line().startswith("✗ ")
    assert dataclasses.replace(s, status="evaluated").line().startswith("· ")
    assert dataclasses.replace(s, status="not re-derivable").line().startswith("– ")
    assert S1Statement("S1 Theorem 1", 0, "claim", "1 input(s)").line() == (
        "✓ S1 Theorem 1: claim — 1 input(s)"
    )
    assert s.to_dict()["bound"] == "4" and s.to_dict()["status"] == "holds"
