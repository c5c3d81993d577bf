"""The readout of a Hugging Face decoder by its class: the base model (hidden states after
the final norm, readout weight zero), the causal LM (the LM-head rows of ``lm_symbols`` →
:attr:`Readout.lm_weight`; tied embeddings are read through ``get_output_embeddings()``,
the same tensor) and the sequence classifier (``score`` at the last token: 1 label → the
logit, 2 labels → score[1] − score[0]; the pad token is checked by
:func:`~attncert.model.importers.hf_tokens.check_pad_token` before any weight is read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from attncert.errors import SpecError
from attncert.model.importers._common import (
    check_finite,
    linear_readout_weight,
    plain_config,
    to_numpy,
)
from attncert.model.importers.hf_config import HFImport
from attncert.model.spec import Readout


def readout(
    imp: HFImport,
    alphabet: tuple[str, ...],
    eos: str | None,
    lm_symbols: Sequence[str] | None,
    token_ids: Mapping[str, int],
) -> tuple[Readout, str]:
    """(readout, a label for ``meta``) of ``imp.model`` by its role (module docstring)."""
    d = imp.d
    if imp.role == "ForCausalLM":
        symbols = (
            tuple(lm_symbols) if lm_symbols is not None else alphabet + ((eos,) if eos else ())
        )
        missing = [s for s in symbols if s not in token_ids]
        if missing:
            raise SpecError(
                f"no token id for LM symbol {missing[0]!r}",
                where="token_ids",
                expected="a token id for every symbol of lm_symbols",
            )
        out = imp.model.get_output_embeddings()
        rows = [int(token_ids[s]) for s in symbols]
        weight = to_numpy(out.weight)[rows]
        check_finite(weight, "lm_head.weight (rows of lm_symbols)")
        bias = (
            to_numpy(out.bias)[rows]
            if getattr(out, "bias", None) is not None
            else np.zeros(len(rows))
        )
        tied = out.weight is imp.core.get_input_embeddings().weight
        imp.fields["tie_word_embeddings"] = plain_config(
            getattr(imp.config, "tie_word_embeddings", None)
        )
        imp.notes["lm_head"] = "tied to the input embeddings" if tied else "untied"
        ro = Readout(
            weight=np.zeros(d),
            position="last",
            lm_weight=weight,
            lm_bias=bias,
            lm_symbols=symbols,
        )
        return ro, "lm_head logits of " + "".join(symbols) + " (no accept decision)"
    if imp.role == "ForSequenceClassification":
        imp.field("pad_token_id")
        score = to_numpy(imp.model.score.weight)
        bias = (
            to_numpy(imp.model.score.bias)
            if getattr(imp.model.score, "bias", None) is not None
            else None
        )
        w, b = linear_readout_weight(score, bias, "score (config.num_labels)")
        label = "score[1] - score[0] at the last token" if score.shape[0] == 2 else "score[0]"
        return Readout(weight=w, bias=b, position="last"), label
    label = "none (hidden states after the final norm)"
    return Readout(weight=np.zeros(d), position="last"), label
