"""Labelled strings for training and measuring classifiers, one sampler per language.

Every sampler draws strings of one length n from a seeded numpy Generator; labels are
always the language's own membership (:meth:`Language.contains`), never the sampler's
intent. Two distributions per language:

* ``train`` — what the model is trained on; for the counting languages it adds hard
  examples near the decision boundary;
* ``eval`` — what accuracy by length is reported on (stored with the model):

  - parity, first_last, majority: uniform random strings over {0, 1} (the natural
    distribution; for majority, ties at even n are non-members);
  - ones_star (1*): half the strings 1ⁿ, a quarter 1ⁿ with one 0 at a uniform
    position, a quarter with a uniform number k ∈ 2..n of 0s at uniform positions
    (uniform strings alone would be rejected by a constant model);
  - dyck1: at even n, half uniformly random Dyck words (the cycle lemma), half
    non-members — a quarter with as many "(" as ")" but a prefix that dips below 0, a
    sixth with one symbol of a Dyck word flipped, the rest uniform random strings
    (which are almost never members); at odd n uniform random strings (no member has
    odd length). Uniform strings alone would be rejected by a constant model.

Python::

    >>> import numpy as np
    >>> from attncert.train.data import sample
    >>> strings, labels = sample("dyck1", np.random.default_rng(0), 8, 4, "eval")
    >>> len(strings), all(len(s) == 8 for s in strings)
    (4, True)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attncert.errors import InputError
from attncert.languages import language

Sampler = Callable[[np.random.Generator, int], str]
DISTRIBUTIONS = ("train", "eval")
EVAL_DESCRIPTION = {
    "parity": "uniform random strings over {0,1}",
    "first_last": "uniform random strings over {0,1}",
    "majority": "uniform random strings over {0,1} (ties are non-members)",
    "ones_star": "half 1ⁿ, 1/4 one 0 at a uniform position, 1/4 with k ∈ 2..n zeros",
    "dyck1": "half uniform Dyck words, half non-members (1/4 count-balanced with a "
    "negative prefix, 1/6 one-symbol flips of Dyck words, the rest uniform); odd n: "
    "uniform",
}


def _uniform(rng: np.random.Generator, n: int, symbols: str = "01") -> str:
    return "".join(symbols[k] for k in rng.integers(0, len(symbols), size=n))


def _with_ones(rng: np.random.Generator, n: int, ones: int) -> str:
    """A uniformly random string of length n with exactly ``ones`` 1s."""
    chars = np.array(["0"] * n)
    chars[rng.permutation(n)[:ones]] = "1"
    return "".join(chars)


def dyck_word(rng: np.random.Generator, n: int) -> str:
    """A uniformly random Dyck-1 word of even length n (cycle lemma: of the 2m+1
    rotations of a random arrangement of m up-steps and m+1 down-steps exactly one
    keeps every proper prefix sum ≥ 0; drop its final down-step)."""
    if n % 2:
        raise InputError(f"Dyck words have even length, not {n}")
    m = n // 2
    steps = np.array([1] * m + [-1] * (m + 1))
    rng.shuffle(steps)
    prefix = np.cumsum(steps)
    start = int(np.argmin(prefix)) + 1  # just after the first minimum
    rotated = np.roll(steps, -start)[:-1]
    return "".join("(" if s > 0 else ")" for s in rotated)


def _balanced_count_non_member(rng: np.random.Generator, n: int) -> str:
    lang = language("dyck1")
    m = n // 2
    while True:
        steps = np.array(["("] * m + [")"] * m)
        rng.shuffle(steps)
        s = "".join(steps)
        if not lang.contains(s):
            return s


def _flip_one(rng: np.random.Generator, s: str) -> str:
    k = int(rng.integers(0, len(s)))
    other = {"(": ")", ")": "("}[s[k]]
    return s[:k] + other + s[k + 1 :]


def _dyck1(rng: np.random.Generator, n: int) -> str:
    if n % 2 or n == 0:
        return _uniform(rng, n, "()")
    u = rng.random()
    if u < 0.5:
        return dyck_word(rng, n)
    if u < 0.75:
        return _balanced_count_non_member(rng, n)
    if u < 0.5 + 0.25 + 1 / 6:
        return _flip_one(rng, dyck_word(rng, n))
    return _uniform(rng, n, "()")


def _ones_star(rng: np.random.Generator, n: int) -> str:
    u = rng.random()
    if u < 0.5 or n == 0:
        return "1" * n
    zeros = 1 if u < 0.75 or n < 2 else int(rng.integers(2, n + 1))
    return "".join(np.where(np.isin(np.arange(n), rng.permutation(n)[:zeros]), "0", "1"))


def _majority_train(rng: np.random.Generator, n: int) -> str:
    if rng.random() < 0.5:
        return _uniform(rng, n)
    return _with_ones(rng, n, n // 2 + int(rng.integers(0, 2)))  # at the threshold


_SAMPLERS: dict[tuple[str, str], Sampler] = {
    ("parity", "train"): _uniform,
    ("parity", "eval"): _uniform,
    ("first_last", "train"): _uniform,
    ("first_last", "eval"): _uniform,
    ("majority", "train"): _majority_train,
    ("majority", "eval"): _uniform,
    ("ones_star", "train"): _ones_star,
    ("ones_star", "eval"): _ones_star,
    ("dyck1", "train"): _dyck1,
    ("dyck1", "eval"): _dyck1,
}

LANGUAGES: tuple[str, ...] = tuple(sorted({lang for lang, _ in _SAMPLERS}))


def sample(
    name: str, rng: np.random.Generator, n: int, count: int, distribution: str = "train"
) -> tuple[list[str], np.ndarray]:
    """``count`` strings of length ``n`` of language ``name`` from ``distribution``
    ("train" or "eval"), with their membership labels (bool array)."""
    sampler = _SAMPLERS.get((name, distribution))
    if sampler is None:
        if distribution not in DISTRIBUTIONS:
            raise InputError(f"unknown distribution {distribution!r}", expected="train or eval")
        raise InputError(
            f"no training data for language {name!r}", expected="one of " + ", ".join(LANGUAGES)
        )
    lang = language(name)
    strings = [sampler(rng, n) for _ in range(count)]
    labels = np.array([lang.contains(s) for s in strings], dtype=bool)
    return strings, labels
