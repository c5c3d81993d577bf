"""``attncert sensitivity MODEL --n 16,64,256,1024``: Lemma 5 measured and bounded.

For each n: the largest change of the readout when one input symbol is exchanged
(exhaustive when |Σ|^n ≤ 2^12, else hill-climbing search), a witness pair, and
Lemma 5's bound computed from the weights (with the supplement's term, and the
published inequality for comparison); then the fitted decay exponent.

    attncert sensitivity zoo:soft_parity --n 16,64,256,1024 --plot out.png
    attncert sensitivity model.json --n 8,32 --metric probability --json
    attncert sensitivity zoo:soft_parity --n 16,64,256 --parity-rate

``--parity-rate`` adds Proposition (PARITY rate) (``docs/parity-rate.md``): the accept
logit along the one-residue-class family, its margin and second-difference mass per n
(exact where the model allows), and for one-layer models the rigorous constant C with
mass ≤ C/N, so margin ≤ C/(4(K−1)N) = O(1/n²) for any model of this shape. The
Proposition is proved for one layer and a conjecture for two or more (the output says
which). The accepted parity is read from the model's ``meta`` (or ``--accepts even|odd``);
if the model does not declare one, "even" is assumed and the output says so.

Exit status 0; 2 for bad input.  A model outside Lemma 5 (hard or masked
attention, temperature growing with n, unbounded positional encodings) is still
measured; the report says which hypothesis fails instead of giving a bound.
"""

from __future__ import annotations

import argparse

from attncert import limits
from attncert.cli.args import integer, quote, seconds
from attncert.cli.common import add_json_flag, add_model_argument, load_model_arg, print_json
from attncert.errors import InputError

_LENGTH = integer(
    minimum=1,
    maximum=limits.SENSITIVITY_MAX_N,
    reason="the search enumerates positions and |Σ|^n must stay machine-sized",
)


def _ns(text: str) -> list[int]:
    parts = [t for t in text.split(",") if t.strip()]
    if not parts or len(parts) > 64:
        raise InputError(
            f"--n {quote(text)}", expected="1 to 64 comma-separated lengths, e.g. 16,64,256"
        )
    try:
        return [_LENGTH(t) for t in parts]
    except argparse.ArgumentTypeError as err:
        raise InputError(
            f"--n {quote(text)}: {err}", expected="comma-separated positive lengths"
        ) from None


def check_sizes(model, ns: list[int]) -> None:
    """Refuse lengths whose search step would exceed :mod:`attncert.limits`."""
    widths = [
        sum(int(h.w_q.shape[0]) + int(h.w_v.shape[0]) for h in layer.heads)
        for layer in model.layers
    ]
    for n in ns:
        limits.check_sensitivity_size(model.n_tokens(n), model.d, widths, what=f"--n {n}")


def check_plot_path(path: str) -> None:
    """Refuse, before any work, a plot file that cannot be written or has no known format."""
    from attncert.figures import check_figure_path

    check_figure_path(path, "--plot")


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
    p.add_argument(
        "--seed", type=integer(minimum=0, maximum=2**63 - 1), default=0, help="search seed"
    )
    p.add_argument(
        "--restarts",
        type=integer(minimum=1, maximum=10_000),
        default=8,
        help="random restarts of the search (default 8)",
    )
    p.add_argument(
        "--time-budget",
        type=seconds,
        default=30.0,
        help="seconds per n for the search (default 30; restarts stop once it is spent)",
    )
    p.add_argument(
        "--norm",
        choices=("certified", "frobenius"),
        default="certified",
        help="operator-norm bound used for the constants",
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="write a log-log plot; the format follows the extension (.png, .pdf, .svg, …)",
    )
    p.add_argument(
        "--parity-rate",
        action="store_true",
        help="also the PARITY-rate family profile (binary models; docs/parity-rate.md)",
    )
    p.add_argument(
        "--accepts",
        choices=("even", "odd"),
        default=None,
        help="with --parity-rate: the parity the model accepts (default: read from the "
        "model's meta; assumed even, and said so, when the model does not declare it)",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.soft.report import format_table, plot_sensitivity, sensitivity_report

    ns = _ns(args.n)
    if args.plot:
        check_plot_path(args.plot)
    model = load_model_arg(args.model)
    check_sizes(model, ns)
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
    rate = _parity_rate(model, ns, args.accepts) if args.parity_rate else None
    if args.json:
        out = report.as_dict()
        if rate is not None:
            out["parity_rate"] = rate
        print_json(out)
    else:
        print(format_table(report))
        if rate is not None:
            print()
            print(rate["table_text"])
            print(rate["one_layer"]["text"])
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0


def _parity_rate(model, ns: list[int], accepts: str | None = None) -> dict:
    """Proposition (PARITY rate) for the CLI: which parity the model accepts (flag, model
    meta, or an announced assumption), the rate table, the status for this depth (one layer
    proved, several a conjecture) and, where it applies, the rigorous one-layer constant."""
    from attncert.errors import ParameterError, UnsupportedError
    from attncert.soft.parity_rate import (
        accepted_parity,
        format_rate_table,
        one_layer_mass_bound,
        rate_table,
        status_for,
    )

    if accepts is not None:
        even, source = accepts == "even", "--accepts"
    else:
        even, source = accepted_parity(model)
        if even is None:
            even, source = True, f"assumed even: {source}; pass --accepts odd for the complement"
    parity = "even" if even else "odd"
    table = rate_table(model, ns, accepts_even=even)
    status = status_for(model)
    try:
        b = one_layer_mass_bound(model)
    except (UnsupportedError, ParameterError) as err:
        one = {"applies": False, "reason": str(err), "text": f"one-layer bound: n/a ({err})"}
    else:
        c = float(b.C)
        one = {
            "applies": True,
            "C": c,
            "rho": float(b.rho),
            "text": f"one-layer bound (rigorous): mass ≤ C/N with C = {c:.6g}, so any "
            "sign-correct model of this shape has margin ≤ C/(4(K−1)N) = O(1/n²)",
        }
    return {
        "accepts": parity,
        "accepts_source": source,
        "status": status,
        "residue": table.residue,
        "rows": [dict(vars(r)) for r in table.rows],
        "margin_exponent": table.margin_exponent,
        "mass_exponent": table.mass_exponent,
        "table_text": f"PARITY rate: accepted parity {parity} ({source})\n"
        f"Proposition status: {status}\n" + format_rate_table(table),
        "one_layer": one,
    }
