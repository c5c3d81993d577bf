"""Theorem 6 of Hahn (2020) on a concrete model: next-symbol cross-entropy vs n.

For a model with a next-symbol head (``Readout.lm_weight``/``lm_symbols``) and
one of Hahn's distributions (:mod:`attncert.languages.distributions`), the
cross-entropy at prefix length n is

    CE(n) = E_x [ −Σ_σ P(σ | x) · log q(σ | x) ]  (nats),

x a random length-n prefix (a sampled word conditioned on length ≥ n), P the
exact next-symbol law, q the model's softmax over ``lm_symbols`` read at the
last token of the encoded prefix.  Theorem 6: as n → ∞ this tends to unigram
chance (PARITY) or stays ≥ optimal + P₀(1 − p)·log 2 (2DYCK).  Next to it:
the optimal (Bayes) cross-entropy and the unigram chance level, both exact.

``method="exact"`` sums over every prefix of positive probability (small n);
``method="sample"`` averages over prefixes drawn exactly from the conditioned
prefix law, with a CLT interval (± 3 standard errors; approximate).

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.languages.distributions import ParityDistribution
    >>> from attncert.soft.crossentropy import model_cross_entropy
    >>> pt = model_cross_entropy(zoo_model("soft_parity_lm"), ParityDistribution("1/4"), 2)
    >>> pt.optimal <= pt.model_ce
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attncert.errors import InputError
from attncert.model.spec import Model
from attncert.soft.sensitivity import final_activation

__implements__ = ("Hahn Theorem 6",)


@dataclass(frozen=True)
class CrossEntropyPoint:
    """Model, optimal and unigram cross-entropy (nats) at prefix length n."""

    n: int
    model_ce: float
    half_width: float  # 0 for exact sums; ~3 standard errors for sampling
    optimal: float
    unigram: float
    method: str
    prefixes: int

    @property
    def excess(self) -> float:
        """Model cross-entropy minus the optimum."""
        return self.model_ce - self.optimal


def _symbol_map(model: Model, dist) -> list[int]:
    r = model.readout
    if r.lm_weight is None:
        raise InputError(
            f"model {model.name!r} has no next-symbol head",
            where="readout.lm_weight",
            expected="a model with lm_weight/lm_symbols",
        )
    idx = []
    for s in dist.symbols:
        if s not in r.lm_symbols:
            raise InputError(
                f"the next-symbol head has no symbol {s!r}",
                where="readout.lm_symbols",
                expected="all of " + " ".join(dist.symbols),
            )
        idx.append(r.lm_symbols.index(s))
    for s in dist.input_symbols:
        if s not in model.alphabet:
            raise InputError(f"symbol {s!r} is not in the model's alphabet", where="alphabet")
    return idx


def next_symbol_logprobs(model: Model, prefixes: Sequence[str], dist) -> np.ndarray:
    """log q(σ | x) (B, |dist.symbols|) for equal-length prefixes, σ in ``dist.symbols``."""
    cols = _symbol_map(model, dist)
    tokens = np.array([model.encode(x) for x in prefixes], dtype=np.int64)
    n_tok = tokens.shape[1]
    per = max(1, (1 << 22) // max(1, n_tok * n_tok))
    ys = [
        final_activation(model, tokens[s : s + per], position=n_tok - 1)
        for s in range(0, len(tokens), per)
    ]
    y = np.concatenate(ys)
    logits = y @ model.readout.lm_weight.T + model.readout.lm_bias
    mx = logits.max(axis=1, keepdims=True)
    logz = mx + np.log(np.exp(logits - mx).sum(axis=1, keepdims=True))
    return (logits - logz)[:, cols]


def _targets(dist, prefixes: Sequence[str]) -> np.ndarray:
    return np.array(
        [[float(q) for q in dist.next_symbol_probs(x).values()] for x in prefixes], dtype=float
    )


def _ce_rows(model: Model, dist, prefixes: Sequence[str]) -> np.ndarray:
    logq = next_symbol_logprobs(model, prefixes, dist)
    tgt = _targets(dist, prefixes)
    with np.errstate(invalid="ignore"):
        terms = np.where(tgt > 0, -tgt * logq, 0.0)
    return terms.sum(axis=1)


def model_cross_entropy(
    model: Model,
    dist,
    n: int,
    *,
    method: str = "auto",
    samples: int = 2000,
    seed: int = 0,
    exact_max: int = 4096,
) -> CrossEntropyPoint:
    """Cross-entropy of ``model`` at prefix length ``n`` (module docstring).

    ``method="auto"`` sums exactly when there are at most ``exact_max`` prefixes.
    """
    if n < 1:
        raise InputError(f"prefix length n = {n}", where="n", expected="n ≥ 1")
    opt, uni = dist.optimal_cross_entropy(n), dist.unigram_cross_entropy(n)
    k = len(dist.input_symbols)
    if method == "auto":
        method = "exact" if k**n <= exact_max else "sample"
    if method == "exact":
        pairs = list(dist.prefixes(n))
        xs = [x for x, _ in pairs]
        w = np.array([float(p) for _, p in pairs])
        w /= w.sum()
        ce = float(w @ _ce_rows(model, dist, xs))
        return CrossEntropyPoint(n, ce, 0.0, opt, uni, "exact", len(xs))
    if method != "sample":
        raise InputError(f"unknown method {method!r}", expected="'auto', 'exact' or 'sample'")
    rng = np.random.default_rng(seed)
    xs = dist.sample_prefixes(rng, n, samples)
    rows = _ce_rows(model, dist, xs)
    hw = 3.0 * float(rows.std(ddof=1)) / math.sqrt(len(rows)) if len(rows) > 1 else math.inf
    return CrossEntropyPoint(n, float(rows.mean()), hw, opt, uni, "sample", len(xs))


def cross_entropy_curve(
    model: Model, dist, ns: Sequence[int], *, samples: int = 2000, seed: int = 0
) -> list[CrossEntropyPoint]:
    """:func:`model_cross_entropy` for each n."""
    return [model_cross_entropy(model, dist, n, samples=samples, seed=seed) for n in ns]


def bracket_type_excess(model: Model, dist, n: int, *, samples: int = 2000, seed: int = 0):
    """2DYCK: the part of the cross-entropy spent choosing the bracket *type* after a
    prefix that ends with a closer and is unbalanced (Hahn's second sub-task).

    Returns (fraction of such prefixes, mean −log q(correct closer | closer)) over
    sampled prefixes; Theorem 6 says the second number tends to ≥ log 2 while the
    optimum is 0, so the excess is at least P₀(1 − p) log 2 asymptotically.
    """
    rng = np.random.default_rng(seed)
    xs = dist.sample_prefixes(rng, n, samples)
    logq = next_symbol_logprobs(model, xs, dist)
    sym = list(dist.symbols)
    i_r, i_s = sym.index(")"), sym.index("]")
    hits, losses = 0, []
    for row, x in zip(logq, xs, strict=True):
        probs = dist.next_symbol_probs(x)
        if x and x[-1] in ")]" and probs[dist.end] == 0:
            hits += 1
            correct = i_r if probs[")"] > 0 else i_s
            both = np.logaddexp(row[i_r], row[i_s])
            losses.append(float(both - row[correct]))
    return hits / len(xs), (float(np.mean(losses)) if losses else math.nan)
