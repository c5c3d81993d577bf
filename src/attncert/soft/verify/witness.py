"""Witnesses for a model that is wrong somewhere the bound cannot reach (untrusted search;
issue 22).

Branch and bound may stop with open cubes and no wrong leaf although the model is plainly
wrong: ``trained_parity`` at n = 64 is right on about half of the strings, and no cube
with a free position is decided. The verdict should then still be *proved wrong*. This
module

1. samples strings from the open cubes (a cube in proportion to its measure, each
   completion uniformly), in batches, until one batch holds a string that the float
   forward pass misclassifies, or the sample or time allowance runs out;
2. **carves** the misclassified string with the largest float margin into the tree: the
   open cube that holds it is split along the string's own symbols down to the string
   itself, which becomes an exhaustive leaf of one completion — decided with rigorous
   error bounds, arb where they leave the sign open (one string, since a rigorous
   evaluation costs O(n²) and, on deep models, seconds) — and its siblings stay open.

The partition and the undecided measure stay exact; the leaf adds its exact right and
wrong count and its witness, which :mod:`attncert.kernel.verify` re-derives like any
other leaf. Nothing here is trusted: a float misclassification that arb does
not confirm simply yields a leaf without a wrong string, and the next candidate is tried.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from attncert.certificates.verify import Leaf
from attncert.languages.base import Language
from attncert.model.forward import forward
from attncert.model.spec import Model
from attncert.restriction import FREE

BATCH = 16  # strings per forward pass
ATTEMPTS = 3  # carved candidates at most (a float misclassification arb may not confirm)


@dataclass(frozen=True)
class WitnessSearch:
    """What the sampling found: strings drawn, how many the float pass misclassified, and
    whether one became a confirmed wrong leaf (``note`` says why not, if not)."""

    sampled: int
    misclassified: int
    confirmed: bool
    note: str = ""

    def text(self) -> str:
        if not self.sampled:
            return self.note
        head = (
            f"{self.sampled} random strings from the open cubes, {self.misclassified} "
            f"misclassified by the float forward pass"
        )
        if self.confirmed:
            return head + "; one carved into the tree as a one-string leaf"
        return head + (f"; {self.note}" if self.note else "")


def sample_wrong(
    model: Model,
    lang: Language,
    rhos: list[str],
    rng: np.random.Generator,
    *,
    deadline: float,
    max_strings: int,
) -> tuple[int, list[str]]:
    """(strings drawn, the misclassified ones, largest float margin first) from the cubes
    ``rhos``; stops after the first batch that holds a misclassified string."""
    alpha = np.array(list(model.alphabet))
    free = np.array([r.count(FREE) for r in rhos], dtype=float)
    weight = np.power(float(len(alpha)), free - free.max())
    weight /= weight.sum()
    drawn = 0
    while drawn < max_strings:
        picks = rng.choice(len(rhos), size=min(BATCH, max_strings - drawn), p=weight)
        strings = []
        for k in picks:
            rho = np.array(list(rhos[k]))
            holes = rho == FREE
            rho[holes] = rng.choice(alpha, int(holes.sum()))
            strings.append("".join(rho))
        drawn += len(strings)
        z = forward(model, strings, keep_attention=False).logits
        member = np.array([lang.contains(s) for s in strings])
        wrong = np.flatnonzero((z > 0) != member)
        if len(wrong):
            ranked = wrong[np.argsort(-np.abs(z[wrong]), kind="stable")]
            return drawn, [strings[i] for i in ranked]
        if time.perf_counter() > deadline:
            break
    return drawn, []


def holds(rho: str, s: str) -> bool:
    """Whether ``s`` is a completion of the cube ``rho``."""
    return all(c in (FREE, d) for c, d in zip(rho, s, strict=True))


def carve_path(rho: str) -> list[int]:
    """The positions to split, in order, to carve one completion out of the cube ``rho``:
    its free positions."""
    return [i for i, c in enumerate(rho) if c == FREE]


def open_leaf(reason: str) -> Leaf:
    return Leaf("open", reason=reason)
