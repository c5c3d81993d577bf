"""``attncert zoo list|export``: the built-in models.

attncert zoo list
attncert zoo export anbn anbn.json
"""

from __future__ import annotations

import argparse

from attncert.cli.common import add_json_flag, print_json
from attncert.model import save_model, zoo_description, zoo_model, zoo_names


def _list(args: argparse.Namespace) -> int:
    rows = []
    for name in zoo_names():
        m = zoo_model(name)
        rows.append(
            {
                "name": name,
                "description": zoo_description(name),
                "layers": m.num_layers,
                "d": m.d,
                "hard": m.is_hard,
                "sha256": m.digest,
            }
        )
    if args.json:
        print_json(rows)
    else:
        width = max((len(r["name"]) for r in rows), default=4)
        for r in rows:
            kind = "hard" if r["hard"] else "soft"
            print(f"{r['name']:<{width}}  L={r['layers']} d={r['d']} {kind}  {r['description']}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from attncert.io import check_output_path

    name = args.name[4:] if args.name.startswith("zoo:") else args.name
    check_output_path(args.path, "PATH")
    model = zoo_model(name)
    path = save_model(model, args.path)
    if args.json:
        print_json({"name": name, "path": str(path), "sha256": model.digest})
    else:
        print(f"wrote {path} (sha256 {model.digest})")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "zoo", help="list or export built-in models", description="Built-in models."
    )
    sub = p.add_subparsers(dest="zoo_command", metavar="ACTION", required=True)
    lp = sub.add_parser("list", help="list the built-in models")
    add_json_flag(lp)
    lp.set_defaults(func=_list)
    ep = sub.add_parser("export", help="write a built-in model to a JSON file")
    ep.add_argument("name", metavar="NAME", help="zoo model name (as in `attncert zoo list`)")
    ep.add_argument("path", metavar="PATH", help="output JSON file")
    add_json_flag(ep)
    ep.set_defaults(func=_export)
