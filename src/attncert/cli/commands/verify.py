"""``attncert verify MODEL [--language L] --n N``: certified accuracy over all |Σ|ⁿ strings.

Branch-and-bound over cubes (restrictions): a cube on which the model's decision is
certified constant — by the affine-form bound, or by evaluating each of its (few)
completions with rigorous error bounds — counts its exact number of members of L as
right or wrong; a cube that is not decided is split where a free position can capture
the readout's attention, else on the position the bound blames most, one child per
symbol. The tree is a certificate that the independent kernel
(attncert.kernel.verify.checker) re-derives leaf by leaf; only its counts are printed:

    certified accuracy ∈ [right, right + undecided] / |Σ|ⁿ   (uniform distribution)

    attncert verify zoo:trained_first_last --language first_last --n 12
    attncert verify zoo:trained_parity --language parity --n 64 --time-limit 60 -o tree.json
    attncert verify-check tree.json

Languages: every name of attncert.languages (listed under --language) or dfa:PATH (exact
counts over cubes: dynamic programming over the automaton, the height or the stack).

When cubes are left open and no decided leaf is wrong, strings are sampled from them
(uniformly and from the language's own sampler) and one the float forward pass
misclassifies is carved into the tree as a one-string leaf, which the kernel decides in
arb (docs/verify.md, "Witnesses where the bound stops"). Without --language, the
language the model records is used (a compiled library formula's, a trained model's
recipe); a model that records none, or one verify does not take, is refused (exit 2).

With |Σ|ⁿ ≤ 65536 and no --exhaustive, every string the bound does not decide is
evaluated (batched rigorous enclosures, arb for the few they leave open): the answer is
CERTIFIED or REFUTED with the exact count, printed as a fraction.

Verdicts (and exit status): CERTIFIED (0) — the model is proved correct on every string
of length n; REFUTED (1) — it is proved wrong (a string it misclassifies, its decision
confirmed in arb), or the kernel rejected the certificate; UNDECIDED (3) — the budget ran
out with part of Σⁿ undecided: the bounds found so far are printed with the undecided
measure. A model or language the verifier cannot handle (hard heads, an alphabet
mismatch) exits 2 with the reason.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from attncert.cli.common import (
    RECORDED,
    add_json_flag,
    add_model_argument,
    check_language_name,
    language_help,
    load_language_arg,
    load_model_arg,
    model_language,
    no_recorded_language,
    print_json,
)
from attncert.cli.horizon import add_horizon_flags, check_horizon_flags
from attncert.errors import InputError
from attncert.io import check_output_path
from attncert.verdicts import Verdict


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="certified accuracy over all |Σ|ⁿ strings (branch-and-bound, checked by the kernel)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model_argument(p)
    p.add_argument(
        "--language",
        help=language_help() + f" (default: {RECORDED}; a model that records none "
        "needs --language)",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--n", type=int, help="string length")
    what.add_argument(
        "--lengths",
        metavar="A:B",
        help="every length from A to B (an integer up to 10¹² and beyond, or inf) in one "
        "certificate, without enumerating lengths: the lengths proved right, refuted (with a "
        "witness) and undecided, proved_up_to and first_refuted (issue 40; "
        "attncert.soft.horizon). Exit 0 when all of [A, B] is proved, 1 when a length is "
        "refuted, 3 otherwise",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        help="seconds for the search (default 60); a witness search among the cubes left "
        "open may take up to a tenth more",
    )
    p.add_argument("--max-nodes", type=int, default=50_000, help="largest tree (default 50000)")
    p.add_argument(
        "--exhaustive",
        type=int,
        default=None,
        help="cubes with at most this many completions are evaluated string by string "
        "when the bound does not decide them (default: all |Σ|ⁿ strings when |Σ|ⁿ ≤ 65536, "
        "so that small lengths end CERTIFIED or REFUTED, else 4096; scaled by (64/n)² "
        "beyond n = 64)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the root's base string")
    add_horizon_flags(p)
    p.add_argument("-o", "--output", metavar="CERT", help="write the certificate (JSON)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(func=run)


def default_language(model, where: str) -> str:
    """The language for a ``verify`` without ``--language``: the one ``model`` records
    (:func:`attncert.cli.common.model_language`); InputError when it records none."""
    name = model_language(model, command="verify")
    if name is None:
        raise InputError(
            f"{where}: the model {no_recorded_language(model)} (meta.language, "
            "meta.training.recipe.language)",
            where="--language",
            expected="--language L, L " + language_help(),
        )
    return name


def run(args: argparse.Namespace) -> int:
    from attncert.soft.verify import verify
    from attncert.soft.verify.certificate import save_certificate

    if not args.time_limit > 0:
        raise InputError(f"--time-limit {args.time_limit}", expected="a positive number")
    if args.max_nodes < 1:
        raise InputError(f"--max-nodes {args.max_nodes}", expected="a positive integer")
    if args.exhaustive is not None and args.exhaustive < 0:
        raise InputError(f"--exhaustive {args.exhaustive}", expected="a non-negative integer")
    if args.output:
        check_output_path(args.output, where="-o")
    check_horizon_flags(args)
    name = None if args.language is None else check_language_name(args.language)
    lengths = None
    if args.lengths is not None:
        from attncert.soft.horizon import parse_lengths

        lengths = parse_lengths(args.lengths)  # bad bounds refused before any work
    model = load_model_arg(args.model)
    lang = load_language_arg(name or default_language(model, args.model))
    source = (
        {"zoo": args.model[4:]}
        if args.model.startswith("zoo:")
        else {"path": str(Path(args.model).resolve())}
    )
    if lengths is not None:
        from attncert.cli.horizon import run_lengths

        return run_lengths(args, model, lang, lengths, source)
    res = verify(
        model,
        lang,
        args.n,
        time_limit=args.time_limit,
        max_nodes=args.max_nodes,
        exhaustive=args.exhaustive,
        seed=args.seed,
        source=source,
        progress=False if (args.quiet or args.json) else None,
    )
    if args.output:
        save_certificate(res.certificate, args.output)
    if args.json:
        print_json({**res.to_dict(), "output": args.output})
    else:
        print(res.summary())
        if args.output:
            print(f"certificate written to {args.output}")
    return Verdict(res.verdict).exit_code
