"""``attncert certify [MODEL] --language L --n N``: find and check a restriction
certificate (Hahn 2020, Theorem 1 and Corollary 2 on one model and one length).

    attncert certify                                  # trained_hard_first_last, PARITY, n = 256
    attncert certify zoo:trained_dyck1 --n 64         # the language it records: dyck1
    attncert certify zoo:anbn --language anbn --n 64
    attncert certify model.json --language dyck1 --n 1024 --method maxsat -o cert.json
    attncert certify --n 4096 --json

The search (SAT/MaxSAT or the paper's random restriction) is untrusted; every claim
is re-derived by the trusted kernel (:mod:`attncert.kernel.hard.checker`) before a verdict is
printed. A model with softmax heads is certified in its hardened form (each softmax
head replaced by argmax attention; ``--no-harden`` refuses it instead): Theorem 1 is
about hard attention, and the output says which model the certificate is for.

Verdicts and exit status (see README, "Trust and honest limits"): 0 CERTIFIED,
4 CERTIFIED-TRIVIAL (no free position, no witness that the model is not constant at n,
or no misclassified pair), 5 OUTSIDE-THEOREM
(checked, but e.g. average-hard heads or a failed paper invariant), 1 REFUTED / no
certificate, 3 UNDECIDED (precision cap or solver time-out), 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction

from attncert import limits
from attncert.cli.args import integer, rational, seconds
from attncert.cli.common import (
    MODEL_HELP,
    RECORDED,
    add_json_flag,
    check_language_name,
    language_help,
    load_model_arg,
    model_language,
    print_json,
)
from attncert.errors import InputError, SolverTimeout

DEFAULT_MODEL = "zoo:trained_hard_first_last"
SOFT_PAIR_AUTO_N = 1024  # --soft-pair auto: the soft model's arb pass up to this n


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "certify",
        help="find and check a restriction certificate (Hahn 2020, Theorem 1)",
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
        default=None,
        help=language_help(dfa=False) + f" (default: {RECORDED}, else parity; with no "
        f"MODEL, parity: the bundled {DEFAULT_MODEL} against PARITY, Theorem 1's language)",
    )
    p.add_argument(
        "--n",
        type=integer(
            minimum=1,
            maximum=limits.certify_max_n(),
            reason=f"memory grows like {limits.CERTIFY_BYTES_PER_PAIR}·n² bytes; "
            f"budget {limits.MEMORY_BUDGET // limits.GiB} GiB",
        ),
        default=256,
        help="input length (default 256)",
    )
    p.add_argument(
        "--method", choices=["maxsat", "sat", "random"], default="maxsat", help="Stage 3 back-end"
    )
    p.add_argument(
        "--k",
        type=integer(
            minimum=1,
            maximum=limits.CERTIFY_MAX_K,
            reason="the encoding's cardinality constraints grow with k",
        ),
        default=1,
        help="top-k of the proof's satisfaction (default 1)",
    )
    p.add_argument("--eta", type=rational, default=Fraction(1, 20))
    p.add_argument("--q", type=rational, default=Fraction(1, 10))
    p.add_argument("--delta", type=rational, default=Fraction(1, 2))
    p.add_argument("--no-paper-stages", action="store_true", help="skip Stages 1–2 (search only)")
    p.add_argument(
        "--time-limit",
        type=seconds,
        default=120.0,
        help="seconds (> 0) for the Stage 3 solvers together (a solver that hits its share "
        "returns its best restriction so far, reported as not proved optimal)",
    )
    p.add_argument("--seed", type=integer(minimum=0, maximum=2**63 - 1), default=0)
    p.add_argument(
        "--no-harden",
        action="store_true",
        help="refuse a model with softmax heads instead of certifying its hardened version",
    )
    p.add_argument(
        "--soft-pair",
        choices=["auto", "on", "off"],
        default="auto",
        help="for a hardened model: decide the misclassified pair on the soft model too, "
        "rigorously in arb (auto: when n ≤ 1024; it costs O(n²) arb operations per string)",
    )
    p.add_argument("-o", "--output", help="write the certificate JSON here (atomically)")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from attncert.hard.certificate import certificate_to_dict, save_certificate
    from attncert.hard.checker import check
    from attncert.hard.pipeline import CertificationFailed, certify
    from attncert.hard.verdict import assess
    from attncert.io import check_output_path
    from attncert.kernel.verdict import not_found
    from attncert.model import harden

    if args.output:
        check_output_path(args.output, "-o")
    language = None if args.language is None else check_language_name(args.language, dfa=False)
    spec = args.model or DEFAULT_MODEL
    model = load_model_arg(spec)
    if language is None:  # the model's own language; the bundled demo is against PARITY
        recorded = None if args.model is None else model_language(model, command="certify")
        language = recorded or "parity"
    limits.check_certify_size(model.n_tokens(args.n))
    source = model_source(spec, args.output)
    soft = None
    if not model.is_hard:
        if args.no_harden:
            raise InputError(
                f"model {model.name!r} has softmax heads and --no-harden was given",
                expected="a hard-attention model (or drop --no-harden to certify its hardened version)",
            )
        soft, model = model, harden(model)
        source["harden"] = "leftmost"
    bar = tqdm(
        total=model.num_layers,
        desc=f"certify n={args.n}",
        unit="layer",
        file=sys.stderr,
        disable=args.json or not sys.stderr.isatty(),
        leave=False,
    )

    def progress(msg: str) -> None:
        if msg.startswith("layer ") and msg != "layer 1/" + str(model.num_layers):
            bar.update(1)
        bar.set_postfix_str(msg)

    try:
        cert = certify(
            model,
            verify=False,
            model_source=source,
            n=args.n,
            language=language,
            method=args.method,
            k=args.k,
            eta=args.eta,
            q=args.q,
            delta=args.delta,
            paper_stages=not args.no_paper_stages,
            time_limit=args.time_limit,
            seed=args.seed,
            progress=progress,
        )
    except SolverTimeout as err:
        a = not_found(f"solver time-out: {err}")
        _no_certificate(args, a.verdict, a.reasons[0])
        return a.verdict.exit_code
    except CertificationFailed as err:
        a = err.assessment()  # a search that found nothing is UNDECIDED, never REFUTED
        _no_certificate(args, a.verdict, a.reasons[0])
        return a.verdict.exit_code
    finally:
        bar.close()
    report = check(cert, model)
    cert.trace["seconds_check"] = round(report.seconds, 3)
    assessment = assess(cert, model, report)
    if args.output and report.accepted:
        save_certificate(cert, args.output)
    summary = summarize(cert, assessment, report)
    if report.accepted:
        from attncert.hard.verdict import dependence_text

        summary["depends"] = dependence_text(cert, report)
        if soft is not None and (
            args.soft_pair == "on" or (args.soft_pair == "auto" and args.n <= SOFT_PAIR_AUTO_N)
        ):
            from attncert.hard.soft_pair import confirm_on_soft

            pair = confirm_on_soft(soft, cert)
            if pair is not None:
                summary["soft_pair"] = {**pair.to_dict(), "text": pair.sentence(language)}
    if args.json:
        print_json(
            {
                "verdict": assessment.verdict.value,
                "certificate": certificate_to_dict(cert),
                "summary": summary,
            }
        )
    else:
        print(render(cert, summary, assessment))
    return assessment.verdict.exit_code


def model_source(arg: str, output: str | None) -> dict:
    """Where the model of a certificate can be found again: ``{"zoo": NAME}``, or
    ``{"path": ...}`` relative to the certificate's folder (absolute without ``-o``)."""
    import os
    from pathlib import Path

    if arg.startswith("zoo:"):
        return {"zoo": arg[4:]}
    path = Path(arg).resolve()
    if output:
        folder = Path(output).resolve().parent
        try:
            return {"path": os.path.relpath(path, folder)}
        except ValueError:  # another drive (Windows)
            pass
    return {"path": str(path)}


def _no_certificate(args, verdict, message: str) -> None:
    if args.json:
        print_json({"verdict": verdict.value, "reason": message})
    print(f"attncert certify: {verdict.value}: {message}", file=sys.stderr)


def summarize(cert, assessment, report) -> dict:
    t = cert.trace
    return {
        "verdict": assessment.verdict.value,
        "reasons": list(assessment.reasons),
        "arithmetic": report.arithmetic,
        "model": cert.model_name,
        "n": cert.n,
        "language": cert.language,
        "free": cert.final_restriction.num_free,
        "free_fraction": cert.final_restriction.free_fraction,
        "output_dependency": [u + 1 for u in cert.output_dependency],
        "nonconstant": report.nonconstant,
        "fixed_dependence": [u + 1 for u in report.fixed_dependence],
        "witness": None if cert.witness is None else list(cert.witness.strings),
        "misclassified": None if cert.misclassified is None else list(cert.misclassified.strings),
        "seconds_search": t.get("seconds_search"),
        "seconds_check": t.get("seconds_check"),
    }


def render(cert, summary: dict, assessment) -> str:
    dep = summary["output_dependency"]
    lines = [
        f"{assessment.verdict.value} (independent checker): model {cert.model_name} "
        f"[{cert.model_sha256[:12]}], n = {cert.n}",
        *(f"  ! {r}" for r in assessment.reasons),
        f"  free positions: {summary['free']}/{cert.n} ({100 * summary['free_fraction']:.1f}%)",
        "  "
        + summary.get(
            "depends",
            f"the decision depends only on input positions {set(dep)}"
            if dep
            else "the decision is constant on the restriction (it depends on no input position)",
        ),
    ]
    if cert.witness is not None and summary.get("nonconstant"):
        w = cert.witness
        differ = [i + 1 for i, (x, y) in enumerate(zip(*w.strings, strict=True)) if x != y]
        lines.append(
            "  not constant: the model says "
            + " and ".join(
                f"{'accept' if d else 'reject'} on {_short(s)}"
                for s, d in zip(w.strings, w.decisions, strict=True)
            )
            + (f" (they differ only at position {differ[0]})" if len(differ) == 1 else "")
        )
    lines.append(f"  arithmetic: {summary['arithmetic']}")
    for layer in cert.trace.get("layers", []):
        inv = layer.get("invariants", [])
        held = sum(1 for i in inv if i["holds"])
        lines.append(
            f"  layer {layer['layer']}: {layer['free_after']} free, max dependency "
            f"{layer['max_dependency']}, paper invariants {held}/{len(inv)} hold"
            + (f", stage 3 {layer['stage3']['method']}" if "stage3" in layer else "")
            + (
                " (time limit hit: best restriction so far, not proved optimal)"
                if layer.get("stage3", {}).get("timeout")
                else ""
            )
        )
        for i in inv:
            if not i["holds"]:
                lines.append(
                    f"    ✗ {i['name']}: {i['value']} vs {i['relation']} {i['bound']:.4g} ({i['source']})"
                )
    if cert.misclassified is not None:
        m = cert.misclassified
        for s, mem, dec in zip(m.strings, m.membership, m.decisions, strict=True):
            tag = "WRONG" if mem != dec else "right"
            lines.append(
                f"  {tag}: model says {'accept' if dec else 'reject'}, {cert.language} says "
                f"{'member' if mem else 'non-member'}: {_short(s, 80)}"
            )
        if "soft_pair" in summary:
            lines.append(f"  {summary['soft_pair']['text']}")
    elif cert.note:
        lines.append(f"  note: {cert.note}")
    lines.append(f"  search {summary['seconds_search']} s, check {summary['seconds_check']} s")
    return "\n".join(lines)


def _short(s: str, width: int = 40) -> str:
    return s if len(s) <= width else s[: width // 2 - 1] + "…" + s[-(width // 2 - 1) :]
