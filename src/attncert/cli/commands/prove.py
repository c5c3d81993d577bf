"""``attncert prove FORMULA --max-len N``: bounded agreement proof (z3 + interval arithmetic).

    attncert prove "Q_a S Q_b" --alphabet abc --max-len 100 --jobs 2
    attncert prove parity-odd --library --max-len 64 --smt2-dir queries/
    attncert prove "Q_a U Q_b" --model since.json --max-len 8     # exit 1: counterexample
    attncert prove "ODD(#<[Q_1])" --regime unbounded --max-len 32 --positions last --json
    attncert prove "Q_1 S Q_0" --max-len 200 --dask --jobs 2        # lengths as Dask tasks
    attncert prove "Q_1 S Q_0" --max-len 400 --scheduler tcp://scheduler:8786
    attncert prove "prev Q_1" --alphabet 01 --all-lengths -o prev.cert.json   # every n ≥ 1
    attncert prove dyck2 --library --all-lengths      # Theorem 26, every length

Proves, for every length n ≤ N, that the soft transformer's rounded output at its
designated coordinate equals FORMULA at every position (``--positions last``: at the last
one). Without ``--model`` the formula is compiled in ``--regime``. Verdict and exit
status: CERTIFIED 0 (proved), REFUTED 1 (a counterexample, re-checked by interval
evaluation), UNDECIDED 3 (time-out or a length the decomposition cannot settle); 2 bad
input, 130 interrupted. ``--json`` carries the verdict and the prover's ``outcome``.

``--all-lengths`` proves the statement for *every* length n ≥ 1 instead (Yang et al.'s
constructions, compiled models only; :mod:`attncert.prove.all_lengths`): closed-form
error bounds per head checked for all n ≥ N₀ by the trusted kernel
(:mod:`attncert.kernel.all_lengths.checker`), the bounded proof for n < N₀. CERTIFIED 0 only when
every part is checked ("for all n ≥ 1"); otherwise the output says up to which N the
statement is proved and which bound fails at which n: UNDECIDED 3, or REFUTED 1 with a
counterexample confirmed by interval evaluation. A model outside the supported
constructions is refused (exit 2). ``-o FILE`` writes the certificate
(``attncert check FILE`` re-checks it).

``attncert prove dyck2 --library --all-lengths`` (also ``dyck3``, ``dyck4``): Theorem 26
for every length on the Appendix-E program's softmax simulation — the hypotheses (gap,
activation bound, margin) derived from the weights for every length
(:mod:`attncert.kernel.tieless.program`), the error majorants C·N^a from N₀ on
(:mod:`attncert.kernel.tieless.checker`), every shorter input exhaustively. That the
program decides Dyck-k is the construction's proof, checked on every input of length ≤ 4
(REFUTED 1 if it fails there); the artifact ``proofs/yang2024/theorem26/
dyck2-program-all-lengths`` is what ``attncert check`` re-verifies.

Lengths are independent: ``--jobs K`` runs them in K local processes; ``--dask`` makes
each length a task on an embedded Dask LocalCluster of K workers, ``--scheduler ADDRESS``
on an existing cluster (needs the ``dask`` extra).
"""

from __future__ import annotations

import argparse
import sys

from attncert import limits
from attncert.cli.args import integer, seconds
from attncert.cli.common import MODEL_HELP, add_json_flag, load_model_arg, print_json
from attncert.kernel.verdict import bounded_proof, tieless

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
        help=f"prove every length 1..N (N ≤ {limits.PROVE_MAX_LEN}); required without "
        "--all-lengths",
    )
    p.add_argument(
        "--all-lengths",
        action="store_true",
        help="prove agreement for every length n ≥ 1 (compiled models; kernel-checked)",
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="with --all-lengths: write the certificate here"
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
    from attncert.logic import parse
    from attncert.logic.library import resolve
    from attncert.prove import prove_agreement

    if args.library and args.all_lengths:
        from attncert.compile.dyck import PROGRAMS

        if args.formula in PROGRAMS:
            return _program_all_lengths(args)
    if args.library:
        nf, note = resolve(args.formula)
        if note:
            print(f"attncert prove: note: {note}", file=sys.stderr)
        formula, alphabet = nf.formula, args.alphabet or nf.alphabet
    else:
        formula, alphabet = parse(args.formula), args.alphabet
    if args.all_lengths:
        return _all_lengths(args, formula, alphabet)
    if args.output:
        raise InputError("-o/--output is for --all-lengths certificates", where="--output")
    if args.max_len is None:
        raise InputError("--max-len is required", expected="--max-len N, or --all-lengths")
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
    verdict = bounded_proof(res.verdict).verdict  # the kernel's word for z3's answer
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


def _all_lengths(args: argparse.Namespace, formula, alphabet) -> int:
    import sys

    from attncert.errors import InputError
    from attncert.prove.all_lengths import prove_all_lengths
    from attncert.prove.all_lengths_certificate import save_certificate

    for flag, bad in (
        ("--max-len", args.max_len is not None),
        ("--min-len", args.min_len != 1),
        ("--positions last", args.positions != "all"),
        ("--coord", args.coord is not None),
        ("--dask/--scheduler", args.dask or args.scheduler is not None),
        ("--smt2-dir", args.smt2_dir is not None),
        ("--cross-check", args.cross_check != 0),
    ):
        if bad:
            raise InputError(
                f"{flag} does not apply to --all-lengths (it proves every length, at every "
                "position, at the compiled model's designated coordinate)",
                where=flag.split()[0],
            )
    if args.output:
        from attncert.io import check_output_path

        check_output_path(args.output, "--output")
    model = load_model_arg(args.model) if args.model else None
    source = None
    if args.model and args.model.startswith("zoo:"):
        source = {"zoo": args.model[4:]}
    elif args.model:
        from pathlib import Path

        source = {"path": str(Path(args.model).resolve())}
    res = prove_all_lengths(
        formula,
        model,
        regime=args.regime,
        alphabet=alphabet,
        jobs=args.jobs,
        timeout=args.timeout,
        model_source=source,
        progress=not args.no_progress and not args.json and sys.stderr.isatty(),
    )
    verdict = bounded_proof(res.verdict).verdict  # proved / counterexample / rejected / partial
    if args.output and res.certificate is not None:
        save_certificate(res.certificate, args.output)
    if args.json:
        print_json({**res.to_dict(), "verdict": verdict.value})
        return verdict.exit_code
    print(f"{res.formula!r} on {res.model}: every position, every length")
    cert = res.certificate
    if cert is not None and res.kernel is not None:
        print(
            f"  n ≥ {cert.n0}: trusted kernel, {len(cert.gadgets)} gadgets, "
            f"{len(cert.inequalities)} closed-form error bounds"
            + (" — accepted" if res.kernel.accepted else " — REJECTED")
        )
        for q in cert.inequalities:
            print(f"    {q['id']} ({q['what']}): {q['text']}")
        for fl in res.kernel.failures:
            print(f"    ! {fl.line()}")
    if res.bounded is not None:
        b = res.bounded
        print(f"  n ≤ {b.max_len}: bounded z3 proof, {b.verdict}")
    for fl in res.failures:
        print(f"  ! bound {fl.line()}")
    if res.counterexample:
        c = res.counterexample
        print(
            f"  counterexample {c['string']!r} at position {c['position']}: formula "
            f"{c['formula_value']}, model {c['model_value']} (confirmed by interval evaluation)"
        )
    for note in res.notes:
        print(f"  note: {note}")
    if args.output and res.certificate is not None:
        print(f"  certificate written to {args.output} (attncert check {args.output})")
    print(f"{verdict.value}: {res.statement} ({res.seconds:.2f} s)")
    return verdict.exit_code


def _program_all_lengths(args: argparse.Namespace) -> int:
    """``attncert prove dyck2 --library --all-lengths``: Theorem 26 for every length on the
    library program's softmax simulation — H1–H3 derived from the weights and the error
    majorants from N₀ on (:mod:`attncert.kernel.tieless.program`,
    :mod:`attncert.kernel.tieless.checker`), every shorter input exhaustively."""
    import time

    from attncert.compile.dyck import PROGRAMS, dyck_soft_model
    from attncert.compile.tieless import to_average_hard
    from attncert.compile.tieless_all_lengths import all_lengths_certificate, diagnose
    from attncert.errors import InputError, ParameterError
    from attncert.kernel.tieless import checker as K
    from attncert.languages import language
    from attncert.model.spec import AttentionKind
    from attncert.proofcheck.kinds.tieless_simulation import short_inputs

    for flag, bad in (
        ("--output", args.output is not None),
        ("--max-len", args.max_len is not None),
    ):
        if bad:
            raise InputError(
                f"{flag} does not apply to a library program's all-length proof (the proof "
                "artifact proofs/yang2024/theorem26/ is what `attncert check` re-verifies)",
                where=flag,
            )
    t0 = time.perf_counter()
    k = PROGRAMS[args.formula]
    if args.model:  # e.g. the program's simulation with an edited temperature
        soft = load_model_arg(args.model)
    else:
        soft = dyck_soft_model(k, name=f"{args.formula} [program]").model
    lang = language(f"dyck{k}")
    if any(h.kind is not AttentionKind.SOFTMAX for layer in soft.layers for h in layer.heads):
        raise InputError(
            f"model {soft.name!r} has heads that are not softmax: Theorem 26 is about the "
            "softmax simulation of the program",
            where="--model",
            expected=f"a softmax simulation of the {args.formula} program (e.g. "
            "zoo:dyck2_program_soft), or no --model",
        )
    if set(soft.alphabet) != set(lang.alphabet):
        raise InputError(
            f"model {soft.name!r} reads {''.join(soft.alphabet)!r}, not Dyck-{k}'s brackets",
            where="--model",
            expected=f"a softmax simulation of the {args.formula} program",
        )
    hard = to_average_hard(soft)
    why = ""
    diagnosis = None
    try:
        cert = all_lengths_certificate(soft)
    except ParameterError as err:
        cert, why = None, str(err)
        diagnosis = diagnose(soft)
    report = K.check(cert, soft) if cert is not None else None
    exhaustive = 4
    fails, wrong = short_inputs(hard, soft, lang, exhaustive)
    ok = report is not None and report.accepted and not fails
    refuted = bool(wrong) or (diagnosis is not None and diagnosis.counterexample is not None)
    verdict = tieless(report, short_failures=bool(fails), counterexample=refuted).verdict
    statement = (
        f"the softmax model decides exactly as the Appendix-E program on every input of every "
        f"length n ≥ 1 (Theorem 26: n ≤ {exhaustive} exhaustively, every N ≥ "
        f"{report.n0 if report else '?'} tokens by the kernel; H1–H3 derived from the weights). "
        f"That the program decides Dyck-{k} is the construction's proof: checked here on every "
        f"input of length ≤ {exhaustive}"
        + (f" — and the program is WRONG there, e.g. on {wrong[0]!r}" if wrong else "")
        if ok
        else "no all-length statement: "
        + (why if report is None else "; ".join(report.failures))
        + ("" if diagnosis is None else f" — {diagnosis.note}")
    )
    out = {
        "program": args.formula,
        "model": soft.name,
        "verdict": verdict.value,
        "statement": statement,
        "n0_tokens": None if cert is None else cert["n0_tokens"],
        "certificate": cert,
        "hypotheses": None
        if report is None or report.derived is None
        else list(report.derived.heads),
        "exhaustive_max_len": exhaustive,
        "wrong_on": wrong[:5],
        "first_failing_n": None if diagnosis is None else diagnosis.first_failing_n,
        "counterexample": None if diagnosis is None else diagnosis.counterexample,
        "failures": fails,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if args.json:
        print_json(out)
        return verdict.exit_code
    print(f"{soft.name}: Theorem 26 at every length")
    if report is not None:
        for head in report.derived.heads if report.derived else ():
            print(f"  H1: {head}")
        if cert is not None:
            print(
                f"  H2: every hard activation ≤ {cert['facts']['activation']['coef']}·N^3 "
                f"for N ≥ {cert['n0_tokens']}; H3: logit margin {cert['facts']['margin']}"
            )
            for li, st in enumerate(cert["steps"]):
                bound = "0 (exact)" if st["power"] is None else f"{st['coef']}·N^{st['power']}"
                print(f"  layer {li}: |soft − hard| ≤ {bound}")
        print(f"  kernel: {report.summary()}")
    for f in fails:
        print(f"  ! {f}")
    print(f"{verdict.value}: {statement} ({out['seconds']:.2f} s)")
    return verdict.exit_code
