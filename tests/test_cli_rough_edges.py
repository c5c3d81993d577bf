"""The CLI's rough edges of issue 42 item 9: ``--save-uniform`` says what it saved or why
not, and a report whose ``--scheduler`` does not answer leaves nothing half-written."""

from __future__ import annotations

import json
import socket

import pytest

import attncert
from attncert.cli.main import main
from attncert.errors import InputError
from attncert.model import zoo_model

UNIFORM = ("--n", "8", "--n0", "8", "--uniform", "--bins", "1")  # one propagation: quick


def sensitivity(capsys, *argv):
    code = main(["sensitivity", *argv, "--time-budget", "1", "--restarts", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def test_save_uniform_says_it_wrote_the_certificate(tmp_path, capsys):
    f = tmp_path / "u.json"
    code, out, _ = sensitivity(capsys, "zoo:soft_parity", *UNIFORM, "--save-uniform", str(f))
    assert code == 0 and f"uniform certificate written to {f}" in out
    cert = json.loads(f.read_text())
    assert cert["n0"] == 8 and "K" in cert
    assert main(["soft-check", str(f)]) == 0  # what was written is the checked certificate
    capsys.readouterr()
    g = tmp_path / "v.json"
    code, out, _ = sensitivity(
        capsys, "zoo:soft_parity", *UNIFORM, "--save-uniform", str(g), "--json"
    )
    saved = json.loads(out)["save_uniform"]
    assert code == 0 and saved == {
        "path": str(g),
        "written": True,
        "message": f"uniform certificate written to {g}",
    }
    assert json.loads(g.read_text()) == cert


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("compiled", "is masked"),  # Lemma 5's hypotheses fail: no certificate is made
        ("zoo:trained_alibi_dyck1", "ALiBi"),  # outside before any analysis
    ],
)
def test_save_uniform_says_why_nothing_was_written(model, why, tmp_path, capsys):
    if model == "compiled":
        model = str(tmp_path / "m.json")
        assert main(["compile", "parity-odd", "--library", "-o", model]) == 0
    f = tmp_path / "u.json"
    code, out, _ = sensitivity(capsys, model, "--n", "8", "--uniform", "--save-uniform", str(f))
    assert code == 5 and not f.exists()  # OUTSIDE-THEOREM: not silent, not a success
    line = next(x for x in out.splitlines() if "uniform certificate" in x)
    assert line.startswith(f"no uniform certificate written to {f}: OUTSIDE-THEOREM: ")
    assert why in line
    code, out, _ = sensitivity(
        capsys, model, "--n", "8", "--uniform", "--save-uniform", str(f), "--json"
    )
    saved = json.loads(out)["save_uniform"]
    assert code == 5 and not f.exists()
    assert saved["written"] is False and saved["path"] == str(f) and why in saved["message"]
    assert saved["message"].startswith(f"no uniform certificate written to {f}: OUTSIDE-THEOREM")


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def quick_connect(monkeypatch):
    pytest.importorskip("distributed")
    from attncert.report import run as R

    monkeypatch.setattr(R, "CONNECT_TIMEOUT", 0.5)


@pytest.mark.slow
def test_unreachable_scheduler_writes_nothing(tmp_path, capsys, quick_connect):
    address = f"tcp://127.0.0.1:{closed_port()}"
    new = tmp_path / "new" / "report"
    code = main(["report", "--scheduler", address, "-o", str(new), "--n", "8"])
    err = capsys.readouterr().err
    assert code == 2 and "--scheduler" in err and address in err and "Traceback" not in err
    assert "a running Dask scheduler" in err and "nothing was written" in err
    assert not new.exists() and not new.parent.exists()
    # a directory that was there (empty, or a report to resume) stays as it was
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", "--scheduler", address, "-o", str(empty), "--n", "8"]) == 2
    assert list(empty.iterdir()) == []
    resume = tmp_path / "resume"  # a report directory of the same model and language
    resume.mkdir()
    manifest = {
        "format": "attncert-report",
        "model": {"sha256": zoo_model("trained_hard_first_last").digest},
        "language": "parity",
    }
    (resume / "report-manifest.json").write_text(json.dumps(manifest))
    (resume / "cells").mkdir()
    (resume / "cells" / "harden-n4.json").write_text("{}")
    before = {p: p.read_bytes() for p in sorted(resume.rglob("*")) if p.is_file()}
    assert main(["report", "--scheduler", address, "-o", str(resume), "--n", "4"]) == 2
    assert {p: p.read_bytes() for p in sorted(resume.rglob("*")) if p.is_file()} == before
    assert sorted(p.name for p in resume.rglob("*")) == sorted(
        ["report-manifest.json", "cells", "harden-n4.json"]
    )
    # the Python API refuses the same way
    with pytest.raises(InputError, match="--scheduler"):
        attncert.report(ns=(8,), out=tmp_path / "py", scheduler=address)
    assert not (tmp_path / "py").exists()


def test_the_help_states_the_connect_timeout():
    from attncert.cli.commands import report as cli_report
    from attncert.report import run as R

    assert f"within {R.CONNECT_TIMEOUT:g} s" in cli_report.__doc__
