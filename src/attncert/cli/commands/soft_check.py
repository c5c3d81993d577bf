"""``attncert soft-check CERT``: re-check a soft certificate with the independent checker.

CERT is a per-n soft certificate (``attncert soft-certify``, ``sensitivity --certify
--save``; checked by attncert.kernel.soft.checker) or a length-uniform one (``sensitivity --uniform
--save-uniform``: B(n) ≤ K/n for every n ≥ N₀; checked by attncert.kernel.uniform.checker).

The model is the one the certificate names (``zoo:NAME`` or the path recorded when it was
written, a relative one looked up next to the certificate first) unless ``--model`` gives
another; a model whose content hash differs from the
certificate's is refused. Every number is re-derived (attncert.kernel.soft.checker).

    attncert soft-check cert.json
    attncert soft-check cert.json --model my_model.json --json

Exit status 0 (accepted), 1 (rejected, with the claim, the field and the reason),
2 (bad input: unreadable file, unknown model).
"""

from __future__ import annotations

import argparse

from attncert.cli.common import add_json_flag, load_model_arg, print_json
from attncert.errors import InputError, SpecError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "soft-check",
        help="re-check a soft certificate (B(n), floor, restriction, pair) independently",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("cert", metavar="CERT", help="a soft certificate (JSON)")
    p.add_argument("--model", help="the model (default: the one the certificate names)")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.io import check_header, read_json
    from attncert.kernel.soft.checker import check
    from attncert.kernel.uniform import checker as soft_uniform
    from attncert.soft.certified.certificate import load_certificate

    raw = read_json(args.cert)
    if isinstance(raw, dict) and raw.get("format") == soft_uniform.FORMAT:
        check_header(raw, args.cert, soft_uniform.FORMAT, soft_uniform.VERSION)
        if not isinstance(raw.get("model"), dict):
            raise SpecError("missing field 'model'", where=args.cert)
        data, check = raw, soft_uniform.check
    else:
        data = load_certificate(args.cert)
    source = args.model or data["model"].get("source")
    if not source:
        raise InputError(
            f"{args.cert}: the certificate does not say where its model is",
            expected="--model MODEL (a model file or zoo:NAME)",
        )
    if args.model:
        model = load_model_arg(args.model)
    else:  # zoo:NAME, or a path (a relative one is looked up next to the certificate first)
        from attncert.report.recheck import load_source_model

        model = load_source_model(source, args.cert, f"{args.cert}: model.source")
    if model.digest != data["model"].get("sha256"):
        raise SpecError(
            f"model {source!r} has hash {model.digest[:12]}…, the certificate is for "
            f"{str(data['model'].get('sha256'))[:12]}…",
            where=f"{args.cert}: model.sha256",
            expected="the model the certificate was made for",
        )
    report = check(data, model)
    if args.json:
        print_json(
            {
                "accepted": report.accepted,
                "verdict": "CHECKED" if report.accepted else "REJECTED",
                "facts": list(report.facts),
                "failures": [vars(f) for f in report.failures],
                "model": source,
            }
        )
    else:
        print(report.summary())
    return 0 if report.accepted else 1
