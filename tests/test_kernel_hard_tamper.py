"""The trusted hard-attention checker (attncert.kernel.hard.checker) rejects every false claim of a
certificate with the claim, the place and the reason — the misclassified-strings claim
field by field, a mean readout's output claim against brute force over every completion —
and refuses an undecided comparison instead of guessing (issue 25's mutation analysis)."""

from __future__ import annotations

import dataclasses
import itertools
import re
import time

import numpy as np
import pytest

from attncert.arith.field import Undecided
from attncert.certificates.hard import FixedDependence, Witness
from attncert.hard.pipeline import certify
from attncert.kernel.core.failure import Failure
from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.hard import checker as hard
from attncert.kernel.hard.checker import CheckReport, check
from attncert.kernel.hard.decide import decide
from attncert.model import harden, random_model, zoo_model
from attncert.restriction import Restriction


@pytest.fixture(scope="module")
def instance():
    model = random_model(2, 2, 16, seed=0)
    cert = certify(model, n=32, language="parity")
    assert cert.misclassified is not None and cert.output_dependency == ()
    return model, cert


def _with_mis(cert, **change):
    return dataclasses.replace(
        cert, misclassified=dataclasses.replace(cert.misclassified, **change)
    )


def _rejected(report: CheckReport, claim: str, where: str, reason: str) -> None:
    assert not report.accepted
    assert len(report.failures) == 1, report.failures
    f = report.failures[0]
    assert (f.claim, f.where) == (claim, where), f
    assert re.fullmatch(reason, f.reason), f.reason


def test_the_certificate_is_accepted_with_what_it_established(instance):
    model, cert = instance
    report = check(cert, model)
    assert report.accepted and report.arithmetic == "exact rationals"
    final = cert.final_restriction
    assert (
        f"the decision at n = 32 is constant (it depends on no input position) under ρ_L "
        f"({final.num_free}/32 free)"
    ) in report.facts
    wrong = next(
        s
        for s, mem, dec in zip(
            cert.misclassified.strings,
            cert.misclassified.membership,
            cert.misclassified.decisions,
            strict=True,
        )
        if mem != dec
    )
    assert f"the model misclassifies {wrong!r} for parity" in report.facts
    first_free = final.free_positions[0] + 1
    assert report.facts[-1] == (
        f"flipping free position {first_free} (outside the dependency set) pairs the "
        "ρ_L-compatible strings so that each pair gets one answer but has both parities: "
        "accuracy on them is exactly 1/2"
    )
    assert report.summary().startswith("CHECKED: layer 1: every activation depends on")


@pytest.mark.parametrize(("language", "parity_fact"), [("parity-odd", True), ("majority", False)])
def test_the_parity_pairing_fact_is_stated_for_parity_languages_only(language, parity_fact):
    model = random_model(2, 2, 16, seed=0)
    cert = certify(model, n=32, language=language)
    report = check(cert, model)
    assert report.accepted
    assert any(f.startswith("flipping free position") for f in report.facts) == parity_fact
    assert any(f.endswith(f" for {language}") for f in report.facts)


def test_every_false_identity_claim_is_rejected_with_its_reason(instance):
    model, cert = instance
    L = model.num_layers
    soft = random_model(2, 2, 16, seed=0, kind="softmax")
    rho1, rho2 = cert.restrictions[1], cert.restrictions[2]
    # the last position ρ₁ fixes: ρ₂ gets the other symbol there
    p = max(i for i in range(cert.n) if rho1.fixed[i] is not None)
    other = {"0": "1", "1": "0"}[rho1.fixed[p]]
    changed = Restriction(
        rho2.alphabet, (*rho2.fixed[:p], other, *rho2.fixed[p + 1 :]), rho2.symbols
    )
    cases = [
        (
            (dataclasses.replace(cert, alphabet=("0", "2")), model),
            ("alphabet", "alphabet", re.escape("('0', '2') is not the model's ('0', '1')")),
        ),
        (
            (dataclasses.replace(cert, model_sha256=soft.digest), soft),
            (
                "model",
                "layers",
                "the model has softmax heads; restrictions apply to hard attention",
            ),
        ),
        (
            (dataclasses.replace(cert, dependency_sets=cert.dependency_sets[:1]), model),
            ("dependency_sets", "dependency_sets", f"1 layers, expected {L}"),
        ),
        (
            (
                dataclasses.replace(
                    cert,
                    dependency_sets=(cert.dependency_sets[0][:-1], *cert.dependency_sets[1:]),
                ),
                model,
            ),
            ("dependency_sets", "dependency_sets[0]", "31 positions, expected 32 tokens"),
        ),
        (
            (
                dataclasses.replace(
                    cert,
                    dependency_sets=(
                        cert.dependency_sets[0],
                        ((0, 1, 2), *cert.dependency_sets[1][1:]),
                    ),
                    max_deps=2,
                ),
                model,
            ),
            (
                "dependency_sets",
                "dependency_sets[1]",
                "a claimed set has 3 inputs, more than the certificate's cap 2",
            ),
        ),
        (
            (dataclasses.replace(cert, restrictions=(*cert.restrictions[:2], changed)), model),
            (
                "restrictions",
                f"restrictions[2] position {p + 1}",
                f"does not refine restrictions\\[1\\]: '{rho1.fixed[p]}' became '{other}'",
            ),
        ),
    ]
    for (edited, m), (claim, where, reason) in cases:
        _rejected(check(edited, m), claim, where, reason)


def test_every_false_misclassified_claim_is_rejected_with_its_reason(instance):
    model, cert = instance
    m = cert.misclassified
    final = cert.final_restriction
    # the last fixed position (not the first: the reason must name the one that differs)
    fixed = max(i for i in range(cert.n) if final.fixed[i] is not None)
    flip = {"0": "1", "1": "0"}
    a, b = m.strings

    def at(s, i, c):
        return s[:i] + c + s[i + 1 :]

    cases = [
        (
            dataclasses.replace(cert, language=None),
            ("language", "misclassified strings given but no language named"),
        ),
        (dataclasses.replace(cert, language="no-such-language"), ("language", ".*no-such.*")),
        (_with_mis(cert, strings=(a[:-1], b)), ("strings[0]", "has length 31, not n = 32")),
        (
            _with_mis(cert, strings=(a, at(b, fixed, flip[b[fixed]]))),
            (
                f"strings[1] position {fixed + 1}",
                f"is '{flip[b[fixed]]}' but the final restriction fixes it to '{b[fixed]}'",
            ),
        ),
        (
            _with_mis(cert, decisions=(not m.decisions[0], m.decisions[1])),
            ("decisions[0]", f"the model answers {m.decisions[0]}, not {not m.decisions[0]}"),
        ),
        (
            _with_mis(cert, membership=(not m.membership[0], m.membership[1])),
            ("membership[0]", re.escape(f"{a!r} ∈ parity is {m.membership[0]}")),
        ),
        (
            _with_mis(cert, strings=(a, a), membership=(m.membership[0],) * 2),
            ("membership", "both strings have the same membership: nothing is misclassified"),
        ),
    ]
    for edited, (where, reason) in cases:
        _rejected(check(edited, model), "misclassified", where, reason)


def test_a_foreign_symbol_at_a_free_position_is_rejected_not_a_crash(instance):
    """Regression (found by the mutation analysis): a misclassified string with a symbol
    outside Σ at a *free* position is incompatible with ρ_L, but no fixed position differs;
    the checker looked for one with next() and crashed with StopIteration."""
    model, cert = instance
    a, b = cert.misclassified.strings
    free = cert.final_restriction.free_positions[0]
    bad = a[:free] + "x" + a[free + 1 :]
    _rejected(
        check(_with_mis(cert, strings=(bad, b)), model),
        "misclassified",
        "strings[0]",
        "uses a symbol outside the free symbols 01",
    )


def test_a_claimed_dependency_on_a_fixed_input_is_rejected(instance):
    model, cert = instance
    for ell in range(1, model.num_layers + 1):
        rho = cert.restrictions[ell]
        u = max(i for i in range(cert.n) if rho.fixed[i] is not None)
        sets = list(cert.dependency_sets)
        i = 3
        sets[ell - 1] = tuple(
            tuple(sorted({*s, u})) if t == i else s for t, s in enumerate(sets[ell - 1])
        )
        _rejected(
            check(dataclasses.replace(cert, dependency_sets=tuple(sets)), model),
            "dependency_sets",
            f"layer {ell}, token position {i}",
            f"claims dependence on input {u + 1}, which ρ_{ell} fixes",
        )


def test_strings_differing_on_the_output_dependency_set_are_rejected(instance):
    model, cert = instance
    # claim the decision depends on every free position: true (vacuously) for a constant
    # decision, and now the misclassified strings differ on the claimed set
    free = cert.final_restriction.free_positions
    claimed = dataclasses.replace(cert, output_dependency=tuple(free))
    a, b = claimed.misclassified.strings
    first = next(u for u in free if a[u] != b[u])
    _rejected(
        check(claimed, model),
        "misclassified",
        "strings",
        f"the strings differ at position {first + 1} of the output dependency set",
    )


def test_an_undecided_comparison_is_refused_not_guessed(instance, monkeypatch):
    model, cert = instance

    def undecided(*args, **kwargs):
        raise Undecided("a score comparison is still undecided at 4096 bits")

    monkeypatch.setattr(hard, "_check_claims", undecided)
    report = check(cert, model)
    assert report.accepted is False
    assert report.failures == (
        Failure("arithmetic", "precision", "a score comparison is still undecided at 4096 bits"),
    )
    two = CheckReport(False, (Failure("a", "b", "c"), Failure("d", "e", "f")))
    assert two.summary() == "REJECTED: a (b): c; d (e): f"


def _mean_instance(seed: int):
    """A mean-readout model, a certificate for it, and the float logits of every completion
    of the certificate's final restriction."""
    model = random_model(2, 2, 8, seed=seed)
    model = dataclasses.replace(model, readout=dataclasses.replace(model.readout, position="mean"))
    cert = certify(model, n=16, language="parity")
    final = cert.final_restriction
    strings = []
    for syms in itertools.product("01", repeat=final.num_free):
        s = [c for c in final.fixed]
        for u, c in zip(final.free_positions, syms, strict=True):
            s[u] = c
        strings.append("".join(s))
    return model, cert, strings


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 2, 7])
def test_a_mean_readout_claim_is_checked_against_every_completion(seed):
    model, cert, strings = _mean_instance(seed)
    logits = sorted(float(forward_rigorous(model, s).logit_interval()[0]) for s in strings)
    for bias in (-logits[len(logits) // 2], -logits[0] + 1e-9, -logits[-1] - 1e-9):
        m2 = dataclasses.replace(model, readout=dataclasses.replace(model.readout, bias=bias))
        # the bias changes the decisions: the search's non-constancy witness and fixed
        # dependence (certificate v3) no longer apply, so the claim is only claim 3's
        c2 = dataclasses.replace(
            cert, model_sha256=m2.digest, misclassified=None, witness=None, fixed_dependence=()
        )
        decisions = {s: forward_rigorous(m2, s).accept for s in strings}
        constant = len(set(decisions.values())) == 1
        report = check(c2, m2)  # claims: the decision is constant under ρ_L
        assert report.accepted == constant, (seed, bias, report.failures)
        if not constant:
            assert report.failures[0].claim == "output"
            assert report.failures[0].where == "output.dependency_set"
        # the claim "depends on every free position" is true: accepted
        every = dataclasses.replace(c2, output_dependency=cert.final_restriction.free_positions)
        assert check(every, m2).accepted
    assert np.isfinite(logits).all()


# ------------------------------------------------------------------ the witness (claims 6, 7)
@pytest.fixture(scope="module")
def first_last():
    """The hardened first = last model at n = 16: constant under ρ_L, not constant, its
    decision depends on the fixed position 16."""
    model = harden(zoo_model("trained_first_last"))
    cert = certify(model, n=16, language="parity")
    assert cert.witness is not None and cert.fixed_dependence
    return model, cert


def _flip(s: str, u: int) -> str:
    return s[:u] + ("1" if s[u] == "0" else "0") + s[u + 1 :]


def test_the_witness_facts_state_how_the_strings_differ(first_last):
    model, cert = first_last
    s, t = cert.witness.strings
    differ = [i for i in range(cert.n) if s[i] != t[i]]
    assert len(differ) == 1
    d0, d1 = cert.witness.decisions
    report = check(cert, model)
    assert report.accepted and report.nonconstant
    assert (
        f"the model is not constant at n = 16: two strings get decisions {d0} and {d1} "
        f"(they differ only at input position {differ[0] + 1})"
    ) in report.facts
    # a second string that also differs at a free position (the decision under ρ_L is
    # constant, so it keeps its decision): still a witness, differing at two positions
    free = next(u for u in cert.final_restriction.free_positions if u != differ[0])
    two = dataclasses.replace(cert, witness=Witness((s, _flip(t, free)), (d0, d1)))
    report = check(two, model)
    assert report.accepted, report.failures
    assert (
        f"the model is not constant at n = 16: two strings get decisions {d0} and {d1} "
        "(they differ at 2 input positions)"
    ) in report.facts


def test_every_false_witness_claim_is_rejected_with_its_reason(first_last):
    model, cert = first_last
    w = cert.witness
    s, t = w.strings
    d0 = w.decisions[0]
    rho = cert.final_restriction
    good = cert.fixed_dependence[0]
    u = good.position
    assert decide(model, _flip(s, u)) != d0
    idle = next(
        v for v in range(cert.n) if rho.fixed[v] is not None and decide(model, _flip(s, v)) == d0
    )
    free = rho.free_positions[0]
    foreign = s[:2] + "x" + s[3:]
    cases = [
        (
            {"witness": Witness((foreign, t), w.decisions)},
            ("witness", "strings[0] position 3", "'x' is not a symbol of the alphabet 01"),
        ),
        (
            {"witness": Witness((s, s), (d0, d0))},
            (
                "witness",
                "decisions",
                f"the model answers {d0} on both strings: they do not show that the "
                "decision is non-constant",
            ),
        ),
        (
            {"fixed_dependence": (good, FixedDependence(cert.n, "0", True))},
            ("fixed_dependence", "fixed_dependence[1]", "position 17 is beyond n = 16"),
        ),
        (
            {"fixed_dependence": (good, FixedDependence(free, "1", True))},
            (
                "fixed_dependence",
                "fixed_dependence[1]",
                f"position {free + 1} is free under ρ_L \\(a free input belongs in the "
                "output's dependency set\\)",
            ),
        ),
        (
            {"fixed_dependence": (good, FixedDependence(u, s[u], not d0))},
            (
                "fixed_dependence",
                "fixed_dependence[1]",
                f"symbol '{s[u]}' is not another symbol of the alphabet at position {u + 1} "
                f"\\(ρ_L fixes '{s[u]}'\\)",
            ),
        ),
        (
            {"fixed_dependence": (good, FixedDependence(u, good.symbol, d0))},
            (
                "fixed_dependence",
                "fixed_dependence[1]",
                f"with position {u + 1} changed to '{good.symbol}' the rigorous forward pass "
                f"gives {not d0}, not {d0}",
            ),
        ),
        (
            {"fixed_dependence": (good, FixedDependence(idle, _flip(s, idle)[idle], d0))},
            (
                "fixed_dependence",
                "fixed_dependence[1]",
                f"changing position {idle + 1} to '{_flip(s, idle)[idle]}' leaves the "
                f"decision {d0}: the decision is not shown to depend on it",
            ),
        ),
        (
            {"witness": Witness((_flip(s, idle), t), w.decisions)},
            (
                "fixed_dependence",
                "witness.strings[0]",
                "the base string of a fixed-position dependence must be ρ_L-compatible",
            ),
        ),
    ]
    for change, (claim, where, reason) in cases:
        _rejected(check(dataclasses.replace(cert, **change), model), claim, where, reason)


def test_a_witness_the_collapsed_tables_contradict_is_rejected(first_last, monkeypatch):
    """Claim 6 cross-checks the rigorous forward pass against the collapsed output table on
    a ρ_L-compatible witness string: were the tables wrong, the witness is rejected."""
    model, cert = first_last
    s = cert.witness.strings[0]
    assert cert.final_restriction.compatible(s)
    real = hard._table_decision
    monkeypatch.setattr(hard, "_table_decision", lambda *a: not real(*a))
    d0 = cert.witness.decisions[0]
    _rejected(
        check(cert, model),
        "witness",
        "strings[0]",
        f"ρ_L-compatible, but the rigorous forward pass gives {d0} and the collapsed "
        f"tables {not d0}",
    )


def test_a_rejection_reports_the_time_the_check_took(first_last):
    model, cert = first_last
    bad = dataclasses.replace(cert, fixed_dependence=(FixedDependence(cert.n, "0", True),))
    t0 = time.perf_counter()
    report = check(bad, model)
    spent = time.perf_counter() - t0
    assert not report.accepted
    assert 0.0 <= report.seconds <= spent
