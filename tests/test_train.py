"""``attncert train``: samplers, recipes, a short training run, determinism, the CLI."""

from __future__ import annotations

import json
import sys
from collections import Counter

import numpy as np
import pytest

from attncert.cli.main import main
from attncert.errors import InputError
from attncert.languages import language
from attncert.model import load_model
from attncert.model.positional import PosFeature
from attncert.train.data import dyck_word, sample
from attncert.train.recipes import DEFAULTS, HARD_DEFAULTS, Recipe

# ----- samplers --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["parity", "first_last", "majority", "dyck1", "ones_star"])
@pytest.mark.parametrize("dist", ["train", "eval"])
def test_labels_are_membership_and_lengths_are_exact(name, dist):
    lang = language(name)
    rng = np.random.default_rng(1)
    for n in (1, 2, 7, 8, 30):
        strings, labels = sample(name, rng, n, 60, dist)
        assert all(len(s) == n for s in strings)
        assert list(labels) == [lang.contains(s) for s in strings]


def test_dyck_words_are_uniform_members():
    rng = np.random.default_rng(0)
    words = Counter(dyck_word(rng, 6) for _ in range(5000))
    assert set(words) == {"((()))", "(()())", "(())()", "()(())", "()()()"}  # Catalan(3) = 5
    assert all(850 < c < 1150 for c in words.values()), words  # 1000 each, ±5σ
    with pytest.raises(InputError, match="even length"):
        dyck_word(rng, 5)


def test_dyck_eval_mixture_is_balanced_and_majority_trains_at_the_threshold():
    rng = np.random.default_rng(2)
    _, labels = sample("dyck1", rng, 16, 2000, "eval")
    assert 0.45 < labels.mean() < 0.55
    _, odd = sample("dyck1", rng, 15, 200, "eval")
    assert not odd.any()  # no Dyck word has odd length
    strings, _ = sample("majority", rng, 20, 400, "train")
    near = sum(abs(s.count("1") - 10) <= 1 for s in strings)
    assert near > 200  # half of the training strings sit at the decision boundary


def test_unknown_language_or_distribution():
    with pytest.raises(InputError, match="no training data for language 'anbn'"):
        sample("anbn", np.random.default_rng(0), 4, 1)
    with pytest.raises(InputError, match="unknown distribution 'test'"):
        sample("parity", np.random.default_rng(0), 4, 1, "test")


# ----- recipes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"layers": 5}, "recipe.layers"),
        ({"d": 65}, "recipe.d"),
        ({"heads": 3}, "recipe.heads"),
        ({"activation": "silu"}, "recipe.activation"),
        ({"bos": False, "position": "first"}, "recipe.position"),
        ({"min_len": 9, "max_len": 4}, "recipe.min_len/max_len"),
    ],
)
def test_recipe_limits_are_enforced_naming_the_field(change, where):
    with pytest.raises(InputError) as err:
        DEFAULTS["parity"].with_overrides(**change)
    assert err.value.where == where


def test_recipe_round_trip_and_command():
    r = DEFAULTS["dyck1"].with_overrides(seed=3, steps=77, max_len=40)
    assert Recipe.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    assert r.command() == "attncert train dyck1 --seed 3 --steps 77 --lengths 1..40"
    assert DEFAULTS["parity"].command() == "attncert train parity --seed 0"
    with pytest.raises(InputError, match="unknown recipe fields"):
        Recipe.from_dict({"language": "parity", "depth": 2})
    for name, recipe in DEFAULTS.items():
        assert recipe.language == name and recipe.layers <= 2 and recipe.d <= 64
        assert all(isinstance(f, PosFeature) for f in recipe.features)
        assert recipe.eval_lengths[0] == 4 and recipe.eval_lengths[-1] == 1024


# ----- training ----------------------------------------------------------------------------

torch_needed = pytest.mark.skipif(
    __import__("importlib").util.find_spec("torch") is None, reason="torch not installed"
)

QUICK = dict(steps=25, eval_lengths=(4, 9), eval_strings=24, loss_every=5)


@pytest.mark.slow
@torch_needed
def test_short_training_run_imports_exactly_and_records_everything():
    from attncert.train import train
    from attncert.train.trainer import record

    recipe = DEFAULTS["first_last"].with_overrides(**QUICK)
    result = train(recipe, progress=False)
    m = result.model
    assert result.import_difference <= 1e-5
    assert m.name == "trained_first_last" and m.final_norm is not None
    assert m.layers[0].ffn.activation.value == "gelu" and not m.is_hard
    assert m.embedding.features == recipe.features and m.embedding.table is None
    meta = m.meta["training"]
    assert meta["recipe"] == recipe.to_dict() and meta["command"].startswith("attncert train")
    rows = meta["evaluation"]["by_length"]
    assert [r["n"] for r in rows] == [4, 9] and all(r["strings"] == 24 for r in rows)
    assert m.meta["description"].startswith("trained first-symbol-equals-last classifier")
    rec = record(result, "x.json")
    assert [row[0] for row in rec["loss_curve"]] == [5, 10, 15, 20, 25]
    assert rec["model"]["sha256"] == m.digest and rec["wall_seconds"] > 0
    assert rec["environment"]["threads"] == 1
    # the model holds the trained float32 weights exactly
    net = result.network

    def t(x):
        return x.detach().double().numpy()

    assert np.array_equal(m.embedding.word, t(net.emb.weight))
    assert np.array_equal(m.embedding.pos_weight, t(net.pos.weight))
    tl = net.encoder.layers[1]
    assert np.array_equal(m.layers[1].ffn.w2, t(tl.linear2.weight))
    assert np.array_equal(m.layers[1].norm1.weight, t(tl.norm1.weight))
    assert np.array_equal(m.final_norm.bias, t(net.encoder.norm.bias))
    w_v = t(tl.self_attn.in_proj_weight)[40:48]  # V block rows 32..48, head 1 = 40..48
    assert np.array_equal(m.layers[1].heads[1].w_v, w_v)
    assert np.array_equal(m.readout.weight, t(net.head.weight)[0])
    assert np.array_equal(m.embedding.word.astype(np.float32), m.embedding.word)


@pytest.mark.slow
@torch_needed
def test_training_is_deterministic_given_the_seed():
    from attncert.train import train

    recipe = DEFAULTS["majority"].with_overrides(**QUICK)
    a = train(recipe, progress=False)
    b = train(recipe, progress=False)
    c = train(recipe.with_overrides(seed=1), progress=False)
    assert a.model.digest == b.model.digest
    assert a.loss_curve == b.loss_curve
    assert c.model.digest != a.model.digest


@torch_needed
def test_training_restores_torch_settings():
    import torch

    from attncert.train import train

    threads = torch.get_num_threads()
    train(DEFAULTS["parity"].with_overrides(**QUICK, layers=1), progress=False)
    assert torch.get_num_threads() == threads
    assert not torch.are_deterministic_algorithms_enabled()


def test_hard_recipes_anneal_beta_to_saturation():
    from attncert.train.trainer import beta_at

    r = HARD_DEFAULTS["first_last"].with_overrides(steps=100, anneal=0.5, beta_max=64.0)
    assert beta_at(0, r) == 1.0 and beta_at(25, r) == pytest.approx(8.0)
    assert beta_at(50, r) == beta_at(99, r) == 64.0
    assert beta_at(10, DEFAULTS["first_last"]) is None
    assert r.command() == "attncert train first_last --seed 0 --attention hard --steps 100"
    assert set(HARD_DEFAULTS) == {"first_last", "ones_star", "majority", "parity", "dyck1"}
    for name, recipe in HARD_DEFAULTS.items():
        assert recipe.language == name and recipe.attention == "hard" and recipe.gumbel
        assert recipe.layers <= 2 and recipe.d <= 16
    with pytest.raises(InputError) as err:
        DEFAULTS["parity"].with_overrides(straight_through_steps=5)
    assert err.value.where == "recipe.straight_through_steps"
    with pytest.raises(InputError) as err:
        DEFAULTS["parity"].with_overrides(attention="argmax")
    assert err.value.where == "recipe.attention"


@torch_needed
def test_tempered_forward_is_pytorchs_at_beta_one_and_argmax_when_straight_through():
    import torch

    from attncert.train.network import Classifier

    for recipe in (DEFAULTS["dyck1"], DEFAULTS["parity"]):  # causal + BOS, post-readout
        torch.manual_seed(0)
        net = Classifier(recipe).eval()
        strings = ["(()())", "))(()("] if recipe.language == "dyck1" else ["010110", "111000"]
        tokens = net.tokens(strings)
        with torch.no_grad():
            assert torch.allclose(net(tokens), net(tokens, 1.0), atol=1e-6)
            far = net(tokens, 1e4)
            hard = net(tokens, 1.0, straight_through=True)
        assert torch.allclose(far, hard, atol=1e-4)  # β → ∞ is the argmax


@torch_needed
def test_hard_training_records_its_agreement_target():
    """A short hard run: β in the heads' temperature, the soft/hardened agreement at the
    training lengths and whether the 99 % target is reached, in the model and record."""
    from attncert.train import train
    from attncert.train.trainer import record

    recipe = HARD_DEFAULTS["first_last"].with_overrides(**QUICK, max_len=6, heads=2)
    result = train(recipe, progress=False)
    m = result.model
    assert m.name == "trained_hard_first_last" and result.import_difference <= 1e-4
    beta = m.layers[0].heads[0].temperature.coef
    assert beta == pytest.approx(64.0 / np.sqrt(8))  # β_max × the importer's 1/√d_h
    hard = m.meta["training"]["hard"]
    assert hard["lengths"] == [1, 6] and hard["target"] == 0.99
    assert hard["target_reached"] == (hard["agreement"] >= 0.99)
    assert "Gumbel" in hard["method"]
    assert record(result)["hard"] == hard
    assert m.meta["description"].startswith("trained hard first-symbol-equals-last")


# ----- CLI -------------------------------------------------------------------------------------


@torch_needed
def test_cli_train_writes_model_and_record(tmp_path, capsys):
    out = tmp_path / "p.json"
    code = main(
        [
            "train",
            "parity",
            "--steps",
            "10",
            "--eval-lengths",
            "4,6",
            "--eval-strings",
            "10",
            "--layers",
            "1",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "soft  hardened   agree" in text and "attncert train parity --seed 0" in text
    model = load_model(out)
    rec = json.loads((tmp_path / "p.record.json").read_text())
    assert rec["model"]["sha256"] == model.digest and rec["recipe"]["steps"] == 10
    assert rec["format"] == "attncert-training-record" and rec["loss_curve"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "anbn", "--out", "x.json"], "no training recipe for language 'anbn'"),
        (["train", "ones_star", "--out", "x.json"], "no training recipe for language 'ones_star'"),
        (
            ["train", "anbn", "--attention", "hard", "--out", "x.json"],
            "no training recipe for language 'anbn' with --attention hard",
        ),
        (["train", "parity", "--beta-max", "8", "--out", "x.json"], "need --attention hard"),
        (["train", "parity", "--layers", "5", "--out", "x.json"], "recipe.layers"),
        (["train", "parity", "--lengths", "5", "--out", "x.json"], "--lengths '5'"),
        (["train", "parity", "--eval-lengths", "a", "--out", "x.json"], "--eval-lengths"),
    ],
)
def test_cli_train_bad_input_exits_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


@torch_needed
def test_cli_train_hard_says_whether_the_target_is_reached(tmp_path, capsys):
    out = tmp_path / "h.json"
    argv = ["train", "ones_star", "--attention", "hard", "--steps", "5", "--lengths", "1..4"]
    argv += ["--eval-lengths", "4", "--eval-strings", "8", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    rec = json.loads((tmp_path / "h.record.json").read_text())
    assert out.exists() and "hard" in rec  # written whether or not the target is reached
    said = "target 99% reached" if rec["hard"]["target_reached"] else "target 99% NOT reached"
    assert said in text and "hardened vs soft at the training lengths 1..4" in text


def test_cli_train_without_torch_names_the_extra(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert main(["train", "parity", "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "needs torch" in err and "attncert[torch]" in err


def test_the_agreement_target_is_missed_by_a_soft_counting_model():
    """The soft-trained majority model counts with near-uniform attention; hardened it is
    near chance, so it misses the hard recipes' target at their training lengths."""
    from attncert.model import zoo_model
    from attncert.train.trainer import hard_agreement

    got = hard_agreement(zoo_model("trained_majority"), HARD_DEFAULTS["majority"], count=50)
    assert got["agreement"] < 0.9 and got["target_reached"] is False
    assert got["worst_length"]["agreement"] <= got["agreement"]


@torch_needed
def test_cli_train_hard_writes_a_model_that_misses_the_target_and_says_so(
    tmp_path, capsys, monkeypatch
):
    import attncert.train.trainer as trainer

    real = trainer.hard_agreement

    def missed(model, recipe, count=200):
        return {**real(model, recipe, 8), "agreement": 0.5, "target_reached": False}

    monkeypatch.setattr(trainer, "hard_agreement", missed)
    out = tmp_path / "m.json"
    argv = ["train", "first_last", "--attention", "hard", "--steps", "5", "--lengths", "1..4"]
    argv += ["--eval-lengths", "4", "--eval-strings", "8", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    assert out.exists() and load_model(out).meta["training"]["hard"]["target_reached"] is False
    rec = json.loads((tmp_path / "m.record.json").read_text())
    assert rec["hard"]["target_reached"] is False
    assert "target 99% NOT reached" in capsys.readouterr().out
