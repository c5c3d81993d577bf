"""``attncert trust``: the trusted base, measured — every module the kernel depends on,
with its line count (see :mod:`attncert.trustbase`).

    attncert trust
    attncert trust --json
"""

from __future__ import annotations

import argparse

from attncert.cli.common import add_json_flag, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "trust",
        help="the trusted base: the kernel's modules and line counts",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.trustbase import render, trusted_base

    base = trusted_base()
    if args.json:
        print_json(base.to_dict())
    else:
        print(render(base))
    return 0
