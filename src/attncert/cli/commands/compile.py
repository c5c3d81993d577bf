"""``attncert compile FORMULA``: formula → softmax transformer (Yang et al. §4).

    attncert compile "ODD(#<[Q_1])" --alphabet 01 -o parity.json
    attncert compile "Q_a S Q_b" --regime unbounded --explain
    attncert compile "prev Q_1" --regime future-masked --json
    attncert compile parity-odd --library --explain
    attncert compile dyck2 --library --explain          # the Appendix-E program

FORMULA is formula text (see ``attncert.logic.parser``) or, with ``--library``, the
name of a library formula (its alphabet is used; the old name ``parity`` of
``parity-odd`` still works, with a note) or of a library program: ``dyck2``,
``dyck3``, ``dyck4`` build the Appendix-E program for Dyck-k as a uniform–tieless
average-hard transformer and, by Theorem 26, its softmax simulation (unbounded
encodings, β(N) ∝ log N checked on all inputs up to ``--max-len``; ``--average-hard``
writes the program itself). The model records per head the
hard-attention pattern, gap and temperature in its ``meta``, and the formula.

A library formula that defines a language of ``attncert.languages`` over the model's
alphabet (``parity-odd``, ``parity-odd-nopred``, ``majority``, ``dyck1``; formula text
equal to one of them over the same alphabet too) and a library program (``dyck2`` …)
record that language (``meta.language``): ``verify``, ``report`` and ``certify`` use it
when no ``--language`` is given. Odd parity is ``parity-odd``: the language ``parity``
is even parity.
"""

from __future__ import annotations

import argparse

from attncert.cli.common import add_json_flag, print_json


def register(sub: argparse._SubParsersAction) -> None:
    from attncert.compile.regime import REGIMES

    p = sub.add_parser(
        "compile",
        help="compile a temporal-logic formula into a softmax transformer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "formula", metavar="FORMULA", help="formula text, or a library name with --library"
    )
    p.add_argument(
        "--regime",
        default="temperature",
        choices=REGIMES,
        help="temperature (bounded PEs, β(N) grows), unbounded (unbounded PEs, "
        "β = 1), future-masked[-unbounded] (decoder style)",
    )
    p.add_argument("--alphabet", help="input symbols, e.g. 01 (default: the formula's atoms)")
    p.add_argument("--library", action="store_true", help="FORMULA names a library formula")
    p.add_argument("-o", "--output", help="write the model JSON here")
    p.add_argument(
        "--max-len",
        type=int,
        default=4,
        help="library programs: lengths on which Theorem 26's β(N) is certified (default 4)",
    )
    p.add_argument(
        "--average-hard",
        action="store_true",
        help="library programs: write the average-hard program, not its softmax simulation",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="print layers, heads, encodings and the designated output coordinate",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from attncert.compile import compile_formula
    from attncert.compile.dyck import PROGRAMS
    from attncert.compile.library import library_language, library_match
    from attncert.logic import parse
    from attncert.logic.library import resolve

    if args.output:
        from attncert.io import check_output_path

        check_output_path(args.output, "-o")

    if args.library and args.formula in PROGRAMS:
        return _program(args)
    if args.library:
        from attncert.errors import InputError
        from attncert.logic.library import LIBRARY, LIBRARY_NAMES

        if args.formula not in LIBRARY:
            raise InputError(
                f"no library formula or program {args.formula!r}",
                where="FORMULA",
                expected="one of " + ", ".join((*LIBRARY_NAMES, *PROGRAMS)),
            )
        nf, note = resolve(args.formula)
        if note:
            print(f"attncert compile: note: {note}", file=sys.stderr)
        formula, alphabet, name = nf.formula, args.alphabet or nf.alphabet, nf.name
        language = library_language(nf, alphabet)
    else:
        formula, alphabet, name = parse(args.formula), args.alphabet, None
        language = None
        if alphabet is not None:
            match = library_match(formula, alphabet)
            language = None if match is None else match.language
    model = compile_formula(
        formula,
        regime=args.regime,
        alphabet=alphabet,
        name=None if name is None else f"{name} [{args.regime}]",
        language=language,
    )
    meta = model.meta
    return _report(
        args,
        model,
        ("formula", "language", "regime", "alphabet", "readout", "nodes", "heads"),
        f"compiled {meta['formula']!r} [{meta['regime']}]",
    )


def _program(args: argparse.Namespace) -> int:
    from attncert.compile.dyck import program_model
    from attncert.errors import ParameterError, UnsupportedError

    if args.regime not in ("temperature", "unbounded"):
        raise UnsupportedError(
            f"library program {args.formula!r} in the {args.regime!r} regime",
            where="--regime",
            expected="the default: the program uses unbounded encodings (n·i, n·i², …) and "
            "Theorem 26's temperature",
        )
    if not 1 <= args.max_len <= 6:
        raise ParameterError(f"--max-len {args.max_len}", where="--max-len", expected="1…6")
    model = program_model(args.formula, soft=not args.average_hard, max_len=args.max_len)
    kind = "average-hard" if args.average_hard else "softmax (Theorem 26)"
    return _report(
        args,
        model,
        ("program", "language", "alphabet", "bos", "readout", "outputs", "heads", "tieless"),
        f"built {model.meta['program']} [{kind}]",
    )


def _report(args: argparse.Namespace, model, fields: tuple[str, ...], headline: str) -> int:
    """Save (``-o``), then print the JSON record (``--json``: the given meta ``fields`` plus
    shape, output path and digest), the explanation (``--explain``) or a one-line summary."""
    from attncert.compile import explain
    from attncert.model import save_model

    if args.output:
        save_model(model, args.output)
    meta = model.meta
    if args.json:
        record = {key: meta.get(key) for key in fields}
        record.update(
            {
                "d": model.d,
                "layers": model.num_layers,
                "output": args.output,
                "digest": model.digest,
            }
        )
        print_json(record)
        return 0
    if args.explain:
        print(explain(model))
    else:
        print(
            f"{headline}: {model.num_layers} layers, {len(meta['heads'])} heads, "
            f"d = {model.d}; output coordinate {meta['readout']['coord']}"
        )
        print(
            f"language: {meta['language']} (recorded; the default of verify, report, certify)"
            if meta.get("language")
            else "language: none recorded (no library language over this alphabet): pass "
            "--language to verify, report, certify"
        )
    if args.output:
        print(f"wrote {args.output}")
    return 0
