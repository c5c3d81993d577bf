"""``attncert constants``: Theorem 1's constants layer by layer (Hahn 2020, Lemma 4 iterated).

    attncert constants --layers 2 --heads 2 --C 0.9 [--schedule geometric|linear]
                       [--version supplement|paper] [--json]

For each layer ℓ: c_{ℓ−1}, the free fractions C → C′, Definition 5's η, q, δ, the smallest k
(max of (12), Stage 2's 2^c c/k ≤ ηC and (11)-feasibility), N for (11) and
c_ℓ = c_{ℓ−1}(2^{c_{ℓ−1}} k H + 1); finally the input length from which the argument applies
(n ≥ every N and C_L·n > c_L). Huge values are printed as rigorous bounds on log₁₀ or
log₂log₂. Exit status 0 (2 for bad parameters).
"""

from __future__ import annotations

import argparse
import json

from attncert import limits
from attncert.cli.args import integer, rational_text
from attncert.symbolic.constants import constants


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "constants",
        help="the constants of Hahn's Theorem 1 (k, N, c per layer)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--layers",
        type=integer(
            minimum=1,
            maximum=limits.CONSTANTS_MAX_LAYERS,
            reason="c_ℓ is a tower of exponentials that no bound represents from 5 layers on",
        ),
        required=True,
    )
    p.add_argument(
        "--heads", type=integer(minimum=1, maximum=limits.CONSTANTS_MAX_HEADS), required=True
    )
    p.add_argument(
        "--C",
        type=rational_text,
        required=True,
        help="target free fraction C ∈ (0, 1), e.g. 0.9",
    )
    p.add_argument("--schedule", default="geometric", choices=("geometric", "linear"))
    p.add_argument(
        "--version",
        default="supplement",
        choices=("supplement", "paper"),
        help="which bound f (neighbour count) to use in (12)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ch = constants(args.layers, args.heads, args.C, schedule=args.schedule, version=args.version)
    if args.json:
        print(json.dumps(ch.as_dict(), indent=1, ensure_ascii=False))
        return 0
    print(
        f"Theorem 1 chain: L={ch.layers}, H={ch.heads}, C={ch.C} ({ch.schedule}, f: {ch.version})"
    )
    for r in ch.rows:
        print(
            f"layer {r.layer}: c={r.c.describe()}  C={r.C} → C′={r.C_prime} "
            f"(η={r.eta}, q={r.q}, δ={r.delta})"
        )
        print(f"    k = {r.k.describe()}   N(11) = {r.N_eq11}   c_next = {r.c_next.describe()}")
    print(f"final free fraction C_L = {ch.C_final} (≥ {ch.C}); N(11) over layers = {ch.N_formal}")
    print(f"the argument applies (n ≥ N and C_L·n > c_L) from n = {ch.n_applies.describe()}")
    return 0
