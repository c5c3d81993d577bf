"""The supplement's missing term in Lemma 5's proof, measured on real models.

Hahn's published step (p. 11) bounds the change of a head's input aggregate
b_j = Σ_w â_{j,w} y_w^{(k−1)} by the *original right-hand side*

    ‖b_j − b′_j‖ ≤ Σ_w â_{j,w} ‖y_w − y′_w‖,

which ignores that the attention weights change too.  Supplement S2 adds the
term Σ_w |â_{j,w} − â′_{j,w}| · ‖y′_w‖.  For an actual pair x, x′ (differing at
one position i) this module computes, per layer and head, for the readout query
and for the worst query j ≠ i: the true left side, the original right side and
the extra term — so one sees whether the published inequality actually fails on
the pair (left > original right) and how large the extra term is in comparison.

Python::

    >>> from attncert.model import random_model
    >>> from attncert.soft.missing_term import missing_term_table
    >>> rows = missing_term_table(random_model(2, 1, 8, kind="softmax", seed=3), [8, 32])
    >>> all(r.lhs <= r.original + r.extra + 1e-9 for r in rows)
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attncert.model.forward import forward_tokens
from attncert.model.spec import Model
from attncert.soft.sensitivity import _positions, _tokens, search_sensitivity

__implements__ = (
    "Hahn S2 eq. (34)",
    "Hahn S2 eq. (35)",
)


@dataclass(frozen=True)
class MissingTermRow:
    """One (n, layer, head, query) comparison for a pair x, x′ = x[i := σ′]."""

    n: int
    layer: int  # 1-based
    head: int  # 0-based
    query: str  # "readout" or "worst j≠i"
    lhs: float  # ‖b_j − b′_j‖
    original: float  # Σ_w â_{j,w} ‖Δy_w‖
    extra: float  # Σ_w |â_{j,w} − â′_{j,w}| ‖y′_w‖

    @property
    def ratio(self) -> float:
        """extra / original (inf if the original side is 0)."""
        return self.extra / self.original if self.original > 0 else float("inf")

    @property
    def published_fails(self) -> bool:
        """True iff the published inequality (without the extra term) is violated."""
        return self.lhs > self.original * (1 + 1e-12) + 1e-15


def pair_terms(model: Model, x: np.ndarray, pos: int, sym: int) -> list[MissingTermRow]:
    """The comparison for one pair (symbol-index array ``x``, 0-based ``pos``, new ``sym``)."""
    n = len(x)
    xp = x.copy()
    xp[pos] = sym
    tokens = _tokens(model, np.stack([x, xp]))
    tr = forward_tokens(model, tokens)
    n_tok = tokens.shape[1]
    i_tok = pos + model.input_offset()
    r_tok = model.readout.index(n_tok)
    rows = []
    ys = [tr.embeddings] + [lt.output for lt in tr.layers]
    for li, lt in enumerate(tr.layers):
        y, yp = ys[li][0], ys[li][1]
        dy = np.linalg.norm(y - yp, axis=-1)  # (N,)
        ny = np.linalg.norm(yp, axis=-1)
        for h in range(lt.weights.shape[1]):
            a, ap = lt.weights[0, h], lt.weights[1, h]  # (N, N)
            b, bp = a @ y, ap @ yp
            lhs = np.linalg.norm(b - bp, axis=-1)
            orig = a @ dy
            extra = np.abs(a - ap) @ ny
            others = [j for j in range(n_tok) if j != i_tok]
            worst = max(others, key=lambda j: lhs[j] / orig[j] if orig[j] > 0 else lhs[j] * 1e300)
            for label, j in (("readout", r_tok), ("worst j≠i", worst)):
                rows.append(
                    MissingTermRow(
                        n, li + 1, h, label, float(lhs[j]), float(orig[j]), float(extra[j])
                    )
                )
    return rows


def missing_term_table(
    model: Model, ns: Sequence[int], *, seed: int = 0, pairs: int = 3
) -> list[MissingTermRow]:
    """For each n: the sensitivity-search witness pair plus ``pairs`` random pairs;
    per layer/head/query the row with the largest extra/original ratio."""
    rng = np.random.default_rng(seed)
    k = len(model.alphabet)
    out = []
    for n in ns:
        cands = []
        w = search_sensitivity(model, n, seed=seed, restarts=2, candidates=8, max_steps=5).witness
        x = np.array([model.alphabet.index(c) for c in w.x])
        cands.append((x, w.position - 1, model.alphabet.index(w.symbol)))
        positions = _positions(model, n)
        for _ in range(pairs):
            x = rng.integers(0, k, n)
            p = int(rng.choice(positions))
            cands.append((x, p, int((x[p] + rng.integers(1, k)) % k)))
        best: dict[tuple[int, int, str], MissingTermRow] = {}
        for x, p, s in cands:
            for row in pair_terms(model, x, p, s):
                key = (row.layer, row.head, row.query)
                if key not in best or _score(row) > _score(best[key]):
                    best[key] = row
        out.extend(best[key] for key in sorted(best))
    return out


def _score(row: MissingTermRow) -> float:
    return row.ratio if row.original > 0 else (np.inf if row.extra > 0 else 0.0)
