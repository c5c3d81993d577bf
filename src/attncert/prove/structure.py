"""What the decomposed prover needs to know about a model, read from its weights.

A :class:`Plan` holds the model's weights as exact sparse rows (every float64 is the
dyadic rational it denotes), which coordinates each layer writes and reads, and the
*claims*: "coordinate c holds exactly [φ at i] (0/1) from layer ℓ on". The claims of a
compiled model come from ``model.meta["nodes"]`` (the compiler's record); any other
model can pass them explicitly. Claims are hypotheses to be proved, never trusted:
each is checked at its layer for every position by :mod:`attncert.prove.layer`, and only
then does the prover replace the coordinate by a free Boolean atom.

The target claim is the formula to prove at the designated coordinate (it may differ
from the compiled formula: proving "since" against an "until" model must fail).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq

from attncert.errors import SpecError, UnsupportedError
from attncert.logic import syntax as s
from attncert.logic.parser import parse
from attncert.model.spec import AttentionKind, Model

Row = dict[int, fmpq]  # sparse row: column -> exact coefficient


def _q(x: float) -> fmpq:
    a, b = float(x).as_integer_ratio()
    return fmpq(a, b)


def sparse_rows(m: np.ndarray) -> list[Row]:
    out = []
    for row in np.asarray(m, dtype=np.float64):
        nz = np.flatnonzero(row)
        out.append({int(c): _q(row[c]) for c in nz})
    return out


def sparse_vec(v: np.ndarray) -> list[fmpq]:
    return [_q(x) for x in np.asarray(v, dtype=np.float64)]


@dataclass(frozen=True)
class Claim:
    """Coordinate ``coord`` equals [``formula`` at i] ∈ {0, 1} after layer ``level``
    (1-based; 0 = the embedding)."""

    index: int
    formula: s.Formula
    coord: int
    level: int
    text: str
    target: bool = False


@dataclass
class HeadW:
    wq: list[Row]
    wk: list[Row]
    wv: list[Row]
    wo_cols: list[Row]  # for each value row r: {output coord: coefficient}
    kind: AttentionKind
    mask: Any
    temperature: Any
    uniform: bool
    reads_q: set[int]
    reads_k: set[int]
    reads_v: set[int]
    writes: set[int]


@dataclass
class LayerW:
    heads: list[HeadW]
    w1: list[Row]
    b1: list[fmpq]
    w2_rows: dict[int, Row]  # output coord -> {unit: coef}
    b2: dict[int, fmpq]
    residual: bool
    reads: set[int]
    writes: set[int]


class Plan:
    """Exact weights, read/write sets and claims of a model (see module docstring)."""

    def __init__(self, model: Model, claims: list[Claim]):
        model.require_plain("the decomposed z3 prover")
        if model.bos is not None or model.eos is not None:
            raise UnsupportedError(
                "the decomposed prover handles models without BOS/EOS tokens",
                where="model",
                expected="a model whose tokens are the input symbols",
            )
        if model.embedding.table is not None:
            raise UnsupportedError("learned position tables are not supported", where="model")
        self.model = model
        self.alphabet = tuple(model.alphabet)
        self.symbols = {a: k for k, a in enumerate(self.alphabet)}
        self.d = model.d
        emb = model.embedding
        tok = [model.token_index[a] for a in self.alphabet]
        self.word = [[_q(emb.word[t, c]) for t in tok] for c in range(self.d)]  # [c][σ]
        self.pos = sparse_rows(emb.pos_weight)  # [c] -> {feature: coef}
        self.features = emb.features
        self.layers: list[LayerW] = []
        for layer in model.layers:
            heads = []
            for h in layer.heads:
                wq, wk = sparse_rows(h.w_q), sparse_rows(h.w_k)
                qk = h.w_q.T @ h.w_k
                # exact test of W_Qᵀ W_K = 0: all products of exact dyadics
                uniform = not np.any(qk) and _exact_zero_qk(wq, wk, self.d)
                wo = sparse_rows(np.asarray(h.w_o).T)
                heads.append(
                    HeadW(
                        wq=wq,
                        wk=wk,
                        wv=sparse_rows(h.w_v),
                        wo_cols=wo,
                        kind=h.kind,
                        mask=h.mask,
                        temperature=h.temperature,
                        uniform=uniform,
                        reads_q=set() if uniform else {c for r in wq for c in r},
                        reads_k=set() if uniform else {c for r in wk for c in r},
                        reads_v={c for r in sparse_rows(h.w_v) for c in r},
                        writes={c for r in wo for c in r},
                    )
                )
            w1, b1, w2_rows, b2 = [], [], {}, {}
            if layer.ffn is not None:
                w1 = sparse_rows(layer.ffn.w1)
                b1 = sparse_vec(layer.ffn.b1)
                for c, row in enumerate(sparse_rows(layer.ffn.w2)):
                    if row:
                        w2_rows[c] = row
                for c, v in enumerate(sparse_vec(layer.ffn.b2)):
                    if v != 0:
                        b2[c] = v
            reads = {c for h in heads for c in h.reads_q | h.reads_k | h.reads_v}
            reads |= {c for r in w1 for c in r}
            writes = {c for h in heads for c in h.writes} | set(w2_rows) | set(b2)
            if not layer.residual:
                raise UnsupportedError("layers without residual connections", where="model")
            self.layers.append(LayerW(heads, w1, b1, w2_rows, b2, layer.residual, reads, writes))
        self.claims = claims
        self._check_claims()

    def _check_claims(self) -> None:
        nl = len(self.layers)
        for c in self.claims:
            if not 0 <= c.coord < self.d:
                raise SpecError(
                    f"claim {c.text!r}: coordinate {c.coord} outside 0..{self.d - 1}",
                    where="claims",
                )
            if not 0 <= c.level <= nl:
                raise SpecError(
                    f"claim {c.text!r}: level {c.level} outside 0..{nl}", where="claims"
                )

    def last_write(self, coord: int) -> int:
        """The last layer (1-based; 0 = embedding) that writes ``coord``."""
        return _last_write([lw.writes for lw in self.layers], coord)

    def stable_after(self, claim: Claim) -> bool:
        """No layer after the claim's level writes its coordinate (so it may be replaced by
        an atom from then on)."""
        return self.last_write(claim.coord) <= claim.level

    def live_after(self, level: int, target_coord: int) -> set[int]:
        """Coordinates read by a layer after ``level`` or by a later claim check/target."""
        live = {target_coord}
        for lw in self.layers[level:]:
            live |= lw.reads
        live |= {c.coord for c in self.claims if c.level > level}
        return live


def _exact_zero_qk(wq: list[Row], wk: list[Row], d: int) -> bool:
    acc: dict[tuple[int, int], fmpq] = {}
    for rq, rk in zip(wq, wk, strict=True):
        for a, x in rq.items():
            for b, y in rk.items():
                acc[(a, b)] = acc.get((a, b), fmpq(0)) + x * y
    return all(v == 0 for v in acc.values())


def claims_from_meta(model: Model) -> list[tuple[s.Formula, int, int]]:
    """(formula, coord, level) for every node recorded by :mod:`attncert.compile`."""
    meta = model.meta
    if meta.get("compiler") != "attncert.compile":
        return []
    out = []
    for k, nd in enumerate(meta.get("nodes", [])):
        try:
            out.append((parse(nd["formula"]), int(nd["coord"]), int(nd["level"])))
        except Exception as err:  # a damaged record is bad input, not a crash
            raise SpecError(
                f"unreadable node record: {err}", where=f"model.meta.nodes[{k}]"
            ) from None
    return out


def build_claims(
    model: Model,
    target: s.Formula,
    coord: int,
    extra: Mapping[int, s.Formula | str] | None = None,
    *,
    use_meta: bool = True,
) -> list[Claim]:
    """The claims to prove: the recorded nodes (``use_meta``), ``extra`` ({coord: formula},
    checked after the last layer writing the coordinate), and the target."""
    raw: list[tuple[s.Formula, int, int]] = claims_from_meta(model) if use_meta else []
    writes = [_writes(layer) for layer in model.layers]
    for c, f in (extra or {}).items():
        f = parse(f) if isinstance(f, str) else f
        raw.append((f, int(c), _last_write(writes, int(c))))
    out: list[Claim] = []
    seen: set[tuple[s.Formula, int]] = set()
    for f, c, lv in raw:
        if (f, c) in seen:
            continue
        seen.add((f, c))
        out.append(Claim(len(out), f, c, lv, str(f)))
    tlevel = _last_write(writes, coord)
    for cl in out:  # the target is checked after the last layer writing its coordinate
        if cl.formula == target and cl.coord == coord and cl.level == tlevel:
            out[cl.index] = Claim(cl.index, cl.formula, cl.coord, cl.level, cl.text, True)
            return out
    out.append(Claim(len(out), target, coord, tlevel, str(target), True))
    return out


def _last_write(writes: list[set[int]], coord: int) -> int:
    for li in range(len(writes), 0, -1):
        if coord in writes[li - 1]:
            return li
    return 0


def _writes(layer: Any) -> set[int]:
    w: set[int] = set()
    for h in layer.heads:
        w |= {int(c) for c in np.flatnonzero(np.any(np.asarray(h.w_o) != 0, axis=1))}
    if layer.ffn is not None:
        w |= {int(c) for c in np.flatnonzero(np.any(np.asarray(layer.ffn.w2) != 0, axis=1))}
        w |= {int(c) for c in np.flatnonzero(np.asarray(layer.ffn.b2) != 0)}
    return w
