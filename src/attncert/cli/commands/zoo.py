"""``attncert zoo list|info|export``: the built-in models.

attncert zoo list
attncert zoo info trained_parity
attncert zoo export anbn anbn.json

Trained models (``meta["training"]``) also show their accuracy by length, soft and
hardened, as measured when they were trained.
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
                **_accuracy(m),
            }
        )
    if args.json:
        print_json(rows)
    else:
        width = max((len(r["name"]) for r in rows), default=4)
        for r in rows:
            kind = "hard" if r["hard"] else "soft"
            print(f"{r['name']:<{width}}  L={r['layers']} d={r['d']} {kind}  {r['description']}")
            if "accuracy_by_length" in r:
                cells = "  ".join(
                    f"{a['n']}: {a['soft_accuracy']:.0%}/{a['hard_accuracy']:.0%}"
                    for a in r["accuracy_by_length"]
                )
                print(f"{'':<{width}}  accuracy soft/hardened by n  {cells}")
    return 0


def _accuracy(model) -> dict:
    """The accuracy-by-length table of a trained model (empty for the others)."""
    training = model.meta.get("training")
    if not isinstance(training, dict) or "evaluation" not in training:
        return {}
    rows = training["evaluation"].get("by_length", [])
    return {
        "accuracy_by_length": [
            {k: r[k] for k in ("n", "strings", "soft_accuracy", "hard_accuracy", "agreement")}
            for r in rows
        ]
    }


def _info(args: argparse.Namespace) -> int:
    name = args.name[4:] if args.name.startswith("zoo:") else args.name
    m = zoo_model(name)
    training = m.meta.get("training") if isinstance(m.meta.get("training"), dict) else None
    info = {
        "name": name,
        "description": str(m.meta.get("description", m.meta.get("language", ""))),
        "layers": m.num_layers,
        "d": m.d,
        "hard": m.is_hard,
        "extensions": list(m.extensions),
        "sha256": m.digest,
    }
    if training is not None:
        info["training"] = training
    if args.json:
        print_json(info)
        return 0
    print(f"{name}: {info['description']}")
    print(
        f"  L={m.num_layers} d={m.d} {'hard' if m.is_hard else 'soft'}"
        + (f"; {', '.join(m.extensions)}" if m.extensions else "")
    )
    print(f"  sha256 {m.digest}")
    if training is None:
        return 0
    ev = training["evaluation"]
    print(f"  reproduce: {training['command']}  (torch {training['torch']})")
    print(f"  accuracy by length on {ev['distribution']} (seed {ev['seed']}):")
    print("         n  strings    soft  hardened   agree")
    for r in ev["by_length"]:
        const = "  hardened constant" if r["hard_constant"] else ""
        print(
            f"    {r['n']:>6}  {r['strings']:>7}  {r['soft_accuracy']:6.1%}  "
            f"{r['hard_accuracy']:8.1%}  {r['agreement']:6.1%}{const}"
        )
    if ev.get("hardened_constant"):
        print("  the hardened model gave the same answer on every string measured")
    hard = training.get("hard")
    if isinstance(hard, dict):
        worst = hard["worst_length"]
        print(
            f"  trained hard ({hard['method']}): hardened and soft agree on "
            f"{hard['agreement']:.2%} of the strings at the training lengths "
            f"{hard['lengths'][0]}..{hard['lengths'][1]}"
            + (
                f" (worst n = {worst['n']}: {worst['agreement']:.1%})"
                if worst["agreement"] < 1
                else ""
            )
            + f"; target {hard['target']:.0%} "
            + ("reached" if hard["target_reached"] else "NOT reached")
        )
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
    ip = sub.add_parser("info", help="one model: description, recipe and accuracy by length")
    ip.add_argument("name", metavar="NAME", help="zoo model name (as in `attncert zoo list`)")
    add_json_flag(ip)
    ip.set_defaults(func=_info)
    ep = sub.add_parser("export", help="write a built-in model to a JSON file")
    ep.add_argument("name", metavar="NAME", help="zoo model name (as in `attncert zoo list`)")
    ep.add_argument("path", metavar="PATH", help="output JSON file")
    add_json_flag(ep)
    ep.set_defaults(func=_export)
