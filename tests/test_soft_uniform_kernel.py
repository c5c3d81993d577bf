"""The length-uniform certificate's checker (attncert.kernel.uniform.checker): every edited
field is rejected with its name; big numbers round-trip exactly; the CLI and the proofs/
artifact."""

from __future__ import annotations

import copy
import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from test_soft_uniform import mean_model

from attncert.cli.commands.sensitivity import _final_verdict
from attncert.cli.main import main
from attncert.kernel.uniform import checker as KU
from attncert.kernel.uniform import dyadic as Q
from attncert.model import zoo_model
from attncert.proofcheck import check_artifact
from attncert.proofcheck.manifest import sha256_file
from attncert.soft.certified.uniform import certify_uniform

__implements__ = ("Hahn Lemma 5", "Hahn Theorem 6")

ART = Path(__file__).resolve().parents[1] / "proofs" / "hahn2020" / "lemma5"


@pytest.fixture(scope="module")
def parity():
    u = certify_uniform(zoo_model("soft_parity"), 64, bins=4, floor_at=(64, 1024))
    assert u.check.accepted, u.check.summary()
    return u.certificate


@pytest.fixture(scope="module")
def no_bos():
    u = certify_uniform(zoo_model("trained_majority"), 16, bins=1)
    assert u.check.accepted, u.check.summary()
    return u.certificate


def _big(text: str, factor: Fraction) -> str:
    return Q.text(Q.up(Q.parse(text) * factor))


def _set(path, value):
    def edit(d):
        *head, last = path
        for k in head:
            d = d[k]
        d[last] = value(d[last]) if callable(value) else value

    return edit


TAMPER = [
    ("K", _set(("K",), lambda x: _big(x, Fraction(1, 2))), "K", "not sound"),
    ("K fidelity", _set(("K",), lambda x: _big(x, Fraction(101, 100))), "K", "not what"),
    ("n0", _set(("n0",), 32), "n0", "n0_tokens"),
    (
        "n0 and N0'",
        lambda d: d.update(n0=32, n0_tokens=34),
        "cases[0].classes[0].features",
        "N₀' = 34",
    ),
    ("bins", _set(("bins",), 8), "cases[0].classes", "classes"),
    ("cases", lambda d: d["cases"].pop(), "cases", "parity of N"),
    ("parity", _set(("cases", 1, "n_parity"), "even"), "cases", "parity of N"),
    (
        "feature range",
        _set(("cases", 0, "classes", 3, "features", "i/n"), ["0", "1"]),
        "cases[0].classes[3].features['i/n']",
        "claimed range",
    ),
    (
        "1/n range",
        _set(("cases", 0, "classes", 0, "features", "1/n"), ["0", "1/1000"]),
        "cases[0].classes[0].features['1/n']",
        "claimed range",
    ),
    (
        "count",
        _set(("cases", 0, "classes", 3, "count_fraction"), "1/2"),
        "cases[0].classes[3].count_fraction",
        "re-derived",
    ),
    (
        "changeable",
        _set(("cases", 0, "classes", 0, "changeable"), True),
        "cases[0].classes[0].changeable",
        "re-derived",
    ),
    (
        "one key",
        _set(("cases", 0, "heads", 0, "one_key"), "0x1.0p-1"),
        "cases[0].heads[0].one_key",
        "not sound",
    ),
    ("beta", _set(("cases", 0, "heads", 0, "beta"), [0.5, 0.5]), "cases[0].heads[0].beta", "β"),
    (
        "step",
        _set(("cases", 0, "steps", 2, "other"), "0x1.0p+0"),
        "cases[0].steps[2].other",
        "not sound",
    ),
    ("width", _set(("cases", 0, "steps", 1, "width"), 0.5), "cases[0].steps[1].width", "not sound"),
    (
        "label",
        _set(("cases", 0, "steps", 1, "label"), "layer 9 ffn"),
        "cases[0].steps[1].label",
        "re-derived",
    ),
    (
        "z range",
        _set(("cases", 0, "per_symbol", 0, "z_range"), [-0.1, 0.1]),
        "cases[0].per_symbol[0].z_range",
        "not sound",
    ),
    (
        "K_tokens",
        _set(("cases", 0, "per_symbol", 0, "K_tokens"), "0x1.0p+0"),
        "cases[0].per_symbol[0].K_tokens",
        "not sound",
    ),
    (
        "K per symbol",
        _set(("cases", 0, "per_symbol", 0, "K"), "0x1.0p+0"),
        "cases[0].per_symbol[0].K",
        "not sound",
    ),
    ("factor", _set(("token_factor",), "1/2"), "token_factor", "n/(N − 1)"),
    ("cap", _set(("cap",), 1.0), "cap", "not sound"),
    ("n*", _set(("nontrivial_from",), "63"), "nontrivial_from", "least n"),
    ("floor", _set(("floor", "at", 0, "nats"), 0.69), "floor.at[0].nats", "exceeds"),
    ("floor n", _set(("floor", "at", 0, "n"), 10), "floor.at[0].n", "not covered"),
    ("tolerance", _set(("tolerance",), 0.5), "tolerance", "outside"),
    ("version", _set(("version",), 2), "format/version", "version"),
    ("model", _set(("model", "sha256"), "0" * 64), "model.sha256", "hash"),
    ("garbage K", _set(("K",), "lots"), "K", "not a number"),
    # the reader (certificates.uniform) names the object the field is missing from
    ("missing", lambda d: d["cases"][0].pop("steps"), "cases[0]", "missing field 'steps'"),
    ("floor kind", _set(("floor", "kind"), "bits"), "floor.kind", "unknown floor kind 'bits'"),
    (
        "class",
        _set(("cases", 0, "classes", 2), "x"),
        "cases[0].classes[2]",
        "expected a JSON object",
    ),
    ("bins type", _set(("bins",), "4"), "bins", "field 'bins' has the wrong type str"),
    (
        "z_lo alone",
        _set(("cases", 0, "per_symbol", 0, "z_range", 0), 0.0),
        "cases[0].per_symbol[0].z_range",
        "claimed −z_lo 0 is not sound: re-derived 1.2651515",
    ),
    (
        "beta in full",
        _set(("cases", 0, "heads", 0, "beta"), [0.5, 0.5]),
        "cases[0].heads[0].beta",
        "claimed layer/head/β [1, 1, [0.5, 0.5]], re-derived [1, 1, [1.0, 1.0]]",
    ),
    ("no floor kind", lambda d: d["floor"].pop("kind"), "floor", "missing field 'kind'"),
    ("no floor rows", lambda d: d["floor"].pop("at"), "floor", "missing field 'at'"),
]


# the exact claim and place of each edit's rejection (the reason is matched above)
CLAIM_WHERE = {
    "K": ("K", "K"),
    "K fidelity": ("K", "K"),
    "n0": ("n0", "n0"),
    "n0 and N0'": ("classes", "cases[0].classes[0].features['i/n']"),
    "bins": ("classes", "cases[0].classes"),
    "cases": ("cases", "cases"),
    "parity": ("cases", "cases"),
    "feature range": ("classes", "cases[0].classes[3].features['i/n']"),
    "1/n range": ("classes", "cases[0].classes[0].features['1/n']"),
    "count": ("classes", "cases[0].classes[3].count_fraction"),
    "changeable": ("classes", "cases[0].classes[0].changeable"),
    "one key": ("heads", "cases[0].heads[0].one_key"),
    "beta": ("heads", "cases[0].heads[0].beta"),
    "step": ("steps", "cases[0].steps[2].other"),
    "width": ("steps", "cases[0].steps[1].width"),
    "label": ("steps", "cases[0].steps[1].label"),
    "z range": ("per_symbol", "cases[0].per_symbol[0].z_range"),
    "K_tokens": ("per_symbol", "cases[0].per_symbol[0].K_tokens"),
    "K per symbol": ("per_symbol", "cases[0].per_symbol[0].K"),
    "factor": ("token_factor", "token_factor"),
    "cap": ("cap", "cap"),
    "n*": ("nontrivial_from", "nontrivial_from"),
    "floor": ("floor", "floor.at[0].nats"),
    "floor n": ("floor", "floor.at[0].n"),
    "tolerance": ("tolerance", "tolerance"),
    "version": ("format", "format/version"),
    "model": ("model", "model.sha256"),
    "garbage K": ("format", "K"),
    "missing": ("format", "cases[0]"),
    "floor kind": ("floor", "floor.kind"),
    "class": ("format", "cases[0].classes[2]"),  # malformed: read, not re-derived
    "bins type": ("format", "bins"),
    "z_lo alone": ("per_symbol", "cases[0].per_symbol[0].z_range"),
    "beta in full": ("heads", "cases[0].heads[0].beta"),
    "no floor kind": ("format", "floor"),
    "no floor rows": ("format", "floor"),
}


@pytest.mark.slow
@pytest.mark.parametrize(("label", "edit", "where", "why"), TAMPER, ids=[t[0] for t in TAMPER])
def test_every_edit_is_rejected_naming_it(parity, label, edit, where, why):
    data = copy.deepcopy(parity)
    edit(data)
    report = KU.check(data, zoo_model("soft_parity"))
    assert not report.accepted, label
    f = report.failures[0]
    assert f.where.startswith(where), (label, str(f))
    assert why in f.reason, (label, str(f))
    assert (f.claim, f.where) == CLAIM_WHERE[label], (label, str(f))


def test_derive_gives_the_certificate_s_unwidened_claims(parity):
    got = KU.derive(zoo_model("soft_parity"), 64, 4)
    assert got["nontrivial_from"] == parity["nontrivial_from"] == "64"
    assert (got["n0"], got["n0_tokens"], got["bins"]) == (64, 66, 4)
    assert Q.parse(got["K"]) <= Q.parse(parity["K"]) and got["token_factor"] == "1"


def test_the_certificate_is_accepted_and_states_the_theorem(parity):
    report = KU.check(parity, zoo_model("soft_parity"))
    assert report.accepted
    text = report.summary()
    assert "every n ≥ 64" in text and "Theorem 6" in text
    assert parity["floor"]["at"][0]["n"] == 64
    assert "K/n" in parity["statement"]


def test_the_factor_without_bos_or_eos(no_bos):
    assert no_bos["token_factor"] == "16/15"  # K_tok/(n − 1) ≤ K_tok·16/15/n for n ≥ 16
    k_tok = max(Q.parse(p["K_tokens"]) for c in no_bos["cases"] for p in c["per_symbol"])
    assert Q.parse(no_bos["K"]) >= k_tok * Fraction(16, 15)
    bad = copy.deepcopy(no_bos)
    bad["token_factor"] = "1"
    report = KU.check(bad, zoo_model("trained_majority"))
    assert not report.accepted and report.failures[0].where == "token_factor"


def test_big_numbers_round_trip(no_bos):
    k = Q.parse(no_bos["K"])
    assert k > Fraction(10) ** 250  # beyond float64
    assert Q.parse(Q.text(k)) == k and Q.approx(k).endswith(("e+270", "e+271"))
    for q in (Fraction(1, 3), Fraction(10) ** 500 / 7, Fraction(2) ** -1100, Fraction(5)):
        u = Q.up(q)
        assert u >= q and (u - q) <= q * Fraction(1, 2**52)
        assert Q.parse(Q.text(u)) == u
    assert Q.parse("0x0p+0") == 0 and Q.text(Fraction(0)) == "0x0p+0"


def test_doctests():
    import doctest
    import importlib

    for name in ("attncert.kernel.uniform.dyadic", "attncert.soft.certified.uniform"):
        result = doctest.testmod(importlib.import_module(name))
        assert result.failed == 0 and result.attempted > 0, name


def test_the_floor_is_theorem_6(parity):
    k, cap = Q.parse(parity["K"]), Fraction(parity["cap"])
    a = KU.parity_floor(k, cap, 64)
    b = KU.parity_floor(k, cap, 10**6)
    assert 0 < a < b < 0.6931471805599453  # increasing to log 2
    assert 0.6931471805599453 - b < 1e-5
    assert KU.nontrivial_from(k, cap, 64) == 64
    assert KU.nontrivial_from(Fraction(1000), Fraction(2), 64) == 501
    assert KU.nontrivial_from(k, Fraction(0), 64) is None


def test_a_measured_excess_refutes_the_verdict_only_when_arb_confirms_it():
    """A float measurement above K/n refutes nothing by itself (issue 41: REFUTED only when
    a claim is proved false); the same pair re-decided in arb above K/n does."""
    from types import SimpleNamespace

    from attncert.soft.sensitivity import Witness

    class U:
        verdict = "CERTIFIED"
        k = Fraction(1, 10**9)  # a forged, far too small K

    model = zoo_model("soft_parity")
    x = "0110"
    wit = Witness(x, 1, "1", 0.0, 1.0, 0.0)  # z(0110) and z(1110) differ by 2/N² in arb
    report = SimpleNamespace(profile=SimpleNamespace(results=[SimpleNamespace(n=4, witness=wit)]))
    assert _final_verdict(None, None, U(), [{"sound": True}]) == "CERTIFIED"
    assert _final_verdict(None, None, U(), [{"sound": False}, {"sound": None}]) == "CERTIFIED"
    assert _final_verdict(None, model, U(), [{"sound": False, "n": 4}], report) == "REFUTED"
    U.k = Fraction(10**9)  # a K the pair does not exceed: the float flag alone refutes nothing
    assert _final_verdict(None, model, U(), [{"sound": False, "n": 4}], report) == "CERTIFIED"


# ----------------------------------------------------------------------------- CLI


@pytest.mark.slow
def test_cli_uniform(tmp_path, capsys):
    out = tmp_path / "u.json"
    argv = ["sensitivity", "zoo:soft_parity", "--n", "8,64", "--uniform", "--bins", "4"]
    rc = main([*argv, "--time-budget", "0.5", "--save-uniform", str(out), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["verdict"] == "CERTIFIED"
    u = data["uniform"]
    assert u["n0"] == 64 and u["published"]["value"] is not None
    rows = {r["n"]: r for r in u["rows"]}
    assert rows[8]["sound"] is None and rows[64]["sound"] is True
    assert main(["soft-check", str(out)]) == 0
    assert "CHECKED" in capsys.readouterr().out
    cert = json.loads(out.read_text())
    cert["K"] = "0x1.0p+0"
    out.write_text(json.dumps(cert))
    assert main(["soft-check", str(out)]) == 1
    assert "REJECTED: K (K)" in capsys.readouterr().out
    rc = main(["sensitivity", "zoo:soft_parity", "--n", "64", "--uniform", "--time-budget", "0.5"])
    text = capsys.readouterr().out
    assert rc == 0 and "B(n) ≤ K/n with K = 4." in text and "as published" in text


def test_cli_outside_and_bad_input(capsys):
    rc = main(
        ["sensitivity", "zoo:trained_dyck1", "--n", "16", "--uniform", "--time-budget", "0.2"]
    )
    text = capsys.readouterr().out
    assert rc == 5 and "OUTSIDE-THEOREM" in text and "masked" in text
    assert main(["sensitivity", "zoo:soft_parity", "--save-uniform", "x.json"]) == 2
    assert "need --uniform" in capsys.readouterr().err
    argv = ["sensitivity", "zoo:soft_parity", "--uniform", "--metric", "activation"]
    assert main(argv) == 2
    assert main(["sensitivity", "zoo:soft_parity", "--uniform", "--n0", "1"]) == 2


def test_sharp_model_prints_n_star(capsys):
    u = certify_uniform(mean_model(3.0), 4, bins=1)
    assert u.verdict == "CERTIFIED"
    # K = e³·4/3 ≈ 26.8 over a logit range of width 1: K/n < Z from n = 27 on
    assert u.nontrivial_from == int(u.k // Fraction(u.cap)) + 1 == 27
    assert any("for N₀ ≤ n < 27" in x for x in u.notes())


# ----------------------------------------------------------------------------- proofs/


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["soft_parity-uniform", "soft_parity_lm-uniform", "soft_dyck2_lm-uniform"]
)
def test_committed_artifacts_pass(name):
    r = check_artifact(ART / name, f"hahn2020/lemma5/{name}")
    assert r.ok, r.reasons
    assert any("every n ≥ 64" in f for f in r.facts)


def test_artifact_with_an_edited_k_is_rejected(tmp_path):
    dst = tmp_path / "art"
    shutil.copytree(ART / "soft_parity-uniform", dst)
    path = dst / "certificate.json"
    cert = json.loads(path.read_text())
    cert["K"] = _big(cert["K"], Fraction(1, 2))
    path.write_text(json.dumps(cert, indent=1))
    m = json.loads((dst / "manifest.json").read_text())
    for f in m["files"]:
        f["sha256"] = sha256_file(dst / f["path"])  # a careless editor rehashes
    (dst / "manifest.json").write_text(json.dumps(m, indent=1))
    r = check_artifact(dst, "hahn2020/lemma5/soft_parity-uniform")
    assert not r.ok
    reasons = " ".join(r.reasons)
    assert "the manifest expects" in reasons and "K (K): claimed K" in reasons


def test_an_overflow_in_the_propagation_is_a_rejection_naming_it(parity, monkeypatch):
    from attncert.kernel.core import bounds as B
    from attncert.kernel.core.failure import Failure

    def overflow(*args, **kwargs):
        raise B.Undecided("a bound overflowed float64")

    monkeypatch.setattr(KU, "derive", overflow)
    report = KU.check(parity, zoo_model("soft_parity"))
    assert report.failures == (
        Failure("arithmetic", "propagation", "undecided: a bound overflowed float64"),
    )


def test_a_constant_below_one_is_accepted():
    """K < 1 (the readout weights scaled by 1/100): the largest K over the cases starts
    from 0, not from any positive number."""
    import dataclasses

    sp = zoo_model("soft_parity")
    small = dataclasses.replace(
        sp, readout=dataclasses.replace(sp.readout, weight=sp.readout.weight / 100)
    )
    u = certify_uniform(small, 16, bins=1)
    assert u.check.accepted, u.check.summary()
    assert Q.parse(u.certificate["K"]) < 1
