"""Rotary positions of a Hugging Face decoder (``rope_parameters``, or ``rope_scaling``,
``rope_theta``, ``rotary_emb_base``, ``partial_rotary_factor`` / ``rotary_pct`` before
transformers 5) as an attncert :class:`Rotary`, checked against the model's own
``rotary_emb.inv_freq`` (transformers' ``modeling_rope_utils.py`` is the reference).

The default and linear rope types are imported (linear: ``factor`` → :attr:`Rotary.scale`);
length- or position-dependent frequencies (dynamic, YaRN, llama3, LongRoPE, …), a
``partial_rotary_factor`` ≠ 1 on the Llama family (transformers ignores it there or
fails) and an odd rotary dimension are refused, naming the config field.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attncert.errors import UnsupportedError
from attncert.model.importers._common import plain_config, to_numpy
from attncert.model.importers.hf_config import LLAMA_FAMILY, HFImport
from attncert.model.spec import Rotary

ROPE_TYPES = ("default", "linear")


def rotary(imp: HFImport, head_dim: int) -> Rotary:
    """The rotary embedding of heads of dimension ``head_dim`` (recorded in ``imp.notes``)."""
    config = imp.config
    params = getattr(config, "rope_parameters", None)
    if params is None:  # transformers < 5
        params = dict(getattr(config, "rope_scaling", None) or {})
        for old, new in (("rope_theta", "rope_theta"), ("rotary_emb_base", "rope_theta")):
            if getattr(config, old, None) is not None:
                params.setdefault(new, getattr(config, old))
        for old in ("partial_rotary_factor", "rotary_pct"):
            if getattr(config, old, None) is not None:
                params.setdefault("partial_rotary_factor", getattr(config, old))
    params = dict(params)
    imp.fields["rope_parameters"] = plain_config(params)
    if any(isinstance(v, Mapping) for v in params.values()):
        imp.refuse("rope_parameters", "per-layer-type rope parameters", "one rope_parameters dict")
    rope_type = params.get("rope_type", params.get("type", "default")) or "default"
    if rope_type not in ROPE_TYPES:
        imp.refuse(
            "rope_parameters['rope_type']",
            f"rope type {rope_type!r} (position-dependent or length-dependent frequencies)",
            "'default' or 'linear' (rope_scaling factor → Rotary.scale)",
        )
    base = float(params.get("rope_theta", getattr(config, "rope_theta", 10000.0)))
    scale = 1.0
    if rope_type == "linear":
        scale = float(params["factor"])
    partial = params.get("partial_rotary_factor")
    if imp.type in LLAMA_FAMILY:
        if partial not in (None, 1, 1.0):
            imp.refuse(
                "partial_rotary_factor",
                f"partial_rotary_factor {partial} on {imp.cls}: transformers' "
                "apply_rotary_pos_emb there rotates the whole head (the default rope "
                "ignores the factor, linear rope fails)",
                "partial_rotary_factor 1 (or None)",
            )
        dim = head_dim
    else:
        dim = int(head_dim * (1.0 if partial is None else float(partial)))
    if dim % 2 or dim < 2:
        imp.refuse(
            "rope_parameters['partial_rotary_factor']",
            f"rotary dimension {dim} of head dimension {head_dim}: transformers rotates "
            f"{2 * ((dim + 1) // 2)} coordinates with frequencies base^(-2k/{dim})",
            "an even rotary dimension ≥ 2",
        )
    rot = Rotary(base=base, dim=dim, scale=scale)
    _check_inv_freq(imp, rot)
    imp.notes["rope"] = {
        "rope_type": rope_type,
        "base": base,
        "dim": dim,
        "head_dim": head_dim,
        "scale": scale,
        "note": "attncert's angles are the exact t·base^(-2k/dim), t = position/scale; "
        "transformers computes inv_freq, the angles and cos/sin in float32",
    }
    return rot


def _check_inv_freq(imp: HFImport, rot: Rotary) -> None:
    """The module's own frequencies must be the formula's (to float32 rounding)."""
    emb = getattr(imp.core, "rotary_emb", None)
    inv = getattr(emb, "inv_freq", None)
    if inv is None:
        return
    got = to_numpy(inv)
    k = np.arange(rot.dim // 2)
    want = rot.base ** (-2.0 * k / rot.dim) / rot.scale
    scaling = float(getattr(emb, "attention_scaling", 1.0))
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=0) or scaling != 1.0:
        raise UnsupportedError(
            f"rotary_emb.inv_freq (length {got.shape[0]}, attention_scaling {scaling}) is "
            f"not base^(-2k/dim)/scale for base {rot.base}, dim {rot.dim}, scale {rot.scale}",
            where="rotary_emb",
            expected="the default or linear rope of config.rope_parameters",
        )
