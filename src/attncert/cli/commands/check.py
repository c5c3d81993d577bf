"""``attncert check PATH [MODEL]``: re-check any certificate the project writes, a
``proofs/`` tree or a report directory, with the trusted kernel — one check command.

PATH is dispatched on the JSON file's ``format`` field (:mod:`attncert.report.recheck`):
a restriction certificate (``certify -o``; :mod:`attncert.kernel.hard.checker`), a soft
certificate (``soft-certify -o``, ``sensitivity --certify --save``), a uniform one
(``sensitivity --save-uniform``), a verification tree (``verify -o``), an all-length
certificate (``prove --all-lengths -o``); or a directory: a report (``attncert report
-o DIR``: every certificate in it re-verified and printed with its verdict, cells not
finished reported as INCOMPLETE) or a ``proofs/`` tree (see :mod:`attncert.proofcheck`).
``soft-check`` and ``verify-check`` remain as the older names for their kinds.

    attncert check cert.json                 # the model the certificate names
    attncert check cert.json model.json      # or an explicit model
    attncert check cert.json zoo:random-L2-H2-d16 --json
    attncert check proofs/
    attncert check prev.cert.json            # an all-length certificate (prove --all-lengths)
    attncert check soft.json                 # soft, uniform or verify certificates too
    attncert check report/                   # a report directory (attncert report -o report/)

After the check, every statement of the supplement's formal proof (S1) that can be
re-derived on the instance is listed (``--no-s1`` skips this; :mod:`attncert.hard.s1_instance`).

Without MODEL, the certificate's ``model.source`` is used (a zoo name, a path relative
to the certificate, or an embedded model, hardened if it says so); either way the
model's content hash must equal the certificate's, or the certificate is rejected.

An all-length certificate (``attncert prove … --all-lengths -o FILE``) is re-checked by
:mod:`attncert.kernel.all_lengths.checker` for n ≥ N₀, and its bounded part (n < N₀) is proved
again by the z3 prover; CERTIFIED "for all n ≥ 1" needs both.

Exit status: the verdict's (0 CERTIFIED, 4 CERTIFIED-TRIVIAL, 5 OUTSIDE-THEOREM,
1 REFUTED — the reason names the claim, where and why — 3 UNDECIDED), 2 bad input; for
a report directory the worst verdict of its files (INCOMPLETE exits 3); for a proofs/
tree 0 when every artifact is re-derived, 1 otherwise.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from attncert.cli.common import add_json_flag, load_model_arg, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="re-check a certificate against its model, or a proofs/ directory",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "path", metavar="CERT|DIR", help="a certificate JSON file, or a proofs directory"
    )
    p.add_argument(
        "model", nargs="?", metavar="MODEL", help="the model (file or zoo:NAME); for a certificate"
    )
    p.add_argument(
        "--no-s1",
        action="store_true",
        help="skip re-deriving the supplement's S1 statements on the instance",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from attncert.report.recheck import is_report, kind_of

    path = Path(args.path)
    if is_report(path):
        return _check_report(path, args.json)
    if path.is_dir():
        return _check_tree(path, args.json)
    from attncert.io import read_json

    kind = kind_of(read_json(path), str(path))
    if kind == "all-lengths":
        return _check_all_lengths(path, args.model, args.json)
    if kind != "hard":
        return _check_other(path, args.model, args.json)
    from attncert.certificates.hard import load_certificate
    from attncert.certificates.locate import resolve_model
    from attncert.hard.checker import check  # the kernel's check, heads in threads
    from attncert.hard.verdict import assess

    cert = load_certificate(path)
    model = load_model_arg(args.model) if args.model is not None else resolve_model(cert, path)
    report = check(cert, model)
    assessment = assess(cert, model, report)
    s1 = ()
    if report.accepted and not args.no_s1:
        from attncert.hard.s1_instance import s1_statements

        s1 = s1_statements(cert, model)
    if args.json:
        print_json(
            {
                "verdict": assessment.verdict.value,
                "reasons": list(assessment.reasons),
                "accepted": report.accepted,
                "facts": list(report.facts),
                "failures": [f.__dict__ for f in report.failures],
                "arithmetic": report.arithmetic,
                "seconds": report.seconds,
                "s1": [st.to_dict() for st in s1],
            }
        )
    else:
        print(f"{assessment.verdict.value}: " + report.summary())
        for r in assessment.reasons:
            print(f"  ! {r}")
        if s1:
            names = sorted({st.statement for st in s1})
            print(
                f"supplement S1 on this instance, re-derived by the kernel ({len(names)} "
                "statements; ✓ holds, ✗ fails, · evaluated):"
            )
            for st in s1:
                print(f"  {st.line()}")
    return assessment.verdict.exit_code


def _check_other(path: Path, model_arg: str | None, as_json: bool) -> int:
    """A soft, uniform or verify certificate: re-derived, printed with its verdict."""
    from attncert.report.recheck import EXIT, check_certificate

    model = load_model_arg(model_arg) if model_arg is not None else None
    fc = check_certificate(path, model)
    if as_json:
        print_json(fc.to_dict())
    else:
        print(fc.line())
    return EXIT[fc.verdict]


def _check_report(path: Path, as_json: bool) -> int:
    """A report directory checked against its certificates (:mod:`attncert.report.directory`):
    each cell's verdict re-derived by the kernel, every edited, missing or stale file
    named; never CERTIFIED when nothing was checked."""
    from attncert.report.directory import check_report

    rc = check_report(path)
    if as_json:
        print_json(rc.to_dict())
    else:
        print("\n".join(rc.lines()))
    return rc.exit_code


def _check_tree(path: Path, as_json: bool) -> int:
    """Re-verify every artifact of a proofs/ tree; print the table (or JSON)."""
    import sys

    from attncert.proofcheck.cli import render
    from attncert.proofcheck.tree import check_tree

    interactive = not as_json and sys.stderr.isatty()
    report = check_tree(
        path, progress=(lambda name: print(f"… {name}", file=sys.stderr)) if interactive else None
    )
    if as_json:
        print_json(report.as_dict())
    else:
        print(render(report))
    if not report.results and not report.problems:  # nothing checked is never a pass
        print(
            f"attncert check: {path}: no proof artifact found: nothing was checked", file=sys.stderr
        )
        return 3
    return 0 if report.ok else 1


def _check_all_lengths(path: Path, model_arg: str | None, as_json: bool) -> int:
    """Kernel check of an all-length certificate, plus its bounded part again."""
    from attncert.certificates.all_lengths import load_certificate
    from attncert.certificates.locate import resolve_source
    from attncert.kernel.all_lengths.checker import check
    from attncert.kernel.verdict import all_lengths
    from attncert.prove.all_lengths import recheck_bounded
    from attncert.verdicts import Verdict

    cert = load_certificate(path)
    if model_arg is not None:
        model = load_model_arg(model_arg)
    else:
        model = resolve_source(cert.model_source, path, "model.source")
    report = check(cert, model)
    bounded = recheck_bounded(cert, model) if report.accepted else None
    verdict = all_lengths(report, None if bounded is None else bounded.verdict).verdict
    statement = {
        Verdict.CERTIFIED: "for all n ≥ 1",
        Verdict.UNDECIDED: "not proved (a comparison stayed undecided, or the bounded part)",
    }.get(verdict, "not proved")
    if as_json:
        print_json(
            {
                "verdict": verdict.value,
                "statement": statement,
                "accepted": report.accepted,
                "N0": cert.n0,
                "failures": [f.__dict__ for f in report.failures],
                "facts": list(report.facts),
                "bounded": None if bounded is None else bounded.verdict,
                "seconds": report.seconds,
            }
        )
        return verdict.exit_code
    print(f"{cert.formula_text!r} on {cert.model_name}: all-length certificate, N0 = {cert.n0}")
    print(f"  kernel (n ≥ {cert.n0}): {report.summary()}")
    for fl in report.failures:
        print(f"    ! {fl.line()}")
    if bounded is not None:
        print(f"  bounded z3 proof (n ≤ {cert.n0 - 1}) re-run: {bounded.verdict}")
    print(f"{verdict.value}: {cert.formula_text} {statement}")
    return verdict.exit_code
