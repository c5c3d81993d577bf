"""A small causal decoder in PyTorch (RoPE, ALiBi, NoPE, learned or named positions;
LayerNorm or RMSNorm; GELU or SwiGLU) and its export to an attncert :class:`Model`.

``Decoder`` = ``nn.Embedding`` (alphabet, then BOS; BOS is token 0 when the recipe has
one) + the recipe's positions, then per layer

    y ← y + Σ_h W_O,h · attn_h(norm₁(y));   y ← y + MLP(norm₂(y))

(pre-norm, as GPT-2/Llama/Bloom), a final norm and ``nn.Linear(d, 1)`` read at the
readout position (the last token). The pieces, in the conventions of the model spec
(:mod:`attncert.model.spec`):

* positions — ``rope``: every head's query and key (after their biases) rotated by
  RoPE over the full head dimension, base 10000, rotate-half layout (coordinate k pairs
  with k + d_h/2), angle t·10000^(−2k/d_h) at the 0-based token index t (BOS at 0);
  ``alibi``: score(i, j) += −m_h·(i − j) with Bloom's slopes m_h = 2^(−8h/H) for H a
  power of two, and ``build_alibi_tensor``'s rule of transformers otherwise
  (:func:`alibi_slopes`); ``learned``: a table of absolute position embeddings (rows up
  to the longest evaluation length; rows beyond the training lengths stay at their
  initial values); ``features``: attncert's named features φ(i, N) projected by
  ``nn.Linear(F, d, bias=False)``, as the encoder Classifier; ``none``: NoPE (positions
  only through the causal mask);
* attention — scores s = (q·k)/√d_h + ALiBi; a head attends with softmax(β·s) (β = 1 in
  the soft recipes; the hard recipes anneal β and may add Gumbel noise or attend by
  straight-through argmax, as :mod:`attncert.train.network` does for the encoder);
  causal mask j ≤ i when the recipe is causal;
* norms — ``layer``: ``nn.LayerNorm`` (ε = 1e-5); ``rms``: RMSNorm γ ⊙ x/√(mean(x²) + ε)
  (ε = 1e-6, no bias, as Llama);
* MLP — ``gelu``: W₂ GELU(W₁ y + b₁) + b₂ (erf GELU); ``swiglu``:
  W₂ (SiLU(W_g y + b_g) ⊙ (W₁ y + b₁)) + b₂.

:func:`to_model` writes the network with the spec's classes directly: the weights are
the trained float32 weights converted to float64 exactly; each head's temperature is
β/√d_h and its ALiBi slope m_h·√d_h (the spec adds the ALiBi term before the
temperature: β/√d_h · (q·k + m_h√d_h·(j − i)) = β·(q·k/√d_h − m_h(i − j))) — exact when
√d_h is a power of two (d_h = 1, 4, 16, 64), within a rounding otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attncert.languages import language
from attncert.model.decoders import alibi_slopes
from attncert.model.positional import feature_matrix
from attncert.model.spec import (
    Activation,
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    LayerNorm,
    Mask,
    Model,
    NormKind,
    NormPosition,
    Readout,
    Rotary,
    Temperature,
)
from attncert.train.recipes import BOS, Recipe

ROPE_BASE = 10000.0
LAYER_EPS = 1e-5
RMS_EPS = 1e-6


class RMSNorm(nn.Module):
    """γ ⊙ x/√(mean(x²) + ε) (Llama's RMSNorm, no bias)."""

    def __init__(self, d: int, eps: float = RMS_EPS):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def _norm(recipe: Recipe, d: int) -> nn.Module:
    return RMSNorm(d) if recipe.norm == "rms" else nn.LayerNorm(d, eps=LAYER_EPS)


class MLP(nn.Module):
    """W₂ GELU(W₁ y + b₁) + b₂, or SwiGLU W₂ (SiLU(W_g y + b_g) ⊙ (W₁ y + b₁)) + b₂."""

    def __init__(self, d: int, d_ff: int, gated: bool):
        super().__init__()
        self.up = nn.Linear(d, d_ff)
        self.gate = nn.Linear(d, d_ff) if gated else None
        self.down = nn.Linear(d_ff, d)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        if self.gate is not None:
            return self.down(F.silu(self.gate(y)) * self.up(y))
        return self.down(F.gelu(self.up(y)))


class Attention(nn.Module):
    """Multi-head self-attention with RoPE or ALiBi (module docstring)."""

    def __init__(self, recipe: Recipe):
        super().__init__()
        d, h = recipe.d, recipe.heads
        self.heads = h
        self.d_head = d // h
        self.scale = self.d_head**-0.5
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.rope = recipe.positions == "rope"
        self.slopes = alibi_slopes(h) if recipe.positions == "alibi" else None

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        beta: float | None,
        straight_through: bool,
        noise: bool,
    ) -> torch.Tensor:
        b, n, d = x.shape
        h, dh = self.heads, self.d_head
        q, k, v = (t(x).reshape(b, n, h, dh).transpose(1, 2) for t in (self.q, self.k, self.v))
        if self.rope:
            cos, sin = _rope(n, dh, x.dtype)
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        scores = (q @ k.transpose(-1, -2)) * self.scale
        if self.slopes is not None:
            scores = scores + _alibi(self.slopes, n, x.dtype)[None]
        if noise:
            u = torch.rand_like(scores).clamp(1e-9, 1.0 - 1e-7)
            scores = scores - torch.log(-torch.log(u))
        if beta is not None:
            scores = scores * beta
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if straight_through:
            hard = F.one_hot(scores.argmax(dim=-1), n).to(weights.dtype)  # first maximum
            weights = hard + weights - weights.detach()
        out = (weights @ v).transpose(1, 2).reshape(b, n, d)
        return self.o(out)


def _rope(n: int, dim: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (N, dim) of the rotate-half layout, angles computed in float64 as
    :meth:`attncert.model.spec.Rotary.angles` does."""
    ang = Rotary(ROPE_BASE, dim).angles(np.arange(n))
    ang = np.concatenate([ang, ang], axis=-1)
    return torch.tensor(np.cos(ang), dtype=dtype), torch.tensor(np.sin(ang), dtype=dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def _alibi(slopes: list[float], n: int, dtype: torch.dtype) -> torch.Tensor:
    """−m_h·(i − j) for every head h, query i and key j: (H, N, N)."""
    i = np.arange(n, dtype=np.float64)
    diff = i[:, None] - i[None, :]
    return torch.tensor(np.stack([-m * diff for m in slopes]), dtype=dtype)


class Block(nn.Module):
    """One pre-norm decoder layer."""

    def __init__(self, recipe: Recipe):
        super().__init__()
        self.norm1 = _norm(recipe, recipe.d)
        self.attn = Attention(recipe)
        self.norm2 = _norm(recipe, recipe.d)
        self.mlp = MLP(recipe.d, recipe.d_ff, recipe.mlp == "swiglu")

    def forward(self, y, mask, beta, straight_through, noise):
        y = y + self.attn(self.norm1(y), mask, beta, straight_through, noise)
        return y + self.mlp(self.norm2(y))


class Decoder(nn.Module):
    """Embedding (+ positions) + pre-norm blocks + final norm + linear readout."""

    def __init__(self, recipe: Recipe):
        super().__init__()
        self.recipe = recipe
        lang = language(recipe.language)
        self.alphabet = tuple(lang.alphabet)
        self.vocab = ((BOS,) if recipe.bos else ()) + self.alphabet
        self.index = {s: k for k, s in enumerate(self.vocab)}
        d = recipe.d
        self.emb = nn.Embedding(len(self.vocab), d)
        self.pos = None
        self.table = None
        if recipe.positions == "features" and recipe.features:
            self.pos = nn.Linear(len(recipe.features), d, bias=False)
        if recipe.positions == "learned":
            rows = max(recipe.max_len, *recipe.eval_lengths) + int(recipe.bos)
            self.table = nn.Embedding(rows, d)
        self.blocks = nn.ModuleList(Block(recipe) for _ in range(recipe.layers))
        self.norm = _norm(recipe, d) if recipe.final_norm else None
        self.head = nn.Linear(d, 1)

    def tokens(self, strings: list[str]) -> torch.Tensor:
        """Token ids (B, N) of equal-length strings, BOS first if the recipe has one."""
        bos = [self.index[BOS]] if self.recipe.bos else []
        return torch.tensor([bos + [self.index[c] for c in s] for s in strings])

    def forward(
        self,
        tokens: torch.Tensor,
        beta: float | None = None,
        straight_through: bool = False,
        noise: bool = False,
    ) -> torch.Tensor:
        """Logits of a token batch; ``beta``, ``straight_through``, ``noise`` as the
        encoder Classifier's (:mod:`attncert.train.network`)."""
        n = tokens.shape[1]
        y = self.emb(tokens)
        if self.pos is not None:
            phi = feature_matrix(self.recipe.features, n)
            y = y + self.pos(torch.tensor(phi, dtype=y.dtype))[None]
        if self.table is not None:
            y = y + self.table.weight[:n][None]
        mask = None
        if self.recipe.causal:
            mask = torch.ones(n, n, dtype=torch.bool).tril()
        for block in self.blocks:
            y = block(y, mask, beta, straight_through, noise)
        if self.norm is not None:
            y = self.norm(y)
        if self.recipe.position == "first":
            r = y[:, 0]
        elif self.recipe.position == "last":
            r = y[:, -1]
        else:
            r = y.mean(dim=1)
        return self.head(r)[:, 0]


def _np(t: Any) -> np.ndarray:
    return t.detach().cpu().double().numpy().copy()


def _export_norm(norm: nn.Module | None) -> LayerNorm | None:
    if norm is None:
        return None
    if isinstance(norm, RMSNorm):
        d = norm.weight.shape[0]
        return LayerNorm(_np(norm.weight), np.zeros(d), eps=norm.eps, kind=NormKind.RMS)
    return LayerNorm(_np(norm.weight), _np(norm.bias), eps=norm.eps, kind=NormKind.LAYER)


def _export_heads(attn: Attention, causal: bool, beta: float | None) -> tuple[Head, ...]:
    dh = attn.d_head
    wq, wk, wv, wo = (_np(m.weight) for m in (attn.q, attn.k, attn.v, attn.o))
    bq, bk, bv, bo = (_np(m.bias) for m in (attn.q, attn.k, attn.v, attn.o))
    coef = (1.0 if beta is None else float(beta)) * attn.scale
    heads = []
    for h in range(attn.heads):
        rows = slice(h * dh, (h + 1) * dh)
        heads.append(
            Head(
                w_q=wq[rows],
                w_k=wk[rows],
                w_v=wv[rows],
                w_o=wo[:, rows],
                kind=AttentionKind.SOFTMAX,
                mask=Mask.FUTURE if causal else Mask.NONE,
                temperature=Temperature(coef),
                b_q=bq[rows],
                b_k=bk[rows],
                b_v=bv[rows],
                b_o=bo if h == 0 else None,
                rotary=Rotary(ROPE_BASE, dh) if attn.rope else None,
                alibi=None if attn.slopes is None else attn.slopes[h] / attn.scale,
            )
        )
    return tuple(heads)


def _export_mlp(mlp: MLP) -> FeedForward:
    gated = mlp.gate is not None
    return FeedForward(
        w1=_np(mlp.up.weight),
        b1=_np(mlp.up.bias),
        w2=_np(mlp.down.weight),
        b2=_np(mlp.down.bias),
        activation=Activation.SILU if gated else Activation.GELU,
        w_gate=_np(mlp.gate.weight) if gated else None,
        b_gate=_np(mlp.gate.bias) if gated else None,
    )


def to_model(
    net: Decoder, name: str, meta: dict[str, Any] | None = None, beta: float | None = None
) -> Model:
    """The attncert model of ``net``, built with the spec's classes (module docstring);
    ``beta``: the inverse temperature the network was trained with at the end."""
    recipe = net.recipe
    features = recipe.features if net.pos is not None else ()
    embedding = Embedding(
        vocab=net.vocab,
        word=_np(net.emb.weight),
        features=features,
        pos_weight=_np(net.pos.weight) if net.pos is not None else np.zeros((recipe.d, 0)),
        table=_np(net.table.weight) if net.table is not None else None,
    )
    layers = tuple(
        Layer(
            heads=_export_heads(block.attn, recipe.causal, beta),
            ffn=_export_mlp(block.mlp),
            norm1=_export_norm(block.norm1),
            norm2=_export_norm(block.norm2),
            norm_position=NormPosition.PRE,
        )
        for block in net.blocks
    )
    readout = Readout(
        weight=_np(net.head.weight)[0], bias=float(_np(net.head.bias)[0]), position=recipe.position
    )
    return Model(
        alphabet=net.alphabet,
        embedding=embedding,
        layers=layers,
        readout=readout,
        bos=BOS if recipe.bos else None,
        name=name,
        meta=dict(meta or {}),
        final_norm=_export_norm(net.norm),
    )


__all__ = ["Decoder", "alibi_slopes", "to_model"]
