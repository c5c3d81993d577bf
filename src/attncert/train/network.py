"""The PyTorch classifier a :class:`~attncert.train.recipes.Recipe` describes, and its import.

``Classifier`` = ``nn.Embedding`` (alphabet, then BOS) + positional features φ(i, N)
projected by ``nn.Linear(F, d, bias=False)`` + ``nn.TransformerEncoder`` (LayerNorm
pre- or post-norm, GELU, final LayerNorm, dropout 0) + ``nn.Linear(d, 1)`` read at the
readout position. φ is attncert's own :func:`~attncert.model.positional.feature_matrix`
(the float64 values attncert evaluates, rounded once to the training dtype), so the
network trained here and the model attncert evaluates compute the same function;
:func:`to_model` imports it with :func:`attncert.model.importers.model_from_torch`.

**Hard-attention training** (``Recipe.attention == "hard"``): the same modules, run by
:meth:`Classifier.forward` with an inverse temperature β multiplying every attention
score, softmax(β·QKᵀ/√d_h) — with ``noise``, softmax(β·(QKᵀ/√d_h + G)) for i.i.d.
standard Gumbel noise G (the Gumbel-softmax: as β grows it samples one key from
softmax(QKᵀ/√d_h), so the network cannot lean on an average over tied or near-tied keys,
which β alone never removes) — the encoder layers are then evaluated by
:func:`_tempered_layer`, which is PyTorch's ``TransformerEncoderLayer`` forward written
out (equal to it at β = 1 up to float rounding, a test checks) with the scores scaled.
The trainer anneals β to saturation (:mod:`attncert.train.trainer`); ``straight_through``
runs the forward pass with one-hot argmax attention (ties to the leftmost key, as
attncert's hardened heads) and takes the gradient of the tempered softmax (the
straight-through estimator). :func:`to_model` records the final β as the heads'
inverse temperature, so the imported soft model is the network as trained.

This module imports torch; :mod:`attncert.train.trainer` imports it lazily.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from attncert.languages import language
from attncert.model.importers import model_from_torch
from attncert.model.positional import feature_matrix
from attncert.model.spec import AttentionKind, Model, Temperature
from attncert.train.recipes import BOS, Recipe


class Classifier(nn.Module):
    """Embedding + named positional features + TransformerEncoder + linear readout."""

    def __init__(self, recipe: Recipe):
        super().__init__()
        self.recipe = recipe
        lang = language(recipe.language)
        self.alphabet = tuple(lang.alphabet)
        vocab = self.alphabet + ((BOS,) if recipe.bos else ())
        self.index = {s: k for k, s in enumerate(vocab)}
        d = recipe.d
        self.emb = nn.Embedding(len(vocab), d)
        self.pos = nn.Linear(len(recipe.features), d, bias=False) if recipe.features else None
        layer = nn.TransformerEncoderLayer(
            d,
            recipe.heads,
            dim_feedforward=recipe.d_ff,
            dropout=0.0,
            activation=recipe.activation,
            batch_first=True,
            norm_first=recipe.norm_first,
        )
        norm = nn.LayerNorm(d) if recipe.final_norm else None
        self.encoder = nn.TransformerEncoder(
            layer, recipe.layers, norm=norm, enable_nested_tensor=False
        )
        self.head = nn.Linear(d, 1)
        self._phi: dict[int, torch.Tensor] = {}

    def tokens(self, strings: list[str]) -> torch.Tensor:
        """Token ids (B, N) of equal-length strings, BOS first if the recipe has one."""
        bos = [self.index[BOS]] if self.recipe.bos else []
        return torch.tensor([bos + [self.index[c] for c in s] for s in strings])

    def features(self, n_tokens: int) -> torch.Tensor:
        phi = self._phi.get(n_tokens)
        if phi is None:
            phi = torch.tensor(
                feature_matrix(self.recipe.features, n_tokens), dtype=self.emb.weight.dtype
            )
            self._phi[n_tokens] = phi
        return phi

    def forward(
        self,
        tokens: torch.Tensor,
        beta: float | None = None,
        straight_through: bool = False,
        noise: bool = False,
    ) -> torch.Tensor:
        """Logits of a token batch. ``beta`` None: PyTorch's own encoder forward (the
        soft recipes); else every attention score is multiplied by ``beta`` (after adding
        Gumbel noise with ``noise``), and with ``straight_through`` the forward pass
        attends by one-hot argmax."""
        n = tokens.shape[1]
        x = self.emb(tokens)
        if self.pos is not None:
            x = x + self.pos(self.features(n))[None]
        mask = None
        if self.recipe.causal:
            mask = nn.Transformer.generate_square_subsequent_mask(n, dtype=x.dtype)
        if beta is None and not straight_through and not noise:
            causal = mask is not None
            y = self.encoder(x, mask=mask, is_causal=True) if causal else self.encoder(x)
        else:
            y = x
            for tl in self.encoder.layers:
                beta_ = 1.0 if beta is None else beta
                y = _tempered_layer(tl, y, beta_, mask, straight_through, noise)
            if self.encoder.norm is not None:
                y = self.encoder.norm(y)
        if self.recipe.position == "first":
            r = y[:, 0]
        elif self.recipe.position == "last":
            r = y[:, -1]
        else:
            r = y.mean(dim=1)
        return self.head(r)[:, 0]


def _tempered_layer(
    tl: nn.TransformerEncoderLayer,
    x: torch.Tensor,
    beta: float,
    mask: torch.Tensor | None,
    straight_through: bool,
    noise: bool = False,
) -> torch.Tensor:
    """``tl``'s forward (pre- or post-norm, dropout 0) with scores × ``beta``."""
    opts = (beta, mask, straight_through, noise)
    if tl.norm_first:
        x = x + _tempered_attention(tl.self_attn, tl.norm1(x), *opts)
        return x + tl._ff_block(tl.norm2(x))
    x = tl.norm1(x + _tempered_attention(tl.self_attn, x, *opts))
    return tl.norm2(x + tl._ff_block(x))


def _tempered_attention(
    attn: nn.MultiheadAttention,
    x: torch.Tensor,
    beta: float,
    mask: torch.Tensor | None,
    straight_through: bool,
    noise: bool = False,
) -> torch.Tensor:
    """Multi-head self-attention with softmax(β·(QKᵀ/√d_h + G)) (G Gumbel noise with
    ``noise``, else 0; or its straight-through argmax), the parameters of ``attn`` as
    ``nn.MultiheadAttention`` uses them."""
    b, n, d = x.shape
    h = attn.num_heads
    dh = d // h
    q, k, v = F.linear(x, attn.in_proj_weight, attn.in_proj_bias).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, n, h, dh).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
    if noise:
        u = torch.rand_like(scores).clamp(1e-9, 1.0 - 1e-7)
        scores = scores - torch.log(-torch.log(u))
    scores = scores * beta
    if mask is not None:
        scores = scores + mask
    weights = torch.softmax(scores, dim=-1)
    if straight_through:
        hard = F.one_hot(scores.argmax(dim=-1), n).to(weights.dtype)  # first maximum
        weights = hard + weights - weights.detach()
    out = (weights @ v).transpose(1, 2).reshape(b, n, d)
    return attn.out_proj(out)


def to_model(
    net: Classifier, name: str, meta: dict[str, Any] | None = None, beta: float | None = None
) -> Model:
    """The attncert model of ``net`` (weights converted to float64 exactly); ``beta``:
    the inverse temperature the network was trained with at the end, multiplied into
    every softmax head's temperature (the importer's 1/√d_h stays where it is)."""
    model = _import(net, name, meta)
    if beta is None or beta == 1.0:
        return model
    layers = []
    for layer in model.layers:
        heads = []
        for head in layer.heads:
            if head.kind is AttentionKind.SOFTMAX:
                t = head.temperature or Temperature(1.0)
                head = replace(head, temperature=replace(t, coef=t.coef * float(beta)))
            heads.append(head)
        layers.append(replace(layer, heads=tuple(heads)))
    return replace(model, layers=tuple(layers))


def _import(net: Classifier, name: str, meta: dict[str, Any] | None) -> Model:
    recipe = net.recipe
    return model_from_torch(
        net.encoder,
        alphabet=net.alphabet,
        bos=BOS if recipe.bos else None,
        embedding=net.emb,
        features=recipe.features,
        pos_weight=net.pos.weight if net.pos is not None else None,
        readout=net.head,
        position=recipe.position,
        causal=recipe.causal,
        name=name,
        meta=meta,
    )
