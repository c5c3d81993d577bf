"""Every number of the S1 statements on a certified instance (attncert.hard.s1_instance,
re-derived there with the kernel's layer check) re-derived here from the certificate alone,
with Python fractions and mpmath — an independent evaluator of Hahn's S1 bounds on the
instance (issue 25's mutation analysis: the older tests checked which statements appear,
not their values)."""

from __future__ import annotations

import dataclasses
import re
from fractions import Fraction

import mpmath
import pytest

from attncert.hard.certificate import save_certificate
from attncert.hard.pipeline import certify
from attncert.hard.s1_instance import S1Statement, s1_statements
from attncert.model import random_model
from attncert.restriction import Restriction


@pytest.fixture(scope="module")
def certified():
    model = random_model(2, 2, 16, seed=0)
    return model, certify(model, n=128, language="parity")


@pytest.fixture
def instance(certified):
    """The statements, derived in each test (so that a mutation tool sees every test that
    runs the kernel's S1 code, not only the first)."""
    model, cert = certified
    return model, cert, s1_statements(cert, model)


def _one(st, name: str, layer: int, asserts: str = "") -> S1Statement:
    found = [s for s in st if s.statement == name and s.layer == layer and asserts in s.asserts]
    assert len(found) == 1, (name, layer, asserts, found)
    return found[0]


def _close(text: str, value: float) -> bool:
    """A value printed with 4 significant digits (`:.4g`) is the number to 4 digits."""
    return float(text) == pytest.approx(value, rel=6e-4)


@pytest.mark.slow
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
        d2 = _one(st, "S1 Definition 2", ell)
        c = int(d2.value.removeprefix("c = "))
        assert d2.asserts == (
            f"layer {ell - 1} is a c-transformer under ρ_{ell - 1}: every activation depends "
            "on ≤ c free inputs (the tables the kernel computed)"
        )
        d7, d8 = _one(st, "S1 Definition 7", ell), _one(st, "S1 Definition 8", ell)
        blocked, cases = re.fullmatch(
            r"(\d+) of (\d+) \(head, position, assignment\) cases", d7.value
        ).groups()
        assert 0 <= int(blocked) <= int(cases) and int(cases) > 0
        assert d8.value == f"verified for {cases} cases"
        assert d8.asserts.startswith("every tuple ((h, i), z) is satisfied under ρ_ℓ")
        # Lemma 6: the most activations one σ₁-free input feeds, counted here
        free_before = {u for u in range(n) if before.is_free(u)}
        free_s1 = {u for u in range(n) if s1.is_free(u)}
        feeds = [
            ({t} if ell == 1 else set(cert.dependency_sets[ell - 2][t])) & free_before & free_s1
            for t in range(n)
        ]
        worst = max((sum(u in f for f in feeds) for u in free_s1), default=0)
        if ell == 1:
            assert c == 1  # a layer-0 activation depends on its own input only
        assert _one(st, "S1 eq. (6)", ell).bound == f"|Σ|^c = {sigma**c}"
        lem6 = _one(st, "S1 Lemma 6", ell, "feeds")
        assert lem6.value == str(worst)
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
        lem4 = _one(st, "S1 Lemma 4", ell)
        assert lem4.bound == str(c * (sigma**c * k * heads + 1))
        assert lem4.status == ("holds" if int(lem4.value) <= int(lem4.bound) else "fails")


def test_every_statement_is_a_named_s1_result_with_its_text(instance):
    from attncert.hard import s1_instance as s1

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


def test_the_range_note_appears_exactly_when_k_is_below_lemma_17s_range(certified):
    model, cert = certified
    big = dataclasses.replace(cert, trace={**cert.trace, "k": 10**9})
    st = s1_statements(big, model)
    assert not any("outside the lemma's range" in s.asserts for s in st)
    no_stages = s1_statements(dataclasses.replace(cert, stages=()), model)
    assert _one(no_stages, "S1 Lemma 6", 1).value == "the certificate records no stage restrictions"


def test_a_layer_with_no_free_input_gets_zero_bounds(certified):
    """C = 0 (every input fixed before the layer): the bounds c/(ηC) and |Σ|^c c/(ηC) are
    taken as 0, not a division by zero."""
    model, cert = certified
    fixed = Restriction(cert.restrictions[0].alphabet, ("0",) * cert.n, ("0", "1"))
    n_tok = model.n_tokens(cert.n)
    none = dataclasses.replace(
        cert,
        restrictions=(cert.restrictions[0], fixed, fixed),
        stages=((fixed, fixed), (fixed, fixed)),
        dependency_sets=(((),) * n_tok, ((),) * n_tok),
        output_dependency=(),
        misclassified=None,
    )
    st = s1_statements(none, model)
    lem6 = _one(st, "S1 Lemma 6", 2, "feeds")
    assert (lem6.value, lem6.bound) == ("0", "0")


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
    path = save_certificate(
        dataclasses.replace(cert, trace={**cert.trace, "eta": 0}), tmp_path / "c.json"
    )
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


def test_a_certificate_without_proof_parameters_says_so(certified):
    """Stage restrictions recorded but no (k, η, q, δ): the stage statements are not
    re-derivable, and the reason names what is missing."""
    model, cert = certified
    trace = {key: v for key, v in cert.trace.items() if key not in ("k", "eta", "q", "delta")}
    st = s1_statements(dataclasses.replace(cert, trace=trace), model)
    assert not any(s.statement == "S1 Definition 5" for s in st)
    lem6 = _one(st, "S1 Lemma 6", 1)
    assert lem6.status == "not re-derivable"
    assert lem6.value == "the certificate records no proof parameters (k, η, q, δ)"


@pytest.mark.parametrize("size", [5, 6])
def test_lemma_4_holds_exactly_up_to_its_bound(certified, size):
    """A claimed dependency set may be larger than needed (a superset of a true dependency
    set is still true, and the checker accepts it): Lemma 4's statement compares the
    largest claimed set with c(|Σ|^c kH + 1) by ≤ — it holds at the bound, fails above."""
    from attncert.kernel.hard.checker import check

    model, cert = certified
    free = cert.restrictions[2].free_positions
    sets = list(cert.dependency_sets[1])
    padded = tuple(sorted(set(sets[2]) | set(free[: size + 3])))[:size]
    assert len(padded) == size and set(sets[2]) <= set(padded)
    sets[2] = padded
    wide = dataclasses.replace(cert, dependency_sets=(cert.dependency_sets[0], tuple(sets)))
    assert check(wide, model).accepted
    lem4 = _one(s1_statements(wide, model), "S1 Lemma 4", 2)
    sigma = len(cert.restrictions[0].symbols)
    c = int(_one(s1_statements(wide, model), "S1 Definition 2", 2).value.removeprefix("c = "))
    bound = c * (sigma**c * int(cert.trace["k"]) * len(model.layers[1].heads) + 1)
    assert (lem4.value, lem4.bound) == (str(size), str(bound)) and bound == 5
    assert lem4.status == ("holds" if size <= bound else "fails")


def test_a_layer_without_heads_has_no_attention_cases():
    """Definitions 7 and 8 count (head, position, assignment) cases: none in a layer
    without heads."""
    model = random_model(2, 2, 16, seed=0)
    model = dataclasses.replace(
        model, layers=(dataclasses.replace(model.layers[0], heads=()), *model.layers[1:])
    )
    cert = certify(model, n=16, language="parity")
    st = s1_statements(cert, model)
    assert _one(st, "S1 Definition 7", 1).value == "0 of 0 (head, position, assignment) cases"
    assert _one(st, "S1 Definition 8", 1).value == "verified for 0 cases"
    d8 = _one(st, "S1 Definition 8", 2).value
    assert d8 != "verified for 0 cases"
