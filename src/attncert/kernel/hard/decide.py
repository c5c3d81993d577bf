"""The kernel's rigorous decision of a hard-attention model on one input string.

:func:`decide` holds every activation as a float64 enclosure
(:mod:`attncert.arith.enclose`), scores attention blockwise with the rigorous row bound
(:func:`attncert.arith.filter.row_bounds`; no N × N array), and evaluates in the field —
exact rationals, or arb balls with precision escalating 53 → 4096 bits — only the
near-maximal keys of a query and a readout whose enclosure straddles 0
(:class:`attncert.arith.rows.RowGraph`). Two keys whose activations are *structurally
identical* (same identity key: the same computation on identical exact inputs) tie
exactly; keys with different identities must separate, else the precision is raised
and, at the cap, the decision fails with :class:`~attncert.arith.field.Undecided`.

The full pass that keeps every activation and choice (and handles softmax heads) is
:mod:`attncert.kernel.core.trace` (``forward_rigorous``), which the hard checker does not need.

Part of the trusted kernel; imports no solver and no search code.
"""

from __future__ import annotations

import numpy as np
from flint import arb, fmpq

from attncert.arith import enclose
from attncert.arith.field import Field, escalate
from attncert.arith.filter import Enclosed, row_bounds
from attncert.arith.positionwise import model_maps
from attncert.arith.rows import RowGraph
from attncert.errors import InputError
from attncert.model.spec import AttentionKind, Head, Model

_SCORE_ENTRIES = 1 << 20  # float scores held at once (8 MiB)


def is_rational(model: Model) -> bool:
    """Exact rational evaluation applies: hard heads only, rational position-wise maps."""
    return model.is_rational and model.is_hard


def decide(model: Model, string: str) -> bool:
    """The model's decision on ``string``, decided rigorously.

    Hard-attention models only (:func:`decide_tokens`): every row in float enclosures,
    the field only for the comparisons they leave open. Models with softmax heads are
    decided by the full pass, :func:`attncert.kernel.core.trace.forward_rigorous`."""
    return decide_tokens(model, model.encode(string))


def decide_tokens(model: Model, tokens: list[int]) -> bool:
    """The decision of a hard-attention model on token ids, without building any
    N × d field matrix: activations are float64 enclosures
    (:mod:`attncert.arith.enclose`), attention is scored blockwise (no N × N array),
    and only the near-maximal keys of a query and a readout whose enclosure straddles
    0 are evaluated in the field (:class:`attncert.arith.rows.RowGraph`), with the
    same structural ties and precision escalation as :func:`forward_rigorous`."""
    if not model.is_hard:
        raise InputError(
            "the lean decision needs hard attention",
            expected="no softmax heads, or attncert.kernel.core.trace.forward_rigorous",
        )
    if not tokens:
        raise InputError(
            "the model sees no tokens (empty input and no BOS/EOS)", expected="a non-empty string"
        )
    return escalate(lambda f: _decide(model, list(tokens), f), rational=is_rational(model))


def _decide(model: Model, tokens: list[int], field: Field) -> bool:
    n_tok = len(tokens)
    graph = RowGraph(model, n_tok, field)
    pos = np.arange(n_tok)
    ids = graph.add_embedding(tokens, pos)
    x = enclose.embed(model, np.asarray(tokens, dtype=np.int64), pos, n_tok)
    d = model.d
    for li, layer in enumerate(model.layers):
        u = enclose.attention_inputs(model, li, x)
        attn = enclose.point(np.zeros((n_tok, d)))
        attended: list[list[tuple[int, ...]]] = [[] for _ in range(n_tok)]
        for hi, head in enumerate(layer.heads):
            q, k, ov = enclose.projections_at(model, li, hi, u, pos)
            chosen = _choose_blockwise(graph, head, q, k, ids, li, hi)
            single = np.array([c[0] if len(c) == 1 else 0 for c in chosen], dtype=np.int64)
            out = ov.take(single)
            none = np.array([not c for c in chosen])
            multi = [t for t, c in enumerate(chosen) if len(c) > 1]
            if multi:
                avg = enclose.mean_rows(ov, [np.array(chosen[t]) for t in multi])
                out.mid[multi], out.rad[multi] = avg.mid, avg.rad
            if none.any():
                out.mid[none], out.rad[none] = 0.0, 0.0
            attn = enclose.add(attn, enclose.add(out, enclose.point(head.bias("b_o")[None, :])))
            for t, c in enumerate(chosen):
                attended[t].append(tuple(int(ids[j]) for j in c))
        x = enclose.finish_layer(model, li, x, attn)
        ids = graph.add_rows(li + 1, ids, attended)
    terms = enclose.readout_terms(model, x)
    r = model.readout
    if r.pooled:
        box = enclose.mean_rows(terms, [np.arange(n_tok)])
    else:
        box = terms.take(np.array([r.index(n_tok)]))
    box = enclose.add(box, enclose.point(np.array([[r.bias]])))
    mid, rad = float(box.mid[0, 0]), float(box.rad[0, 0])
    if mid > rad:  # floats compare exactly: the whole enclosure is above 0
        return True
    if -mid > rad:
        return False
    # the enclosure straddles 0: the logit in the field
    if r.pooled:
        total = sum((graph.readout_term(int(t)) for t in ids), field.zero())
        logit = total * (fmpq(1, n_tok) if field.exact else arb(1) / n_tok)
    else:
        logit = graph.readout_term(int(ids[r.index(n_tok)]))
    return field.sign(logit + model_maps(model, field).readout_bias, "the readout's sign") > 0


def _choose_blockwise(
    graph: RowGraph,
    head: Head,
    q: Enclosed,
    k: Enclosed,
    ids: np.ndarray,
    li: int,
    hi: int,
) -> list[tuple[int, ...]]:
    """Attended positions per query position; scores in float blocks with a rigorous
    per-query bound E (:func:`attncert.arith.filter.row_bounds`): a key whose float
    score is below the block maximum − 2E certainly loses; the rest are compared in the
    field, equal identity keys tying exactly."""
    n_tok = q.mid.shape[0]
    block = max(1, min(n_tok, _SCORE_ENTRIES // max(n_tok, 1)))
    keys = graph.keys
    out: list[tuple[int, ...]] = []
    for c0 in range(0, n_tok, block):
        rows = np.arange(c0, min(n_tok, c0 + block))
        qb = q.take(rows)
        s = qb.mid @ k.mid.T
        visible = head.mask.rows(rows, n_tok)
        if visible is not None:
            s[~visible] = -np.inf
        e = row_bounds(qb, k)
        arg = s.argmax(axis=1)
        top = s[np.arange(len(rows)), arg]
        near = s >= (top - 2 * e)[:, None]
        count = near.sum(axis=1)
        for t, i in enumerate(rows.tolist()):
            seen = np.ones(n_tok, dtype=bool) if visible is None else visible[t]
            # False when the float facts overflowed (a score or E infinite or NaN): then
            # every visible key is a candidate (never a masked one), compared in the field
            finite = bool(np.isfinite(top[t] - 2 * e[t]))
            if not seen.any():
                out.append(())
            elif finite and count[t] == 1:
                out.append((int(arg[t]),))
            else:
                cand = np.nonzero(near[t] if finite else seen)[0].tolist()
                what = f"a score comparison of layers[{li}].heads[{hi}] at query position {i}"
                qi = int(ids[i])
                best = [cand[0]]
                for j in cand[1:]:
                    b = best[0]
                    c = graph.field.compare(
                        graph.score(qi, int(ids[j]), li, hi),
                        graph.score(qi, int(ids[b]), li, hi),
                        keys[ids[j]] == keys[ids[b]],
                        what,
                    )
                    if c > 0:
                        best = [j]
                    elif c == 0:
                        best.append(j)
                if head.kind is AttentionKind.LEFTMOST:
                    out.append((best[0],))
                elif head.kind is AttentionKind.RIGHTMOST:
                    out.append((best[-1],))
                else:
                    out.append(tuple(best))
    return out
