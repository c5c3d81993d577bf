"""`attncert compile` and `attncert eval`."""

from __future__ import annotations

import json

from attncert.cli.main import main
from attncert.model import load_model


def test_compile_writes_a_model_and_explains(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["compile", "ODD(#<[Q_1])", "--alphabet", "01", "-o", str(out), "--explain"]) == 0
    text = capsys.readouterr().out
    assert "designated output coordinate" in text and "lookup" in text
    m = load_model(out)
    assert m.meta["formula"] == "ODD(#<[Q_1])"
    assert main(["compile", "since", "--library", "--regime", "unbounded", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["regime"] == "unbounded" and rec["heads"][0]["role"] == "since"


def test_compile_bad_input_exit_2(capsys):
    assert main(["compile", "Q_a &"]) == 2
    err = capsys.readouterr().err
    assert "formula:1:6" in err and "expected" in err
    assert main(["compile", "next Q_a", "--regime", "future-masked"]) == 2
    assert main(["compile", "nosuch", "--library"]) == 2


def test_eval_with_and_without_model(tmp_path, capsys):
    assert main(["eval", "Q_a S Q_b", "baab", "abba"]) == 0
    assert capsys.readouterr().out.split() == ["baab", "0111", "accept", "abba", "0011", "accept"]
    assert main(["eval", "ODD(#<[Q_1])", "0110", "111", "--model", "compile", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert [r["agree"] for r in rec["results"]] == [True, True]
    assert rec["results"][1]["accept"] is True
    # a model for a different formula disagrees: exit status 1
    path = tmp_path / "since.json"
    assert main(["compile", "Q_1 S Q_0", "--alphabet", "01", "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["eval", "ODD(#<[Q_1])", "0111", "--model", str(path)]) == 1
    assert "DISAGREE" in capsys.readouterr().out
    assert main(["eval", "Q_a", ""]) == 2
