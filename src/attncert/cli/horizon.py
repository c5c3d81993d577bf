"""``attncert verify MODEL --lengths A:B``: the length horizon (issue 40) — every length of
[A, B] at which the model is proved right on every string, the first at which it is wrong
(with a witness, run-length encoded when long), and what stays undecided; one certificate,
re-checked by the kernel (:mod:`attncert.kernel.horizon.checker`).

    attncert verify zoo:trained_hard_first_last --language first_last --lengths 1:1000000
    attncert verify model.json --lengths 1:inf --json -o horizon.json

In chunks of lengths (:mod:`attncert.soft.horizon.parallel`), resumable, the same result
for any number of workers — ``--workers 0`` in this process, ``--workers K`` on an
embedded Dask LocalCluster, ``--scheduler tcp://host:8786`` on an existing one (refused,
with nothing written, when it does not answer), ``--state DIR`` keeping every finished
chunk so that a rerun skips it; ``--time-limit`` and ``--max-nodes`` are then each chunk's:

    attncert verify model.json --lengths 1:1000000000 --workers 2 --state horizon-state/

Exit status: 0 when all of [A, B] is proved (CERTIFIED), 1 when some length is refuted
(REFUTED), 3 otherwise (UNDECIDED); 2 for what the horizon cannot handle (A > B, a
non-integer bound, a language whose membership a pattern cannot pin down, a language not
over the model's alphabet, a learned position table, a mean readout), refused before any
work.
"""

from __future__ import annotations

import argparse
import sys

from attncert.cli.args import integer
from attncert.cli.common import print_json
from attncert.errors import InputError, UnsupportedError
from attncert.verdicts import Verdict


def add_horizon_flags(p: argparse.ArgumentParser) -> None:
    """``--workers``, ``--scheduler``, ``--state``: ``--lengths`` in chunks (module
    docstring)."""
    p.add_argument(
        "--workers",
        type=integer(minimum=0, maximum=1024),
        default=None,
        metavar="K",
        help="--lengths in chunks of lengths on an embedded Dask LocalCluster of K worker "
        "processes (0: in this process); --time-limit and --max-nodes are then per chunk",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="--lengths in chunks on an existing Dask scheduler, tcp://host:8786 (refused, "
        "with nothing written, if it does not answer within 20 s)",
    )
    p.add_argument(
        "--state",
        metavar="DIR",
        help="--lengths in chunks, each finished chunk kept in DIR; a rerun with the same "
        "model, language, lengths and budget skips the chunks DIR holds (in this process "
        "unless --workers or --scheduler says otherwise)",
    )


def check_horizon_flags(args) -> None:
    """Refuse chunk flags without ``--lengths`` and contradictory ones (exit 2)."""
    chunked = [f for f in ("workers", "scheduler", "state") if getattr(args, f) is not None]
    if chunked and args.lengths is None:
        raise InputError(
            f"--{chunked[0]} without --lengths",
            where=f"--{chunked[0]}",
            expected="--lengths A:B (a single --n runs in this process)",
        )
    if args.workers is not None and args.scheduler is not None:
        raise InputError(
            "--workers and --scheduler together",
            where="--workers",
            expected="--workers K for an embedded cluster, or --scheduler for an existing one",
        )
    if args.state is not None:
        from attncert.io import check_output_dir

        check_output_dir(args.state, where="--state")


CHUNK_STATS = ("chunks", "ran", "resumed", "lost", "cut_by_time", "where")


def _chunk_line(run: dict, state) -> str:
    parts = [f"{run['chunks']} chunks of lengths: {run['ran']} run ({run['where']})"]
    if state:
        parts.append(f"{run['resumed']} resumed from {state}")
    if run["lost"]:
        parts.append(f"{run['lost']} lost (undecided; a rerun runs them again)")
    if run["cut_by_time"]:
        parts.append(f"{run['cut_by_time']} cut short by --time-limit")
    return ", ".join(parts)


def _runs(xs) -> str:
    return ", ".join(f"[{a}, {'∞' if b is None else b}]" for a, b in xs) or "none"


def run_lengths(args, model, lang, lengths, source) -> int:
    """Run the horizon pipeline and print its report (module docstring)."""
    from attncert.soft.horizon import refusal, verify_lengths, witness_json

    lo, hi = lengths
    why = refusal(model, lang, lo, hi)
    if why:
        raise UnsupportedError(why, where="--lengths")
    progress = None
    if not (args.quiet or args.json) and sys.stderr.isatty():

        def progress(pat, nodes):
            print(f"\r… {nodes} nodes, at n = {pat.lo}", end="", file=sys.stderr)

    budget = {"time_limit": args.time_limit, "max_nodes": args.max_nodes, "source": source}
    chunked = any(getattr(args, f, None) is not None for f in ("workers", "scheduler", "state"))
    if chunked:
        from attncert.soft.horizon.parallel import verify_lengths_parallel

        def chunk_done(done, total, chunk):
            print(
                f"\r… {done}/{total} chunks, [{chunk[0]}, {chunk[1] or '∞'}]",
                end="",
                file=sys.stderr,
            )

        out = verify_lengths_parallel(
            model,
            lang,
            lo,
            hi,
            workers=args.workers or 0,
            scheduler=args.scheduler,
            state=args.state,
            progress=chunk_done if progress is not None else None,
            **budget,
        )
    else:
        out = verify_lengths(model, lang, lo, hi, progress=progress, **budget)
    if progress is not None:
        print(file=sys.stderr)
    if args.output:
        from attncert.io import write_json

        write_json(args.output, out.certificate)
    r = out.report
    if not r.accepted:
        stale = out.stats.get("resumed", 0)
        raise InputError(  # the kernel refused what the search produced: a bug, say so
            "the kernel rejected the horizon certificate: "
            + "; ".join(map(str, r.failures))
            + (
                f" ({stale} chunks were read from --state {args.state}: remove them to "
                "search them again)"
                if stale
                else ""
            )
        )
    run = {k: out.stats[k] for k in CHUNK_STATS if k in out.stats}
    if args.json:
        print_json({**out.to_dict(), **({"chunks": run} if run else {}), "output": args.output})
    else:
        m = out.certificate["model"]["name"]
        print(f"length horizon of {m} on {lang.name}, n ∈ [{lo}, {'∞' if hi is None else hi}]")
        print(f"  proved right on every string: {_runs(r.proved)}")
        print(f"  refuted (a misclassified string): {_runs(r.refuted)}")
        print(f"  undecided: {_runs(r.undecided)}")
        print(f"  proved_up_to: {r.proved_up_to}   first_refuted: {r.first_refuted}")
        if r.witness is not None:
            w = witness_json(r.witness)
            text = w if isinstance(w, str) else " ".join(f"{s}^{k}" for s, k in w)
            print(f"  witness at n = {r.first_refuted}: {text}")
        print(
            f"  {len(out.certificate['nodes'])} nodes; search {out.search_seconds:.1f} s, "
            f"kernel check {out.check_seconds:.1f} s"
        )
        if run:
            print("  " + _chunk_line(run, args.state))
        print(f"{out.verdict}: " + "; ".join(r.facts))
        if args.output:
            print(f"certificate written to {args.output}")
    return Verdict(out.verdict).exit_code
