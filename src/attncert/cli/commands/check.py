"""``attncert check CERT MODEL``: re-check a restriction certificate with the trusted
checker (:mod:`attncert.hard.checker`), or ``attncert check DIR``: re-verify every
proof artifact under a ``proofs/`` tree (see :mod:`attncert.proofcheck`).

    attncert check cert.json model.json
    attncert check cert.json zoo:random-L2-H2-d16 --json
    attncert check proofs/

Exit status: 0 every claim checked, 1 rejected (the reason names the claim, where
and why), 2 bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from attncert.cli.common import add_json_flag, load_model_arg, print_json
from attncert.errors import InputError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="re-check a certificate against its model, or a proofs/ directory",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "path", metavar="CERT|DIR", help="a certificate JSON file, or a proofs directory"
    )
    p.add_argument(
        "model", nargs="?", metavar="MODEL", help="the model (file or zoo:NAME); for a certificate"
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if path.is_dir():
        from attncert.proofcheck.cli import run_tree

        return run_tree(path, as_json=args.json)
    if args.model is None:
        raise InputError(
            "checking a certificate needs the MODEL it is for", expected="attncert check CERT MODEL"
        )
    from attncert.hard.certificate import load_certificate
    from attncert.hard.checker import check

    cert = load_certificate(path)
    model = load_model_arg(args.model)
    report = check(cert, model)
    if args.json:
        print_json(
            {
                "accepted": report.accepted,
                "facts": list(report.facts),
                "failures": [f.__dict__ for f in report.failures],
                "seconds": report.seconds,
            }
        )
    else:
        print(report.summary())
    return 0 if report.accepted else 1
