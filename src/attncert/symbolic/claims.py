"""The quantitative steps of Hahn's Depth Reduction Lemma (Lemma 4) as data.

Each :class:`Claim` is one step, *hypotheses ⇒ conclusion*, with its source (paper = TACL
text, §5.1; extract = the §5 restatement in ``hahn2020-section5-hard-attention.md``;
supplement = the formal write-up S1), the displayed equations it checks (``displays``, see
:mod:`attncert.symbolic.displays`), the text as printed and the lines it follows from.
Where the versions differ, each is a separate claim with the same stem
(``stage2.choice-of-k[paper]``, ``…[supplement]``); the checker
(:mod:`attncert.symbolic.runner`) decides each one — nothing here says whether a claim holds.

A claim's ``parameters`` are its variables with their domains; ``samples`` feed the
counterexample search. ``slacks`` are *untrusted* proof hints (which hypothesis to solve
for which variable); the prover re-checks that a hint covers the hypothesis before using it.

The claims live in :mod:`.claims_stages` (Definition 5, Stages 1–2, Lemmas 6, 9, 15, 17,
Corollary 18, the width of Lemma 4), :mod:`.claims_stage3` (Stage 3 events, Lemmas 21–22)
and :mod:`.claims_lll` (Lemma 23's LLL conditions and limits, Corollary 24); the types in
:mod:`.claim_types`, the displayed equations in :mod:`.displays`.
"""

from __future__ import annotations

from attncert.symbolic.claim_types import Claim, Domain, Kind, Slack, Source, Var, Version
from attncert.symbolic.claims_lll import LLL_CLAIMS
from attncert.symbolic.claims_stage3 import STAGE3_CLAIMS
from attncert.symbolic.claims_stages import STAGE_CLAIMS

__all__ = ["CLAIMS", "Claim", "Domain", "Kind", "Slack", "Source", "Var", "Version", "claim"]

__implements__ = ("Hahn Lemma 4", "Hahn S1 Lemma 4")

CLAIMS: tuple[Claim, ...] = STAGE_CLAIMS + STAGE3_CLAIMS + LLL_CLAIMS


def claim(claim_id: str) -> Claim:
    """The claim with this id (KeyError if unknown)."""
    for cl in CLAIMS:
        if cl.id == claim_id:
            return cl
    raise KeyError(claim_id)
