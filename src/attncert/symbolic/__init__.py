"""Symbolic proof checks for Hahn (2020) §5.1 (Depth Reduction Lemma) — issue 4.

- :mod:`.claims`: the proof steps as data (``Claim``: hypotheses ⇒ conclusion, source,
  version: paper / §5 extract / supplement S1 / attncert refinement).
- :mod:`.runner`: :func:`check_claims` decides each claim (sympy proof, rigorous
  counterexample, exact finite check) in general and at concrete parameters.
- :mod:`.constants`: smallest k for (12), N for (11), Theorem 1's chain (:func:`constants`).
- :mod:`.params`: parameters and Definition 5's exact choice of η, q, δ (:func:`lll_params`).

Python::

    from attncert.symbolic import check_claims, constants, lll_params
    report = check_claims(lll_params(c=1, H=2, C=1, C_prime="1/2"))
    chain = constants(layers=2, heads=2, C="0.9")

Command line::

    attncert lll --c 1 --H 2 --C 1 --C-prime 0.5 [--eta 1/8 --q 2/9 --delta 1/2] [--json]
    attncert constants --layers 2 --heads 2 --C 0.9 [--json]
"""

from attncert.symbolic.claims import CLAIMS, Claim, Version
from attncert.symbolic.constants import (
    Chain,
    LemmaConstants,
    Magnitude,
    constants,
    eq11_holds,
    eq12_holds,
    lemma_constants,
    smallest_k_eq12,
    smallest_n_eq11,
)
from attncert.symbolic.params import LLLParams, default_def5, lll_params
from attncert.symbolic.runner import ClaimResult, Report, Verdict, check_claims

__all__ = [
    "CLAIMS",
    "Chain",
    "Claim",
    "ClaimResult",
    "LLLParams",
    "LemmaConstants",
    "Magnitude",
    "Report",
    "Verdict",
    "Version",
    "check_claims",
    "constants",
    "default_def5",
    "eq11_holds",
    "eq12_holds",
    "lemma_constants",
    "lll_params",
    "smallest_k_eq12",
    "smallest_n_eq11",
]
