"""``attncert sensitivity MODEL --n 16,64,256,1024``: Lemma 5 measured and bounded.

For each n: the largest change of the readout when one input symbol is exchanged
(exhaustive when |Σ|^n ≤ 2^12, else hill-climbing search), a witness pair, and
Lemma 5's bound computed from the weights (with the supplement's term, and the
published inequality for comparison); then the fitted decay exponent.

    attncert sensitivity zoo:soft_parity --n 16,64,256,1024 --plot out.png
    attncert sensitivity model.json --n 8,32 --metric probability --json

Exit status 0; 2 for bad input.  A model outside Lemma 5 (hard or masked
attention, temperature growing with n, unbounded positional encodings) is still
measured; the report says which hypothesis fails instead of giving a bound.
"""

from __future__ import annotations

import argparse

from attncert.cli.common import add_json_flag, add_model_argument, load_model_arg, print_json
from attncert.errors import InputError


def _ns(text: str) -> list[int]:
    try:
        ns = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise InputError(
            f"--n {text!r}", expected="comma-separated lengths, e.g. 16,64,256"
        ) from None
    if not ns or any(n < 1 for n in ns):
        raise InputError(f"--n {text!r}", expected="positive lengths")
    return ns


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sensitivity",
        help="Lemma 5: largest effect of one input symbol vs n, with the bound",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model_argument(p)
    p.add_argument("--n", default="16,64,256,1024", help="input lengths (default 16,64,256,1024)")
    p.add_argument(
        "--metric",
        choices=("logit", "activation", "probability"),
        default="logit",
        help="what to maximise (default: the readout logit)",
    )
    p.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    p.add_argument("--restarts", type=int, default=8, help="random restarts of the search")
    p.add_argument(
        "--time-budget",
        type=float,
        default=30.0,
        help="seconds per n for the search (default 30; restarts stop once it is spent)",
    )
    p.add_argument(
        "--norm",
        choices=("certified", "frobenius"),
        default="certified",
        help="operator-norm bound used for the constants",
    )
    p.add_argument("--plot", metavar="PNG", help="write a log-log plot")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.soft.report import format_table, plot_sensitivity, sensitivity_report

    model = load_model_arg(args.model)
    ns = _ns(args.n)
    report = sensitivity_report(
        model,
        ns,
        metric=args.metric,
        seed=args.seed,
        restarts=args.restarts,
        time_budget=args.time_budget,
        norm=args.norm,
        progress=not args.json,
    )
    if args.plot:
        plot_sensitivity(report, args.plot)
    if args.json:
        print_json(report.as_dict())
    else:
        print(format_table(report))
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0
