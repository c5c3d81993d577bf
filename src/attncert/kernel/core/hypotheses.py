"""Lemma 5's hypotheses for a concrete model, in words (trusted; one definition for every
verdict that says OUTSIDE-THEOREM about Lemma 5 or Theorem 6).

Hahn (2020), Lemma 5 and the supplement's k = 0 step, as this project states them: every
head is a softmax head that attends to all n positions (no mask), with an inverse
temperature that does not grow with n (so attention logits stay bounded), no ALiBi term
(−m·(i − j) is unbounded in n), and every positional feature the model uses is bounded.
A statement for every length needs, besides, a model defined at every length (no learned
position table). The per-n certificates (``sensitivity --certify``, ``soft-certify``) and
the length-uniform one (``sensitivity --uniform``) use the same list, so a report's rows
and its all-length analysis agree on what is outside the lemma.
"""

from __future__ import annotations

import numpy as np

from attncert.model.spec import Model


def alibi_outside(li: int, hi: int, slope: float) -> str:
    """Why an ALiBi head puts a model outside Lemma 5, in one sentence (the search's
    reports quote it too)."""
    return (
        f"layers[{li}].heads[{hi}] adds ALiBi's −m·(i − j) with m = {slope!r} to its scores, "
        "unbounded in n: attention can stay concentrated on the nearest positions at every "
        "length, so a position near the query keeps a Θ(1) influence — Lemma 5's "
        "bounded-logit hypothesis fails (the lemma does not apply, not only its proof)"
    )


def lemma5(model: Model, *, every_length: bool) -> tuple[str, ...]:
    """The hypotheses of Lemma 5 that ``model`` violates, each in one sentence naming the
    field (empty: the lemma applies). ``every_length``: a statement for every n (a learned
    position table, defined up to its last row, is then outside too); otherwise a
    statement at one n, where the table is just a table."""
    out = []
    hard, masked, hot = [], {}, {}
    for li, layer in enumerate(model.layers):
        for hi, h in enumerate(layer.heads):
            where = f"layers[{li}].heads[{hi}]"
            if h.kind.is_hard:
                hard.append(where)
                continue
            if h.alibi is not None and h.alibi != 0:
                out.append(alibi_outside(li, hi, h.alibi))
            if h.mask.value != "none":
                masked.setdefault(h.mask.value, []).append(where)
            t = h.temperature
            if t is not None and not (t.log_power == 0 and t.n_power <= 0):
                hot.setdefault(str(t), []).append(where)
    if hard:
        out.append(f"{_heads(hard)} hard-attention heads: Lemma 5 is about softmax attention")
    for mask, heads in masked.items():
        out.append(
            f"{_heads(heads)} masked ({mask!r}): Lemma 5's proof assumes every query attends "
            "to all n positions, so that one key's weight is ≤ e^Δ/(e^Δ + n − 1); a query at "
            "position j of a masked head sees only about j keys"
        )
    for temp, heads in hot.items():
        out.append(
            f"{_heads(heads, False)}: inverse temperature β(N) = {temp} grows with n (Lemma 5 "
            "assumes parameters independent of n, so that attention scores stay bounded)"
        )
    emb = model.embedding
    for fi, f in enumerate(emb.features):
        if not f.bounded and np.any(emb.pos_weight[:, fi] != 0):
            out.append(
                f"positional feature {f.label!r} (embedding.features[{fi}]) is unbounded: "
                "Lemma 5 needs bounded positional encodings (the k = 0 step of its proof)"
            )
    if every_length and emb.table is not None:
        out.append(
            f"the model has a learned position table with {emb.table.shape[0]} rows "
            "(embedding.table): it is not defined for longer inputs, so no statement for "
            "every n can be made"
        )
    return tuple(out)


def _heads(where: list[str], verb: bool = True) -> str:
    if not verb:
        return ", ".join(where)
    return where[0] + " is" if len(where) == 1 else ", ".join(where) + " are"
