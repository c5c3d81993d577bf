"""``attncert sweep``: a grid of tasks over models × lengths × seeds, on Dask, resumable.

    attncert sweep certify --models random:L2-H2-d8 zoo:random-L2-H2-d16 --n 64 256 1024 \\
        --seeds 0 1 -o sweep.jsonl --plot sweep.png
    attncert sweep prove --models "Q_1 S Q_0" library:parity-odd --n 8 16 32 -o proofs.jsonl
    attncert sweep --grid grid.yaml -o sweep.jsonl --scheduler tcp://scheduler:8786
    attncert sweep certify --models random:L1-H1-d8 --n 64 --serial      # no Dask needed

Tasks: ``certify`` (Theorem 1 certificates, checked), ``sensitivity`` (MEASURED, not
certified — a placeholder until certified soft bounds land), ``prove`` (z3 proof at
length n; the "models" are formulas or ``library:NAME``), or ``module:function``.
Models: ``zoo:NAME``, a model file, or ``random:L2-H2-d16[-KIND]`` (the seed is the
model's seed). ``--param KEY=VALUE`` sets a task parameter (e.g. ``language=dyck1``,
``time_limit=30``); a grid file (JSON or YAML) holds the same fields
(``task, models, n, seeds, params, timeout``).

By default the cells run on an embedded Dask LocalCluster with one worker process per
core (``--workers K``); ``--scheduler ADDRESS`` uses an existing cluster. Each record is
appended to the JSON-lines file (``-o``) the moment its cell finishes; running the same
command again skips the cells already there (``--retry-failed`` re-runs those without a
result). A cell that raises, hits ``--timeout`` (seconds, hard: its process is killed) or
loses its worker is recorded with the reason and the sweep goes on. Ctrl-C leaves whole
lines only. At the end: a Markdown table (``--markdown FILE`` to save it) and, with
``--plot FILE``, free fraction and time against n (format from the extension).

Exit status: 0 every cell has a result, 1 some cell failed / timed out / lost its
worker, 2 bad input, 130 interrupted (re-run to resume).
"""

from __future__ import annotations

import argparse
import json
import sys

from attncert.cli.common import add_json_flag, language_help, print_json
from attncert.errors import InputError


def _ints(values: list[str] | None, flag: str) -> list[int]:
    out = []
    for v in values or []:
        for part in v.split(","):
            if not part.strip():
                continue
            try:
                out.append(int(part))
            except ValueError:
                raise InputError(
                    f"{flag} {v!r}", where=flag, expected="integers, e.g. 64 256"
                ) from None
    return out


def _params(items: list[str] | None) -> dict:
    out = {}
    for item in items or []:
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise InputError(f"--param {item!r}", where="--param", expected="KEY=VALUE")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text  # a bare word is a string
        out[key.strip()] = value
    return out


def _check_languages(cells) -> None:
    """Refuse, before any cell runs, a certify cell's ``language`` that certify does not
    take (a name of :data:`attncert.languages.NAMES`)."""
    from attncert.languages import NAMES

    for cell in cells:
        name = cell.param_dict.get("language") if cell.task == "certify" else None
        if name is not None and name not in NAMES:
            raise InputError(
                f"language {name!r}", where="--param language", expected=language_help(dfa=False)
            )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a grid of tasks (certify, sensitivity, prove) on Dask, resumable",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "task", nargs="?", metavar="TASK", help="certify | sensitivity | prove | module:function"
    )
    p.add_argument("--models", nargs="+", metavar="MODEL", help="model specs (see above)")
    p.add_argument("--n", nargs="+", metavar="N", help="lengths, e.g. 64 256 1024")
    p.add_argument("--seeds", nargs="+", metavar="S", default=["0"], help="seeds (default 0)")
    p.add_argument(
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="a task parameter (repeatable); certify's language=L (default parity), L "
        + language_help(dfa=False),
    )
    p.add_argument("--grid", metavar="FILE", help="a grid file (.json, .yaml) instead of the flags")
    p.add_argument(
        "-o", "--output", default="sweep.jsonl", help="results file (default sweep.jsonl)"
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler", metavar="ADDRESS", help="an existing Dask scheduler, tcp://host:8786"
    )
    where.add_argument(
        "--workers", type=int, metavar="K", help="embedded LocalCluster size (default: cores)"
    )
    where.add_argument("--serial", action="store_true", help="one cell after another, no Dask")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="hard limit per cell")
    p.add_argument(
        "--retry-failed", action="store_true", help="re-run cells recorded without a result"
    )
    p.add_argument(
        "--plot", metavar="FILE", help="free fraction and time against n (.png, .pdf, .svg)"
    )
    p.add_argument("--markdown", metavar="FILE", help="also write the Markdown table here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.io import write_atomic
    from attncert.sweep import SweepInterrupted, grid_cells, run_sweep

    if args.timeout is not None and not args.timeout > 0:
        raise InputError(f"--timeout {args.timeout}", where="--timeout", expected="seconds > 0")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers {args.workers}", where="--workers", expected="≥ 1")
    if args.grid is None and (args.task is None or not args.models or not args.n):
        raise InputError("nothing to run", expected="TASK with --models and --n, or --grid FILE")
    if args.grid is not None and (args.task or args.models or args.n or args.param):
        raise InputError("--grid and TASK/--models/--n/--param are alternatives", where="--grid")
    if args.plot:  # refuse an unknown plot format or an unwritable path before the work
        from attncert.figures import check_figure_path

        check_figure_path(args.plot, "--plot")
    if args.markdown:
        from attncert.io import check_output_path

        check_output_path(args.markdown, "--markdown")
    cells = grid_cells(
        args.task,
        args.models or (),
        _ints(args.n, "--n"),
        _ints(args.seeds, "--seeds"),
        _params(args.param),
        grid=args.grid,
        timeout=args.timeout,
    )
    _check_languages(cells)
    try:
        res = run_sweep(
            cells,
            args.output,
            scheduler=args.scheduler,
            workers=args.workers,
            serial=args.serial,
            retry_failed=args.retry_failed,
            progress=not args.no_progress and not args.json,
        )
    except SweepInterrupted as stop:
        r = stop.result
        print(
            f"attncert sweep: interrupted; {len(r.records)}/{len(r.cells)} cells recorded in "
            f"{r.path} (whole lines) — run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    table = res.table()
    if args.markdown:
        write_atomic(args.markdown, table + "\n")
    if args.plot:
        res.plot(args.plot)
    if args.json:
        print_json(
            {
                "file": str(res.path),
                "where": res.where,
                "counts": res.counts(),
                "ran": res.ran,
                "skipped": res.skipped,
                "seconds": round(res.seconds, 3),
                "records": [r.to_dict() for r in res.records],
            }
        )
        return res.exit_code
    if res.dropped_partial:
        print(
            f"note: ignored a partial last line ({res.dropped_partial} bytes) of an interrupted run"
        )
    print(res.summary())
    print()
    print(table)
    if args.plot:
        print(f"\nplot written to {args.plot}")
    return res.exit_code
