"""The PyTorch classifier a :class:`~attncert.train.recipes.Recipe` describes, and its import.

``Classifier`` = ``nn.Embedding`` (alphabet, then BOS) + positional features φ(i, N)
projected by ``nn.Linear(F, d, bias=False)`` + ``nn.TransformerEncoder`` (LayerNorm
pre- or post-norm, GELU, final LayerNorm, dropout 0) + ``nn.Linear(d, 1)`` read at the
readout position. φ is attncert's own :func:`~attncert.model.positional.feature_matrix`
(the float64 values attncert evaluates, rounded once to the training dtype), so the
network trained here and the model attncert evaluates compute the same function;
:func:`to_model` imports it with :func:`attncert.model.importers.model_from_torch`.

This module imports torch; :mod:`attncert.train.trainer` imports it lazily.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from attncert.languages import language
from attncert.model.importers import model_from_torch
from attncert.model.positional import feature_matrix
from attncert.model.spec import Model
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

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[1]
        x = self.emb(tokens)
        if self.pos is not None:
            x = x + self.pos(self.features(n))[None]
        if self.recipe.causal:
            mask = nn.Transformer.generate_square_subsequent_mask(n, dtype=x.dtype)
            y = self.encoder(x, mask=mask, is_causal=True)
        else:
            y = self.encoder(x)
        if self.recipe.position == "first":
            r = y[:, 0]
        elif self.recipe.position == "last":
            r = y[:, -1]
        else:
            r = y.mean(dim=1)
        return self.head(r)[:, 0]


def to_model(net: Classifier, name: str, meta: dict[str, Any] | None = None) -> Model:
    """The attncert model of ``net`` (weights converted to float64 exactly)."""
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
