"""Theorem 26 at every length (issue 23): the kernel's layer-by-layer error majorants for the
Appendix-E Dyck-2 program's softmax simulation.

Soundness is cross-checked three ways: (1) the majorant at every N ≥ N₀ dominates the
per-length arb error recursion of :func:`attncert.compile.tieless.error_bound` (written
independently, with the same hypotheses); (2) the float softmax logit differs from the exact
hard logit by less than the certified bound on random strings of several lengths; (3) the
hypotheses H1–H3, derived from the weights, imply the stated ones. Every
stored number, N₀ and the facts are tampered with and must be rejected with the field named;
a lowered β and out-of-class models are refused."""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import arb, fmpq

from attncert.compile.dyck import analytic_report, program_facts
from attncert.compile.tieless import error_bound
from attncert.compile.tieless_all_lengths import _attempt, all_lengths_certificate, decimal_up
from attncert.errors import InputError, ParameterError
from attncert.kernel.tieless import checker as K
from attncert.model import forward, load_model, model_from_dict, model_to_dict, save_model
from attncert.model.exact import forward_exact
from attncert.model.zoo import zoo_model
from attncert.proofcheck import check_artifact
from attncert.proofcheck.manifest import sha256_file

__implements__ = ("Yang Theorem 26", "Yang Lemma 25")

REPO = Path(__file__).resolve().parents[1]
NAME = "yang2024/theorem26/dyck2-program-all-lengths"
ART = REPO / "proofs" / NAME


@pytest.fixture(scope="module")
def hard():
    return zoo_model("dyck2_program")


@pytest.fixture(scope="module")
def soft():
    return zoo_model("dyck2_program_soft")


# the certificates are function-scoped on purpose: under mutation analysis
# (benchmarks/mutation_score.py) a module-scoped fixture's kernel calls would be attributed
# to the first test that builds it only
@pytest.fixture
def cert(hard, soft):
    """H1–H3 stated (the construction's facts), not derived."""
    return all_lengths_certificate(soft, program_facts(hard))


@pytest.fixture
def derived_cert(soft):
    return all_lengths_certificate(soft)


def _reject(cert: dict, model) -> str:
    r = K.check(cert, model)
    assert not r.accepted
    return r.failures[0]


def _with_coef(model, coef: float):
    d = model_to_dict(model)
    for layer in d["layers"]:
        for h in layer["heads"]:
            h["temperature"]["coef"] = coef
    return model_from_dict(d)


# ----- the certificate ----------------------------------------------------------------------


@pytest.mark.slow
def test_dyck2_simulation_is_certified_from_three_tokens_on(cert, soft) -> None:
    r = K.check(cert, soft)
    assert r.accepted, r.failures
    assert r.n0 == 3 and len(r.steps) == len(soft.layers) == 5
    assert r.steps[0].power is None  # layer 0 has only uniform heads: exact
    assert all(s.power is not None and Fraction(str(s.power)) < -15 for s in r.steps[1:])
    assert r.bound is not None and Fraction(str(r.bound)) < Fraction(1, 500)
    assert "for every N ≥ 3 tokens" in r.summary() and "given H1–H3" in r.summary()
    assert cert["hypotheses_derived"] is False and r.derived is None


@pytest.mark.slow
@pytest.mark.parametrize("which", ["stated", "derived"])
@pytest.mark.parametrize("big_n", [3, 4, 5, 8, 17, 64, 1025, 10**6])
def test_majorant_dominates_the_per_length_recursion(
    cert, derived_cert, hard, soft, big_n, which
) -> None:
    """(1) At every sampled N ≥ N₀ the last majorant C·N^a is ≥ the per-length bound of
    compile.tieless.error_bound (written independently) with the same hypotheses and the
    soft model's β(N); at N = N₀ it is within a factor 2 of it (the majorant is tight
    there: a bound made looser is caught)."""
    c0 = cert if which == "stated" else derived_cert
    y = K.q_of(c0["facts"]["activation"]["coef"], "y")
    c, a = K.q_of(c0["steps"][-1]["coef"], "c"), K.q_of(c0["steps"][-1]["power"], "a")
    majorant = K._a(c) * arb(big_n) ** K._a(a)
    rep = analytic_report(hard, big_n - 1)  # BOS
    assert rep.activation_bound == big_n**3
    rep = dataclasses.replace(rep, activation_bound=Fraction(int(y.p), int(y.q)) * big_n**3)
    beta = soft.layers[1].heads[0].temperature(big_n)
    per_n = error_bound(hard, rep, beta)
    assert per_n is not None
    assert per_n.upper() <= majorant.lower(), (big_n, per_n, majorant)
    if big_n == c0["n0_tokens"]:
        assert majorant.upper() <= 2 * per_n.lower()


def _layer(qk: int, ov: int, gain: int = 0, residual: bool = True) -> K.LayerNorms:
    return K.LayerNorms((K.HeadNorms(fmpq(qk), fmpq(ov)),), fmpq(gain), residual)


def test_layer_step_by_hand() -> None:
    """Lemmas 24–25 for one layer, against a hand computation: e ≤ 2¹⁰⁰·N⁻¹⁰⁰ (= 1 at
    N₀ = 2), Y = 2, γ = 100, κ = 1, one head with ‖W_QᵀW_K‖ = 2, ‖W_OW_V‖ = 1.
    η ≤ 2(2·2·2¹⁰⁰N⁻¹⁰⁰ + 2²⁰⁰N⁻²⁰⁰) ≤ 10·2¹⁰⁰·N⁻¹⁰⁰ = 10 at N₀, so m₀ = 100 − 20 = 80 and
    ω ≤ N^{1−80}; the head adds 2¹⁰⁰N⁻¹⁰⁰ + 4N⁻⁷⁹, the residual 2¹⁰⁰N⁻¹⁰⁰ again:
    (2·2¹⁰⁰·2⁻²¹ + 4)·N⁻⁷⁹ for every N ≥ 2. Without the residual and with an FFN of gain 3:
    3·(2¹⁰⁰·2⁻²¹ + 4)·N⁻⁷⁹."""
    facts = K.Facts(fmpq(100), fmpq(2), fmpq(0), fmpq(1, 2))
    prev = K.Majorant(fmpq(2) ** 100, fmpq(-100))
    c, a = K.layer_step(prev, _layer(2, 1), facts, arb(1), 2, "L")
    assert a == -79
    assert (c - (2 * arb(2) ** 79 + 4)).abs_upper() < arb(2) ** -40 * c
    c, a = K.layer_step(prev, _layer(2, 1, gain=3, residual=False), facts, arb(1), 2, "L")
    assert a == -79
    assert (c - 3 * (arb(2) ** 79 + 4)).abs_upper() < arb(2) ** -40 * c
    # a uniform head (W_QᵀW_K = 0) only carries the error: no ω term
    c, a = K.layer_step(prev, _layer(0, 1), facts, arb(1), 2, "L")
    assert a == -100 and (c - 2 * arb(2) ** 100).abs_upper() < 1


def test_the_float_softmax_logit_is_within_the_certified_bound(cert, hard, soft) -> None:
    """(2) On random strings of length 2…12 the float soft logit is within the bound of the
    exact hard logit, and has its sign."""
    rng = random.Random(26)
    bound = float(Fraction(cert["final_bound"]))
    strings = [
        "".join(rng.choice("()[]") for _ in range(n)) for n in range(2, 13) for _ in range(6)
    ]
    strings += ["([])", "[[()]]()", "(((((())))))", "([)]"]
    soft_logits = [float(forward(soft, [s]).logits[0]) for s in strings]
    for s, got in zip(strings, soft_logits, strict=True):
        exact = float(forward_exact(hard, s).logit_fraction())
        assert abs(exact) == 0.5
        assert abs(float(got) - exact) <= bound + 1e-12, s


def test_hypotheses_derived_from_the_weights_give_the_committed_kind_of_certificate(
    derived_cert, soft
) -> None:
    """(3) With H1–H3 derived from the weights (attncert.kernel.tieless.program) instead of
    stated, the activation bound is the derived N³ + 2N² + 2N + 2 ≤ (53/27)·N³ from N₀ = 3."""
    r = K.check(derived_cert, soft)
    assert r.accepted, r.failures
    assert r.derived is not None and r.derived.gap == 1
    assert derived_cert["facts"]["activation"] == {"coef": "53/27", "power": "3"}
    assert "H1–H3 derived from the weights for every N" in r.summary()
    assert "not derived" in K.check({**derived_cert, "hypotheses_derived": False}, soft).summary()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("gap", "2", "facts.gap: stated γ = 2, the weights give only γ ≥ 1"),
        ("margin", "1", "facts.margin: stated μ = 1, the weights give only μ = 1/2"),
        ("activation", {"coef": "1", "power": "3"}, "facts.activation: stated 1·N^3 does not"),
    ],
)
def test_stated_facts_stronger_than_the_weights_give_are_named(
    derived_cert, soft, field, value, reason
) -> None:
    bad = copy.deepcopy(derived_cert)
    bad["facts"][field] = value
    assert _reject(bad, soft).startswith(reason)


def test_derivation_claimed_for_weights_that_leave_the_rules_is_refused(derived_cert, soft):
    d = model_to_dict(soft)
    labels = soft.meta["coordinates"]
    for row in d["layers"][3]["heads"][0]["w_k"]:
        row[labels.index("pe:1*[i]")] = 0.0  # the nearest-same-depth head loses its tie-break
    msg = _reject(derived_cert, model_from_dict(d))
    assert msg.startswith("hypotheses_derived: H1–H3 do not follow from the weights: L3H0")
    assert _reject({**derived_cert, "hypotheses_derived": "yes"}, soft).startswith(
        "hypotheses_derived: 'yes' is not true or false"
    )


# ----- tampering ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layer", "field", "factor", "reason"),
    [
        (2, "coef", Fraction(999, 1000), "is not ≥ the derived coefficient"),
        (2, "coef", Fraction(1001, 1000), "exceeds the derived coefficient"),
        (4, "coef", Fraction(1, 2), "is not ≥ the derived coefficient"),
        (1, "power", Fraction(1001, 1000), "recorded exponent"),  # more negative: too strong
        (3, "power", Fraction(999, 1000), "recorded exponent"),  # weaker: not tight
    ],
)
def test_each_stored_majorant_edit_is_named(cert, soft, layer, field, factor, reason) -> None:
    bad = copy.deepcopy(cert)
    old = Fraction(bad["steps"][layer][field])
    bad["steps"][layer][field] = str(old * factor)
    msg = _reject(bad, soft)
    assert msg.startswith(f"steps[{layer}].{field}: "), msg
    assert reason in msg


def test_final_bound_and_n0_edits_are_named(cert, soft) -> None:
    bad = copy.deepcopy(cert)
    bad["final_bound"] = decimal_up(Fraction(bad["final_bound"]) / 2)
    assert _reject(bad, soft).startswith("final_bound: recorded")
    # layer 1's majorant does not depend on N₀ (one term); layer 2's does
    for n0, where in ((2, "steps[2].power"), (4, "steps[2].power"), (1, "n0_tokens")):
        bad = copy.deepcopy(cert)
        bad["n0_tokens"] = n0
        assert _reject(bad, soft).startswith(where), n0


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (("gap",), "2", "steps[1].power"),  # a larger gap changes every derived power
        (("gap",), "0", "facts.gap"),
        (("margin",), "1/1000", "final_bound"),
        (("activation", "power"), "4", "steps[1].power"),
        (("activation", "power"), "5/2", "facts.activation.power"),
        (("activation", "coef"), "one", "facts.activation.coef"),
    ],
)
def test_edited_facts_are_named(cert, soft, path, value, where) -> None:
    bad = copy.deepcopy(cert)
    target = bad["facts"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert _reject(bad, soft).startswith(where)


def test_a_lowered_beta_is_refused(cert, hard, soft) -> None:
    """β = 3·log N: e^{−β} no longer beats the N³ activations; no N₀ closes (ParameterError
    with the reason), and the stored certificate is rejected on the changed model."""
    low = _with_coef(soft, 3.0)
    with pytest.raises(ParameterError, match="no N₀ ≤ 64 closes"):
        all_lengths_certificate(low, program_facts(hard), max_n0=64)
    assert _reject(cert, low).startswith("steps[1]")
    # a slightly lower β still closes, from a later N₀
    slower = all_lengths_certificate(_with_coef(soft, 12.0), program_facts(hard))
    assert slower["n0_tokens"] > cert["n0_tokens"]


def test_out_of_class_models_are_refused(cert, soft) -> None:
    assert _reject(cert, zoo_model("trained_first_last")).startswith("model: ")
    const = model_from_dict(
        {
            **model_to_dict(soft),
            "layers": [
                {**layer, "heads": [{**h, "temperature": {"coef": 30.0}} for h in layer["heads"]]}
                for layer in model_to_dict(soft)["layers"]
            ],
        }
    )
    assert "β(N)/log N is not non-decreasing" in _reject(cert, const)
    with pytest.raises(InputError, match="not an Appendix-E program"):
        program_facts(zoo_model("soft_parity"))


def test_malformed_certificates_are_refused(cert, soft) -> None:
    assert _reject({"kind": "other"}, soft).startswith("all_lengths: ")
    bad = copy.deepcopy(cert)
    del bad["steps"][-1]
    assert _reject(bad, soft).startswith("steps: not one majorant per layer")
    bad = copy.deepcopy(cert)
    bad["steps"][2] = {"coef": "-1", "power": "0"}
    assert _reject(bad, soft).startswith("steps[2].coef: -1 is negative")
    bad = copy.deepcopy(cert)
    bad["steps"][0] = {"coef": "1", "power": "-20"}
    assert _reject(bad, soft).startswith("steps[0]: recorded 1·N^-20, derived exactly 0")


# ----- the artifact --------------------------------------------------------------------------


@pytest.mark.slow
def test_committed_artifact_states_the_all_length_fact_and_its_hypotheses() -> None:
    r = check_artifact(ART, NAME)
    assert r.ok, r.reasons
    tail = [f for f in r.facts if f.startswith("every length")]
    assert len(tail) == 1
    assert "for all N ≥ 3 tokens" in tail[0]
    assert "decides exactly as the average-hard program on every input of every length" in tail[0]
    assert "H1–H3 derived from the weights for every length" in tail[0]
    assert "that the program decides dyck2 at every length is the construction's proof" in tail[0]


def _rehash(art: Path) -> None:
    mpath = art / "manifest.json"
    m = json.loads(mpath.read_text())
    for f in m["files"]:
        f["sha256"] = sha256_file(art / f["path"])
    mpath.write_text(json.dumps(m, indent=1) + "\n")


@pytest.mark.slow
def test_artifact_tampering_reaches_the_kernel(tmp_path: Path) -> None:
    art = tmp_path / "a"
    shutil.copytree(ART, art)
    proof = json.loads((art / "proof.json").read_text())
    proof["all_lengths"]["steps"][3]["coef"] = "1"
    (art / "proof.json").write_text(json.dumps(proof, indent=1, ensure_ascii=False) + "\n")
    _rehash(art)
    r = check_artifact(art, NAME)
    assert not r.ok
    assert any(
        "proof.json: all_lengths: steps[3].coef: recorded 1 is not ≥" in x for x in r.reasons
    )


@pytest.mark.slow
def test_artifact_refuses_a_tail_that_leaves_lengths_uncovered(tmp_path: Path, hard) -> None:
    """N₀ beyond the enumerated lengths: a valid tail that covers nothing in between."""
    art = tmp_path / "a"
    shutil.copytree(ART, art)
    soft = load_model(art / "soft_model.json")
    proof = json.loads((art / "proof.json").read_text())
    late = _attempt(soft, program_facts(hard), 12)  # closes: N₀ = 12 ≥ 3
    proof["all_lengths"] = late
    (art / "proof.json").write_text(json.dumps(proof, indent=1, ensure_ascii=False) + "\n")
    _rehash(art)
    r = check_artifact(art, NAME)
    assert any("all_lengths.n0_tokens = 12: the tail starts after" in x for x in r.reasons)


@pytest.mark.slow
def test_artifact_refuses_facts_contradicted_on_enumerated_inputs(tmp_path: Path, hard) -> None:
    art = tmp_path / "a"
    shutil.copytree(ART, art)
    soft = load_model(art / "soft_model.json")
    facts = program_facts(hard) | {"gap": "2"}  # gap 2 is false (the program's gap is 1)
    proof = json.loads((art / "proof.json").read_text())
    proof["all_lengths"] = all_lengths_certificate(soft, facts)
    (art / "proof.json").write_text(json.dumps(proof, indent=1, ensure_ascii=False) + "\n")
    _rehash(art)
    r = check_artifact(art, NAME)
    assert any("all_lengths.facts.gap is contradicted at n = 1" in x for x in r.reasons)


def test_save_load_roundtrip_keeps_the_certificate_valid(tmp_path: Path, cert, soft) -> None:
    save_model(soft, tmp_path / "m.json")
    assert K.check(json.loads(json.dumps(cert)), load_model(tmp_path / "m.json")).accepted
    assert np.isfinite(float(Fraction(cert["final_bound"])))


# ----- the CLI -----------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_proves_the_dyck2_program_at_every_length(capsys) -> None:
    from attncert.cli.main import main

    assert main(["prove", "dyck2", "--library", "--all-lengths", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "CERTIFIED" and out["n0_tokens"] == 3
    assert "every input of every length n ≥ 1" in out["statement"]
    assert "That the program decides Dyck-2 is the construction's proof" in out["statement"]
    assert out["hypotheses"][3] == "L1H0: ARG-B (gap ≥ 3)"
    assert K.check(out["certificate"], zoo_model("dyck2_program_soft")).accepted
    assert main(["prove", "dyck2", "--library", "--all-lengths"]) == 0
    text = capsys.readouterr().out
    assert "layer 0: |soft − hard| ≤ 0 (exact)" in text
    assert text.splitlines()[-1].startswith("CERTIFIED: the softmax model decides exactly")


@pytest.mark.parametrize("flag", [["--max-len", "4"], ["-o", "x.json"]])
def test_cli_program_all_lengths_refuses_flags_that_do_not_apply(capsys, flag) -> None:
    from attncert.cli.main import main

    assert main(["prove", "dyck2", "--library", "--all-lengths", *flag]) == 2
    err = capsys.readouterr().err
    assert "does not apply to a library program's all-length proof" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        ("zoo:soft_parity", "reads '01', not Dyck-2's brackets"),
        ("zoo:dyck2_program", "has heads that are not softmax: Theorem 26 is about the softmax"),
    ],
)
def test_cli_program_all_lengths_refuses_models_it_is_not_about(capsys, model, reason) -> None:
    from attncert.cli.main import main

    assert main(["prove", "dyck2", "--library", "--all-lengths", "--model", model]) == 2
    err = capsys.readouterr().err
    assert reason in err and "Traceback" not in err


@pytest.mark.slow
def test_a_lowered_beta_is_diagnosed_first_failing_length_and_counterexample() -> None:
    """β = 3·log N: no tail closes; the per-length bound first fails at n = 1 and the model
    agrees with the program there (the bound is insufficient). β = 0.2·log N: a
    counterexample at n = 2, confirmed in arb."""
    from attncert.compile.tieless_all_lengths import diagnose

    soft = zoo_model("dyck2_program_soft")
    d = diagnose(_with_coef(soft, 3.0), max_strings=84)
    assert d.first_failing_n == 1 and d.counterexample is None and d.checked_strings == 84
    assert "the bound is insufficient there, not (as far as checked) the model wrong" in d.note
    d = diagnose(_with_coef(soft, 0.2))
    assert d.first_failing_n == 1 and d.counterexample == "()"
    assert "a counterexample" in d.note


@pytest.mark.slow
def test_cli_refutes_a_simulation_whose_temperature_is_too_low(tmp_path, capsys) -> None:
    from attncert.cli.main import main

    path = tmp_path / "low.json"
    save_model(_with_coef(zoo_model("dyck2_program_soft"), 0.2), path)
    assert main(["prove", "dyck2", "--library", "--all-lengths", "--model", str(path)]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("REFUTED: no all-length statement")
    assert "at n = 2 the softmax model decides '()' differently from the program" in last


# ----- rejected reports and refusals name what they refuse -----------------------------------


def test_a_rejected_report_keeps_n0_and_the_margin(cert, soft) -> None:
    bad = copy.deepcopy(cert)
    bad["final_bound"] = "1/3"
    r = K.check(bad, soft)
    assert r.accepted is False and r.n0 == 3 and r.limit == fmpq(1, 2) and r.bound is None
    ok = K.check(cert, soft)
    assert ok.accepted is True and ok.limit == fmpq(1, 2)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda c: c.update(n0_tokens="3"), "n0_tokens: '3' is not an integer ≥ 2"),
        (lambda c: c.update(n0_tokens=True), "n0_tokens: True is not an integer ≥ 2"),
        (lambda c: c.pop("facts"), "facts: missing: {gap, activation: {coef, power}, margin}"),
        (
            lambda c: c["facts"]["activation"].update(power="x"),
            "facts.activation.power: 'x' is not a rational",
        ),
        (
            lambda c: c.update(final_bound=0.5),
            "final_bound: 0.5 is not a rational (a string such as '3/2' or an integer)",
        ),
    ],
)
def test_malformed_fields_are_named(cert, soft, edit, reason) -> None:
    bad = copy.deepcopy(cert)
    edit(bad)
    assert _reject(bad, soft) == reason


def _temperature(model, **temp):
    d = model_to_dict(model)
    for layer in d["layers"]:
        for h in layer["heads"]:
            h["temperature"] = temp
    return model_from_dict(d)


def test_temperature_and_head_kinds_are_named(cert, soft, hard) -> None:
    neg = _temperature(soft, coef=20.59375, n_power=-1.0, log_power=1.0)
    assert _reject(cert, neg) == (
        "temperature: β(N) = 659/32·N^-1·log(N)^1: needs c > 0, p ≥ 0, q ≥ 0"
    )
    assert _reject(cert, hard).startswith(
        "model.layers[0].heads[0]: kind average: Theorem 26's simulation is softmax"
    )
    d = model_to_dict(soft)
    d["layers"][2]["heads"][0]["temperature"]["coef"] = 30.0
    assert _reject(cert, model_from_dict(d)) == (
        "model: the heads have 2 temperatures, the argument needs one"
    )


def test_a_small_coefficient_with_a_growing_power_is_accepted(soft, hard) -> None:
    """β(N) = 1·N·log N: c = 1 is allowed (c > 0), and κ = c·N₀ makes the tail close."""
    fast = _temperature(soft, coef=1.0, n_power=1.0, log_power=1.0)
    cert = all_lengths_certificate(fast, program_facts(hard))
    assert K.check(cert, fast).accepted


def _truncated(soft, layers: int, coord: str):
    """The first ``layers`` layers of the Dyck-2 simulation, reading ``coord`` − ½."""
    d = model_to_dict(soft)
    d["layers"] = d["layers"][:layers]
    w = [0.0] * len(d["readout"]["weight"])
    w[soft.meta["coordinates"].index(coord)] = 1.0
    d["readout"]["weight"] = w
    return model_from_dict(d)


def test_an_exactly_zero_error_is_certified_with_bound_zero(soft, hard) -> None:
    """Uniform heads only (layer 0): softmax = average exactly, the final bound is 0."""
    model = _truncated(soft, 1, "one")
    cert = all_lengths_certificate(model, program_facts(hard))
    assert cert["final_bound"] == "0" and cert["steps"] == [{"coef": "0", "power": None}]
    assert K.check(cert, model).accepted


def test_a_last_layer_error_that_grows_with_n_is_refused(soft, hard) -> None:
    """Layers 0–1 at β = 3·log N: the lookups' error ≤ C·N^{3+1−3} = C·N grows; no bound
    for every N, whatever C."""
    from attncert.compile.tieless_all_lengths import _fr, decimal_up, power_up

    model = _with_coef(_truncated(soft, 2, "one"), 3.0)
    facts = K._facts({"facts": program_facts(hard)})
    beta, norms = K.structure(model)
    prev, steps = K.Majorant(fmpq(0), None), []
    for ln in norms:
        got = K.layer_step(prev, ln, facts, beta.kappa(3), 3, "L")
        if got is None:
            steps.append({"coef": "0", "power": None})
            continue
        c, a = got
        steps.append({"coef": decimal_up(_fr(K.up(c))), "power": power_up(a)})
        prev = K.Majorant(K.q_of(steps[-1]["coef"], "c"), K.q_of(steps[-1]["power"], "a"))
    assert prev.power == 1
    bad = {"kind": K.PROOF_KIND, "n0_tokens": 3, "facts": program_facts(hard)}
    bad |= {"hypotheses_derived": False, "steps": steps, "final_bound": "1/4"}
    assert _reject(bad, model) == (
        "steps[1].power: the last layer's error grows like N^1: no bound for every N"
    )


def test_reject_keeps_field_and_reason() -> None:
    err = K.Reject("steps[2].coef", "too small")
    assert (err.field, err.reason, str(err)) == (
        "steps[2].coef",
        "too small",
        "steps[2].coef: too small",
    )


def test_kappa_refusal_names_the_condition(cert, soft) -> None:
    slow = _temperature(soft, coef=20.0, n_power=0.0, log_power=0.5)
    assert _reject(cert, slow) == (
        "temperature: β(N) = 20·N^0·log(N)^1/2: β(N)/log N is not non-decreasing from N₀ = 3 "
        "on (p·log N₀ ≥ 1 − q fails), so e^{−β·m} has no power-law bound N^{−κm}"
    )


def test_a_score_error_growing_with_n_is_refused_at_its_head(soft, hard) -> None:
    """β = 3·log N on the whole program: layer 1's error grows like N, so layer 2's score
    error η grows like N⁴ — no margin for every N; the refusal names the head."""
    model = _with_coef(soft, 3.0)
    facts = K._facts({"facts": program_facts(hard)})
    beta, norms = K.structure(model)
    prev = K.Majorant(fmpq(0), None)
    with pytest.raises(K.Reject) as err:
        for li, ln in enumerate(norms):
            got = K.layer_step(prev, ln, facts, beta.kappa(3), 3, f"model.layers[{li}]")
            if got is not None:
                prev = K.Majorant(K.up(got[0]), got[1])
    assert str(err.value) == (
        "model.layers[2].heads[0]: the score error η grows like N^4 (> 0): no margin for every N"
    )


def test_diagnose_refuses_a_model_outside_the_simulation(hard) -> None:
    from attncert.compile.tieless_all_lengths import diagnose

    d = diagnose(hard)  # the average-hard program itself
    assert d.first_failing_n is None and d.counterexample is None
    assert d.note.startswith("outside Theorem 26's simulation: model.layers[0].heads[0]")
