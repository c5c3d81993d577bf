"""Witnesses for a model that is wrong somewhere the bound cannot reach (untrusted search;
issue 22).

Branch and bound may stop with open cubes and no wrong leaf although the model is plainly
wrong: ``trained_parity`` at n = 64 is right on about half of the strings, and no cube
with a free position is decided. The verdict should then still be *proved wrong*. This
module

1. samples strings from the open cubes, in batches, until one batch holds a string that
   the float forward pass misclassifies, or the sample or time allowance runs out. Half
   of each batch are uniform completions (a cube in proportion to its measure); the other
   half come from the language's own training sampler (:func:`attncert.train.data.sample`:
   members and hard non-members near the boundary, where a model that is right on almost
   every uniform string errs), kept where they lie in an open cube;
2. **carves** the misclassified string with the largest float margin into the tree: the
   open cube that holds it is split along the string's own symbols down to the string
   itself, which becomes an exhaustive leaf of one completion — decided with rigorous
   error bounds, arb where they leave the sign open (one string, since a rigorous
   evaluation costs O(n²) and, on deep models, seconds) — and its siblings stay open.

The partition and the undecided measure stay exact; the leaf adds its exact right and
wrong count and its witness, which :mod:`attncert.kernel.verify.checker` re-derives like any
other leaf. Nothing here is trusted: a float misclassification that arb does
not confirm simply yields a leaf without a wrong string, and the next candidate is tried.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from attncert.certificates.verify import Leaf
from attncert.errors import InputError
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
        head = (
            f"{self.sampled} strings from the open cubes (uniform and from the language's "
            f"sampler), {self.misclassified} misclassified by the float forward pass"
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
    n = len(rhos[0])
    free = np.array([r.count(FREE) for r in rhos], dtype=float)
    weight = np.power(float(len(alpha)), free - free.max())
    weight /= weight.sum()
    cubes = np.array([list(r) for r in rhos])  # (C, n)
    fixed = cubes != FREE
    drawn = 0
    while drawn < max_strings:
        size = min(BATCH, max_strings - drawn)
        strings = _from_language(lang, rng, n, size // 2, cubes, fixed)
        for k in rng.choice(len(rhos), size=size - len(strings), p=weight):
            rho = cubes[k].copy()
            holes = ~fixed[k]
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


def _from_language(lang: Language, rng, n: int, count: int, cubes, fixed) -> list[str]:
    """Up to ``count`` strings from the language's training sampler that lie in one of
    the open ``cubes`` (none for a language without a sampler, such as a DFA file)."""
    from attncert.train.data import sample  # here: verify need not import attncert.train

    if count <= 0:
        return []
    try:
        strings, _ = sample(lang.name, rng, n, count, "train")
    except InputError:
        return []
    alphabet = set(lang.alphabet)  # a user DFA may share a sampler's name, not its Σ
    return [s for s in strings if set(s) <= alphabet and _in_some(np.array(list(s)), cubes, fixed)]


def _in_some(s: np.ndarray, cubes: np.ndarray, fixed: np.ndarray) -> bool:
    return bool(((cubes == s[None]) | ~fixed).all(axis=1).any())


def holds(rho: str, s: str) -> bool:
    """Whether ``s`` is a completion of the cube ``rho``."""
    return all(c in (FREE, d) for c, d in zip(rho, s, strict=True))


def carve_path(rho: str) -> list[int]:
    """The positions to split, in order, to carve one completion out of the cube ``rho``:
    its free positions."""
    return [i for i, c in enumerate(rho) if c == FREE]


def open_leaf(reason: str) -> Leaf:
    return Leaf("open", reason=reason)
