"""``attncert verify-check CERT``: re-check a verification certificate with the kernel.

The model is the one the certificate names (``model.source``: a zoo name, a path, or an
embedded model) unless ``--model`` gives another; a model whose content hash differs is
rejected. The partition, every leaf, every count and every witness are re-derived
(attncert.kernel.verify.checker).

    attncert verify-check tree.json
    attncert verify-check tree.json --model my_model.json --json

Exit status 0 (accepted), 1 (rejected: the claim, the node and the reason), 2 (bad input).
"""

from __future__ import annotations

import argparse

from attncert.cli.common import add_json_flag, load_model_arg, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify-check",
        help="re-check a verification certificate (tree, leaves, counts, witnesses)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("cert", metavar="CERT", help="a verification certificate (JSON)")
    p.add_argument("--model", help="the model (default: the one the certificate names)")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fractions import Fraction

    from attncert.certificates.locate import resolve_source
    from attncert.certificates.verify import load_certificate
    from attncert.kernel.verify.checker import check
    from attncert.soft.verify.outcome import sci, sci_up

    cert = load_certificate(args.cert)
    if args.model:
        model = load_model_arg(args.model)
    else:
        model = resolve_source(cert.model_source, args.cert, f"{args.cert}: model.source")
    report = check(cert, model)
    total = report.total or 1
    lo, hi = Fraction(report.right, total), Fraction(report.right + report.undecided, total)
    if args.json:
        print_json(
            {
                "accepted": report.accepted,
                "verdict": "CHECKED" if report.accepted else "REJECTED",
                "facts": list(report.facts),
                "failures": [vars(f) for f in report.failures],
                "accuracy": {"lower": sci(lo, 12), "upper": sci_up(hi, 12)}
                if report.accepted
                else None,
            }
        )
    else:
        print(report.summary())
        if report.accepted:
            print(f"certified accuracy ∈ [{sci(lo)}, {sci_up(hi)}]")
    return 0 if report.accepted else 1
