"""Seeded random causal decoders of the kinds length-generalisation work trains
(model-file version 3): rotary, ALiBi, learned or no positions; LayerNorm or RMSNorm;
GELU or SwiGLU MLPs; optional parallel residual — the shapes of a Llama, Qwen2,
GPT-NeoX or Bloom configuration at toy size.

They are not trained: tests use them to make every evaluator agree on each kind, and the
benchmarks use them for timing (``random_decoder(4, 4, 64, positions="rope")`` is a
Llama-style d = 64, L = 4 model). Trained ones are in the zoo.
"""

from __future__ import annotations

import math

import numpy as np

from attncert.errors import InputError
from attncert.model.spec import (
    Activation,
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    LayerNorm,
    Mask,
    Model,
    NormKind,
    Readout,
    Rotary,
    Temperature,
)

POSITIONS = ("rope", "alibi", "learned", "none")
NORMS = ("layer", "rms")
MLPS = ("gelu", "swiglu")


def alibi_slopes(heads: int) -> list[float]:
    """ALiBi's slopes in float64 (Press et al.; Bloom's ``build_alibi_tensor`` rule):
    2^(−8h/H') for h = 1 … H' with H' the largest power of two ≤ H, then every other
    slope of the 2H' sequence for the remaining heads. (The Bloom importer reproduces
    transformers' float32 computation instead: ``importers.hf_decoders.alibi_slopes``.)"""
    if heads < 1:
        return []
    closest = 2 ** math.floor(math.log2(heads))
    base = 2.0 ** (-(2.0 ** -(math.log2(closest) - 3)))
    slopes = [base**k for k in range(1, closest + 1)]
    if closest != heads:
        extra = 2.0 ** (-(2.0 ** -(math.log2(2 * closest) - 3)))
        rest = min(closest, heads - closest)
        slopes += [extra**k for k in range(1, 1 + 2 * rest, 2)]
    return slopes


def random_decoder(
    layers: int = 2,
    heads: int = 2,
    d: int = 16,
    *,
    positions: str = "rope",
    norm: str = "rms",
    mlp: str = "swiglu",
    parallel: bool = False,
    kind: AttentionKind | str = AttentionKind.SOFTMAX,
    alphabet: str = "01",
    bos: str | None = "^",
    rope_base: float = 10000.0,
    rotary_fraction: float = 1.0,
    max_length: int = 1100,
    seed: int = 0,
    name: str | None = None,
    causal: bool = True,
) -> Model:
    """A seeded random pre-norm causal decoder (module docstring); weights Gaussian with
    scale 1/√d, the 1/√d_head score scale folded into W_Q (d_head = d/heads). With
    ``causal=False`` every head attends to every position (a rotary or NoPE *encoder*:
    the shape to which the length-uniform Lemma 5 applies; a mask puts a model outside
    it)."""
    if positions not in POSITIONS or norm not in NORMS or mlp not in MLPS:
        raise InputError(
            f"random_decoder(positions={positions!r}, norm={norm!r}, mlp={mlp!r})",
            expected=f"positions in {POSITIONS}, norm in {NORMS}, mlp in {MLPS}",
        )
    if layers < 0 or heads < 1 or d < 2 or d % heads:
        raise InputError(
            f"random decoder needs layers ≥ 0, heads ≥ 1, heads dividing d; got "
            f"{layers}, {heads}, {d}"
        )
    kind = AttentionKind(kind)
    rng = np.random.default_rng(seed)
    s = 1.0 / np.sqrt(d)
    dh = d // heads
    rot_dim = 2 * max(1, int(dh * rotary_fraction) // 2)
    slopes = alibi_slopes(heads)

    def g(*shape: int) -> np.ndarray:
        return rng.normal(0.0, s, size=shape)

    def make_norm() -> LayerNorm:
        w = 1.0 + 0.1 * rng.normal(size=d)
        b = np.zeros(d) if norm == "rms" else 0.1 * rng.normal(size=d)
        return LayerNorm(w, b, 1e-5, NormKind.RMS if norm == "rms" else NormKind.LAYER)

    vocab = tuple(alphabet) + ((bos,) if bos else ())
    table = g(max_length, d) if positions == "learned" else None
    emb = Embedding(vocab=vocab, word=rng.normal(0.0, 1.0, size=(len(vocab), d)), table=table)
    recipe = {"positions": positions, "norm": norm, "mlp": mlp, "seed": seed}
    if not causal:  # only then: the causal decoders' files (and hashes) stay as they were
        recipe["causal"] = False
    layer_list = []
    for _ in range(layers):
        hs = tuple(
            Head(
                w_q=g(dh, d) / np.sqrt(dh),
                w_k=g(dh, d),
                w_v=g(dh, d),
                w_o=g(d, dh),
                kind=kind,
                mask=Mask.FUTURE if causal else Mask.NONE,
                temperature=Temperature(1.0) if kind is AttentionKind.SOFTMAX else None,
                rotary=Rotary(rope_base, rot_dim) if positions == "rope" else None,
                alibi=slopes[h] if positions == "alibi" else None,
            )
            for h in range(heads)
        )
        d_ff = 2 * d
        gated = mlp == "swiglu"
        ffn = FeedForward(
            g(d_ff, d),
            np.zeros(d_ff),
            g(d, d_ff),
            np.zeros(d),
            Activation.SILU if gated else Activation.GELU,
            w_gate=g(d_ff, d) if gated else None,
        )
        layer_list.append(Layer(hs, ffn, True, make_norm(), make_norm(), "pre", parallel=parallel))
    return Model(
        alphabet=tuple(alphabet),
        embedding=emb,
        layers=tuple(layer_list),
        readout=Readout(weight=rng.normal(0.0, s, size=d), bias=0.0, position="last"),
        bos=bos,
        name=name
        or f"random-{positions}-{norm}-{mlp}-L{layers}-H{heads}-d{d}"
        + ("" if causal else "-bidir"),
        meta={"random_decoder": recipe},
        final_norm=make_norm(),
    )
