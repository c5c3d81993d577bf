"""``attncert prove FORMULA --max-len N``: bounded agreement proof (z3 + interval arithmetic).

    attncert prove "Q_a S Q_b" --alphabet abc --max-len 100 --jobs 2
    attncert prove parity --library --max-len 64 --smt2-dir queries/
    attncert prove "Q_a U Q_b" --model since.json --max-len 8     # exit 1: counterexample
    attncert prove "ODD(#<[Q_1])" --regime unbounded --max-len 32 --positions last --json
    attncert prove "Q_1 S Q_0" --max-len 200 --dask --jobs 2        # lengths as Dask tasks
    attncert prove "Q_1 S Q_0" --max-len 400 --scheduler tcp://scheduler:8786

Proves, for every length n ≤ N, that the soft transformer's rounded output at its
designated coordinate equals FORMULA at every position (``--positions last``: at the last
one). Without ``--model`` the formula is compiled in ``--regime``. Verdict and exit
status: CERTIFIED 0 (proved), REFUTED 1 (a counterexample, re-checked by interval
evaluation), UNDECIDED 3 (time-out or a length the decomposition cannot settle); 2 bad
input, 130 interrupted. ``--json`` carries the verdict and the prover's ``outcome``.

Lengths are independent: ``--jobs K`` runs them in K local processes; ``--dask`` makes
each length a task on an embedded Dask LocalCluster of K workers, ``--scheduler ADDRESS``
on an existing cluster (needs the ``dask`` extra).
"""

from __future__ import annotations

import argparse

from attncert import limits
from attncert.cli.args import integer, seconds
from attncert.cli.common import MODEL_HELP, add_json_flag, load_model_arg, print_json
from attncert.verdicts import Verdict

# the prover's outcome as one of the fixed verdicts (README, "Trust and honest limits")
VERDICT_OF = {
    "proved": Verdict.CERTIFIED,
    "counterexample": Verdict.REFUTED,
    "unknown": Verdict.UNDECIDED,
}

_LENGTH = integer(
    minimum=1,
    maximum=limits.PROVE_MAX_LEN,
    reason="time per length grows like n^2.5: 44 s at n = 800 for 'Q_1 S Q_0'",
)


def register(sub: argparse._SubParsersAction) -> None:
    from attncert.compile.regime import REGIMES

    p = sub.add_parser(
        "prove",
        help="prove that a soft transformer computes a formula on all strings up to a length",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "formula", metavar="FORMULA", help="formula text, or a library name with --library"
    )
    p.add_argument(
        "--max-len",
        type=_LENGTH,
        required=True,
        help=f"prove every length 1..N (N ≤ {limits.PROVE_MAX_LEN})",
    )
    p.add_argument("--min-len", type=_LENGTH, default=1, help="first length (default 1)")
    p.add_argument("--regime", default="temperature", choices=REGIMES, help="compilation regime")
    p.add_argument("--alphabet", help="input symbols (default: the formula's atoms)")
    p.add_argument("--library", action="store_true", help="FORMULA names a library formula")
    p.add_argument("--model", help=MODEL_HELP + " (default: compile FORMULA)")
    p.add_argument("--coord", type=int, help="coordinate holding the formula's value")
    p.add_argument("--positions", choices=("all", "last"), default="all")
    p.add_argument(
        "--jobs",
        type=integer(minimum=1, maximum=256),
        default=1,
        help="parallel processes (lengths)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--dask", action="store_true", help="lengths as tasks on a LocalCluster of --jobs workers"
    )
    where.add_argument("--scheduler", metavar="ADDRESS", help="lengths on an existing Dask cluster")
    p.add_argument("--smt2-dir", help="write every SMT query here as .smt2")
    p.add_argument("--timeout", type=seconds, default=60.0, help="seconds per z3 query (> 0)")
    p.add_argument(
        "--cross-check",
        type=integer(minimum=0, maximum=16, reason="exhaustive: |Σ|^n strings per length"),
        default=0,
        metavar="K",
        help="re-decide every n ≤ K by exhaustive interval enumeration",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.errors import InputError
    from attncert.logic import library_formula, parse
    from attncert.prove import prove_agreement

    if args.library:
        nf = library_formula(args.formula)
        formula, alphabet = nf.formula, args.alphabet or nf.alphabet
    else:
        formula, alphabet = parse(args.formula), args.alphabet
    if args.min_len > args.max_len:
        raise InputError(
            f"--min-len {args.min_len} > --max-len {args.max_len}", expected="min-len ≤ max-len"
        )
    if args.smt2_dir:
        from attncert.io import check_output_dir

        check_output_dir(args.smt2_dir, "--smt2-dir")
    model = load_model_arg(args.model) if args.model else None
    res = prove_agreement(
        formula,
        model,
        max_len=args.max_len,
        min_len=args.min_len,
        regime=args.regime,
        alphabet=alphabet,
        coordinate=args.coord,
        positions=args.positions,
        jobs=args.jobs,
        smt2_dir=args.smt2_dir,
        timeout=args.timeout,
        cross_check=args.cross_check,
        progress=not args.no_progress and not args.json,
        dask=args.dask,
        scheduler=args.scheduler,
    )
    verdict = VERDICT_OF[res.verdict]
    if args.json:
        print_json({**res.to_dict(), "verdict": verdict.value, "outcome": res.verdict})
        return verdict.exit_code
    print(
        f"{res.formula!r} on {res.model} (coordinate {res.coordinate}, {res.positions} positions)"
    )
    print(f"{'n':>4} {'verdict':<15} {'method':<11} {'seconds':>8} {'queries':>8} {'min gap':>10}")
    for r in res.lengths:
        gs = [h.min_gap_float for h in r.heads if h.min_gap_float is not None]
        gap = f"{min(gs):.3g}" if gs else "-"
        print(
            f"{r.n:>4} {r.verdict:<15} {r.method:<11} {r.seconds:>8.3f} {len(r.queries):>8} {gap:>10}"
        )
        if r.counterexample:
            c = r.counterexample
            print(
                f"     counterexample {c['string']!r} at position {c['position']}: formula "
                f"{c['formula_value']}, model {c['model_value']}"
            )
        if r.reason and r.verdict != "proved":
            print(f"     {r.reason}")
        if r.cross_check:
            print(f"     cross-check: {r.cross_check}")
    for note in res.notes:
        print(f"note: {note}")
    print(
        f"{verdict.value} ({res.verdict}) for n = {args.min_len}..{res.max_len} "
        f"in {res.seconds:.2f} s"
    )
    return verdict.exit_code
