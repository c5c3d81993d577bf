"""``attncert report [MODEL] [--language L] [--n 16,64,256,1024] [--lengths A:B] -o DIR``:
one report for a model — every analysis that applies, at every n, in one self-contained
page.

    attncert report -o report/                         # trained_hard_first_last, PARITY
    attncert report zoo:trained_hard_first_last -o r/  # the language it records: first_last
    attncert report zoo:trained_parity --n 16,64 -o parity-report/
    attncert report model.json --language dyck1 -o r/ --scheduler tcp://scheduler:8786
    attncert report zoo:trained_nope_first_last --lengths 1:100000 -o r/  # the horizon's range
    attncert check report/                             # re-check every certificate in it

The page opens with a short paragraph, derived from the verdicts, that says what the
theory says about the model (proved correct, or wrong with a witness; what Theorem 1 and
Lemma 5 could and could not certify and why; what does not apply); the command prints it
last. Sections: the model (layers, heads, positional scheme, soft or hard heads); hardening
agreement by n; Theorem 1 (the hardened certificate, ``certify``); certified accuracy
(``verify``) beside sampled accuracy; the length horizon (``verify --lengths``: every
length of ``--lengths A:B`` proved right on every string, the first wrong one with its
witness, what stays undecided, beside accuracy sampled at a few lengths; by default from
1 to 64× the longer of the longest length the model records being trained on and the
largest ``--n``); Lemma 5 / Theorem 6 (measured change, certified
B(n), the uniform K/n, the cross-entropy floor, the theorem's status); the soft
restriction (``soft-certify``). Each states its verdict, theorem and limits; one that
does not apply to the model says why. Without ``--language`` the report is about the
language the model records (a compiled library formula's, a trained model's recipe);
with no MODEL either, the demo: trained_hard_first_last against PARITY.

DIR gets ``index.html`` (plots inline as SVG, no network resource), ``report.md``,
``report.json``, ``certs/<cell>.json`` (every certificate, as the commands write them
with ``-o``) and ``cells/<cell>.json`` (every cell's outcome, written the moment it
finishes). Running the same command again resumes a half-finished DIR: finished cells
are not recomputed. A DIR that exists, is not empty and is not a report is refused.

The cells run as tasks on Dask — an embedded LocalCluster (``--workers K``, default one
per core) or ``--scheduler ADDRESS`` — each in a child process killed at
``--cell-time-limit`` seconds (plus start-up), which is also passed to the analyses' own
time limits; ``--no-dask`` (or ``--workers 0``) runs them in this process. A cell that
fails or times out is reported in its section, never fatal to the rest; every cell shows
its budget and what it used, and one that ran out names ``--cell-time-limit``. A
``--scheduler`` that does not answer within 20 s is refused (exit 2) before DIR is
created or written.

Exit status: 0 every cell finished (whatever its verdict: the verdicts are in the
report), 1 a cell failed or timed out, 2 bad input (e.g. a language not over the model's
alphabet, ``--lengths`` not 1 ≤ A ≤ B), 130 interrupted (run again to resume).
"""

from __future__ import annotations

import argparse
import sys

from attncert.cli.args import integer, seconds
from attncert.cli.common import (
    MODEL_HELP,
    RECORDED,
    add_json_flag,
    check_language_name,
    language_help,
    print_json,
)
from attncert.errors import InputError

DEFAULT_MODEL = "zoo:trained_hard_first_last"


def _ns(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            out.append(int(part))
        except ValueError:
            raise InputError(
                f"--n {text!r}", where="--n", expected="comma-separated lengths, e.g. 16,64,256"
            ) from None
    if not out:
        raise InputError(f"--n {text!r}", where="--n", expected="at least one length")
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="one report for a model: every analysis that applies, at every n (HTML, Markdown, JSON)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "model",
        nargs="?",
        default=None,
        metavar="MODEL",
        help=f"{MODEL_HELP} (default {DEFAULT_MODEL})",
    )
    p.add_argument(
        "--language",
        help=language_help()
        + f" (default: {RECORDED}; else dyck1/dyck2 over brackets, parity over {{0,1}}; "
        f"with no MODEL, parity: the bundled {DEFAULT_MODEL} against PARITY)",
    )
    p.add_argument("--n", default="16,64,256,1024", help="lengths (default 16,64,256,1024)")
    p.add_argument(
        "--lengths",
        metavar="A:B",
        help="the length horizon's range (B an integer or inf; default 1 to 64× the longer of "
        "the longest length the model records being trained on and the largest --n)",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="the report directory")
    p.add_argument(
        "--cell-time-limit",
        type=seconds,
        default=60.0,
        help="seconds per cell (default 60), passed to each analysis and enforced",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="an existing Dask scheduler, tcp://host:8786 (refused, with nothing written, "
        "if it does not answer within 20 s)",
    )
    p.add_argument(
        "--workers",
        type=integer(minimum=0, maximum=1024),
        default=None,
        help="worker processes of the embedded LocalCluster (default: one per core; 0: "
        "run in this process)",
    )
    p.add_argument("--no-dask", action="store_true", help="run the cells in this process")
    p.add_argument("--seed", type=integer(minimum=0, maximum=2**32 - 1), default=0)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.report import report

    if args.no_dask and args.scheduler:
        raise InputError("--no-dask and --scheduler contradict each other", where="--no-dask")
    language = None if args.language is None else check_language_name(args.language)
    lengths = None
    if args.lengths is not None:
        from attncert.report.horizon_cell import parse_span

        lengths = parse_span(args.lengths)  # a bad range refused before any work (exit 2)
    rep = report(
        args.model,
        language=language,
        ns=_ns(args.n),
        lengths=lengths,
        out=args.output,
        dask=not args.no_dask,
        scheduler=args.scheduler,
        workers=args.workers,
        cell_time_limit=args.cell_time_limit,
        seed=args.seed,
        progress=not (args.quiet or args.json) and sys.stderr.isatty(),
    )
    if args.json:
        print_json(
            {"directory": rep.directory, "ran": rep.ran, "where": rep.where, **rep.to_dict()}
        )
    else:
        print(rep.summary(short=False))
        print(f"written: {rep.directory}/index.html, report.md, report.json, certs/")
        print()
        print(rep.short())  # the closing lines: what the theory says about this model
    return rep.exit_code
