"""Validation of a :class:`~attncert.model.spec.Model`: every shape and every value is
checked when a model is built, and an error names the field (``layers[0].heads[1].w_q``),
what was found and what was expected — a malformed model never reaches an evaluator.
(It reads the model's fields and imports nothing of :mod:`attncert.model.spec`, which
calls it.)"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attncert.errors import SpecError, abbreviate

# the optional attention biases of a head (spec.Head), in the order of their shapes below
BIAS_FIELDS = ("b_q", "b_k", "b_v", "b_o")


def _check_array(arr: np.ndarray, where: str, shape: tuple[int | None, ...]) -> None:
    if arr.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(arr.shape, shape, strict=True)
    ):
        expected = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
        raise SpecError(f"wrong shape {arr.shape}", where=where, expected=f"shape {expected}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise SpecError(
            f"non-finite value {float(arr[tuple(bad)])!r} at index {tuple(int(b) for b in bad)}",
            where=where,
            expected="finite float64 numbers",
        )


def _check_norm(norm: Any, where: str, d: int) -> None:
    _check_array(norm.weight, f"{where}.weight", (d,))
    _check_array(norm.bias, f"{where}.bias", (d,))


def validate(m: Any) -> None:
    """Check every shape and value, naming the field (e.g. ``layers[0].heads[1].w_q``)."""
    if not m.alphabet:
        raise SpecError("empty alphabet", where="alphabet")
    for s in (*m.alphabet, m.bos, m.eos):
        if s is not None and (not isinstance(s, str) or len(s) != 1):
            raise SpecError(
                f"symbol {abbreviate(repr(s))}", where="alphabet", expected="single characters"
            )
    if len(set(m.alphabet)) != len(m.alphabet):
        raise SpecError("repeated symbol", where="alphabet")
    emb = m.embedding
    if len(set(emb.vocab)) != len(emb.vocab):
        seen: set[str] = set()
        dup = next(s for s in emb.vocab if s in seen or seen.add(s))
        raise SpecError(f"repeated symbol {dup!r}", where="embedding.vocab")
    vocab = set(emb.vocab)
    missing = [s for s in (*m.alphabet, m.bos, m.eos) if s is not None and s not in vocab]
    if missing:
        raise SpecError(
            f"{len(missing)} symbol(s) have no embedding row: {abbreviate(''.join(missing))!r}",
            where="embedding.vocab",
        )
    if m.bos is not None and m.bos in m.alphabet:
        raise SpecError("BOS symbol must not be in the alphabet", where="bos")
    if m.eos is not None and m.eos in m.alphabet:
        raise SpecError("EOS symbol must not be in the alphabet", where="eos")
    d = emb.d
    if d == 0:
        raise SpecError("model width d is 0", where="embedding.word")
    _check_array(emb.word, "embedding.word", (len(emb.vocab), d))
    _check_array(emb.pos_weight, "embedding.pos_weight", (d, len(emb.features)))
    if emb.table is not None:
        _check_array(emb.table, "embedding.table", (None, d))
    for li, layer in enumerate(m.layers):
        for hi, h in enumerate(layer.heads):
            w = f"layers[{li}].heads[{hi}]"
            dk = h.w_q.shape[0]
            dv = h.w_v.shape[0]
            _check_array(h.w_q, f"{w}.w_q", (dk, d))
            _check_array(h.w_k, f"{w}.w_k", (dk, d))
            _check_array(h.w_v, f"{w}.w_v", (dv, d))
            _check_array(h.w_o, f"{w}.w_o", (d, dv))
            for name, size in zip(BIAS_FIELDS, (dk, dk, dv, d), strict=True):
                b = getattr(h, name)
                if b is not None:
                    _check_array(b, f"{w}.{name}", (size,))
            if h.rotary is not None and h.rotary.dim > dk:
                raise SpecError(
                    f"rotary dim {h.rotary.dim} exceeds the head dimension {dk}",
                    where=f"{w}.rotary.dim",
                    expected=f"an even integer ≤ {dk}",
                )
        for name in ("norm1", "norm2"):
            norm = getattr(layer, name)
            if norm is not None:
                _check_norm(norm, f"layers[{li}].{name}", d)
        if layer.ffn is not None:
            w = f"layers[{li}].ffn"
            dff = layer.ffn.w1.shape[0]
            _check_array(layer.ffn.w1, f"{w}.w1", (dff, d))
            _check_array(layer.ffn.b1, f"{w}.b1", (dff,))
            _check_array(layer.ffn.w2, f"{w}.w2", (d, dff))
            _check_array(layer.ffn.b2, f"{w}.b2", (d,))
            if layer.ffn.w_gate is not None:
                _check_array(layer.ffn.w_gate, f"{w}.w_gate", (dff, d))
                _check_array(layer.ffn.b_gate, f"{w}.b_gate", (dff,))
    if m.final_norm is not None:
        _check_norm(m.final_norm, "final_norm", d)
    r = m.readout
    _check_array(r.weight, "readout.weight", (d,))
    if not math.isfinite(r.bias):
        raise SpecError(f"non-finite value {r.bias!r}", where="readout.bias")
    for c in r.output_coords:
        if not 0 <= c < d:
            raise SpecError(f"coordinate {c} outside 0..{d - 1}", where="readout.output_coords")
    if r.lm_weight is not None:
        k = len(r.lm_symbols)
        if k == 0:
            raise SpecError("next-symbol head without symbols", where="readout.lm_symbols")
        _check_array(r.lm_weight, "readout.lm_weight", (k, d))
        _check_array(r.lm_bias, "readout.lm_bias", (k,))
