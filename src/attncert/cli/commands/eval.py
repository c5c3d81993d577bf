"""``attncert eval FORMULA STRING…``: truth values per position (reference interpreter).

    attncert eval "Q_a S Q_b" baab abba
    attncert eval "ODD(#<[Q_1])" 0110 --model parity.json
    attncert eval "#<[Q_1] > #<[Q_0]" 1101 --json

With ``--model`` (a model file or zoo:NAME; ``--model compile`` compiles FORMULA with
``--regime``) the model's output coordinate values are shown next to the
interpreter's values, rounded at ½, and any disagreement makes the exit status 1.
"""

from __future__ import annotations

import argparse

from attncert.cli.common import add_json_flag, load_model_arg, print_json


def register(sub: argparse._SubParsersAction) -> None:
    from attncert.compile.regime import REGIMES

    p = sub.add_parser(
        "eval",
        help="evaluate a formula at every position of strings",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("formula", metavar="FORMULA")
    p.add_argument("strings", metavar="STRING", nargs="+")
    p.add_argument("--model", help="also run this model (file, zoo:NAME, or 'compile')")
    p.add_argument(
        "--regime", default="temperature", choices=REGIMES, help="regime for --model compile"
    )
    p.add_argument(
        "--alphabet",
        help="alphabet for --model compile (default: formula atoms and the strings' symbols)",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.compile.agreement import node_outputs
    from attncert.errors import InputError
    from attncert.logic import evaluate, parse

    formula = parse(args.formula)
    for w in args.strings:
        if not w:
            raise InputError("empty string", where="STRING", expected="a non-empty string")
    model = None
    if args.model == "compile":
        from attncert.compile import compile_formula

        alphabet = args.alphabet or "".join(
            sorted(formula.atoms() | {c for w in args.strings for c in w})
        )
        model = compile_formula(formula, regime=args.regime, alphabet=alphabet)
    elif args.model:
        model = load_model_arg(args.model)
    records = []
    status = 0
    for w in args.strings:
        rec: dict = {"string": w, "values": list(evaluate(formula, w))}
        rec["accept"] = rec["values"][-1]
        if model is not None:
            if not model.readout.output_coords:
                raise InputError("the model has no designated output coordinates", where="--model")
            out = node_outputs(model, [w])[0, :, 0]
            rec["model_values"] = [float(v) for v in out]
            rec["model_rounded"] = [bool(v > 0.5) for v in out]
            rec["agree"] = rec["model_rounded"] == rec["values"]
            if not rec["agree"]:
                status = 1
        records.append(rec)
    if args.json:
        print_json({"formula": str(formula), "results": records})
        return status
    for rec in records:
        bits = "".join("1" if v else "0" for v in rec["values"])
        line = f"{rec['string']}  {bits}  {'accept' if rec['accept'] else 'reject'}"
        if "model_rounded" in rec:
            mb = "".join("1" if v else "0" for v in rec["model_rounded"])
            line += f"  model {mb}  {'agree' if rec['agree'] else 'DISAGREE'}"
        print(line)
    return status
