"""``attncert sensitivity``: table, JSON, plot, refusals, bad input."""

from __future__ import annotations

import json

from attncert.cli.main import main


def test_json_report_for_soft_parity(capsys):
    assert main(["sensitivity", "zoo:soft_parity", "--n", "6,16,64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["not_applicable"] is None and out["lemma5"]["A"] == "0.0"
    rows = out["rows"]
    assert [r["n"] for r in rows] == [6, 16, 64]
    assert rows[0]["method"] == "exhaustive" and rows[1]["method"] == "search"
    for r in rows:
        assert abs(r["max_change"] - 2 / (r["n"] + 2) ** 2) < 1e-9
        assert r["max_change"] <= 10 ** r["bound_log10"]


def test_table_and_plot(tmp_path, capsys):
    png = tmp_path / "s.png"
    assert main(["sensitivity", "zoo:soft_parity", "--n", "8,32", "--plot", str(png)]) == 0
    text = capsys.readouterr().out
    assert "fitted decay exponent" in text and "Lemma 5 constants" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_hard_model_is_measured_but_the_bound_is_refused(capsys):
    assert main(["sensitivity", "zoo:ones_star", "--n", "6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "soft attention" in out["not_applicable"]
    assert out["rows"][0]["max_change"] == 1.0


def test_bad_input_exits_2(capsys):
    assert main(["sensitivity", "zoo:soft_parity", "--n", "8,x"]) == 2
    assert "comma-separated" in capsys.readouterr().err
    assert main(["sensitivity", "missing.json", "--n", "8"]) == 2


def test_parity_rate_option(tmp_path, capsys):
    """--parity-rate: exact family margins 1/N² for soft_parity (3 layers: the rigorous
    bound is refused, naming why); a one-layer softmax model gets the rigorous C, which
    bounds its measured second-difference mass."""
    from attncert.model import random_model, save_model

    assert main(["sensitivity", "zoo:soft_parity", "--n", "8,16", "--parity-rate", "--json"]) == 0
    rate = json.loads(capsys.readouterr().out)["parity_rate"]
    for r in rate["rows"]:
        assert r["exact"] and r["sign_correct"]
        assert abs(r["margin"] - 1 / (r["n"] + 2) ** 2) < 1e-15
    assert not rate["one_layer"]["applies"] and "3 layers" in rate["one_layer"]["reason"]
    path = tmp_path / "m.json"
    m = random_model(1, 1, 4, kind="softmax", seed=1)
    save_model(m, path)
    assert main(["sensitivity", str(path), "--n", "8,32", "--parity-rate", "--json"]) == 0
    rate = json.loads(capsys.readouterr().out)["parity_rate"]
    assert rate["one_layer"]["applies"]
    for r in rate["rows"]:
        assert r["mass"] * m.n_tokens(r["n"]) <= rate["one_layer"]["C"]
    assert main(["sensitivity", "zoo:soft_parity", "--n", "8", "--parity-rate"]) == 0
    assert "n·mass" in capsys.readouterr().out
