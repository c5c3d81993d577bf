"""Every command that takes a language lists, in its --help, exactly the languages its
validation accepts — built from one source, the registry (issue 42 item 9)."""

from __future__ import annotations

import re

import pytest

from attncert.cli.commands.soft_certify import LANGUAGES as SOFT_LANGUAGES
from attncert.cli.main import build_parser, main
from attncert.languages import NAMES, language

# command → (its option that takes a language, the names it takes, whether dfa:PATH)
COMMANDS = {
    "certify": ("--language", NAMES, False),
    "verify": ("--language", NAMES, True),
    "report": ("--language", NAMES, True),
    "soft-certify": ("--language", SOFT_LANGUAGES, False),
    "sweep": ("--param", NAMES, False),  # certify's language=L
}
NOT_LANGUAGES = ("klingon", "dyck5", "parity-even", "Parity")


def help_text(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    return sub.choices[command].format_help()


def listed(command: str, option: str) -> tuple[set[str], bool]:
    """The languages the --help of ``command`` lists for ``option`` (parsed from the printed
    text: the option's block, "one of A, B, …, or dfa:PATH (…)"), and whether dfa:PATH is."""
    lines = help_text(command).splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(option))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if re.match(r"\s{2}-", line):
            break
        block.append(line)
    text = " ".join(" ".join(block).split())
    names = re.search(r"one of ([^()]*)", text)
    assert names, f"{command} {option}: no list of languages in {text!r}"
    items = [s.strip() for s in re.split(r",|\bor\b", names.group(1)) if s.strip()]
    dfa = "dfa:PATH" in items
    return {s for s in items if s != "dfa:PATH"}, dfa


def test_every_name_is_a_language_of_the_registry():
    for name in NAMES:
        assert language(name).name == name
    assert set(SOFT_LANGUAGES) <= set(NAMES)
    # sensitivity takes no language (its PARITY labels come from --accepts even|odd): a
    # --language added to it belongs in COMMANDS above
    assert "--language" not in help_text("sensitivity")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_lists_the_registry(command):
    option, names, dfa = COMMANDS[command]
    got, got_dfa = listed(command, option)
    assert got == set(names), f"{command} --help lists {sorted(got)}"
    assert got_dfa == dfa
    if command == "certify":  # the language certify took but did not list
        assert "first_last" in got


def _argv(command: str, lang: str, tmp_path) -> list[str]:
    missing = str(tmp_path / "no-such-model.json")
    if command == "sweep":
        return ["sweep", "certify", "--models", missing, "--n", "4", "--param", f"language={lang}"]
    argv = [command, missing, "--language", lang, "--n", "4"]
    return argv + (["-o", str(tmp_path / "r")] if command == "report" else [])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_validation_accepts_exactly_what_the_help_lists(command, tmp_path, capsys, monkeypatch):
    """Each listed language passes the command's check (it then stops at the missing
    model, or — sweep — where the cells would run); anything else is refused as a
    language, exit 2, before any work."""
    import attncert.sweep

    def stop(*args, **kwargs):
        raise SystemExit(99)

    monkeypatch.setattr(attncert.sweep, "run_sweep", stop)
    option, _, _ = COMMANDS[command]
    names, dfa = listed(command, option)
    for lang in sorted(names) + (["dfa:lang.json"] if dfa else []):
        try:
            code = main(_argv(command, lang, tmp_path))
        except SystemExit as stopped:
            code = stopped.code
        err = capsys.readouterr().err
        if command == "sweep":
            assert code == 99, (lang, err)
        else:
            assert code == 2 and "no model file" in err, (lang, err)
    for lang in [*NOT_LANGUAGES, *([] if dfa else ["dfa:lang.json"])]:
        code = main(_argv(command, lang, tmp_path))
        err = capsys.readouterr().err
        assert code == 2 and option in err and "no model file" not in err, (lang, err)
        assert "Traceback" not in err
