"""The pytest plugin (entry point ``pytest11: attncert``) in a user's project (issue 8):
``pytest --attncert-proofs proofs`` passes on good certificates and fails, naming the
artifact, on a broken one; without the option it adds nothing.

The project is ``tests/plugin_project`` (its own ``pytest.ini``); it is copied to a temporary
directory and pytest runs there in a subprocess, as a user's CI would run it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent / "plugin_project"
ARTIFACTS = ("ones_star-n12", "parity-random-L1-H1-d8-n16")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dst = tmp_path / "project"
    shutil.copytree(PROJECT, dst)
    return dst


# third-party plugins of this environment that have nothing to do with attncert's: not
# loading them saves a second of imports per run (attncert's is still found by its entry
# point, as in a user's project)
UNRELATED = ("hypothesispytest", "anyio", "typeguard", "xdist", "jaxtyping")


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    off = [a for name in UNRELATED for a in ("-p", f"no:{name}")]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", *off, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_plugin_passes_on_good_certificates(project: Path) -> None:
    proc = _pytest(project, "--attncert-proofs", "proofs")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ARTIFACTS:
        assert f"PASSED proofs/{name}::attncert-proof" in proc.stdout
    assert "PASSED proofs/index.json::attncert-proof" in proc.stdout
    assert "3 passed" in proc.stdout


@pytest.mark.slow
def test_plugin_fails_on_a_broken_certificate(project: Path) -> None:
    cert = project / "proofs" / ARTIFACTS[1] / "certificate.json"
    data = json.loads(cert.read_text())
    prev, last = data["restrictions"][-2], data["restrictions"][-1]
    i = next(i for i, (a, b) in enumerate(zip(prev, last, strict=True)) if a == "*" and b != "*")
    flipped = "0" if last[i] == "1" else "1"
    data["restrictions"][-1] = last[:i] + flipped + last[i + 1 :]  # edit one symbol
    cert.write_text(json.dumps(data, indent=1))
    proc = _pytest(project, "--attncert-proofs", "proofs")
    assert proc.returncode == 1, proc.stdout
    assert f"FAILED proofs/{ARTIFACTS[1]}::attncert-proof" in proc.stdout
    assert f"PASSED proofs/{ARTIFACTS[0]}::attncert-proof" in proc.stdout
    assert "attncert proof check failed" in proc.stdout
    assert "tampered: certificate.json has sha256" in proc.stdout
    assert "checker rejected certificate.json" in proc.stdout


@pytest.mark.slow
def test_plugin_fails_on_a_deleted_artifact_and_selects_by_marker(project: Path) -> None:
    shutil.rmtree(project / "proofs" / ARTIFACTS[0])
    (project / "test_user.py").write_text("def test_user():\n    assert True\n")
    proc = _pytest(project, "--attncert-proofs", "proofs", "-m", "attncert_proof")
    assert proc.returncode == 1, proc.stdout
    assert "FAILED proofs/index.json::attncert-proof" in proc.stdout
    assert f"{ARTIFACTS[0]}: missing artifact" in proc.stdout
    assert "test_user" not in proc.stdout.split("short test summary")[-1]


@pytest.mark.slow
def test_plugin_is_inert_without_the_option(project: Path) -> None:
    (project / "test_user.py").write_text("def test_user():\n    assert True\n")
    proc = _pytest(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout and "attncert-proof" not in proc.stdout
    bad = _pytest(project, "--attncert-proofs", "no_such_dir")
    assert bad.returncode == 4 and "not a directory" in bad.stderr
