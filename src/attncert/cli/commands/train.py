"""``attncert train LANGUAGE``: train a small LayerNorm/GELU classifier (needs torch).

Trains the PyTorch network of the language's recipe (``attncert.train.recipes``; L ≤ 4,
d ≤ 64, named positional features so the model runs at any length), imports it with
the PyTorch importer (the file holds exactly the trained weights), measures accuracy
by length of the model and of its hardened version with attncert's evaluator, and
writes the model file plus a training record (loss curve, accuracy and soft-vs-hardened
agreement by length, recipe, seed, torch version, wall time). Deterministic given the
seed on CPU.

    attncert train parity --seed 0 --out parity.json
    attncert train majority --seed 1 --steps 500 --out maj.json --record maj.record.json
    attncert train dyck1 --lengths 2..48 --eval-lengths 8,64,512 --json --out d.json
    attncert train first_last --attention hard --out hard_fl.json

``--attention hard`` trains for hard attention: the inverse temperature of every
attention score is annealed from 1 to ``--beta-max`` (to saturation), optionally with
straight-through argmax attention for the last ``--straight-through-steps`` steps
(method and sources: ``attncert.train.trainer``); the record then says whether the
model agrees with its hardened version on at least 99 % of the strings at the training
lengths. A model that misses the target is still written, and the output says so.

``--positions learned|rope|alibi|none``, ``--norm rms`` or ``--mlp swiglu`` train a small
causal decoder instead (``attncert.train.decoder``: BOS at position 0, pre-norm blocks,
RoPE base 10000 rotate-half, ALiBi with Bloom's slopes, RMSNorm, SwiGLU), exported with
the spec's classes; its recipe starts from ``DECODER_DEFAULTS`` (causal, read at the last
token). Without them (``--positions features --norm layer --mlp gelu``) nothing changes.
``--positions alibi`` needs a causal mask (``--no-causal`` with it exits 2).

    attncert train first_last --positions rope --norm rms --mlp swiglu --out rope_fl.json
    attncert train majority --positions none --out nope_maj.json

Languages: parity, first_last, majority, dyck1 (soft and hard, encoder and decoder);
ones_star (hard encoder). Options
override single fields of the recipe. Exit status 0; 2 for bad input or when torch is
missing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from attncert.cli.common import add_json_flag, print_json
from attncert.errors import InputError


def _lengths(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(t) for t in text.split("..", 1))
    except ValueError:
        raise InputError(f"--lengths {text!r}", expected="a range such as 1..32") from None
    return lo, hi


def _int_list(text: str, flag: str) -> tuple[int, ...]:
    try:
        values = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise InputError(f"{flag} {text!r}", expected="comma-separated lengths") from None
    if not values:
        raise InputError(f"{flag} {text!r}", expected="at least one length")
    return values


def recipe_from_args(args: argparse.Namespace):
    """The :class:`~attncert.train.recipes.Recipe` the command line describes (the
    language's default recipe — encoder or decoder, soft or hard — with the options
    applied); bad combinations raise :class:`InputError` (exit 2)."""
    from attncert.train.data import LANGUAGES
    from attncert.train.recipes import (
        DECODER_DEFAULTS,
        DEFAULTS,
        HARD_DECODER_DEFAULTS,
        HARD_DEFAULTS,
        Recipe,
    )

    hard = args.attention == "hard"
    positions = args.positions or "features"
    arch = (positions, args.norm or "layer", args.mlp or "gelu")
    decoder = arch != ("features", "layer", "gelu")
    if decoder:
        recipes = HARD_DECODER_DEFAULTS if hard else DECODER_DEFAULTS
    else:
        recipes = HARD_DEFAULTS if hard else DEFAULTS
    if args.language not in recipes:
        raise InputError(
            f"no training recipe for language {args.language!r}"
            + (" with --attention hard" if hard else "")
            + (" for the decoder (--positions/--norm/--mlp)" if decoder else ""),
            expected="one of " + ", ".join(sorted(set(recipes) & set(LANGUAGES))),
        )
    base: Recipe = recipes[args.language]
    if decoder:
        named = DEFAULTS[args.language].features if positions == "features" else ()
        base = base.with_overrides(positions=arch[0], norm=arch[1], mlp=arch[2], features=named)
    causal = base.causal if args.causal is None else args.causal
    if positions == "alibi" and not causal:
        raise InputError(
            "--positions alibi needs --causal: ALiBi's bias −m·(i − j) is a causal decoder's "
            "(without a mask it would favour the keys after the query)",
            expected="--positions alibi --causal",
        )
    if args.attention != "hard" and (
        args.beta_max or args.straight_through_steps or args.gumbel is not None
    ):
        raise InputError(
            "--beta-max, --straight-through-steps and --(no-)gumbel need --attention hard",
            expected="--attention hard, or none of these options",
        )
    lo, hi = _lengths(args.lengths) if args.lengths else (None, None)
    recipe = base.with_overrides(
        causal=args.causal,
        d_ff=args.d_ff,
        beta_max=args.beta_max,
        straight_through_steps=args.straight_through_steps,
        gumbel=args.gumbel,
        seed=args.seed,
        steps=args.steps,
        layers=args.layers,
        d=args.d,
        heads=args.heads,
        lr=args.lr,
        batch=args.batch,
        min_len=lo,
        max_len=hi,
        eval_lengths=_int_list(args.eval_lengths, "--eval-lengths") if args.eval_lengths else None,
        eval_strings=args.eval_strings,
    )
    return recipe


def run(args: argparse.Namespace) -> int:
    from attncert.io import write_json
    from attncert.model import save_model
    from attncert.train.trainer import record, train

    recipe = recipe_from_args(args)
    out = Path(args.out)
    record_path = Path(args.record) if args.record else out.with_suffix(".record.json")
    result = train(recipe, name=args.name, progress=not args.no_progress and not args.json)
    save_model(result.model, out)
    rec = record(result, str(out))
    write_json(record_path, rec)
    if args.json:
        print_json({"model": str(out), "record": str(record_path), **rec})
        return 0
    print(f"wrote {out} (sha256 {result.model.digest}) and {record_path}")
    print(f"recipe: {rec['command']}  ({rec['wall_seconds']:.0f} s)")
    print(
        f"final training loss {rec['loss_curve'][-1][1]:.4f}; import check: max logit "
        f"difference {result.import_difference:.2g}"
    )
    print(f"accuracy by length on {result.evaluation.distribution}:")
    print("       n    soft  hardened   agree")
    for row in result.evaluation.rows:
        const = "  (hardened constant)" if row.hard_constant else ""
        print(
            f"  {row.n:>6}  {row.soft_accuracy:6.1%}  {row.hard_accuracy:8.1%}  "
            f"{row.agreement:6.1%}{const}"
        )
    if result.evaluation.hardened_constant:
        print("the hardened model gave the same answer on every string measured")
    hard = rec.get("hard")
    if hard is not None:
        worst = hard["worst_length"]
        print(
            f"hardened vs soft at the training lengths {hard['lengths'][0]}..{hard['lengths'][1]}: "
            f"{hard['agreement']:.2%} agree"
            + (
                f" (worst n = {worst['n']}: {worst['agreement']:.1%})"
                if worst["agreement"] < 1
                else ""
            )
            + "; "
            + (
                f"target {hard['target']:.0%} reached"
                if hard["target_reached"]
                else f"target {hard['target']:.0%} NOT reached: the model is written, but it is "
                "not a trained hard-attention model for the zoo"
            )
        )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train a small LayerNorm/GELU classifier for a language (needs torch)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "language", metavar="LANGUAGE", help="parity, first_last, majority, dyck1 or ones_star"
    )
    p.add_argument(
        "--attention",
        choices=["soft", "hard"],
        default="soft",
        help="hard: anneal the attention's inverse temperature to saturation (default soft)",
    )
    p.add_argument(
        "--beta-max", type=float, help="final inverse temperature (--attention hard; default 64)"
    )
    p.add_argument(
        "--straight-through-steps",
        type=int,
        help="last steps with straight-through argmax attention (--attention hard; default 0)",
    )
    p.add_argument(
        "--gumbel",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Gumbel noise on the scores while β anneals (--attention hard; default on)",
    )
    p.add_argument(
        "--positions",
        choices=["features", "learned", "rope", "alibi", "none"],
        help="how the model knows positions (default features: the encoder's named "
        "features); learned, rope, alibi or none train the causal decoder",
    )
    p.add_argument(
        "--norm",
        choices=["layer", "rms"],
        help="layer: LayerNorm (default); rms: RMSNorm (the decoder)",
    )
    p.add_argument(
        "--mlp", choices=["gelu", "swiglu"], help="gelu (default) or swiglu (the decoder)"
    )
    p.add_argument(
        "--causal",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="causal mask (default: the recipe's; the decoder recipes are causal)",
    )
    p.add_argument("--d-ff", type=int, help="MLP width (default: the recipe's)")
    p.add_argument("--out", required=True, metavar="PATH", help="model JSON file to write")
    p.add_argument(
        "--record", metavar="PATH", help="training record JSON (default: OUT.record.json)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument("--steps", type=int, help="optimizer steps (default: the recipe's)")
    p.add_argument("--layers", type=int, help="encoder layers (≤ 4)")
    p.add_argument("--d", type=int, help="model width (≤ 64)")
    p.add_argument("--heads", type=int, help="attention heads per layer")
    p.add_argument("--lr", type=float, help="peak learning rate")
    p.add_argument("--batch", type=int, help="strings per step")
    p.add_argument("--lengths", metavar="A..B", help="training lengths, e.g. 1..32")
    p.add_argument("--eval-lengths", metavar="N,N,…", help="lengths for accuracy by length")
    p.add_argument("--eval-strings", type=int, help="strings per evaluation length")
    p.add_argument("--name", help="model name (default trained_LANGUAGE)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(func=run)
