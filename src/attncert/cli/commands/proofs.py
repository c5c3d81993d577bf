"""``attncert proofs regenerate|list``: the repository's proof artifacts (``proofs/``).

    attncert proofs regenerate            # rewrite every artifact under ./proofs
    attncert proofs regenerate DIR --only hahn2020/theorem1
    attncert proofs list [DIR] [--json]   # artifacts, kinds and what they exhibit

Regeneration runs each artifact's (untrusted) search once, deterministically, and writes its
files and ``manifest.json`` atomically, then ``index.json``; re-verify with
``attncert check DIR`` (see :mod:`attncert.proofcheck`).
"""

from __future__ import annotations

import argparse
import sys

from attncert.cli.common import add_json_flag, print_json


def _regenerate(args: argparse.Namespace) -> int:
    from attncert.io import check_output_dir
    from attncert.proofcheck.regenerate import regenerate

    check_output_dir(args.dir, "DIR")
    written, skipped = regenerate(
        args.dir,
        only=args.only,
        progress=None if args.json else (lambda p: print(f"… {p}", file=sys.stderr)),
    )
    if args.json:
        print_json({"written": [str(w) for w in written], "skipped": skipped})
    else:
        for w in written:
            print(f"wrote {w}")
        for s in skipped:
            print(f"skipped {s}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from attncert.proofcheck.manifest import load_manifest
    from attncert.proofcheck.tree import find_artifacts

    rows = []
    for d in find_artifacts(args.dir):
        m = load_manifest(d)
        rows.append(
            {
                "artifact": d.relative_to(args.dir).as_posix(),
                "kind": m.kind,
                "result": m.exhibits.label(),
                "model": None if m.model is None else m.model.ref,
                "checked_by": m.checked_by,
            }
        )
    if args.json:
        print_json(rows)
    else:
        for r in rows:
            print(f"{r['artifact']}  [{r['kind']}]  {r['result']}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "proofs",
        help="regenerate or list the proof artifacts of a proofs/ tree",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="proofs_command", metavar="ACTION", required=True)
    rp = sub.add_parser("regenerate", help="regenerate every artifact deterministically")
    rp.add_argument("dir", nargs="?", default="proofs", metavar="DIR")
    rp.add_argument("--only", action="append", metavar="PREFIX", help="path prefix (repeatable)")
    add_json_flag(rp)
    rp.set_defaults(func=_regenerate)
    lp = sub.add_parser("list", help="list the artifacts of a proofs tree")
    lp.add_argument("dir", nargs="?", default="proofs", metavar="DIR")
    add_json_flag(lp)
    lp.set_defaults(func=_list)
