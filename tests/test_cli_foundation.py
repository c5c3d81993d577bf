"""CLI: ``attncert info``, ``run``, ``zoo``; bad input exits 2 with one line and no traceback."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction

import pytest

from attncert.cli.common import load_language_arg, load_model_arg
from attncert.cli.main import main
from attncert.errors import InputError
from attncert.languages import AnBn, Parity
from attncert.model import forward_exact, model_to_dict, random_model, save_model, zoo_model


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_text_and_json(capsys):
    code, out, err = cli(capsys, "info", "zoo:anbn")
    model = zoo_model("anbn")
    assert code == 0 and err == ""
    assert model.digest in out
    # layers numbered from 1 as in the papers (and certify), with the file's 0-based field
    assert "layer 1 (layers[0]): no heads; ffn d_ff=2 relu" in out
    assert "layer 2 (layers[1]): h0 leftmost mask=none d_k=1 d_v=1" in out
    assert "[i>n/2], (-1)^n" in out
    code, out, _ = cli(capsys, "info", "zoo:anbn", "--json")
    info = json.loads(out)
    assert info["sha256"] == model.digest
    assert info["num_layers"] == 2 and info["d"] == 7 and info["hard"] is True
    assert info["layers"][0]["heads"] == []
    assert info["layers"][0]["ffn"] == {"d_ff": 2, "activation": "relu"}
    assert info["layers"][0]["layer"] == 1 and info["layers"][0]["field"] == "layers[0]"
    assert info["layers"][1]["heads"][0]["kind"] == "leftmost"
    assert [f["name"] for f in info["features"]] == ["[i>n/2]", "(-1)^n"]


def test_info_softmax_model_file(tmp_path, capsys):
    model = random_model(1, 2, 4, kind="softmax", mask="future", seed=3)
    path = save_model(model, tmp_path / "soft.json")
    code, out, _ = cli(capsys, "info", str(path), "--json")
    info = json.loads(out)
    assert code == 0 and info["hard"] is False and info["sha256"] == model.digest
    assert {h["mask"] for h in info["layers"][0]["heads"]} == {"future"}
    assert info["layers"][0]["heads"][0]["temperature"] == {
        "coef": 1.0,
        "n_power": 0.0,
        "log_power": 0.0,
    }


@pytest.mark.parametrize("exact", [False, True])
def test_run_decisions_match_the_language(capsys, exact):
    strings = ["ab", "aabb", "abab", "ba", "aaabbb", "aab"]
    code, out, _ = cli(
        capsys, "run", "zoo:anbn", *strings, "--json", *(["--exact"] if exact else [])
    )
    assert code == 0
    data = json.loads(out)
    assert data["sha256"] == zoo_model("anbn").digest
    assert [r["accept"] for r in data["results"]] == [AnBn().contains(s) for s in strings]
    for r in data["results"]:
        assert r["evaluator"] == ("exact" if exact else "float")
        assert (r["logit"] > 0) is r["accept"]
        if exact:
            assert Fraction(r["logit_exact"]) == Fraction(r["logit"])
            assert Fraction(r["logit_exact"]).denominator == 2


def test_run_trace_shows_attention_choices(capsys):
    code, out, _ = cli(capsys, "run", "zoo:anbn", "abab", "--exact", "--trace", "--json")
    assert code == 0
    rec = json.loads(out)["results"][0]
    et = forward_exact(zoo_model("anbn"), "abab")
    assert rec["tokens"] == ["a", "b", "a", "b"]
    assert rec["attention"] == [
        {
            "layer": 1,
            "head": 0,
            "kind": "leftmost",
            "attends": [[j + 1 for j in c] for c in et.layers[1].chosen[0]],
        }
    ]
    assert rec["attention"][0]["attends"] == [[2]] * 4  # the first misplaced symbol is the b at 2
    _, out, _ = cli(capsys, "run", "zoo:anbn", "abab", "--trace")
    assert out.splitlines() == [
        "reject  logit=-0.5  'abab'  (float)",
        "  layer 1 head 0 (leftmost): 1a→2 2b→2 3a→2 4b→2",
    ]


def test_run_softmax_trace(capsys):
    code, out, _ = cli(capsys, "run", "zoo:random-L2-H2-d16", "0110", "--trace", "--json")
    assert code == 0
    rec = json.loads(out)["results"][0]
    assert len(rec["attention"]) == 4 and all(len(a["attends"]) == 4 for a in rec["attention"])


def test_zoo_list_and_export(tmp_path, capsys):
    code, out, _ = cli(capsys, "zoo", "list", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert {"ones_star", "anbn"} <= rows.keys()
    assert rows["ones_star"]["sha256"] == zoo_model("ones_star").digest
    target = tmp_path / "sub" / "ones.json"
    code, out, _ = cli(capsys, "zoo", "export", "ones_star", str(target))
    assert code == 0 and target.exists() and zoo_model("ones_star").digest in out
    code, out, _ = cli(capsys, "info", str(target), "--json")
    assert json.loads(out)["sha256"] == zoo_model("ones_star").digest
    code, out, _ = cli(capsys, "run", str(target), "111", "101")
    assert [line.split()[0] for line in out.splitlines()] == ["accept", "reject"]


def test_common_helpers(tmp_path):
    assert load_model_arg("zoo:ones_star").digest == zoo_model("ones_star").digest
    with pytest.raises(InputError, match="zoo:NAME"):
        load_model_arg("ones_star")
    assert load_language_arg("parity") == Parity()
    path = tmp_path / "p.json"
    from attncert.languages import save_dfa

    save_dfa(Parity().as_dfa(), path)
    assert load_language_arg(f"dfa:{path}") == Parity().as_dfa()


# ----- bad input: exit 2, one line, no traceback -------------------------------------------


def _bad_files(tmp_path):
    base = model_to_dict(zoo_model("ones_star"))
    files = {}

    def variant(name, mutate):
        data = json.loads(json.dumps(base))
        mutate(data)
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(data))
        files[name] = p

    (tmp_path / "malformed.json").write_text(
        '{"format": "attncert-model",\n  "version": 1\n  "name": 3}'
    )
    files["malformed"] = tmp_path / "malformed.json"
    variant("shape", lambda d: d["layers"][0]["heads"][0]["w_q"][0].append(0.0))
    variant("nan", lambda d: d["layers"][0]["heads"][0]["w_k"][0].__setitem__(1, math.nan))
    variant("kind", lambda d: d["layers"][0]["heads"][0].update(kind="hardest"))
    stale = json.loads(json.dumps(base))
    stale["sha256"] = zoo_model("ones_star").digest
    stale["readout"]["bias"] = 0.25
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    files["stale"] = tmp_path / "stale.json"
    return files


EXPECTED_ERRORS = {
    "malformed": "malformed JSON at line 3, column 3",
    "shape": "layers[0].heads[0].w_q: wrong shape (1, 5)",
    "nan": "layers[0].heads[0].w_k: non-finite value nan at index (0, 1)",
    "kind": "layers[0].heads[0].kind: unknown value 'hardest'",
    "stale": "sha256: content hash mismatch",
}


@pytest.mark.parametrize("case", sorted(EXPECTED_ERRORS))
@pytest.mark.parametrize("command", ["info", "run"])
def test_bad_model_files_exit_2(tmp_path, capsys, case, command):
    path = _bad_files(tmp_path)[case]
    argv = [command, str(path)] + (["11"] if command == "run" else [])
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert EXPECTED_ERRORS[case] in err and str(path) in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "zoo:ones_star", "1x1"], "unknown symbol 'x' at position 2 of '1x1'"),
        (["run", "zoo:ones_star", ""], "the model sees no tokens"),
        (["run", "zoo:random-L2-H2-d16", "01", "--exact"], None),
        (["info", "zoo:nope"], "no zoo model named 'nope'"),
        (["info", "missing.json"], "no model file 'missing.json'"),
        (["zoo", "export", "nope", "x.json"], "no zoo model named 'nope'"),
    ],
)
def test_bad_input_exits_2(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    if argv[1] == "zoo:random-L2-H2-d16":  # a softmax model for --exact
        save_model(random_model(1, 1, 4, kind="softmax", seed=0), tmp_path / "soft.json")
        argv = ["run", "soft.json", "01", "--exact"]
        message = "exact evaluation of softmax attention (layers[0].heads[0]) is not supported"
    code, out, err = cli(capsys, *argv)
    assert out == ""
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert message in err


def test_usage_errors_exit_2(capsys):
    """Usage errors: status 2 (returned, not raised) and one line pointing to --help."""
    for argv in (["run", "zoo:ones_star"], ["zoo"], ["info"], ["certify", "--n", "x"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert f"attncert {argv[0]}: error:" in err and "--help" in err


@pytest.mark.slow
def test_real_entry_point_prints_no_traceback(tmp_path):
    """Through a real process: bad files and bad strings give exit 2 and one stderr line."""
    files = _bad_files(tmp_path)
    for argv in (["info", str(files["nan"])], ["run", "zoo:anbn", "abc"]):
        proc = subprocess.run(
            [sys.executable, "-m", "attncert.cli.main", *argv],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    proc = subprocess.run(
        [sys.executable, "-m", "attncert.cli.main", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0
    for command in ("info", "run", "zoo"):
        assert command in proc.stdout


@pytest.mark.slow
def test_broken_pipe_exits_quietly():
    """`attncert … | head`: the reader closes the pipe early; no traceback, status 141."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "attncert.cli.main", "zoo", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader goes away before anything is read
    err = proc.stderr.read().decode()
    assert proc.wait() == 141
    assert "Traceback" not in err and "BrokenPipe" not in err
