"""Attention heads of a Hugging Face decoder from its projections: grouped-query attention
expanded as transformers' ``repeat_kv`` does, fused ``query_key_value`` split head by
head, the score scale 1/√d_head, and Bloom's ALiBi slopes.

The score scale: folded into W_Q and b_Q when d_head = 4^k (exact), else a softmax
inverse temperature fl(1/√d_head) (:func:`~attncert.model.importers._common.scale_query`);
for ALiBi heads a temperature would also scale the ALiBi term, so fl(1/√d_head) is folded
into W_Q and b_Q (:func:`~attncert.model.importers._common.fold_scale`: rounded products,
recorded in ``meta["hf"]["score_scale"]``).
"""

from __future__ import annotations

import math

import numpy as np

from attncert.errors import SpecError
from attncert.model.importers._common import fold_scale, require_torch, scale_query
from attncert.model.importers.hf_config import HFImport
from attncert.model.spec import Head, Mask


def alibi_slopes(num_heads: int) -> np.ndarray:
    """Bloom's ALiBi slopes for ``num_heads`` heads, as transformers computes them
    (``_get_alibi_slopes``): with p the largest power of two ≤ H, slopes b^1 … b^p for
    b = 2^(−8/p), then (H > p) c^1, c^3, … c^(2(H−p)−1) for c = 2^(−4/p) — the bases
    rounded to float32 and the powers taken in float32 (exact powers of two for H < 9).
    Returned as float64 (exactly the float32 values)."""
    torch = require_torch("computing ALiBi slopes")
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        raise SpecError(f"{num_heads!r} heads", where="n_head", expected="an integer ≥ 1")
    p = 2 ** math.floor(math.log2(num_heads))
    base = torch.full((), 2 ** (-(2 ** -(math.log2(p) - 3))), dtype=torch.float32)
    slopes = torch.pow(base, torch.arange(1, 1 + p, dtype=torch.int32))
    if p != num_heads:
        extra = torch.full((), 2 ** (-(2 ** -(math.log2(2 * p) - 3))), dtype=torch.float32)
        rest = min(p, num_heads - p)
        powers = torch.arange(1, 1 + 2 * rest, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra, powers)], dim=0)
    return slopes.double().numpy().copy()


def split_fused(w: np.ndarray, nh: int, dh: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A fused ``query_key_value`` weight (3·nh·dh, d) or bias (3·nh·dh,) laid out head by
    head as [q_h, k_h, v_h] (GPT-NeoX's view(…, nh, 3·dh).chunk(3), Bloom's
    view(…, nh, 3, dh)) → (W_Q, W_K, W_V), each (nh·dh, …) head by head."""
    blocks = w.reshape(nh, 3, dh, *w.shape[1:])
    return tuple(blocks[:, t].reshape(nh * dh, *w.shape[1:]) for t in range(3))  # type: ignore[return-value]


def heads(
    imp: HFImport,
    wq: np.ndarray,
    bq: np.ndarray | None,
    wk: np.ndarray,
    bk: np.ndarray | None,
    wv: np.ndarray,
    bv: np.ndarray | None,
    wo: np.ndarray,
    bo: np.ndarray | None,
    nh: int,
    nkv: int,
    dh: int,
    *,
    alibi: np.ndarray | None = None,
) -> list[Head]:
    """Heads from the projections: ``wq`` (nh·dh, d), ``wk``/``wv`` (nkv·dh, d) each
    grouped head by head, ``wo`` (d, nh·dh); query head h reads key/value head
    h // (nh / nkv) (``repeat_kv``); ``bo`` (``o_proj.bias``) → head 0's b_O. Rotary heads
    use ``imp.rotary``; ``alibi`` gives one slope per head."""
    rep = nh // nkv
    out = []
    for h in range(nh):
        sq = slice(h * dh, (h + 1) * dh)
        g = h // rep
        skv = slice(g * dh, (g + 1) * dh)
        q_w = wq[sq]
        q_b = np.zeros(dh) if bq is None else bq[sq]
        if alibi is not None:  # the ALiBi term is not scaled: fold 1/√dh into W_Q and b_Q
            q_w, q_b, temp = fold_scale(q_w, q_b, dh, imp.kind, imp.score_scale)
        else:
            q_w, q_b, temp = scale_query(q_w, q_b, dh, imp.kind, imp.score_scale)
        out.append(
            Head(
                q_w,
                wk[skv],
                wv[skv],
                wo[:, sq],
                kind=imp.kind,
                mask=Mask.FUTURE,
                temperature=temp,
                b_q=None if bq is None else q_b,
                b_k=None if bk is None else bk[skv],
                b_v=None if bv is None else bv[skv],
                b_o=bo if (h == 0 and bo is not None) else None,
                rotary=None if alibi is not None else imp.rotary,
                alibi=None if alibi is None else float(alibi[h]),
            )
        )
    return out
