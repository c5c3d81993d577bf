"""The model a report is about, in words (:func:`describe_model`), and its section."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attncert.model.spec import Model
from attncert.report.section import Section
from attncert.report.sections.common import INFO


def describe_model(model: Model) -> dict[str, Any]:
    """Layers, heads (soft or hard), positional scheme, norms and readout, in words; and
    whether the readout weights are all zero (then every string gets the logit ``bias``:
    the model is constant, whatever the rest of its weights)."""
    emb = model.embedding
    heads = []
    for li, layer in enumerate(model.layers):
        for hi, h in enumerate(layer.heads):
            t = h.temperature
            heads.append(
                {
                    "layer": li + 1,
                    "head": hi,
                    "kind": h.kind.value,
                    "soft": not h.kind.is_hard,
                    "mask": h.mask.value,
                    "temperature": None if t is None else str(t),
                }
            )
    features = [f.label for f in emb.features]
    if emb.table is not None:
        features.append(f"learned table ({int(emb.table.shape[0])} rows)")
    rotary = {h.rotary for layer in model.layers for h in layer.heads if h.rotary is not None}
    features += [
        f"rotary (RoPE, base {r.base:g}, {r.dim} dims"
        + (f", scale {r.scale:g})" if r.scale != 1 else ")")
        for r in sorted(rotary, key=lambda r: (r.base, r.dim, r.scale))
    ]
    slopes = [h.alibi for layer in model.layers for h in layer.heads if h.alibi is not None]
    if slopes:
        features.append("ALiBi (slopes " + ", ".join(f"{m:.4g}" for m in slopes) + ")")
    norms = sum(1 for layer in model.layers for name in ("norm1", "norm2") if getattr(layer, name))
    acts = sorted({layer.ffn.activation.value for layer in model.layers if layer.ffn is not None})
    return {
        "name": model.name,
        "sha256": model.digest,
        "alphabet": "".join(model.alphabet),
        "bos": model.bos,
        "eos": model.eos,
        "d": model.d,
        "layers": model.num_layers,
        "heads": heads,
        "soft_heads": sum(h["soft"] for h in heads),
        "hard_heads": sum(not h["soft"] for h in heads),
        "positional": features or ["none (NoPE: positions only through the mask)"],
        "scheme": model.positional_scheme,
        "kinds": list(model.new_kinds),
        "layernorms": norms + (model.final_norm is not None),
        "activations": acts,
        "readout": model.readout.position,
        "readout_zero": not bool(np.any(model.readout.weight)),
        "readout_bias": float(model.readout.bias),
        "description": (model.meta or {}).get("description"),
    }


def _token(t: str | None, what: str) -> str:
    return f"no {what}" if t is None else f"{what} {t!r}"


def model_section(m: Mapping[str, Any]) -> Section:
    rows = tuple(
        (
            str(h["layer"]),
            str(h["head"]),
            h["kind"] + (" (soft)" if h["soft"] else " (hard)"),
            h["mask"],
            h["temperature"] or "— (fixed: 1)",
        )
        for h in m["heads"]
    )
    kind = (
        "only hard-attention heads"
        if not m["soft_heads"]
        else "only softmax heads"
        if not m["hard_heads"]
        else f"{m['soft_heads']} softmax and {m['hard_heads']} hard heads"
    )
    notes = [
        f"alphabet {m['alphabet']!r}, {_token(m.get('bos'), 'BOS')}, "
        f"{_token(m.get('eos'), 'EOS')}, width d = {m['d']}",
        f"positional scheme {m.get('scheme') or 'unknown'}: " + ", ".join(m["positional"]),
        f"{m['layernorms']} norm(s); feed-forward activation(s): "
        + (", ".join(m["activations"]) or "none")
        + (f"; version-3 kinds: {', '.join(m['kinds'])}" if m.get("kinds") else ""),
        f"readout at the {m['readout']} token; content hash {m['sha256'][:16]}…",
    ]
    summary = f"{m['layers']} layer(s), {len(m['heads'])} head(s): {kind}."
    if m.get("readout_zero"):
        b = m.get("readout_bias", 0.0)
        summary += (
            f" Its readout weights are all zero: every string gets the logit {b:g}, so the "
            "model is constant."
        )
        notes.insert(0, f"constant: the readout weights are all zero (bias {b:g})")
    if m.get("description"):
        notes.append(str(m["description"]))
    return Section(
        "model",
        "The model",
        INFO,
        summary,
        "What the analyses below are about; no claim is made here.",
        "A description of the weights file, not of what the model computes.",
        ("layer", "head", "attention", "mask", "inverse temperature β"),
        rows,
        tuple(notes),
        rule="a description: no verdict",
        about="no language: the weights",
    )


__all__ = ["describe_model", "model_section"]
