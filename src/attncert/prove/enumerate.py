"""Exhaustive interval enumeration: the independent cross-check of the prover.

:func:`interval_forward` evaluates any model (softmax, average-hard, unique-hard) on one
string with python-flint ``arb`` balls — outward rounding, certified ``exp`` — so every
activation is an interval that provably contains the real value. The "rounded output"
of a coordinate at a position is ``y > ½``; it is *decided* when the interval lies on one
side of ½ (otherwise the precision is raised, up to ``MAX_PREC`` bits).

:func:`enumerate_agreement` checks every string of a length; :func:`recheck` confirms a
counterexample string. Neither uses z3 or any part of the structured prover, so the
tests compare the two.

    >>> from attncert.compile import compile_formula
    >>> m = compile_formula("Q_a S Q_b", alphabet="abc")
    >>> enumerate_agreement(m, "Q_a S Q_b", 4).verdict
    'proved'
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from flint import arb, ctx, fmpq

from attncert.errors import InputError, UnsupportedError
from attncert.logic import syntax as s
from attncert.logic.interpreter import evaluate
from attncert.logic.parser import parse
from attncert.model.positional import feature_matrix_exact
from attncert.model.spec import AttentionKind, Model
from attncert.prove.coordinate import designated_coordinate

MAX_PREC = 212
HALF = arb(fmpq(1, 2))


def _q(x: float) -> fmpq:
    a, b = float(x).as_integer_ratio()
    return fmpq(a, b)


class _ArbModel:
    """Exact weights as arb (float64 values are exact) in sparse row form."""

    def __init__(self, model: Model):
        model.require_plain("the interval enumerator of the z3 prover")
        self.model = model

        def rows(m):
            out = []
            for row in np.asarray(m, dtype=np.float64):
                out.append([(int(c), arb(_q(row[c]))) for c in np.flatnonzero(row)])
            return out

        emb = model.embedding
        self.word = rows(emb.word)
        self.pos = rows(emb.pos_weight)
        self.table = None if emb.table is None else rows(emb.table)
        self.layers = []
        for layer in model.layers:
            heads = [
                (rows(h.w_q), rows(h.w_k), rows(h.w_v), rows(np.asarray(h.w_o)), h)
                for h in layer.heads
            ]
            ffn = None
            if layer.ffn is not None:
                f = layer.ffn
                ffn = (
                    rows(f.w1),
                    [arb(_q(b)) for b in f.b1],
                    rows(f.w2),
                    [arb(_q(b)) for b in f.b2],
                )
            self.layers.append((heads, ffn, layer.residual))


_CACHE: dict[int, _ArbModel] = {}


def _arb_model(model: Model) -> _ArbModel:
    key = id(model)
    hit = _CACHE.get(key)
    if hit is None or hit.model is not model:
        hit = _CACHE[key] = _ArbModel(model)
    return hit


def _mat(rows, y: list[list[arb]]) -> list[list[arb]]:
    """Apply a sparse matrix (rows over input coordinates) to every position."""
    out = []
    for yi in y:
        out.append([_dot(r, yi) for r in rows])
    return out


def _dot(r, yi: list[arb]) -> arb:
    acc = arb(0)
    for c, w in r:
        acc += w * yi[c]
    return acc


def _relu(x: arb) -> arb:
    if x > 0:
        return x
    if x <= 0:
        return arb(0)
    up = x.upper()
    return arb(up / 2, up / 2)  # the ball [0, up]


def interval_forward(model: Model, string: str, prec: int = 53) -> list[list[arb]]:
    """Final-layer activations (positions × d) of ``model`` on ``string`` as arb balls."""
    am = _arb_model(model)
    tokens = model.encode(string)
    n_tok = len(tokens)
    if n_tok == 0:
        raise InputError("the model sees no tokens", expected="a non-empty string")
    old = ctx.prec
    ctx.prec = prec
    try:
        d = model.d
        emb = model.embedding
        feats = feature_matrix_exact(tuple(emb.features), n_tok) if emb.features else None
        y = [[arb(0)] * d for _ in range(n_tok)]
        # word embedding: word[t, c]; positional: pos_weight[c, f] φ_f
        wmat = np.asarray(emb.word, dtype=np.float64)
        for p, t in enumerate(tokens):
            for c in np.flatnonzero(wmat[t]):
                y[p][c] += arb(_q(wmat[t, c]))
            if feats is not None:
                for c, r in enumerate(am.pos):
                    for f, w in r:
                        fr = feats[p][f]
                        y[p][c] += w * arb(fmpq(fr.numerator, fr.denominator))
            if am.table is not None:
                for c, w in am.table[p]:
                    y[p][c] += w
        for heads, ffn, residual in am.layers:
            acc = [[arb(0)] * d for _ in range(n_tok)]
            for wq, wk, wv, wo, h in heads:
                q = _mat(wq, y)
                k = _mat(wk, y)
                v = _mat(wv, y)
                for i in range(n_tok):
                    vis = [j for j in range(n_tok) if h.mask.allowed(i, j)]
                    if not vis:
                        continue
                    sc = [_dot(list(enumerate(q[i])), k[j]) for j in vis]
                    w = _weights(h, sc, n_tok)
                    out = [arb(0)] * len(wv)
                    for wj, j in zip(w, vis, strict=True):
                        for r in range(len(wv)):
                            out[r] += wj * v[j][r]
                    for c, row in enumerate(wo):
                        for r, x in row:
                            acc[i][c] += x * out[r]
            y = (
                [
                    [a + b for a, b in zip(yi, ai, strict=True)]
                    for yi, ai in zip(y, acc, strict=True)
                ]
                if residual
                else acc
            )
            if ffn is not None:
                w1, b1, w2, b2 = ffn
                new = []
                for yi in y:
                    hid = [_relu(_dot(r, yi) + b) for r, b in zip(w1, b1, strict=True)]
                    ff = [_dot(r, hid) + b for r, b in zip(w2, b2, strict=True)]
                    new.append([a + b for a, b in zip(yi, ff, strict=True)] if residual else ff)
                y = new
        return y
    finally:
        ctx.prec = old


def _weights(h, sc: list[arb], n_tok: int) -> list[arb]:
    if h.kind is AttentionKind.SOFTMAX:
        beta = _beta(h.temperature, n_tok)
        ref = max((x.mid() for x in sc), key=lambda m: m)
        e = [(beta * (x - ref)).exp() for x in sc]
        tot = sum(e, arb(0))
        return [x / tot for x in e]
    raise UnsupportedError(
        "interval evaluation of a model mixing hard and softmax heads",
        expected="all heads softmax, or all hard (exact evaluation)",
    )


class _Undecided(Exception):
    pass


def _beta(t, n_tok: int) -> arb:
    from attncert.prove.intervals import beta_arb

    return beta_arb(t, n_tok)


# ----- decisions -----------------------------------------------------------------------------


def rounded_outputs(
    model: Model, string: str, coord: int, positions: list[int]
) -> list[bool | None]:
    """[y_coord > ½] at the given 1-based input positions (None: undecided even at
    ``MAX_PREC`` bits)."""
    off = model.input_offset()
    if model.is_hard:
        from attncert.model.exact import forward_exact

        tr = forward_exact(model, string)
        y = tr.layers[-1].output if tr.layers else tr.embeddings
        return [bool(y[off + p - 1, coord] > fmpq(1, 2)) for p in positions]
    out: list[bool | None] = [None] * len(positions)
    prec = 53
    while prec <= MAX_PREC:
        y = interval_forward(model, string, prec)
        for k, p in enumerate(positions):
            if out[k] is None:
                v = y[off + p - 1][coord]
                out[k] = True if v > HALF else False if v <= HALF else None
        if all(o is not None for o in out):
            break
        prec *= 2
    return out


@dataclass(frozen=True)
class Counterexample:
    """A string and position where the model's rounded output differs from the formula,
    confirmed by interval evaluation."""

    string: str
    position: int
    formula_value: bool
    model_value: bool

    def to_dict(self) -> dict:
        return {
            "string": self.string,
            "position": self.position,
            "formula_value": self.formula_value,
            "model_value": self.model_value,
        }


def recheck(
    model: Model, formula: s.Formula | str, string: str, coord: int, last_only: bool = False
) -> Counterexample | str | None:
    """A confirmed disagreement on ``string`` (the first position), None if the model
    agrees everywhere checked, or ``"undecided"``."""
    f = parse(formula) if isinstance(formula, str) else formula
    truth = evaluate(f, string)
    n = len(string)
    positions = [n] if last_only else list(range(1, n + 1))
    got = rounded_outputs(model, string, coord, positions)
    undecided = False
    for p, g in zip(positions, got, strict=True):
        if g is None:
            undecided = True
        elif g != truth[p - 1]:
            return Counterexample(string, p, truth[p - 1], g)
    return "undecided" if undecided else None


@dataclass(frozen=True)
class EnumerationResult:
    n: int
    strings: int
    verdict: str  # proved | counterexample | unknown
    counterexample: Counterexample | None = None
    undecided: tuple[str, ...] = ()


def enumerate_agreement(
    model: Model,
    formula: s.Formula | str,
    n: int,
    *,
    coord: int | None = None,
    last_only: bool = False,
    stop_at_first: bool = True,
) -> EnumerationResult:
    """Check every string of length ``n``: ``proved`` iff every rounded output is decided
    and equals the formula (at every position, or the last)."""
    f = parse(formula) if isinstance(formula, str) else formula
    c = _coord(model, coord)
    count = 0
    undecided: list[str] = []
    first = None
    for sym in itertools.product(model.alphabet, repeat=n):
        w = "".join(sym)
        count += 1
        r = recheck(model, f, w, c, last_only)
        if r == "undecided":
            undecided.append(w)
        elif r is not None:
            first = first or r
            if stop_at_first:
                break
    if first is not None:
        return EnumerationResult(n, count, "counterexample", first, tuple(undecided))
    return EnumerationResult(n, count, "unknown" if undecided else "proved", None, tuple(undecided))


def _coord(model: Model, coord: int | None) -> int:
    if coord is not None:
        return int(coord)
    return designated_coordinate(model)
