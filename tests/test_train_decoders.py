"""The causal decoder of ``attncert train --positions/--norm/--mlp`` (issue 32 item 4):
its export reproduces the torch network, the CLI flags and their refusals, and the
trained decoder zoo models (loaded, hashed, re-measured, named by their positions)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from attncert.cli.main import main
from attncert.errors import InputError
from attncert.model import trained as zoo_trained
from attncert.train.recipes import DECODER_DEFAULTS, DEFAULTS, HARD_DECODER_DEFAULTS, Recipe

torch_needed = pytest.mark.skipif(
    __import__("importlib").util.find_spec("torch") is None, reason="torch not installed"
)

POSITIONS = ("features", "learned", "rope", "alibi", "none")
COMBINATIONS = list(itertools.product(POSITIONS, ("layer", "rms"), ("gelu", "swiglu")))
LENGTHS = (1, 2, 3, 8, 31, 64, 256)


def _recipe(positions, norm, mlp, **kw):
    features = DEFAULTS["first_last"].features if positions == "features" else ()
    return DECODER_DEFAULTS["first_last"].with_overrides(
        positions=positions, norm=norm, mlp=mlp, features=features, layers=2, **kw
    )


def _agreement(net, model, rng, alphabet="01", beta=None):
    import torch

    from attncert.model.forward import forward

    worst = 0.0
    for n in LENGTHS:
        strings = ["".join(rng.choice(list(alphabet), n)) for _ in range(3)]
        with torch.no_grad():
            want = net(net.tokens(strings), beta).numpy()
        got = forward(model, strings).logits
        worst = max(worst, float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-6))))
    return worst


@torch_needed
@pytest.mark.parametrize(("positions", "norm", "mlp"), COMBINATIONS)
def test_export_reproduces_the_float64_network(positions, norm, mlp):
    """A tiny untrained decoder in float64 and its exported attncert model give the same
    logits within 1e-9 (relative) at n = 1 … 256."""
    import torch

    from attncert.train.decoder import Decoder, to_model

    recipe = _recipe(positions, norm, mlp, eval_lengths=(256,))
    torch.manual_seed(7)
    net = Decoder(recipe).double().eval()
    model = to_model(net, "x")
    assert _agreement(net, model, np.random.default_rng(1)) <= 1e-9
    scheme = {"none": "none", "features": "features"}.get(positions, positions)
    assert model.positional_scheme == scheme
    kinds = set(model.new_kinds)
    assert ("rotary positions" in kinds) == (positions == "rope")
    assert ("ALiBi" in kinds) == (positions == "alibi")
    assert ("RMSNorm" in kinds) == (norm == "rms")
    assert ("gated MLP" in kinds) == ("silu activation" in kinds) == (mlp == "swiglu")
    assert all(h.mask.value == "future" for layer in model.layers for h in layer.heads)


@torch_needed
@pytest.mark.parametrize(
    ("positions", "causal", "heads", "d"),
    [("rope", False, 1, 16), ("alibi", True, 3, 12), ("none", False, 4, 16)],
)
def test_export_with_an_annealed_temperature_and_other_shapes(positions, causal, heads, d):
    """β multiplies the whole score, ALiBi included (the spec's softmax(β(q·k + ALiBi)));
    1/√d_h goes into the temperature (d_h = 16: exact; 4, 3: within a rounding);
    ALiBi's general slope rule for 3 heads; non-causal RoPE and NoPE."""
    import torch

    from attncert.train.decoder import Decoder, to_model

    r = _recipe(positions, "rms", "swiglu", causal=causal, heads=heads, d=d, eval_lengths=(8,))
    torch.manual_seed(3)
    net = Decoder(r).double().eval()
    model = to_model(net, "x", beta=40.0)
    assert _agreement(net, model, np.random.default_rng(2), beta=40.0) <= 1e-9
    want_mask = "future" if causal else "none"
    assert {h.mask.value for h in model.layers[0].heads} == {want_mask}
    assert len(model.layers[0].heads) == heads


def test_alibi_slopes_are_blooms():
    from attncert.train.decoder import alibi_slopes

    assert alibi_slopes(1) == [2.0**-8]
    assert alibi_slopes(2) == [2.0**-4, 2.0**-8]
    assert alibi_slopes(8) == [2.0**-k for k in range(1, 9)]
    # transformers' build_alibi_tensor for 3 heads: 2^-4, 2^-8, then 2^-2
    assert alibi_slopes(3) == [2.0**-4, 2.0**-8, 2.0**-2]
    six = alibi_slopes(6)
    assert six[:4] == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8] and six[4:] == [2.0**-1, 2.0**-3]


@torch_needed
def test_the_straight_through_pass_is_the_beta_limit():
    import torch

    from attncert.train.decoder import Decoder

    torch.manual_seed(0)
    net = Decoder(_recipe("alibi", "layer", "gelu")).eval()
    tokens = net.tokens(["0110101", "1110000"])
    with torch.no_grad():
        far = net(tokens, 1e5)
        hard = net(tokens, 1.0, straight_through=True)
    assert torch.allclose(far, hard, atol=1e-4)


# ----- recipes and CLI -----------------------------------------------------------------


def test_encoder_recipes_keep_their_dict_and_command():
    """The decoder fields are left out of an encoder recipe's dict (content hashes of the
    models trained before are unchanged) and of its command."""
    for recipe in DEFAULTS.values():
        assert not recipe.decoder
        d = recipe.to_dict()
        assert not {"positions", "norm", "mlp"} & set(d)
        assert Recipe.from_dict(d) == recipe
        assert "--positions" not in recipe.command()
    r = DECODER_DEFAULTS["dyck1"].with_overrides(positions="rope", norm="rms", mlp="swiglu")
    assert Recipe.from_dict(r.to_dict()) == r
    want = "attncert train dyck1 --seed 0 --positions rope --norm rms --mlp swiglu"
    assert r.command() == want
    h = HARD_DECODER_DEFAULTS["first_last"].with_overrides(positions="alibi", steps=10)
    assert h.command() == (
        "attncert train first_last --seed 0 --attention hard --positions alibi --norm layer "
        "--mlp gelu --steps 10"
    )


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"positions": "sinusoid"}, "recipe.positions"),
        ({"norm": "batch"}, "recipe.norm"),
        ({"mlp": "geglu"}, "recipe.mlp"),
        ({"positions": "alibi", "causal": False}, "recipe.positions"),
        ({"positions": "rope", "features": DEFAULTS["parity"].features}, "recipe.features"),
        ({"positions": "rope", "norm_first": False}, "recipe.norm_first"),
        ({"positions": "rope", "activation": "relu"}, "recipe.activation"),
        ({"positions": "rope", "position": "first"}, "recipe.position"),
    ],
)
def test_decoder_recipe_limits(change, where):
    base = DECODER_DEFAULTS["first_last"]
    with pytest.raises(InputError) as err:
        base.with_overrides(**change)
    assert err.value.where == where


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--positions", "alibi", "--no-causal"], "--positions alibi needs --causal"),
        (["--positions", "sinusoid"], "invalid choice: 'sinusoid'"),
        (["--norm", "batch"], "invalid choice: 'batch'"),
        (["--mlp", "relu"], "invalid choice: 'relu'"),
        (["--positions", "rope", "--heads", "3"], "recipe.heads"),
    ],
)
def test_cli_refuses_bad_decoder_options(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["train", "first_last", *argv, "--out", "x.json"])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


def test_cli_refuses_a_language_without_decoder_recipe(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "ones_star", "--positions", "rope", "--out", "x.json"]) == 2
    err = capsys.readouterr().err
    assert "no training recipe for language 'ones_star' for the decoder" in err


@torch_needed
def test_cli_trains_a_decoder_and_records_its_recipe(tmp_path, capsys):
    import json

    from attncert.model import load_model

    out = tmp_path / "r.json"
    argv = ["train", "majority", "--positions", "rope", "--norm", "rms", "--mlp", "swiglu"]
    argv += ["--steps", "6", "--lengths", "1..6", "--eval-lengths", "4,16", "--eval-strings"]
    argv += ["10", "--d-ff", "8", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    m = load_model(out)
    assert m.name == "trained_rope_majority" and m.positional_scheme == "rope"
    assert m.new_kinds == ("rotary positions", "RMSNorm", "gated MLP", "silu activation")
    recipe = m.meta["training"]["recipe"]
    assert (recipe["positions"], recipe["norm"], recipe["mlp"]) == ("rope", "rms", "swiglu")
    assert recipe["d_ff"] == 8 and recipe["causal"] is True
    cmd = m.meta["training"]["command"]
    assert "--positions rope --norm rms --mlp swiglu" in cmd and "--d-ff 8" in cmd
    assert cmd in text
    rec = json.loads((tmp_path / "r.record.json").read_text())
    assert rec["import_max_logit_difference"] <= 1e-9
    assert m.meta["description"].startswith("trained majority classifier (causal decoder")


# ----- the trained decoder zoo models ----------------------------------------------------

SHIPPED = zoo_trained.TRAINED_DECODERS + zoo_trained.TRAINED_HARD_DECODERS
SCHEMES = {"rope": "rope", "alibi": "alibi", "nope": "none"}


def _parts(name):
    """(hard, positions tag, language) of ``trained_[hard_]TAG_LANGUAGE``."""
    rest = name.removeprefix("trained_")
    hard = rest.startswith("hard_")
    tag, lang = rest.removeprefix("hard_").split("_", 1)
    return hard, tag, lang


def test_the_zoo_has_nine_decoders_and_the_hard_first_last_ones():
    assert len(zoo_trained.TRAINED_DECODERS) == 9
    assert set(zoo_trained.TRAINED_HARD_DECODERS) == set(zoo_trained.TRAINED_HARD_DECODER_FILES)


@pytest.mark.parametrize("name", SHIPPED)
def test_decoder_zoo_model(name):
    """Loads (hash verified), its record's hash and recipe match, its positions are what
    its name says and ``new_kinds`` what its recipe uses, it is small, and the accuracy
    at n = 16 in its description is the record's and, re-measured on 200 other strings,
    agrees within sampling error."""
    import re

    from attncert.model import zoo_model, zoo_names
    from attncert.train.evaluate import evaluate

    hard, tag, lang = _parts(name)
    assert name in zoo_names()
    m = zoo_model(name)
    rec = zoo_trained.trained_record(name)
    assert rec["model"]["sha256"] == m.digest and rec["model"]["name"] == name
    training = m.meta["training"]
    assert rec["recipe"] == training["recipe"] and rec["evaluation"] == training["evaluation"]
    recipe = Recipe.from_dict(training["recipe"])
    assert recipe.decoder and recipe.language == lang and m.meta["language"] == lang
    assert training["command"] == recipe.command()
    assert (recipe.attention == "hard") == hard
    assert rec["import_max_logit_difference"] <= 1e-9
    assert m.positional_scheme == SCHEMES[tag] == recipe.positions
    want = [
        k
        for k, used in (
            ("rotary positions", tag == "rope"),
            ("ALiBi", tag == "alibi"),
            ("RMSNorm", recipe.norm == "rms"),
            ("gated MLP", recipe.mlp == "swiglu"),
            ("silu activation", recipe.mlp == "swiglu"),
        )
        if used
    ]
    assert list(m.new_kinds) == want
    assert m.d <= 16 and m.num_layers <= 2 and all(len(la.heads) <= 2 for la in m.layers)
    assert m.embedding.table is None and not m.embedding.features and m.bos is not None
    if hard:
        assert training["hard"]["target_reached"]
    # the recorded command gives the recorded recipe
    from attncert.cli.commands.train import recipe_from_args
    from attncert.cli.main import build_parser

    args = build_parser().parse_args([*training["command"].split()[1:], "--out", "x.json"])
    assert recipe_from_args(args) == recipe
    # the accuracy at n = 16 in the description
    key = "hard_accuracy" if hard else "soft_accuracy"
    stored = next(r for r in training["evaluation"]["by_length"] if r["n"] == 16)[key]
    said = re.search(r"(\d+)% at n=16\b", m.meta["description"])
    assert said and int(said.group(1)) == round(100 * stored)
    got = evaluate(m, lang, [16], 200, seed=recipe.seed + 1000).rows[0]
    measured = getattr(got, key)
    sigma = max(np.sqrt(stored * (1 - stored) / 200), 0.5 / 200)
    assert abs(measured - stored) <= 4 * np.sqrt(2) * sigma + 0.01, (measured, stored)


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_decoder_stored_accuracy_at_every_length(name):
    """The whole stored table (n = 4 … 1024) re-measured: same strings, same numbers."""
    from attncert.model import zoo_model
    from attncert.train.evaluate import evaluate

    m = zoo_model(name)
    training = m.meta["training"]
    recipe = Recipe.from_dict(training["recipe"])
    stored = training["evaluation"]["by_length"]
    ev = evaluate(
        m, recipe.language, [r["n"] for r in stored], recipe.eval_strings, seed=recipe.seed
    )
    assert [r.to_dict() for r in ev.rows] == stored


@pytest.mark.slow
@torch_needed
def test_retraining_reproduces_a_shipped_decoder():
    """The recorded command gives the shipped hard RoPE decoder bit for bit (same torch
    version on CPU; skipped otherwise)."""
    import torch

    from attncert.model import zoo_model
    from attncert.train import train

    m = zoo_model("trained_hard_rope_first_last")
    training = m.meta["training"]
    if training["torch"] != str(torch.__version__):
        pytest.skip(f"shipped with torch {training['torch']}, running {torch.__version__}")
    result = train(Recipe.from_dict(training["recipe"]), progress=False)
    assert result.model.digest == m.digest


def test_certify_a_swiglu_decoder_answers_or_refuses(capsys):
    """``attncert certify`` on the shipped hard RoPE decoder (SwiGLU: a SiLU gate, enclosed
    by arith.enclose's SiLU table) ends with a checked verdict."""
    argv = ["certify", "zoo:trained_hard_rope_first_last", "--language", "parity", "--n", "16"]
    code = main(argv)
    first = capsys.readouterr().out.splitlines()[0]
    verdict = {0: "CERTIFIED", 4: "CERTIFIED-TRIVIAL", 5: "OUTSIDE-THEOREM"}[code]
    assert first.startswith(verdict + " (independent checker)"), first
