"""One check command (issue 33): ``attncert check FILE`` accepts every certificate kind the
project writes, dispatching on the file's ``format``; a changed number is named with the
reason and a non-zero exit; ``attncert check DIR`` on a report re-checks every file."""

from __future__ import annotations

import json

import pytest

import attncert
from attncert.cli.main import main
from attncert.report.recheck import check_certificate, kind_of


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """One certificate of each kind, written by the commands that write them (small n)."""
    d = tmp_path_factory.mktemp("certs")
    runs = {
        "hard": ["certify", "--n", "16", "-o", str(d / "hard.json")],
        "soft": [
            "soft-certify", "zoo:trained_hard_first_last", "--n", "8", "--time-limit", "5",
            "--quiet", "-o", str(d / "soft.json"),
        ],
        "sensitivity": [
            "sensitivity", "zoo:soft_parity_lm", "--n", "8", "--certify", "--time-budget", "1",
            "--save", str(d / "sens.json"), "--json",
        ],
        "uniform": [
            "sensitivity", "zoo:soft_parity", "--uniform", "--n0", "8", "--n", "8",
            "--time-budget", "1", "--save-uniform", str(d / "uniform.json"), "--json",
        ],
        "verify": [
            "verify", "zoo:trained_first_last", "--language", "first_last", "--n", "8",
            "--quiet", "-o", str(d / "verify.json"),
        ],
        "all-lengths": ["prove", "Q_1 S Q_0", "--all-lengths", "-o", str(d / "all.json")],
    }  # fmt: skip
    codes = {kind: main(argv) for kind, argv in runs.items()}
    return d, codes


FILES = {
    "hard": ("hard.json", "hard"),
    "soft": ("soft.json", "soft"),
    "sensitivity": ("sens.json", "soft"),
    "uniform": ("uniform.json", "uniform"),
    "verify": ("verify.json", "verify"),
    "all-lengths": ("all.json", "all-lengths"),
}


@pytest.mark.slow
@pytest.mark.parametrize("which", list(FILES))
def test_check_accepts_every_certificate_kind(certs, which, capsys):
    d, codes = certs
    name, kind = FILES[which]
    path = d / name
    assert path.is_file(), f"{which}: the command wrote no certificate (exit {codes[which]})"
    assert kind_of(json.loads(path.read_text()), name) == kind
    code, out, err = cli(capsys, "check", str(path))
    assert code in (0, 4, 5), (out, err)  # CERTIFIED, CERTIFIED-TRIVIAL or OUTSIDE-THEOREM
    assert "Traceback" not in err
    fc = None if kind in ("hard", "all-lengths") else check_certificate(path)
    if fc is not None:  # the new kinds print one line: verdict, file, kind, reason
        assert out.startswith(fc.verdict) and f"({kind})" in out
    if which == "verify":
        assert code == 0 and "certified accuracy ∈ [1, 1]" in out and "proved correct" in out
    # the re-check reaches the verdict the command gave when it wrote the certificate
    assert code == codes[which], (which, out)


@pytest.mark.parametrize("which", ["soft", "uniform", "verify", "sensitivity"])
def test_a_changed_number_is_refuted_with_the_reason(certs, which, tmp_path, capsys):
    d, _ = certs
    name, _kind = FILES[which]
    data = json.loads((d / name).read_text())
    if which == "verify":
        data["totals"]["right"] = str(int(data["totals"]["right"]) - 1)
        want = "totals"
    elif which == "uniform":
        data["K"] = "1"
        want = "K"
    else:
        data["sensitivity"][0]["bound"] = data["sensitivity"][0]["bound"] / 100
        want = "not sound"
    bad = tmp_path / name
    bad.write_text(json.dumps(data))
    code, out, _ = cli(capsys, "check", str(bad))
    assert code == 1 and out.startswith("REFUTED") and str(bad) in out and want in out


def test_old_names_stay(certs, capsys):
    d, _ = certs
    assert main(["soft-check", str(d / "soft.json")]) == 0
    assert main(["verify-check", str(d / "verify.json")]) == 0
    capsys.readouterr()


def test_unknown_format_is_bad_input(tmp_path, capsys):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"format": "something-else", "version": 1}))
    code, _, err = cli(capsys, "check", str(p))
    assert code == 2 and "something-else" in err and "Traceback" not in err


@pytest.mark.slow
def test_check_report_directory_names_each_file_and_a_tampered_one(tmp_path, capsys):
    d = tmp_path / "r"
    rep = attncert.report(
        "zoo:trained_hard_first_last",
        out=d,
        ns=(8,),
        dask=False,
        cell_time_limit=6,
        lengths=(1, 8),
    )
    assert rep.complete
    code, out, _ = cli(capsys, "check", str(d))
    names = sorted(p.relative_to(d).as_posix() for p in (d / "certs").glob("*.json"))
    assert len(names) >= 5
    for n in names:
        assert n in out
    order = ["REFUTED", "UNDECIDED", "OUTSIDE-THEOREM", "CERTIFIED-TRIVIAL", "CERTIFIED"]
    found = [c["verdict"] for c in rep.cells.values() if c["verdict"] in order]
    want = min(found, key=order.index)
    assert out.rstrip().endswith(f"verdict: {want}") and "problem" not in out
    cert = d / "certs" / "verify-n8.json"
    data = json.loads(cert.read_text())
    data["totals"]["wrong"] = str(int(data["totals"]["wrong"]) + 1)
    cert.write_text(json.dumps(data, indent=1))
    code, out, _ = cli(capsys, "check", str(d), "--json")
    rec = json.loads(out)
    assert code == 1 and rec["verdict"] == "REFUTED"
    assert "certs/verify-n8.json" in {p["path"] for p in rec["problems"]}
    assert any("totals" in p["reason"] for p in rec["problems"])
    cert.unlink()  # a certificate a cell names but the directory lost
    code, out, _ = cli(capsys, "check", str(d))
    assert code == 1 and "certs/verify-n8.json" in out and "missing" in out
