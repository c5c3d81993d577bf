"""The trained zoo models: shipped files, stored accuracy tables re-measured, no torch
needed to load them, the zoo CLI, and (slow) retraining reproduces a shipped model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources

import pytest

from attncert.cli.main import main
from attncert.model import harden, zoo_model, zoo_names
from attncert.model.trained import (
    TRAINED,
    TRAINED_DECODERS,
    TRAINED_HARD,
    TRAINED_HARD_DECODERS,
    TRAINED_HARD_FILES,
    trained_record,
)
from attncert.train.evaluate import evaluate
from attncert.train.recipes import Recipe
from attncert.train.trainer import LANGUAGE_TITLES

LANGUAGES = {
    "trained_parity": "parity",
    "trained_dyck1": "dyck1",
    "trained_first_last": "first_last",
    "trained_majority": "majority",
    "trained_majority_d64_l4": "majority",
    "trained_hard_parity": "parity",
    "trained_hard_dyck1": "dyck1",
    "trained_hard_first_last": "first_last",
    "trained_hard_majority": "majority",
    "trained_hard_ones_star": "ones_star",
}
ALL = TRAINED + TRAINED_HARD


def _file(name: str, suffix: str = ".json"):
    return resources.files("attncert.model.trained") / f"{name}{suffix}"


@pytest.mark.parametrize("name", ALL)
def test_shipped_model_is_small_described_and_recorded(name):
    assert name in zoo_names()
    m = zoo_model(name)
    size = len(_file(name).read_bytes())
    big = name == "trained_majority_d64_l4"  # issue 22's size target: d = 64, four layers
    assert size < (2_000_000 if big else 200_000), size
    lang = LANGUAGES[name]
    assert m.meta["language"] == lang
    desc = m.meta["description"]
    assert desc.startswith("trained ") and LANGUAGE_TITLES[lang] in desc
    assert m.num_layers <= (4 if big else 2) and m.d <= 64 and not m.is_hard
    assert "LayerNorm" in m.extensions and "gelu activation" in m.extensions
    assert m.embedding.table is None  # named positional features: any length
    training = m.meta["training"]
    recipe = Recipe.from_dict(training["recipe"])
    assert recipe.language == lang and training["command"] == recipe.command()
    rows = training["evaluation"]["by_length"]
    assert rows[0]["n"] == 4 and rows[-1]["n"] == 1024
    assert all(0 <= r["soft_accuracy"] <= 1 and 0 <= r["hard_accuracy"] <= 1 for r in rows)
    rec = trained_record(name)
    assert rec["model"]["sha256"] == m.digest and rec["recipe"] == training["recipe"]
    assert rec["loss_curve"] and rec["wall_seconds"] < 15 * 60
    assert rec["import_max_logit_difference"] <= 1e-4
    assert rec["evaluation"] == training["evaluation"]


@pytest.mark.parametrize("name", ALL)
def test_stored_accuracy_is_what_attncert_measures(name):
    """The table in the model's meta is re-measured here (lengths ≤ 64, ≤ 16 for the
    d = 64 four-layer model; all lengths in the slow test below): same strings, same
    decisions, same numbers."""
    _remeasure(name, max_n=16 if name == "trained_majority_d64_l4" else 64)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_stored_accuracy_at_every_length(name):
    _remeasure(name, max_n=None)


def _remeasure(name, max_n):
    m = zoo_model(name)
    training = m.meta["training"]
    recipe = Recipe.from_dict(training["recipe"])
    stored = [r for r in training["evaluation"]["by_length"] if max_n is None or r["n"] <= max_n]
    ev = evaluate(
        m, recipe.language, [r["n"] for r in stored], recipe.eval_strings, seed=recipe.seed
    )
    assert [r.to_dict() for r in ev.rows] == stored


def test_every_hard_recipe_reached_its_target_and_only_those_are_in_the_zoo():
    """Issue 24: five trained hard models, each agreeing with its hardened version on
    ≥ 99 % of the strings at the training lengths; the zoo registers exactly those whose
    record says so."""
    assert len(TRAINED_HARD) >= 5 and set(TRAINED_HARD) == set(TRAINED_HARD_FILES)
    for name in TRAINED_HARD:
        m = zoo_model(name)
        hard = m.meta["training"]["hard"]
        assert hard["target_reached"] and hard["agreement"] >= hard["target"] == 0.99
        assert m.meta["training"]["recipe"]["attention"] == "hard"
        assert trained_record(name)["hard"] == hard
        assert m.meta["description"].startswith("trained hard ")
        beta = m.layers[0].heads[0].temperature.coef
        assert beta > 10  # the annealed inverse temperature, in the soft model


@pytest.mark.slow
@pytest.mark.parametrize("name", TRAINED_HARD)
def test_hard_agreement_at_the_training_lengths_is_what_attncert_measures(name):
    from attncert.train.trainer import hard_agreement

    m = zoo_model(name)
    recipe = Recipe.from_dict(m.meta["training"]["recipe"])
    assert hard_agreement(m, recipe) == m.meta["training"]["hard"]


def test_a_missed_target_is_not_registered(monkeypatch):
    import attncert.model.trained as trained

    rec = trained_record("trained_hard_first_last")
    rec["hard"]["target_reached"] = False
    monkeypatch.setattr(trained, "trained_record", lambda name: rec)
    assert not trained._target_reached("trained_hard_first_last")


def test_first_last_hardened_is_exact_where_the_soft_model_dilutes():
    """first = last needs attention to position 1 only: the hardened model computes it
    at every length measured, and it is not constant."""
    m = zoo_model("trained_first_last")
    rows = m.meta["training"]["evaluation"]["by_length"]
    assert all(r["hard_accuracy"] == 1.0 for r in rows)
    assert not m.meta["training"]["evaluation"]["hardened_constant"]
    hard = harden(m)
    from attncert.model import accepts

    strings = ["0" + "1" * 300 + "0", "0" + "1" * 301, "1" * 5, "10"]
    assert list(accepts(hard, strings)) == [True, False, True, False]


def test_loading_the_trained_models_needs_no_torch():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "sys.modules['transformers'] = None\n"
        "from attncert.model import zoo_model, forward\n"
        f"for name in {list(ALL)!r}:\n"
        "    m = zoo_model(name)\n"
        "    forward(m, ['0' * 8] if m.alphabet == ('0', '1') else ['()' * 4])\n"
        "print('ok')\n"
    )
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_zoo_list_shows_accuracy_by_length(capsys):
    assert main(["zoo", "list"]) == 0
    text = capsys.readouterr().out
    for name in ALL:
        line = next(ln for ln in text.splitlines() if ln.startswith(name + " "))
        assert "trained " in line
    decoders = TRAINED_DECODERS + TRAINED_HARD_DECODERS  # tests/test_train_decoders.py
    assert text.count("accuracy soft/hardened by n") == len(ALL) + len(decoders)
    assert "1024: " in text
    assert main(["zoo", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert [a["n"] for a in rows["trained_parity"]["accuracy_by_length"]][-1] == 1024
    assert "accuracy_by_length" not in rows["ones_star"]


def test_zoo_info(capsys):
    assert main(["zoo", "info", "zoo:trained_majority"]) == 0
    text = capsys.readouterr().out
    assert "reproduce: attncert train majority --seed" in text
    assert "soft  hardened   agree" in text and "1024" in text
    assert main(["zoo", "info", "ones_star", "--json"]) == 0
    assert "training" not in json.loads(capsys.readouterr().out)
    assert main(["zoo", "info", "nope"]) == 2


@pytest.mark.slow
def test_retraining_reproduces_the_shipped_first_last_model():
    """The documented command gives the shipped model bit for bit (same torch version
    on CPU; skipped otherwise)."""
    torch = pytest.importorskip("torch")
    from attncert.train import train

    m = zoo_model("trained_first_last")
    training = m.meta["training"]
    if training["torch"] != str(torch.__version__):
        pytest.skip(f"shipped with torch {training['torch']}, running {torch.__version__}")
    result = train(Recipe.from_dict(training["recipe"]), progress=False)
    assert result.model.digest == m.digest


@pytest.mark.parametrize("name", TRAINED_HARD)
def test_docs_show_each_hard_models_stored_table(name):
    """docs/trained-models.md prints each trained hard model's table as stored."""
    from pathlib import Path

    from attncert.train.evaluate import markdown_table

    doc = (Path(__file__).parents[1] / "docs" / "trained-models.md").read_text()
    training = zoo_model(name).meta["training"]
    section = doc.split(f"### `{name}`", 1)[1].split("###", 1)[0]
    assert markdown_table(training["evaluation"]) in section
    assert training["command"] in section
