"""``attncert soft-certify MODEL --n 1024``: a certified soft restriction and B(n).

Builds one soft certificate for a softmax model at length n (attncert.soft.certified)
and has it re-derived by the independent checker (attncert.kernel.soft.checker):

* B(n), a sound bound on |Δlogit| when one input symbol changes, over every string;
* Theorem 6's certified cross-entropy floor (PARITY on {0,1}ⁿ; the 2-Dyck bracket-type
  sub-task for a next-symbol model over ()[]);
* with ``--restriction`` (the default) a restriction ρ fixing some positions whose
  decision is certified constant over *all* completions (as many free positions as the
  search finds within ``--time-limit``) and two completions that differ in
  ``--language`` membership, their logits decided in arb: the model is wrong on one.
  ``--restriction-method``: ``affine`` (affine forms in the free positions around a
  base completion — keeps correlations through LayerNorm and later layers), ``box``
  (interval propagation), or ``auto`` (the default: affine where it applies, then box).
  A progress bar shows the free positions certified so far (``--quiet``, ``--json`` or a
  stderr that is not a terminal turn it off).

    attncert soft-certify zoo:soft_parity_lm --n 1024 -o cert.json
    attncert soft-check cert.json

Verdicts (attncert.verdicts, and exit status): CERTIFIED (0: checked, a free position,
and the pair); CERTIFIED-TRIVIAL (4: checked, but no restriction with a free position or
no pair of different membership — nothing about misclassification); OUTSIDE-THEOREM (5:
checked, but a hypothesis of Lemma 5 fails — unbounded positional features, a
temperature growing with n; the numbers hold at this n, the asymptotics do not apply);
REFUTED (1: the checker refused it); UNDECIDED (3: no certified restriction within the
time limit, or a logit whose sign arb could not decide); bad input exits 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attncert.cli.common import (
    RECORDED,
    add_json_flag,
    add_model_argument,
    language_help,
    load_model_arg,
    model_language,
    print_json,
)
from attncert.errors import InputError
from attncert.verdicts import Verdict

MAX_N = 1 << 14
#: the languages the pair search takes (names of attncert.languages.NAMES)
LANGUAGES = ("parity", "parity-odd", "dyck1", "dyck2", "majority", "first_last")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "soft-certify",
        help="certified soft restriction, B(n) and cross-entropy floor, checked independently",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model_argument(p)
    p.add_argument("--n", type=int, required=True, help="input length")
    p.add_argument(
        "--language",
        default=None,
        choices=LANGUAGES,
        metavar="L",
        help="membership that the misclassified pair must differ in: "
        + language_help(LANGUAGES, dfa=False)
        + f" (default: {RECORDED}; else dyck1 / dyck2 for a bracket alphabet; else parity)",
    )
    p.add_argument(
        "--no-restriction", action="store_true", help="only B(n) and the floor (no search)"
    )
    p.add_argument(
        "--time-limit", type=float, default=120.0, help="seconds for the restriction search"
    )
    p.add_argument(
        "--restriction-method",
        default="auto",
        choices=("auto", "affine", "box"),
        help="how a candidate restriction is certified (default auto)",
    )
    p.add_argument("--seed", type=int, default=0, help="search seed")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("-o", "--output", metavar="CERT", help="write the certificate (JSON)")
    add_json_flag(p)
    p.set_defaults(func=run)


def default_language(model) -> str:
    """The pair's language when ``--language`` is not given: the one the model records
    (a trained model's recipe, a compiled library formula's; refused, exit 2, when the
    pair search does not take it — unless the model has a hard head, which the soft
    certificate refuses first), else by the alphabet — dyck1 over ``()``, dyck2 over
    ``()[]`` — else parity."""
    soft = not any(h.kind.is_hard for layer in model.layers for h in layer.heads)
    language = model_language(model, LANGUAGES if soft else None, command="soft-certify")
    if language in LANGUAGES:
        return language
    return {"()": "dyck1", "()[]": "dyck2"}.get("".join(sorted(model.alphabet)), "parity")


def run(args: argparse.Namespace) -> int:
    from attncert.soft.certified.certify import certify_soft

    if not 1 <= args.n <= MAX_N:
        raise InputError(f"--n {args.n}", expected=f"1 ≤ n ≤ {MAX_N} (O(n²) memory per layer)")
    if not args.time_limit > 0:
        raise InputError(f"--time-limit {args.time_limit}", expected="a positive number")
    if args.output:
        out = Path(args.output)
        if out.is_dir():
            raise InputError(f"-o {args.output!r} is a directory", expected="a file path")
        if out.parent.exists() and not out.parent.is_dir():
            raise InputError(f"-o {args.output!r}: {out.parent} is not a directory")
    model = load_model_arg(args.model)
    source = args.model if args.model.startswith("zoo:") else str(Path(args.model).resolve())
    bar = None
    if not (args.quiet or args.json or args.no_restriction) and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=args.n, desc="free positions", unit="pos", file=sys.stderr, leave=False)

    def progress(free: int, calls: int) -> None:
        bar.n = free
        bar.set_postfix(propagations=calls, refresh=False)
        bar.refresh()

    try:
        res = certify_soft(
            model,
            args.n,
            source=source,
            restriction=not args.no_restriction,
            language=args.language or default_language(model),
            time_limit=args.time_limit,
            seed=args.seed,
            restriction_method=args.restriction_method,
            progress=progress if bar is not None else None,
        )
    finally:
        if bar is not None:
            bar.close()
    verdict = res.verdict
    if args.output:
        res.certificate.save(args.output)
    cert = res.certificate
    if args.json:
        print_json(
            {
                "verdict": verdict,
                "reasons": list(res.outside),
                "certificate": cert.to_dict(),
                "check": res.check.summary(),
                "notes": list(res.notes),
                "output": args.output,
            }
        )
        return Verdict(verdict).exit_code
    sens = res.sensitivity
    print(f"model {model.name} ({model.digest[:12]}…), n = {args.n}")
    print(
        f"B({args.n}) = {cert.sensitivity[0].bound:.6g}  ({sens.source}; "
        f"propagated {sens.propagated:.4g}, range cap {sens.cap:.4g})"
    )
    print(f"  {sens.diagnosis()}")
    for claim in cert.sensitivity:
        if claim.floor is not None:
            f = claim.floor
            what = "E[CE]" if f["kind"] == "parity" else "E[CE] − optimal"
            print(f"  Theorem 6 ({f['kind']}): {what} ≥ {f['nats']:.6g} nats (log 2 = 0.6931)")
    if cert.restriction is not None:
        r = cert.restriction
        free = r.rho.count("*")
        rho = r.rho if len(r.rho) <= 64 else r.rho[:30] + "…" + r.rho[-30:]
        print(
            f"restriction: {free}/{args.n} positions free ({100 * free / args.n:.1f} %), every "
            f"completion {'accepted' if r.decision else 'rejected'}, certified logit range "
            f"[{r.z_range[0]:.4g}, {r.z_range[1]:.4g}] ({r.method} propagation)"
        )
        print(f"  ρ = {rho}")
    if cert.pair is not None:
        a, b = cert.pair.strings
        print(
            f"pair differing in {cert.pair.language}: both {'accepted' if cert.pair.decision else 'rejected'}"
            f" (arb, {'/'.join(map(str, cert.pair.precisions))} bits): the model is wrong on one of\n  {_short(a)}\n  {_short(b)}"
        )
    for note in res.notes:
        print(f"note: {note}")
    print(("CHECKED: " if res.check.accepted else "") + res.check.summary().split(": ", 1)[-1])
    if args.output:
        print(f"certificate written to {args.output}")
    for reason in res.outside:
        print(f"outside Lemma 5: {reason}")
    print(f"verdict: {verdict}")
    return Verdict(verdict).exit_code


def _short(s: str) -> str:
    return s if len(s) <= 64 else s[:30] + "…" + s[-30:]
