"""Compiled models know their language (issue 42 item 6): a library name means the language
of the same name, a compiled library formula records its language, and verify, report and
certify default to the language a model records."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

import numpy as np
import pytest

import attncert
from attncert.cli.main import main
from attncert.compile import compile_formula, compile_library
from attncert.errors import InputError, SpecError
from attncert.languages import ALIASES, NAMES, all_strings, canonical_name, language
from attncert.logic import LIBRARY, LIBRARY_NAMES, library_formula, to_text
from attncert.logic.library import DEPRECATED
from attncert.model import forward, load_model, save_model, zoo_model
from attncert.report import default_language

WITH_LANGUAGE = [name for name, nf in LIBRARY.items() if nf.language is not None]
MAX_LEN = 8


def test_a_library_name_never_means_another_language_than_the_language_so_named():
    assert set(WITH_LANGUAGE) == {"parity-odd", "parity-odd-nopred", "majority", "dyck1"}
    for name, nf in LIBRARY.items():
        assert nf.name == name
        if nf.language is not None:
            assert nf.language in NAMES
            assert set(language(nf.language).alphabet) == set(nf.alphabet)
        same = canonical_name(name)  # a library name that is also a language's name …
        if same is not None:
            assert nf.language == same, f"library {name!r} is not the language {same!r}"
    # odd parity is parity-odd; the language 'parity' (even) has no library formula by name
    assert LIBRARY["parity-odd"].text == "ODD(#<[Q_1])"
    assert "parity" not in LIBRARY_NAMES and "parity" not in list(LIBRARY)


@pytest.mark.parametrize(("old", "new"), sorted(DEPRECATED.items()))
def test_renamed_library_names_still_resolve_with_a_deprecation_warning(old, new):
    with pytest.warns(DeprecationWarning, match=f"'{old}' is deprecated: it is '{new}'"):
        by_index = LIBRARY[old]
    with pytest.warns(DeprecationWarning):
        by_call = library_formula(old)
    assert by_index is by_call is LIBRARY[new]
    assert old in LIBRARY and old not in LIBRARY_NAMES and len(LIBRARY) == len(LIBRARY_NAMES)
    with warnings.catch_warnings():  # the new names are quiet
        warnings.simplefilter("error")
        assert library_formula(new).name == new
    with pytest.raises(InputError, match="no library formula 'nosuch'"):
        library_formula("nosuch")


def test_aliases_name_registered_languages():
    for alias, name in ALIASES.items():
        assert name in NAMES and canonical_name(alias) == name
    assert canonical_name("parity (even number of 1s)") is None  # free text, not a name
    assert canonical_name("dyck5") is None and canonical_name(3) is None


@pytest.mark.parametrize("name", WITH_LANGUAGE)
def test_compiled_library_formula_is_its_language_on_all_short_strings(name):
    """The float forward pass of the compiled model, the reference interpreter and the
    language's own membership agree on every string of length 1…8, in every regime."""
    from attncert.logic import evaluate_batch

    nf = LIBRARY[name]
    lang = language(nf.language)
    for regime in nf.regimes():
        model = compile_library(name, regime)
        assert model.meta["language"] == nf.language
        assert model.meta["formula"] == to_text(nf.formula)
        for n in range(1, MAX_LEN + 1):
            words = list(all_strings(nf.alphabet, n))
            member = np.array([lang.contains(w) for w in words])
            assert (forward(model, words).accept == member).all(), (name, regime, n)
            assert (evaluate_batch(nf.formula, words)[:, -1] == member).all(), (name, n)


def test_a_claimed_language_is_checked_against_the_formula():
    m = compile_formula("ODD(#<[Q_1])", alphabet="01", language="parity-odd")
    assert m.meta["language"] == "parity-odd"
    with pytest.raises(SpecError, match="not the language 'parity': on '0'"):
        compile_formula("ODD(#<[Q_1])", alphabet="01", language="parity")  # even ≠ odd
    with pytest.raises(SpecError, match="over '01', the model over '012'"):
        compile_formula("ODD(#<[Q_1])", alphabet="012", language="parity-odd")
    with pytest.raises(SpecError, match="language 'klingon'"):
        compile_formula("ODD(#<[Q_1])", alphabet="01", language="klingon")
    # without a claim the meta is as before (the proofs' compiled models are unchanged)
    assert "language" not in compile_formula("ODD(#<[Q_1])", alphabet="01").meta
    # a library formula over another alphabet is another language: none is recorded
    assert "language" not in compile_library("parity-odd", alphabet="012").meta


def test_compile_cli_records_the_language_in_the_model_file(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["compile", "parity-odd", "--library", "-o", str(out)]) == 0
    assert "language: parity-odd" in capsys.readouterr().out
    meta = json.loads(out.read_text())["meta"]
    assert meta["formula"] == "ODD(#<[Q_1])" and meta["language"] == "parity-odd"
    assert load_model(out).meta["language"] == "parity-odd"
    # the old name compiles the same formula, says it is deprecated, records parity-odd
    old = tmp_path / "old.json"
    assert main(["compile", "parity", "--library", "-o", str(old)]) == 0
    err = capsys.readouterr().err
    assert "'parity' is deprecated" in err and "even parity" in err
    assert json.loads(old.read_text())["meta"]["language"] == "parity-odd"
    # formula text equal to a library formula over its alphabet records it too
    assert main(["compile", "ODD(#<[Q_1])", "--alphabet", "01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["language"] == "parity-odd"
    assert main(["compile", "ODD(#<[Q_1])", "--json"]) == 0  # over {1} only: none
    assert json.loads(capsys.readouterr().out)["language"] is None
    assert main(["compile", "dyck1", "--library", "--regime", "future-masked", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["language"] == "dyck1"


def test_the_recorded_language_wins_over_the_alphabet():
    assert default_language(zoo_model("trained_hard_first_last")) == "first_last"  # was parity
    assert default_language(zoo_model("trained_dyck1")) == "dyck1"
    assert default_language(compile_library("majority")) == "majority"
    assert default_language(compile_library("parity-odd-nopred", "unbounded")) == "parity-odd"
    assert default_language(zoo_model("ones_star")) == "ones_star"  # records "1*"
    assert default_language(zoo_model("anbn")) == "anbn"  # records "a^n b^n"
    # nothing recorded (or free text): by the alphabet
    assert default_language(zoo_model("soft_parity")) == "parity"
    assert default_language(zoo_model("soft_dyck2_lm")) == "dyck2"
    with pytest.raises(InputError, match=r"records no language .* alphabet 'ab'"):
        default_language(compile_formula("Q_a S Q_b"))


@pytest.fixture(scope="module")
def parity_odd_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("compiled") / "parity-odd.json"
    assert main(["compile", "parity-odd", "--library", "-o", str(path)]) == 0
    return str(path)


def test_verify_on_a_compiled_library_formula_defaults_to_its_language(parity_odd_file, capsys):
    assert main(["verify", parity_odd_file, "--n", "6", "--quiet", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["language"] == "parity-odd" and got["verdict"] == "CERTIFIED"
    # the old default for {0,1} models, parity, would have refuted it on every string
    assert (
        main(["verify", parity_odd_file, "--n", "6", "--quiet", "--json", "--language", "parity"])
        == 1
    )
    assert json.loads(capsys.readouterr().out)["verdict"] == "REFUTED"


def test_report_takes_the_recorded_language_before_any_work(tmp_path):
    """report() without a language picks the model's (its refusal of a directory that holds
    another language's report names the language it chose; nothing runs)."""
    d = tmp_path / "other"
    d.mkdir()
    (d / "report-manifest.json").write_text(
        json.dumps({"format": "attncert-report", "model": {}, "language": "x"})
    )
    for model, lang in (
        (compile_library("parity-odd"), "parity-odd"),
        ("zoo:trained_hard_first_last", "first_last"),
        (None, "parity"),  # no model: the bundled demo against PARITY
    ):
        with pytest.raises(InputError, match=f"on '{lang}'"):
            attncert.report(model, ns=(6,), out=d, dask=False)


@pytest.mark.slow
def test_report_on_a_compiled_library_formula_is_about_its_language(tmp_path):
    model = compile_library("parity-odd")
    rep = attncert.report(model, ns=(6,), out=tmp_path / "r", dask=False, cell_time_limit=20.0)
    assert rep.language == "parity-odd"
    assert rep.section("verify").verdict == "CERTIFIED"
    manifest = json.loads((tmp_path / "r" / "report-manifest.json").read_text())
    assert manifest["language"] == "parity-odd"


def test_certify_defaults_to_the_recorded_language_and_the_demo_to_parity(parity_odd_file, capsys):
    assert main(["certify", parity_odd_file, "--n", "8", "--json"]) in (0, 4, 5)
    assert json.loads(capsys.readouterr().out)["summary"]["language"] == "parity-odd"
    main(["certify", "zoo:trained_hard_first_last", "--n", "8", "--json"])
    assert json.loads(capsys.readouterr().out)["summary"]["language"] == "first_last"
    main(["certify", "--n", "8", "--json"])  # no MODEL: the bundled demo, against PARITY
    assert json.loads(capsys.readouterr().out)["summary"]["language"] == "parity"


def test_a_recorded_language_the_command_does_not_take_is_refused(tmp_path, capsys):
    # soft-certify's pair search does not take ones_star, which this model records
    assert main(["soft-certify", "zoo:trained_hard_ones_star", "--n", "8"]) == 2
    err = capsys.readouterr().err
    assert "records the language 'ones_star'" in err and "soft-certify does not take" in err
    assert "Traceback" not in err
    # a record over another alphabet than the model's: refused by the language check
    m = compile_library("majority")
    path = tmp_path / "m.json"
    save_model(replace(m, meta={**m.meta, "language": "dyck1"}), path)
    for cmd in (["verify", str(path), "--n", "4", "--quiet"], ["certify", str(path), "--n", "4"]):
        assert main(cmd) == 2, cmd
        err = capsys.readouterr().err
        assert "dyck1" in err and "Traceback" not in err
    # free text that names no language: verify asks for --language, quoting it
    save_model(replace(m, meta={**m.meta, "language": "more ones"}), path)
    assert main(["verify", str(path), "--n", "4", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "records no language attncert knows by name" in err and "'more ones'" in err


def test_doctests():
    import doctest
    import importlib

    for name in ("attncert.logic.library", "attncert.compile.library"):
        result = doctest.testmod(importlib.import_module(name))
        assert result.attempted > 0 and result.failed == 0, name
