"""The README's Python examples run as written (docs that run)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no Python example"
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "cert.json").exists() and (tmp_path / "model.json").exists()


def test_readme_gives_exactly_the_two_setup_commands():
    text = README.read_text()
    setup = text.split("## Set-up", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", setup, flags=re.S)[0].strip().splitlines()
    assert commands == ['pip install -e ".[dev]"', "python -m pytest"]
    ci = (README.parent / ".ci" / "run").read_text()
    for c in commands:
        assert c in ci


def test_readme_main_job_block_is_what_the_default_prints(capsys):
    """The console block of "The main job" is the output of ``attncert certify --n 256``
    on the bundled default (timings elided): CERTIFIED, exit 0 (issue 24)."""
    from attncert.cli.main import main

    text = README.read_text()
    block = text.split("```console\n$ attncert certify --n 256\n", 1)[1].split("```", 1)[0]
    assert main(["certify", "--n", "256"]) == 0
    out = capsys.readouterr().out
    out = re.sub(r"search [0-9.]+ s, check [0-9.]+ s", "search … s, check … s", out)
    assert out.strip().splitlines() == block.strip().splitlines()
    assert block.startswith("CERTIFIED (independent checker)")
