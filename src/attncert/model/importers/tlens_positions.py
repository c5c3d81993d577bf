"""The positions of a TransformerLens ``HookedTransformer`` by
``cfg.positional_embedding_type`` (``transformer_lens/components/*.py`` is the reference):

* "standard": ``pos_embed.W_pos`` (its first ``max_length`` rows, default all ``n_ctx``) →
  the learned position table (0-based token index, BOS included);
* "rotary": RoPE in the rotate-half layout on the first ``rotary_dim`` coordinates of each
  head, base ``rotary_base``, ``rotary_scaling_factor`` → :attr:`Rotary.scale`, checked
  against each block's cached cos/sin tables;
* "alibi": per-head slopes as TransformerLens computes them (``create_alibi_multipliers``:
  2^(−8/H)·(2^(−8/H))^h in float32); TransformerLens adds m·(j − i) for keys j ≤ i,
  attncert's −m·(i − j).

For rotary and ALiBi models ``max_length`` gives a zero position table of that many rows,
bounding the inputs.
"""

from __future__ import annotations

import math

import numpy as np

from attncert.errors import SpecError, UnsupportedError
from attncert.model.importers._common import to_numpy
from attncert.model.importers.tlens_config import TLImport
from attncert.model.spec import Rotary


def positions(imp: TLImport, max_length: int | None) -> np.ndarray | None:
    """The position table (or None), setting ``imp.rotary`` / ``imp.slopes``."""
    if max_length is not None and (
        isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1
    ):
        raise SpecError(f"max_length {max_length!r}", where="max_length", expected="≥ 1")
    imp.rotary = None
    imp.slopes = None
    if imp.pos_type == "standard":
        w_pos = to_numpy(imp.model.pos_embed.W_pos)
        keep = w_pos.shape[0] if max_length is None else max_length
        if keep > w_pos.shape[0]:
            raise SpecError(
                f"max_length {max_length}",
                where="max_length",
                expected=f"1..{w_pos.shape[0]} (n_ctx)",
            )
        imp.notes["positions"] = f"pos_embed.W_pos[:{keep}] as the learned position table"
        return w_pos[:keep]
    if imp.pos_type == "rotary":
        imp.rotary = _rotary(imp)
    else:
        imp.slopes = _alibi_slopes(imp)
    if max_length is None:
        return None
    imp.notes["max_length"] = (
        f"inputs limited to {max_length} tokens by a zero position table (TransformerLens "
        f"itself allows n_ctx = {imp.cfg.n_ctx})"
    )
    return np.zeros((max_length, imp.d))


def _rotary(imp: TLImport) -> Rotary:
    cfg = imp.cfg
    dh = int(cfg.d_head)
    dim = int(imp.field("rotary_dim") or dh)
    base = float(imp.field("rotary_base", 10000))
    scale = float(imp.field("rotary_scaling_factor", 1.0) or 1.0)
    if dim % 2 or not 2 <= dim <= dh:
        imp.refuse(
            "rotary_dim",
            f"rotary dimension {dim} of head dimension {dh}",
            f"an even integer in 2..{dh}",
        )
    rot = Rotary(base=base, dim=dim, scale=scale)
    _check_rotary_tables(imp, rot)
    imp.notes["rope"] = {
        "base": base,
        "dim": dim,
        "head_dim": dh,
        "scale": scale,
        "note": "attncert's angles are the exact t·base^(-2k/dim)/scale; TransformerLens "
        "computes t / (base^(2k/dim)·scale) in float64 for a float64 model (float32 else)",
    }
    return rot


def _check_rotary_tables(imp: TLImport, rot: Rotary) -> None:
    """Each block's cached cos/sin must be the formula's (to float32 rounding)."""
    for li, block in enumerate(imp.model.blocks):
        cos = getattr(block.attn, "rotary_cos", None)
        sin = getattr(block.attn, "rotary_sin", None)
        if cos is None or sin is None:
            continue
        rows = min(cos.shape[0], 64)
        ang = rot.angles(np.arange(rows))
        want_c = np.concatenate([np.cos(ang), np.cos(ang)], axis=1)
        want_s = np.concatenate([np.sin(ang), np.sin(ang)], axis=1)
        got_c, got_s = to_numpy(cos)[:rows], to_numpy(sin)[:rows]
        if (
            got_c.shape != want_c.shape
            or not np.allclose(got_c, want_c, rtol=0, atol=1e-5)
            or not np.allclose(got_s, want_s, rtol=0, atol=1e-5)
        ):
            raise UnsupportedError(
                f"the rotary cos/sin tables are not those of base {rot.base}, dim {rot.dim}, "
                f"scale {rot.scale} in the rotate-half layout",
                where=f"blocks.{li}.attn.rotary_cos",
                expected="TransformerLens's default rope of cfg.rotary_base / rotary_dim",
            )


def _alibi_slopes(imp: TLImport) -> np.ndarray:
    nh = int(imp.cfg.n_heads)
    attn_cls = type(imp.model.blocks[0].attn)
    slopes = to_numpy(attn_cls.create_alibi_multipliers(nh, "cpu"))
    exact = all(math.frexp(s)[0] == 0.5 for s in slopes)
    imp.notes["alibi"] = {
        "slopes": [float(s) for s in slopes],
        "note": "TransformerLens's create_alibi_multipliers (float32); it adds the float32 "
        "product m·(j − i) for keys j ≤ i, which softmax sees as attncert's −m·(i − j)"
        + (
            " (every slope a power of two: the products are exact)"
            if exact
            else " (the float32 products m·(j − i) are rounded: relative ~6e-8 of the term)"
        ),
    }
    return slopes
