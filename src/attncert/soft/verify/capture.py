"""Untrusted split ranking: the free positions that can capture the readout's attention
(issue 22, item 1: "case splits on rows that capture attention").

When the affine bound cannot decide a cube, the usual reason on a model whose attention
concentrates is that *which* position the readout attends to is not determined by the
fixed part: a free position could take the attention if it carried the right symbol.
Splitting it settles that — one child where it takes the attention, one where it
cannot — and the bound then decides both. Along a cube such as 1·1ᵏ·∗ⁿ⁻ᵏ⁻²·0 of a
first-symbol-equals-last model (the readout looks for the leftmost 0) that is a chain of
n splits, each with one child the bound decides at once (the 0 takes the attention) and
one that continues; the bound's own blame, which spreads over every free position whose
key moves the logit's form, need not point there.

For the last layer's heads: the readout row's query and the fixed tokens' keys are taken
at the cube's base string (a completion of the cube), and a free position's key under
symbol a at the string in which every free position carries a — exact when no earlier
layer has a head (a key then depends on its own position and symbol only), a heuristic
deeper down. A free position's *potential* is
max over heads and symbols of β·(its score − the best score of a fixed token): ≥ 0 means
it can take the attention from every fixed token. A free readout position comes first of
all (+∞): its own symbol decides the query. Nothing here is trusted: it only
chooses where to split; every leaf is re-derived by :mod:`attncert.kernel.verify.checker`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from attncert.model.forward import embed, forward_tokens, layer_norm
from attncert.model.spec import AttentionKind, Model
from attncert.restriction import FREE


def exact_for(model: Model) -> bool:
    """Whether :func:`potentials` is exact for ``model``: no layer before the last has a
    head, so a key of the last layer depends on its own position and symbol only."""
    return all(not layer.heads for layer in model.layers[:-1])


def potentials(model: Model, rho: str, base: str) -> np.ndarray:
    """Per input position of ``rho``: its capture potential (module docstring; −inf at a
    fixed position, and everywhere when the last layer has no head or a pooled readout).

    The keys of a free position under symbol a are those of the string in which every
    free position carries a (|Σ| passes); the query and the fixed tokens' keys, those of
    ``base``. Exact when :func:`exact_for` holds; deeper, the other free positions'
    symbols move a key too, and the ranking is a heuristic (it only orders splits)."""
    n = len(rho)
    out = np.full(n, -np.inf)
    free = np.array([c == FREE for c in rho])
    if not model.layers or not model.layers[-1].heads or model.readout.pooled or not free.any():
        return out
    off = model.input_offset()
    n_tok = model.n_tokens(n)
    r = model.readout.index(n_tok)
    fixed_tok = np.ones(n_tok, dtype=bool)
    fixed_tok[off : off + n][free] = False
    if not fixed_tok[r]:  # the readout's own symbol is free: its query is not determined
        out[r - off] = np.inf
        return out
    filled = [
        "".join(a if f else c for c, f in zip(base, free, strict=True)) for a in model.alphabet
    ]
    x = _last_layer_input(model, [base, *filled])  # (1 + |Σ|, N, d)
    layer = model.layers[-1]
    u = layer_norm(layer.norm1, x) if layer.pre_norm and layer.norm1 else x
    for head in layer.heads:
        beta = head.temperature(n_tok) if head.kind is AttentionKind.SOFTMAX else 1.0
        visible = head.mask.matrix(n_tok)[r]
        seen = visible & fixed_tok
        if not seen.any():  # nothing fixed to compete with: no ranking from this head
            continue
        q = u[0, r] @ head.w_q.T + head.bias("b_q")
        s = (u @ head.w_k.T + head.bias("b_k")) @ q  # (1 + |Σ|, N)
        best = np.max(s[0, seen])
        pot = beta * (np.max(s[1:, off : off + n], axis=0) - best)
        ok = free & visible[off : off + n]
        out[ok] = np.maximum(out[ok], pot[ok])
    return out


def _last_layer_input(model: Model, strings: list[str]) -> np.ndarray:
    """The residual stream entering the last layer (the embeddings for a one-layer model:
    no attention is evaluated, as none is needed)."""
    tokens = np.array([model.encode(s) for s in strings])
    if len(model.layers) == 1:
        return embed(model, tokens)
    head = dataclasses.replace(model, layers=model.layers[:-1], final_norm=None)
    return forward_tokens(head, tokens, keep_attention=False).layers[-1].output


def capture_order(model: Model, rho: str, base: str, *, within: float = 8.0) -> np.ndarray:
    """The free positions whose potential is ≥ −``within`` (able to take at least about
    e^−within of the readout's attention from the best fixed token), highest first —
    empty when there is none."""
    if any(h.positional for layer in model.layers for h in layer.heads):
        return np.array([], dtype=np.int64)  # the potentials ignore RoPE/ALiBi: no ranking
    pot = potentials(model, rho, base)
    cand = np.flatnonzero(pot >= -within)
    return cand[np.argsort(-pot[cand], kind="stable")]
