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
mass ≤ C/N, so margin ≤ C/(4(K−1)N) = O(1/n²) for any model of this shape.

``--certify`` adds, per n, the *certified* B(n) — a sound bound on |Δlogit| over every
string of length n and every changeable position (attncert.soft.certified: outward-
rounded bound propagation, LayerNorm, GELU, masks, biases, mean readout), re-derived by
the independent checker (attncert.kernel.soft) — beside the measured maximum and Lemma
5's number, with their ratios; a bound that is only the logit's range over all strings
is labelled "range cap". On {0,1}ⁿ it prints Theorem 6's certified cross-entropy floor
log(1 + e^{−B/2}) beside the measured PARITY cross-entropy (sampled, ± 3 s.e.) and
log 2; for a 2-Dyck next-symbol model the certified bracket-type floor.

    attncert sensitivity zoo:soft_parity_lm --n 256,1024 --certify --save 'cert-{n}.json'

Exit status 0 (with --certify: every bound certified and checked); 1 if the checker
rejected a certificate or a measured change exceeded a certified bound; 2 for bad
input; 3 if a bound could not be decided (float64 overflow). A model outside Lemma 5
(hard or masked attention, temperature growing with n, unbounded positional encodings)
is still measured; the report says which hypothesis fails instead of giving a bound.
"""

from __future__ import annotations

import argparse
from pathlib import Path

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
    p.add_argument(
        "--plot", metavar="FILE", help="write a log-log plot (.png, .pdf or .svg, by extension)"
    )
    p.add_argument(
        "--certify",
        action="store_true",
        help="also the certified B(n), checked independently, and Theorem 6's floor",
    )
    p.add_argument(
        "--save",
        metavar="PATH",
        help="with --certify: write each certificate (PATH may contain {n})",
    )
    p.add_argument(
        "--language",
        choices=("parity", "parity-odd"),
        default="parity",
        help="labels of the measured cross-entropy: accept = even (parity) or odd 1s",
    )
    p.add_argument(
        "--samples", type=int, default=1000, help="strings sampled for the cross-entropy"
    )
    p.add_argument(
        "--parity-rate",
        action="store_true",
        help="also the PARITY-rate family profile (binary models; docs/parity-rate.md)",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


PLOT_FORMATS = (".png", ".pdf", ".svg")


def _check_args(args, ns: list[int]) -> None:
    if args.plot is not None:
        ext = Path(args.plot).suffix.lower()
        if ext not in PLOT_FORMATS:
            raise InputError(
                f"--plot {args.plot!r}: unknown format {ext or '(none)'!r}",
                expected="a file name ending in " + ", ".join(PLOT_FORMATS),
            )
        _writable(args.plot, "--plot")
    if args.save is not None:
        if not args.certify:
            raise InputError("--save needs --certify", expected="--certify --save PATH")
        if len(ns) > 1 and "{n}" not in args.save:
            raise InputError(
                f"--save {args.save!r} with {len(ns)} lengths",
                expected="a path containing {n}, e.g. 'cert-{n}.json'",
            )
        for n in ns:
            _writable(args.save.replace("{n}", str(n)), "--save")
    if args.certify and args.metric == "activation":
        raise InputError(
            "--certify bounds the logit (and the probability, a quarter of it)",
            expected="--metric logit or probability",
        )
    if args.samples < 2:
        raise InputError(f"--samples {args.samples}", expected="at least 2")
    limit = 1 << 16
    if max(ns) > limit:
        raise InputError(
            f"--n {max(ns)}: the measurement and the bounds need O(n²) memory per layer",
            expected=f"lengths ≤ {limit}",
        )


def _writable(path: str, flag: str) -> None:
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{flag} {path!r} is a directory", expected="a file path")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"{flag} {path!r}: {parent} is not a directory")
            break


def run(args: argparse.Namespace) -> int:
    from attncert.soft.report import format_table, plot_sensitivity, sensitivity_report

    model = load_model_arg(args.model)
    ns = _ns(args.n)
    _check_args(args, ns)
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
    rows = None
    if args.certify:
        from attncert.soft.certified.table import certified_rows

        rows = certified_rows(
            model,
            report,
            source=args.model if args.model.startswith("zoo:") else str(Path(args.model).resolve()),
            accepts_even=args.language == "parity",
            samples=args.samples,
            seed=args.seed,
        )
        if args.save:
            for r in rows:
                if r.certificate is not None:
                    r.certificate.save(args.save.replace("{n}", str(r.n)))
    if args.plot:
        plot_sensitivity(report, args.plot, certified=rows)
    rate = _parity_rate(model, ns) if args.parity_rate else None
    if args.json:
        out = report.as_dict()
        if rate is not None:
            out["parity_rate"] = rate
        if rows is not None:
            out["certified"] = [r.as_dict() for r in rows]
            out["verdict"] = _verdict(rows)
        print_json(out)
    else:
        print(format_table(report))
        if rows is not None:
            from attncert.soft.certified.table import format_certified

            print()
            print(format_certified(rows))
            print(f"verdict: {_verdict(rows)}")
        if rate is not None:
            print()
            print(rate["table_text"])
            print(rate["one_layer"]["text"])
        if args.plot:
            print(f"plot written to {args.plot}")
        if args.save and rows is not None:
            print(
                "certificates written: "
                + ", ".join(args.save.replace("{n}", str(r.n)) for r in rows if r.certificate)
            )
    if rows is None:
        return 0
    return {"CERTIFIED": 0, "REJECTED": 1, "UNDECIDED": 3}[_verdict(rows)]


def _verdict(rows) -> str:
    """CERTIFIED (every bound checked), REJECTED (a checker rejection or a measured change
    above a certified bound), UNDECIDED (some bound overflowed)."""
    if any((r.check is not None and not r.check.accepted) or not r.sound for r in rows):
        return "REJECTED"
    if any(r.certified is None for r in rows):
        return "UNDECIDED"
    return "CERTIFIED"


def _parity_rate(model, ns: list[int]) -> dict:
    """Proposition (PARITY rate) for the CLI: the rate table and, where it applies, the
    rigorous one-layer constant."""
    from attncert.errors import ParameterError, UnsupportedError
    from attncert.soft.parity_rate import format_rate_table, one_layer_mass_bound, rate_table

    table = rate_table(model, ns)
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
        "residue": table.residue,
        "rows": [dict(vars(r)) for r in table.rows],
        "margin_exponent": table.margin_exponent,
        "mass_exponent": table.mass_exponent,
        "table_text": format_rate_table(table),
        "one_layer": one,
    }
