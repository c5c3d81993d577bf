"""The full rigorous forward pass (every activation and attention choice kept): every activation exactly (rational models) or enclosed in
arb balls, every hard-attention choice and the readout's sign decided — never guessed.

Decisions:

* hard attention (leftmost / rightmost / average): the maximum score among the
  visible keys. A rigorous float filter (:mod:`attncert.arith.filter`) discards keys
  that certainly lose; the remaining near-maxima are compared exactly or in balls.
  Two keys whose activations are *structurally identical* (same identity key: the same
  computation on identical exact inputs, e.g. two equal tokens with no distinguishing
  position) tie exactly, whatever the balls say; keys with different identities must
  separate, else the precision is raised (53 → 4096 bits) and, at the cap, the pass
  fails with :class:`~attncert.arith.field.Undecided`;
* softmax attention: exp of the scores in arb (an enclosure, no decision needed);
* the readout: accept iff the logit is certainly > 0 (exact zero rejects).

Identity keys (:class:`~attncert.arith.field.Interner`): layer 0 by the exact rational
activation; layer ℓ by (ℓ, key of the position's own input, per head the keys of what
it attended to — the chosen keys for hard heads, all visible keys for softmax heads,
and for a softmax head whose scores see positions (RoPE, ALiBi) also the query's
position and the visible keys' positions, on which its weights then depend).

Positional scores (model-file version 3): a rotary head's queries and keys are rotated
by their token positions with cos and sin enclosed in arb, and an ALiBi head's get two
more coordinates, q′ = [q, m, −m·i], k′ = [k, j, 1], so that q′·k′ adds the exact
−m·(i − j) (:func:`attncert.arith.positionwise.position_rows`, as for the row graph):
every score is a dot product, bounded by the same float filter. Two structurally identical keys at different positions do not tie under
such a head (their scores differ by the position), so no tie is assumed for them: the
comparison must separate.

Part of the trusted kernel; imports no solver and no search code.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb, fmpq

from attncert.arith.field import Field, Interner, Matrix, Number, escalate, rows_of, to_floats
from attncert.arith.filter import Enclosed, row_bounds
from attncert.arith.positionwise import (
    attention_inputs,
    final_rows,
    finish_layer,
    model_maps,
    projections,
)
from attncert.arith.positionwise import position_rows as positional_qk
from attncert.errors import InputError
from attncert.model.positional import feature_matrix_exact
from attncert.model.spec import AttentionKind, Head, Model

_BLOCK = 512  # query rows per float score block


@dataclass(frozen=True, eq=False)
class RigorousLayer:
    inputs: Matrix  # N × d activations entering the layer (field matrix)
    keys: tuple[int, ...]  # identity key of each input row
    chosen: tuple[tuple[tuple[int, ...], ...], ...]  # [head][query]: attended positions
    output: Matrix  # N × d


@dataclass(frozen=True, eq=False)
class RigorousTrace:
    """A forward pass in a field: ``precision`` None = exact rationals, else arb bits."""

    tokens: tuple[int, ...]
    precision: int | None
    layers: tuple[RigorousLayer, ...]
    final: Matrix  # N × d after the final norm
    logit: Number  # fmpq, or an arb enclosure
    accept: bool

    def logit_interval(self) -> tuple[Fraction, Fraction]:
        """[lower, upper] of the logit as exact rationals."""
        x = self.logit
        if isinstance(x, fmpq):
            f = Fraction(int(x.p), int(x.q))
            return f, f
        mid, rad = _dyadic(x.mid()), _dyadic(x.rad())
        return mid - rad, mid + rad


def _dyadic(x: arb) -> Fraction:
    """The exact value of an exact arb (a ball midpoint or radius is a dyadic number)."""
    if x.is_zero():
        return Fraction(0)
    man, exp = x.man_exp()
    return Fraction(int(man)) * (Fraction(2) ** int(exp))


def forward_rigorous(model: Model, string: str) -> RigorousTrace:
    """Rigorous forward pass on one input string (BOS/EOS added as the model says)."""
    return forward_rigorous_tokens(model, model.encode(string))


def forward_rigorous_tokens(model: Model, tokens: list[int]) -> RigorousTrace:
    """Rigorous forward pass on token ids; precision escalates until every decision is
    made (or :class:`~attncert.arith.field.Undecided` is raised)."""
    if not tokens:
        raise InputError(
            "the model sees no tokens (empty input and no BOS/EOS)", expected="a non-empty string"
        )
    return escalate(
        lambda f: _forward(model, list(tokens), f), rational=model.is_rational and model.is_hard
    )


def _q(x: float) -> fmpq:
    return fmpq(*float(x).as_integer_ratio())


def word_rows(model: Model) -> list[tuple[fmpq, ...]]:
    """The exact word-embedding rows, in vocabulary order."""
    return [tuple(_q(v) for v in row) for row in model.embedding.word.tolist()]


def position_rows(model: Model, n_tok: int) -> list[tuple[fmpq, ...]]:
    """Exact positional part of layer 0 for every token position:
    W_pos φ(t, N) + table[t] (rationals; φ is exact, :mod:`attncert.model.positional`)."""
    emb = model.embedding
    d = model.d
    pos = [[fmpq(0)] * d for _ in range(n_tok)]
    if emb.features:
        phi = feature_matrix_exact(emb.features, n_tok)
        w = [[_q(v) for v in row] for row in emb.pos_weight.tolist()]
        for t in range(n_tok):
            f = [fmpq(v.numerator, v.denominator) for v in phi[t]]
            pos[t] = [sum((w[c][k] * f[k] for k in range(len(f))), fmpq(0)) for c in range(d)]
    if emb.table is not None:
        if n_tok > emb.table.shape[0]:
            raise InputError(
                f"sequence of {n_tok} tokens is longer than the learned position table "
                f"({emb.table.shape[0]} rows)"
            )
        tab = emb.table.tolist()
        pos = [[p + _q(v) for p, v in zip(pos[t], tab[t], strict=True)] for t in range(n_tok)]
    return [tuple(row) for row in pos]


def embed_rows(model: Model, tokens: list[int]) -> list[tuple[fmpq, ...]]:
    """Exact layer-0 activations: word[x_t] + W_pos φ(t, N) + table[t]."""
    word = word_rows(model)
    pos = position_rows(model, len(tokens))
    return [
        tuple(w + p for w, p in zip(word[tok], pos[t], strict=True)) for t, tok in enumerate(tokens)
    ]


def _beta(head: Head, n_tok: int) -> arb:
    t = head.temperature
    beta = arb(t.coef)
    if t.n_power:
        beta *= arb(n_tok) ** arb(t.n_power)
    if t.log_power:
        beta *= arb(n_tok).log() ** arb(t.log_power)
    return beta


def _forward(model: Model, tokens: list[int], field: Field) -> RigorousTrace:
    maps = model_maps(model, field)
    n_tok = len(tokens)
    d = model.d
    intern = Interner()
    rows0 = embed_rows(model, tokens)
    keys = tuple(intern.key_exact(r) for r in rows0)
    y = field.matrix(n_tok, d, [v if field.exact else arb(v) for r in rows0 for v in r])
    traces = []
    for li, layer in enumerate(model.layers):
        u = attention_inputs(maps, li, y)
        total = field.matrix(n_tok, d, [field.zero()] * (n_tok * d))
        chosen_all = []
        attended_keys: list[list[tuple[int, ...]]] = [[] for _ in range(n_tok)]
        for hi, head in enumerate(layer.heads):
            q, k, ov = projections(maps, li, hi, u)
            if head.positional:  # RoPE / ALiBi: every score a dot product of q′, k′
                q, k = positional_qk(field, head, q, k, list(range(n_tok)))
            visible = head.mask.matrix(n_tok)
            bo = rows_of(maps.layers[li].heads[hi].bo)[0]
            if head.kind is AttentionKind.SOFTMAX:
                out = _softmax_head(field, head, q, k, ov, visible, n_tok)
                chosen = tuple(tuple(np.nonzero(visible[i])[0].tolist()) for i in range(n_tok))
                for i in range(n_tok):
                    if head.positional:  # the weights depend on i and on each key's place
                        seen = tuple((j, keys[j]) for j in chosen[i])
                        attended_keys[i].append(("soft-positional", i, *seen))
                    else:
                        attended_keys[i].append(("soft", *sorted(keys[j] for j in chosen[i])))
            else:
                chosen = _hard_choices(field, head, q, k, keys, visible, n_tok, li, hi)
                out = _average_rows(field, ov, chosen, d)
                for i in range(n_tok):
                    attended_keys[i].append(tuple(sorted(keys[j] for j in chosen[i])))
            ents = out.entries() if out is not None else None
            total = total + field.matrix(
                n_tok,
                d,
                [
                    (ents[i * d + c] if ents is not None and chosen[i] else field.zero()) + bo[c]
                    for i in range(n_tok)
                    for c in range(d)
                ],
            )
            chosen_all.append(chosen)
        out_y = finish_layer(maps, li, y, total)
        traces.append(RigorousLayer(y, keys, tuple(chosen_all), out_y))
        keys = tuple(intern.key((li + 1, keys[i], tuple(attended_keys[i]))) for i in range(n_tok))
        y = out_y
    fin = final_rows(maps, y)
    terms = (fin * maps.readout).entries()
    r = model.readout
    if r.pooled:
        logit = sum(terms, field.zero()) * (fmpq(1, n_tok) if field.exact else arb(1) / n_tok)
    else:
        logit = terms[r.index(n_tok)]
    logit = logit + maps.readout_bias
    accept = field.sign(logit, "the readout's sign") > 0
    return RigorousTrace(tuple(tokens), field.prec, tuple(traces), fin, logit, accept)


def _hard_choices(
    field: Field,
    head: Head,
    q: Matrix,
    k: Matrix,
    keys: tuple[int, ...],
    visible: np.ndarray,
    n_tok: int,
    li: int,
    hi: int,
) -> tuple[tuple[int, ...], ...]:
    """Attended positions per query, every comparison decided rigorously."""
    qf = Enclosed(*to_floats(q))
    kf = Enclosed(*to_floats(k))
    q_rows = rows_of(q)
    k_rows = rows_of(k)
    out: list[tuple[int, ...]] = []
    for c0 in range(0, n_tok, _BLOCK):
        rows = np.arange(c0, min(n_tok, c0 + _BLOCK))
        q_block = qf.take(rows)
        s = q_block.mid @ kf.mid.T
        e = row_bounds(q_block, kf)  # one bound per query row, valid against every key
        s = np.where(visible[rows], s, -np.inf)
        top = s.max(axis=1)
        for t, i in enumerate(rows.tolist()):
            seen = visible[i]
            if not seen.any():
                out.append(())
                continue
            bound = top[t] - 2 * e[t]
            if np.isfinite(bound):
                near = np.nonzero(s[t] >= bound)[0].tolist()
            else:  # the float facts overflowed (a score or E infinite or NaN): every
                # visible key is a candidate (never a masked one), compared in the field
                near = np.nonzero(seen)[0].tolist()
            if len(near) == 1:
                out.append((near[0],))
                continue
            out.append(_exact_argmax(field, head, q_rows[i], k_rows, keys, near, li, hi, i))
    return tuple(out)


def _dot(a: list[Number], b: list[Number], zero: Number) -> Number:
    return sum((x * y for x, y in zip(a, b, strict=True)), zero)


def _exact_argmax(field, head, qrow, k_rows, keys, near, li, hi, i) -> tuple[int, ...]:
    zero = field.zero()
    kind = head.kind
    scores = {j: _dot(qrow, k_rows[j], zero) for j in near}
    what = f"a score comparison of layers[{li}].heads[{hi}] at query position {i}"
    best = [near[0]]
    for j in near[1:]:
        # equal identity keys tie only where the score ignores positions
        same = keys[j] == keys[best[0]] and not head.positional
        c = field.compare(scores[j], scores[best[0]], same, what)
        if c > 0:
            best = [j]
        elif c == 0:
            best.append(j)
    if kind is AttentionKind.LEFTMOST:
        return (best[0],)
    if kind is AttentionKind.RIGHTMOST:
        return (best[-1],)
    return tuple(best)


def _average_rows(field: Field, ov: Matrix, chosen, d: int) -> Matrix:
    """Per query: the average of the OV rows of its chosen positions (0 if none)."""
    ents = ov.entries()
    out: list[Number] = []
    for pick in chosen:
        if not pick:
            out.extend([field.zero()] * d)
        elif len(pick) == 1:
            j = pick[0]
            out.extend(ents[j * d : (j + 1) * d])
        else:
            inv = fmpq(1, len(pick)) if field.exact else arb(1) / len(pick)
            out.extend(sum((ents[j * d + c] for j in pick), field.zero()) * inv for c in range(d))
    return field.matrix(len(chosen), d, out)


def _softmax_head(field, head, q, k, ov, visible, n_tok) -> Matrix:
    """Σ_j softmax(β s_ij) · OV_j over the visible j, in balls."""
    beta = _beta(head, n_tok)
    scores = (q * k.transpose()).entries()
    weights: list[Number] = []
    for i in range(n_tok):
        row = [
            (beta * scores[i * n_tok + j]).exp() if visible[i, j] else arb(0) for j in range(n_tok)
        ]
        total = sum(row, arb(0))
        weights.extend([w / total for w in row] if visible[i].any() else row)
    return field.matrix(n_tok, n_tok, weights) * ov
