"""``attncert sensitivity --certify``, ``soft-certify``, ``soft-check``: tables, JSON,
exit codes, plots by extension, refusals; and the bound labels of issue 19 item 2 (a cap
is shown as a cap, the n from which it is not, the regime of the fitted decay)."""

from __future__ import annotations

import json
import math

import pytest

from attncert.cli.main import main
from attncert.model import random_model, save_model, zoo_model
from attncert.soft import bounds as B
from attncert.soft.report import format_table, sensitivity_report

__implements__ = (
    "Hahn Lemma 5",
    "Hahn Theorem 6",
)


@pytest.mark.slow
def test_certify_json_side_by_side(tmp_path, capsys):
    path = str(tmp_path / "c-{n}.json")
    code = main(
        [
            "sensitivity", "zoo:soft_parity_lm", "--n", "8,20", "--certify", "--json",
            "--samples", "60", "--restarts", "2", "--time-budget", "2", "--save", path,
        ]
    )  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    # soft_parity_lm's B(n) is its logit's certified range at both lengths: checked, but
    # no more than a cap, so the verdict says TRIVIAL (exit 4), never a bare CERTIFIED
    assert {row["certified_source"] for row in out["certified"]} == {"range cap"}
    assert code == 4 and out["verdict"] == "CERTIFIED-TRIVIAL"
    for row in out["certified"]:
        assert row["checked"] and row["measured_max"] <= row["certified_bound"]
        assert row["ratio"] == pytest.approx(row["certified_bound"] / row["measured_max"])
        assert row["certified_source"] in ("range cap", "propagation")
        assert 0 < row["cross_entropy_floor"] < math.log(2) and row["log2"] == math.log(2)
        assert (
            row["measured_cross_entropy"]
            >= row["cross_entropy_floor"] - 3 * row["measured_cross_entropy_half_width"]
        )
        assert row["lemma5_is_cap"] is True  # A ≈ 429: e^{2A}/n is clipped to 1
    assert (tmp_path / "c-8.json").exists() and (tmp_path / "c-20.json").exists()
    assert main(["soft-check", str(tmp_path / "c-20.json")]) == 0


@pytest.mark.slow
def test_certify_table_and_pdf_plot(tmp_path, capsys):
    pdf = tmp_path / "s.pdf"
    code = main(
        ["sensitivity", "zoo:soft_parity_ln", "--n", "6,12", "--certify", "--plot", str(pdf),
         "--samples", "40", "--restarts", "1"]
    )  # fmt: skip
    assert code == 4
    text = capsys.readouterr().out
    assert "certified B(n)" in text and "range cap" in text
    assert "verdict: CERTIFIED-TRIVIAL" in text
    assert "LayerNorm (final norm) is what makes the bound loose" in text
    assert "only ε limits the constant" in text
    assert pdf.read_bytes()[:5] == b"%PDF-"
    svg = tmp_path / "s.svg"
    assert main(["sensitivity", "zoo:soft_parity", "--n", "6", "--plot", str(svg)]) == 0
    assert b"<svg" in svg.read_bytes()[:400]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--n", "8", "--plot", "x.gif"], "format is unknown"),
        (["--n", "8", "--save", "c.json"], "--save needs --certify"),
        (["--n", "8,16", "--certify", "--save", "c.json"], "{n}"),
        (["--n", "8", "--certify", "--metric", "activation"], "bounds the logit"),
        (["--n", "10000000000000"], "--n"),
        (["--n", "8", "--certify", "--samples", "1"], "--samples"),
    ],
)
def test_bad_input_exits_2(tmp_path, capsys, argv, match):
    assert main(["sensitivity", "zoo:soft_parity_lm", *argv]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_plot_into_a_directory_is_refused(tmp_path, capsys):
    assert main(["sensitivity", "zoo:soft_parity", "--n", "6", "--plot", str(tmp_path)]) == 2
    assert "--plot" in capsys.readouterr().err


def test_hard_model_certify_is_bad_input(capsys):
    assert main(["sensitivity", "zoo:ones_star", "--n", "6", "--certify", "--samples", "10"]) == 2
    assert "softmax" in capsys.readouterr().err


@pytest.mark.slow
def test_soft_certify_and_check(tmp_path, capsys):
    cert = tmp_path / "c.json"
    code = main(
        ["soft-certify", "zoo:soft_parity_lm", "--n", "16", "--time-limit", "20", "-o", str(cert)]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "verdict: CERTIFIED" in text and "positions free" in text and "wrong on one of" in text
    assert main(["soft-check", str(cert), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accepted"] and out["verdict"] == "CHECKED"
    # a different model is refused by hash, an edited bound by the checker
    other = tmp_path / "m.json"
    save_model(random_model(1, 1, 4, kind="softmax", seed=1), other)
    assert main(["soft-check", str(cert), "--model", str(other)]) == 2
    assert "hash" in capsys.readouterr().err
    data = json.loads(cert.read_text())
    data["sensitivity"][0]["bound"] /= 2
    cert.write_text(json.dumps(data))
    assert main(["soft-check", str(cert)]) == 1
    assert "not sound" in capsys.readouterr().out


@pytest.mark.slow
def test_soft_certify_adversarial_parity_gets_no_free_position(capsys):
    code = main(["soft-certify", "zoo:soft_parity_ln", "--n", "10", "--time-limit", "20", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 4 and out["verdict"] == "CERTIFIED-TRIVIAL"
    rest = out["certificate"]["restriction"]
    assert rest is None or rest["free"] == 0
    assert out["certificate"]["pair"] is None


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["zoo:soft_parity_lm", "--n", "0"], "1 ≤ n"),
        (["zoo:soft_parity_lm", "--n", "100000"], "1 ≤ n"),
        (["zoo:soft_parity_lm", "--n", "8", "--time-limit", "-1"], "positive"),
        (["zoo:ones_star", "--n", "8"], "softmax"),
        (["missing.json", "--n", "8"], "no model file"),
        # the pair's language must be over the model's alphabet: refused before any search
        (
            ["zoo:soft_dyck2_lm", "--n", "8", "--language", "parity"],
            "has no symbol '(' of the model",
        ),
    ],
)
def test_soft_certify_bad_input(capsys, argv, match):
    assert main(["soft-certify", *argv]) == 2
    assert match in capsys.readouterr().err


@pytest.mark.slow
def test_outside_lemma5_is_said(capsys):
    """dyck2_program_soft has unbounded positional features and β = 20.6·log N: the bound
    is certified at this n, but Lemma 5's hypotheses fail and the verdict says so."""
    code = main(["soft-certify", "zoo:dyck2_program_soft", "--n", "6", "--no-restriction"])
    text = capsys.readouterr().out
    assert code == 5 and "verdict: OUTSIDE-THEOREM" in text
    assert "grows with n" in text and "is unbounded" in text


def test_soft_check_bad_input(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    assert main(["soft-check", str(bad)]) == 2
    assert "malformed JSON" in capsys.readouterr().err
    bad.write_text(
        json.dumps({"format": "attncert-soft-certificate", "version": 1, "model": {"sha256": "x"}})
    )
    assert main(["soft-check", str(bad)]) == 2
    assert "does not say where its model is" in capsys.readouterr().err


# ----------------------------------------------------------------------------- issue 19 item 2


def test_a_cap_is_labelled_as_a_cap_and_its_end_is_computed():
    m = zoo_model("soft_parity_lm")
    rep = sensitivity_report(m, [16, 64], restarts=1, candidates=4, time_budget=2)
    assert all(rep.bound_capped)
    text = format_table(rep)
    assert "(cap)" in text and "not Lemma 5's O(1/n) bound" in text
    assert "below the cap only from n ≥ ≈ 10^372" in text
    # the computed n is where the recurrence stops being capped (monotone in n)
    c = B.lemma5_constants(m)
    n_cap = B.n_below_cap(c)
    assert B.induction_bounds(c, n_cap).capped is False
    assert B.induction_bounds(c, n_cap - (n_cap >> 19)).capped is True
    # a model whose bound is Lemma 5 from the start shows no cap
    rep2 = sensitivity_report(zoo_model("soft_parity"), [8, 16], restarts=1, candidates=4)
    assert not any(rep2.bound_capped) and "(cap)" not in format_table(rep2)


def test_published_steps_are_worded_as_steps_not_as_a_meaningful_bound():
    rep = sensitivity_report(
        zoo_model("soft_parity_lm"), [16], restarts=1, candidates=4, time_budget=1
    )
    text = format_table(rep)
    assert "published steps valid from n ≥ 2" not in text
    assert "a condition on the steps, not on the size of the bound" in text


def test_the_fit_is_shown_with_its_regime():
    rep = sensitivity_report(
        zoo_model("soft_parity_lm"), [16, 64], restarts=1, candidates=4, time_budget=2
    )
    assert "fitted on n = 16…64" in rep.regime()
    assert (
        "far from the asymptotic regime" in rep.regime() and "single differing key" in rep.regime()
    )
    rep2 = sensitivity_report(zoo_model("soft_parity"), [8, 16, 32], restarts=1, candidates=4)
    assert "fitted on n = 8…32" in rep2.regime() and "far from" not in rep2.regime()
    assert rep.as_dict()["regime"] == rep.regime()


@pytest.mark.slow
def test_a_propagated_bound_is_certified_not_trivial(capsys):
    code = main(
        ["sensitivity", "zoo:soft_parity", "--n", "8,16", "--certify", "--json",
         "--samples", "40", "--restarts", "1", "--time-budget", "1"]
    )  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert {row["certified_source"] for row in out["certified"]} == {"propagation"}
    assert code == 0 and out["verdict"] == "CERTIFIED"
    # one length: no decay exponent is fitted (and none is printed as a number)
    assert main(["sensitivity", "zoo:soft_parity", "--n", "8", "--samples", "20"]) == 0
    assert "not fitted (it needs at least two lengths)" in capsys.readouterr().out


@pytest.mark.slow
def test_a_trained_model_is_paired_in_its_own_language(capsys):
    """Without --language, a trained zoo model's pair differs in the language it was trained
    on (its recipe), not in PARITY; a bracket model's in Dyck; other models' in PARITY."""
    from attncert.cli.commands.soft_certify import default_language
    from attncert.model import zoo_model

    for lang in ("parity", "dyck1", "first_last", "majority"):
        assert default_language(zoo_model(f"trained_{lang}")) == lang
    assert default_language(zoo_model("soft_parity_lm")) == "parity"
    assert default_language(zoo_model("soft_dyck2_lm")) == "dyck2"  # by its alphabet
    main(["soft-certify", "zoo:trained_first_last", "--n", "12", "--time-limit", "10"])
    text = capsys.readouterr().out
    # either a pair "differing in first_last" or "no two completions of ρ differ in first_last"
    assert "differ in first_last" in text or "differing in first_last" in text, text
    assert "parity" not in text.split("restriction:", 1)[1].split("CHECKED", 1)[0]


def test_the_search_reports_its_progress_monotonically():
    """soft-certify's progress bar: the free positions certified so far never decrease and
    end at (or below) the restriction found; the propagation count goes up by one."""
    from attncert.model import zoo_model
    from attncert.soft.certified.certify import certify_soft

    seen = []
    out = certify_soft(
        zoo_model("soft_parity_lm"),
        24,
        restriction=True,
        time_limit=5,
        restriction_method="affine",
        progress=lambda free, calls: seen.append((free, calls)),
    )
    assert out.check.accepted and seen
    frees = [f for f, _ in seen]
    assert frees == sorted(frees) and frees[-1] <= out.certificate.restriction.rho.count("*")
    assert [c for _, c in seen] == list(range(1, len(seen) + 1))
