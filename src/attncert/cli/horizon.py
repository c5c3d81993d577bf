"""``attncert verify MODEL --lengths A:B``: the length horizon (issue 40) — every length of
[A, B] at which the model is proved right on every string, the first at which it is wrong
(with a witness, run-length encoded when long), and what stays undecided; one certificate,
re-checked by the kernel (:mod:`attncert.kernel.horizon.checker`).

    attncert verify zoo:trained_hard_first_last --language first_last --lengths 1:1000000
    attncert verify model.json --lengths 1:inf --json -o horizon.json

Exit status: 0 when all of [A, B] is proved (CERTIFIED), 1 when some length is refuted
(REFUTED), 3 otherwise (UNDECIDED); 2 for what the horizon cannot handle (A > B, a
non-integer bound, a language whose membership a pattern cannot pin down, a language not
over the model's alphabet, a learned position table, a mean readout), refused before any
work.
"""

from __future__ import annotations

import sys

from attncert.cli.common import print_json
from attncert.errors import InputError, UnsupportedError
from attncert.verdicts import Verdict


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

    out = verify_lengths(
        model,
        lang,
        lo,
        hi,
        time_limit=args.time_limit,
        max_nodes=args.max_nodes,
        source=source,
        progress=progress,
    )
    if progress is not None:
        print(file=sys.stderr)
    if args.output:
        from attncert.io import write_json

        write_json(args.output, out.certificate)
    r = out.report
    if not r.accepted:
        raise InputError(  # the kernel refused what the search produced: a bug, say so
            "the kernel rejected the horizon certificate: " + "; ".join(map(str, r.failures))
        )
    if args.json:
        print_json({**out.to_dict(), "output": args.output})
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
        print(f"{out.verdict}: " + "; ".join(r.facts))
        if args.output:
            print(f"certificate written to {args.output}")
    return Verdict(out.verdict).exit_code
