"""``attncert lll``: check every quantitative step of Hahn's Depth Reduction Lemma.

    attncert lll --c 1 --H 2 --C 1 --C-prime 0.5 [--eta 1/8 --q 2/9 --delta 1/2] [--json]

Prints each claim of :mod:`attncert.symbolic.claims` — every displayed equation (4)–(12) of
the main text's proof of Lemma 4 and (1)–(33) of the supplement S1, and the quantitative
sentences between them — with ✓/✗/?, the text as printed, what is checked, the displays it
covers and the lines it follows from, its version and source, the general verdict (all
admissible parameters) and the verdict at the given parameters, with the evidence (sympy
proof, rigorous counterexample, cited theorem, exhaustive finite check); then one line per
display with its verdict as printed, the counts (claims, proved, cited, refuted, undecided)
in general and at the parameters, and the constants k (for (12), both versions of f) and N
(for (11)) with their re-checks. Give at most two of η, q, δ; the
rest is solved exactly from Definition 5 (default: η = (1−r)/4, q = 2s/3, δ = ½).

Note: ``stage3.independent-events[as written]`` (Hahn's "≤ d dependencies ⇒ ≥ k/d
independent events") is refuted at *every* parameter choice (witness: k = ⌊d⌋+1 mutually
dependent events), and so are ``stage2.subsequence-exists[paper]`` (§5.1's "such a
subsequence exists unless n ≤ ck"; witness: all activations read x₁) and, for c = k = 1,
``stage3.neighbour-events[paper]`` (§5.1 counts neighbouring *heads* in f, each has up to
2^c events), so plain runs exit 1; the repaired ``…[refined]``, S1's Lemma 9 and S1's
per-tuple neighbours hold. Use ``--ignore CLAIM_ID`` to leave
known-false steps out of the exit status.

Exit status: 0 if no claim is refuted at the given parameters and the constants re-check;
1 if some claim is refuted *at these parameters* (a claim refuted only for other parameters
shows ✗ in the "general" column but does not change the exit status); 2 for bad parameters
(e.g. η ≥ ½, q ∉ (0,1), C′ ≥ C, Definition 5 unsatisfiable). "unknown"/"cited" never fail.
"""

from __future__ import annotations

import argparse
import json

from attncert import limits
from attncert.cli.args import integer, rational_text
from attncert.errors import InputError
from attncert.symbolic.params import lll_params
from attncert.symbolic.runner import check_claims


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "lll",
        help="check the Lovász-Local-Lemma steps and constants of Hahn's Lemma 4",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--c",
        type=integer(
            minimum=1,
            maximum=limits.LLL_MAX_C,
            reason="k for (12) has about 5c bits; beyond 4096 bits it is refused",
        ),
        required=True,
        help="the model is a c-transformer",
    )
    p.add_argument(
        "--H",
        type=integer(minimum=1, maximum=limits.LLL_MAX_H),
        required=True,
        help="attention heads per layer",
    )
    p.add_argument(
        "--C",
        type=rational_text,
        required=True,
        help="free fraction before (0 < C ≤ 1), e.g. 1 or 9/10",
    )
    p.add_argument(
        "--C-prime",
        dest="C_prime",
        type=rational_text,
        required=True,
        help="free fraction after (< C)",
    )
    p.add_argument("--eta", type=rational_text, default=None, help="η ∈ (0, 1/2) (rational)")
    p.add_argument("--q", type=rational_text, default=None, help="q ∈ (0, 1) (rational)")
    p.add_argument("--delta", type=rational_text, default=None, help="δ > 0 (rational)")
    p.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CLAIM_ID",
        help="do not count this claim's refutation in the exit status (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    params = lll_params(args.c, args.H, args.C, args.C_prime, args.eta, args.q, args.delta)
    report = check_claims(params)
    ignore = tuple(args.ignore)
    unknown = sorted(set(ignore) - {r.claim.id for r in report.results})
    if unknown:
        raise InputError(f"unknown claim id(s) {unknown}", where="--ignore", expected="a claim id")
    code = report.exit_code_ignoring(ignore)
    if args.json:
        d = report.as_dict()
        d["exit_code"] = code
        d["ignored"] = list(ignore)
        print(json.dumps(d, indent=1, ensure_ascii=False))
        return code
    pr = params
    print(
        f"Hahn (2020) Lemma 4 at c={pr.c}, H={pr.H}, C={pr.C}, C′={pr.C_prime}, "
        f"η={pr.eta}, q={pr.q}, δ={pr.delta}   [general | at these parameters]"
    )
    for r in report.results:
        cm = r.concrete.mark if r.concrete else " "
        cv = r.concrete.value if r.concrete else ""
        cl = r.claim
        print(f"{r.general.mark} {cm}  {cl.id}  [{cl.version.value}]")
        if cl.printed:
            print(f"      as printed: {cl.printed}")
        print(f"      checked: {cl.statement}")
        if cl.displays:
            print(f"      displays: {', '.join(cl.displays)}")
        if cl.follows_from:
            print(f"      follows from: {'; '.join(cl.follows_from)}")
        print(f"      source: {'; '.join(str(s) for s in cl.source)}")
        print(f"      general: {r.general.value} — {r.general_evidence[:200]}")
        print(f"      here:    {cv} — {r.concrete_evidence[:200]}")
    print()
    print("displayed equations and quoted steps (as printed):")
    for d in report.displays():
        claims = ", ".join(d["claims"]) if d["claims"] else "—"
        print(f"  {d['verdict']:>10}  {d['label']:<36} {claims}")
    for which, label in (("general", "in general"), ("concrete", "at these parameters")):
        ct = report.counts(which)
        print(
            f"claims {label}: {ct['claims']} — proved {ct['proved']}, cited {ct['cited']}, "
            f"refuted {ct['refuted']}, undecided {ct['undecided']}"
        )
    for version in ("paper", "supplement"):
        blk = report.constants[version]
        ch = blk["checks"]
        print(
            f"constants [{version} f]: k(12) = {blk['k_eq12']} (holds: {ch['eq12_at_k_eq12']}, "
            f"at k−1: {ch['eq12_at_k_eq12_minus_1']}), k(Stage 2) = {blk['k_stage2']}, "
            f"k((11) feasible) = {blk['k_eq11']}, k = {blk['k']}; N(11) = {blk['N_eq11']} "
            f"(holds: {ch['eq11_at_N']}, at N−1: {ch['eq11_at_N_minus_1']}); "
            f"c(2^c kH + 1) = {blk['c_next']}"
        )
    refuted = [r.claim.id for r in report.refuted]
    print("refuted at these parameters: " + (", ".join(refuted) if refuted else "none"))
    if ignore:
        print("ignored for the exit status: " + ", ".join(ignore))
    return code
