"""The transformer model: immutable values precise enough to carry proofs.

A :class:`Model` covers what Hahn (2020) and Yang et al. use:

* alphabet Σ of single-character symbols, optional BOS/EOS symbols that the
  model adds around every input (so the model sees N = n + [bos] + [eos] tokens);
* layer 0: y⁽⁰⁾ᵢ = E[xᵢ] + W_pos φ(i, N) (+ a learned table row T[i]);
* layers of H heads with scores (W_Q uᵢ + b_Q)·(W_K uⱼ + b_K), masking, and
  attention kind unique-hard leftmost / rightmost, average-hard, or softmax with
  inverse temperature β(N) = coef · N^p · log(N)^r; head output
  W_O · attn(W_V u + b_V) + b_O;
* the residual stream with optional LayerNorms in the two usual places
  (:class:`NormPosition`):

  - pre-norm (GPT-2, ``norm_first=True``): u = LN₁(y), y ← y + Σ_h head_h(u);
    y ← y + FFN(LN₂(y));
  - post-norm (the original Transformer, PyTorch's default): u = y,
    y ← LN₁(y + Σ_h head_h(y)); y ← LN₂(y + FFN(y));

  FFN(y) = W₂ act(W₁ y + b₁) + b₂ with act ∈ {ReLU, GELU (erf), GELU (tanh)};
* an optional final LayerNorm (GPT-2's ``ln_f``, PyTorch's ``encoder.norm``);
* a readout: accept iff w · r + b > 0 where r is the final activation at a
  designated position (``last``, ``first``) or their mean over all tokens
  (``mean``), designated output coordinates for per-position Booleans, and an
  optional next-symbol head (logits = W_lm y + b_lm) for language modelling.

All arrays are float64 and read-only; a float64 number is an exact dyadic
rational, which is what the exact evaluator uses. LayerNorm's square root and
GELU's erf are irrational: models that use them are evaluated in certified
interval arithmetic (:mod:`attncert.arith`). Construction validates shapes and
finiteness and names the offending field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np

from attncert.errors import InputError, SpecError, UnsupportedError, abbreviate
from attncert.model.kinds import Activation, AttentionKind, Mask, NormKind, NormPosition
from attncert.model.positional import PosFeature
from attncert.model.validate import BIAS_FIELDS, validate


@dataclass(frozen=True)
class Temperature:
    """Inverse temperature β(N) = coef · N^n_power · log(N)^log_power (N ≥ 1).

    A constant is ``Temperature(c)``; Yang et al.'s temperature scaling is, e.g.,
    ``Temperature(c, n_power=1)`` or ``Temperature(c, n_power=1, log_power=1)``.
    """

    coef: float = 1.0
    n_power: float = 0.0
    log_power: float = 0.0

    def __post_init__(self) -> None:
        for name in ("coef", "n_power", "log_power"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise SpecError(f"temperature {name} must be a finite number, got {v!r}")

    def __call__(self, n: int) -> float:
        value = self.coef * float(n) ** self.n_power
        if self.log_power:
            value *= math.log(n) ** self.log_power
        return value

    @property
    def is_constant(self) -> bool:
        return self.n_power == 0 and self.log_power == 0

    def to_dict(self) -> dict:
        return {"coef": self.coef, "n_power": self.n_power, "log_power": self.log_power}

    def __str__(self) -> str:
        parts = [repr(self.coef)]
        if self.n_power:
            parts.append(f"N^{self.n_power:g}")
        if self.log_power:
            parts.append(f"log(N)^{self.log_power:g}")
        return "·".join(parts)


@dataclass(frozen=True)
class Rotary:
    """Rotary position embedding (RoPE) of one head, in the "rotate-half" layout of
    Llama, Qwen2, Mistral and GPT-NeoX as transformers implements them.

    The first ``dim`` coordinates of a head's query and key (after their biases) are
    rotated by the angles t·ω_k, k = 0 … dim/2 − 1, where t = (0-based token index)/scale
    and ω_k = base^(−2k/dim): coordinate k pairs with k + dim/2,
    (x_k, x_{k+dim/2}) ↦ (x_k cos − x_{k+dim/2} sin, x_{k+dim/2} cos + x_k sin). The
    remaining coordinates are not rotated (partial rotary). The score of query i and key j
    then depends on the offset j − i only through the rotation R((j − i)·ω), whose norm
    is 1 (Hahn's Lemma 5 keeps its bounded-logit hypothesis). ``scale`` is the linear
    ``rope_scaling`` factor (1 = none). The angles are the real numbers of this
    formula: the float evaluator rounds them, the kernel encloses them in arb.
    """

    base: float
    dim: int
    scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("base", "scale"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise SpecError(f"rotary {name} {v!r}", where=name, expected="a finite number")
            object.__setattr__(self, name, float(v))
        if not self.base > 1:
            raise SpecError(f"rotary base {self.base!r}", where="base", expected="a number > 1")
        if not self.scale > 0:
            raise SpecError(f"rotary scale {self.scale!r}", where="scale", expected="a number > 0")
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 2:
            raise SpecError(f"rotary dim {self.dim!r}", where="dim", expected="an even integer ≥ 2")
        if self.dim % 2:
            raise SpecError(f"rotary dim {self.dim}", where="dim", expected="an even integer ≥ 2")

    def angles(self, positions: np.ndarray) -> np.ndarray:
        """Float64 angles (len(positions), dim/2): t·ω_k (the float evaluator's)."""
        k = np.arange(self.dim // 2, dtype=np.float64)
        omega = self.base ** (-2.0 * k / self.dim)
        return (np.asarray(positions, dtype=np.float64) / self.scale)[:, None] * omega[None, :]

    def to_dict(self) -> dict:
        return {"base": self.base, "dim": self.dim, "scale": self.scale}


def _array(value: Any, ndim: int) -> np.ndarray:
    arr = np.array(value, dtype=np.float64, copy=True)
    if arr.ndim != ndim:
        if arr.size == 0 and ndim == 2:
            arr = arr.reshape(0, 0)
        else:
            raise SpecError(f"expected a {ndim}-dimensional array, got shape {arr.shape}")
    arr.setflags(write=False)
    return arr


def _freeze(obj: Any, names: tuple[str, ...], dims: tuple[int, ...]) -> None:
    for name, ndim in zip(names, dims, strict=True):
        try:
            object.__setattr__(obj, name, _array(getattr(obj, name), ndim))
        except (SpecError, ValueError, TypeError) as err:
            msg = err.message if isinstance(err, SpecError) else str(err)
            raise SpecError(msg, where=name) from None


@dataclass(frozen=True, eq=False)
class Head:
    """One attention head: score(i, j) = (W_Q uᵢ + b_Q)·(W_K uⱼ + b_K);
    output W_O · attn(W_V u + b_V) + b_O (b_O also when the query sees no key).

    The biases are optional (``None`` = zero) so that bias-free models keep their
    format and content hash."""

    w_q: np.ndarray  # (d_k, d)
    w_k: np.ndarray  # (d_k, d)
    w_v: np.ndarray  # (d_v, d)
    w_o: np.ndarray  # (d, d_v)
    kind: AttentionKind = AttentionKind.LEFTMOST
    mask: Mask = Mask.NONE
    temperature: Temperature | None = None
    b_q: np.ndarray | None = None  # (d_k,)
    b_k: np.ndarray | None = None  # (d_k,)
    b_v: np.ndarray | None = None  # (d_v,)
    b_o: np.ndarray | None = None  # (d,)
    rotary: Rotary | None = None  # RoPE on queries and keys (model-file version 3)
    alibi: float | None = None  # ALiBi slope m: score(i, j) += −m·(i − j) (version 3)

    def __post_init__(self) -> None:
        _freeze(self, ("w_q", "w_k", "w_v", "w_o"), (2, 2, 2, 2))
        if self.rotary is not None and not isinstance(self.rotary, Rotary):
            raise SpecError(f"rotary {self.rotary!r}", where="rotary", expected="a Rotary value")
        if self.alibi is not None:
            m = self.alibi
            if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m):
                raise SpecError(f"ALiBi slope {m!r}", where="alibi", expected="a finite number")
            object.__setattr__(self, "alibi", float(m))
        for name in BIAS_FIELDS:
            if getattr(self, name) is not None:
                _freeze(self, (name,), (1,))
        object.__setattr__(self, "kind", _enum(AttentionKind, self.kind, "kind"))
        object.__setattr__(self, "mask", _enum(Mask, self.mask, "mask"))
        if self.kind is AttentionKind.SOFTMAX and self.temperature is None:
            object.__setattr__(self, "temperature", Temperature())
        if self.kind.is_hard and self.temperature is not None:
            raise SpecError("a temperature applies only to softmax heads", where="temperature")

    @property
    def has_bias(self) -> bool:
        return any(getattr(self, name) is not None for name in BIAS_FIELDS)

    @property
    def positional(self) -> bool:
        """True iff the head's scores depend on the positions themselves (RoPE, ALiBi),
        not only on the two rows' activations."""
        return self.rotary is not None or self.alibi is not None

    def bias(self, name: str) -> np.ndarray:
        """Bias ``name`` ∈ BIAS_FIELDS as an array (zeros when absent)."""
        b = getattr(self, name)
        if b is not None:
            return b
        size = {"b_q": self.w_q.shape[0], "b_k": self.w_k.shape[0], "b_v": self.w_v.shape[0]}
        return np.zeros(size.get(name, self.w_o.shape[0]))


@dataclass(frozen=True, eq=False)
class FeedForward:
    """Feed-forward sublayer: W₂ act(W₁ y + b₁) + b₂ (act ReLU, GELU, tanh-GELU or SiLU),
    or, gated (``w_gate`` set; SwiGLU with SiLU, GeGLU with GELU — Llama's MLP with
    W₁ = up_proj, W_g = gate_proj, W₂ = down_proj): W₂ (act(W_g y + b_g) ⊙ (W₁ y + b₁)) + b₂."""

    w1: np.ndarray  # (d_ff, d)
    b1: np.ndarray  # (d_ff,)
    w2: np.ndarray  # (d, d_ff)
    b2: np.ndarray  # (d,)
    activation: Activation = Activation.RELU
    w_gate: np.ndarray | None = None  # (d_ff, d) (model-file version 3)
    b_gate: np.ndarray | None = None  # (d_ff,)

    def __post_init__(self) -> None:
        _freeze(self, ("w1", "b1", "w2", "b2"), (2, 1, 2, 1))
        object.__setattr__(self, "activation", _enum(Activation, self.activation, "activation"))
        if self.w_gate is not None:
            _freeze(self, ("w_gate",), (2,))
            if self.b_gate is None:
                object.__setattr__(self, "b_gate", np.zeros(self.w_gate.shape[0]))
            _freeze(self, ("b_gate",), (1,))
        elif self.b_gate is not None:
            raise SpecError("b_gate without w_gate", where="b_gate", expected="no gate bias")

    @property
    def gated(self) -> bool:
        return self.w_gate is not None


@dataclass(frozen=True, eq=False)
class LayerNorm:
    """LN(x) = γ ⊙ (x − μ(x)) / √(σ²(x) + ε) + β over the d coordinates of one position
    (σ² the biased variance, as in PyTorch). ``eps`` is the float64 number ε > 0.
    With ``kind=NormKind.RMS`` it is RMSNorm: γ ⊙ x / √(mean(x²) + ε) + β (Llama's, with
    β = 0; model-file version 3)."""

    weight: np.ndarray  # (d,) γ
    bias: np.ndarray  # (d,) β
    eps: float = 1e-5
    kind: NormKind = NormKind.LAYER

    @property
    def rms(self) -> bool:
        return self.kind is NormKind.RMS

    def __post_init__(self) -> None:
        _freeze(self, ("weight", "bias"), (1, 1))
        object.__setattr__(self, "kind", _enum(NormKind, self.kind, "kind"))
        eps = self.eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)):
            raise SpecError(f"eps {eps!r}", where="eps", expected="a positive finite number")
        if not (math.isfinite(eps) and eps > 0):
            raise SpecError(f"eps {eps!r}", where="eps", expected="a positive finite number")
        object.__setattr__(self, "eps", float(eps))


@dataclass(frozen=True, eq=False)
class Layer:
    """Attention sublayer (all heads, summed into the residual stream) then FFN, with
    optional LayerNorms ``norm1`` (attention) and ``norm2`` (FFN) placed as
    ``norm_position`` says (module docstring)."""

    heads: tuple[Head, ...]
    ffn: FeedForward | None = None
    residual: bool = True
    norm1: LayerNorm | None = None
    norm2: LayerNorm | None = None
    norm_position: NormPosition = NormPosition.PRE
    parallel: bool = False  # GPT-NeoX: y ← y + Σ heads(LN₁(y)) + FFN(LN₂(y)) (version 3)

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple(self.heads))
        object.__setattr__(
            self, "norm_position", _enum(NormPosition, self.norm_position, "norm_position")
        )
        if not isinstance(self.parallel, bool):
            raise SpecError(f"parallel {self.parallel!r}", where="parallel", expected="true/false")
        if self.parallel and not (self.residual and self.norm_position is NormPosition.PRE):
            raise SpecError(
                "a parallel attention + MLP layer",
                where="parallel",
                expected="a pre-norm layer with a residual stream (GPT-NeoX's form)",
            )

    @property
    def pre_norm(self) -> bool:
        return self.norm_position is NormPosition.PRE


@dataclass(frozen=True, eq=False)
class Embedding:
    """Layer 0: y⁽⁰⁾ᵢ = word[xᵢ] + pos_weight · φ(i, N) + table[i−1]."""

    vocab: tuple[str, ...]
    word: np.ndarray  # (|vocab|, d)
    features: tuple[PosFeature, ...] = ()
    pos_weight: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (d, F)
    table: np.ndarray | None = None  # (max_len, d), learned absolute positions

    def __post_init__(self) -> None:
        object.__setattr__(self, "vocab", tuple(self.vocab))
        object.__setattr__(self, "features", tuple(self.features))
        _freeze(self, ("word",), (2,))
        d = self.word.shape[1]
        if self.pos_weight is None or np.asarray(self.pos_weight).size == 0:
            object.__setattr__(self, "pos_weight", np.zeros((d, len(self.features))))
        _freeze(self, ("pos_weight",), (2,))
        if self.table is not None:
            _freeze(self, ("table",), (2,))

    @property
    def d(self) -> int:
        return self.word.shape[1]


@dataclass(frozen=True, eq=False)
class Readout:
    """Decision and outputs read from the last layer's activations.

    * accept iff ``weight · r + bias > 0``, r = y_pos at position ``"last"``,
      ``"first"`` (BOS/CLS) or a 1-based index, or r = the mean of y over all tokens
      (``"mean"``: mean pooling);
    * ``output_coords``: coordinates of y read as per-position Booleans
      (≥ ½ true; Yang et al.'s constructions keep them in {0, 1});
    * ``lm_weight``/``lm_bias``/``lm_symbols``: an optional next-symbol head, logits
      over ``lm_symbols`` (Σ plus possibly an end symbol) at every position.
    """

    weight: np.ndarray  # (d,)
    bias: float = 0.0
    position: str | int = "last"
    output_coords: tuple[int, ...] = ()
    lm_weight: np.ndarray | None = None  # (|lm_symbols|, d)
    lm_bias: np.ndarray | None = None  # (|lm_symbols|,)
    lm_symbols: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, ("weight",), (1,))
        object.__setattr__(self, "bias", float(self.bias))
        object.__setattr__(self, "output_coords", tuple(int(c) for c in self.output_coords))
        object.__setattr__(self, "lm_symbols", tuple(self.lm_symbols))
        if self.lm_weight is not None:
            _freeze(self, ("lm_weight",), (2,))
            if self.lm_bias is None:
                object.__setattr__(self, "lm_bias", np.zeros(self.lm_weight.shape[0]))
            _freeze(self, ("lm_bias",), (1,))
        pos = self.position
        if not (pos in READOUT_POSITIONS or (isinstance(pos, int) and not isinstance(pos, bool))):
            raise SpecError(
                f"readout position {pos!r}",
                where="position",
                expected="'last', 'first', 'mean' or a nonzero integer",
            )
        if pos == 0:
            raise SpecError(
                "readout position 0", where="position", expected="a 1-based (or negative) index"
            )

    @property
    def pooled(self) -> bool:
        """True iff the decision reads the mean over all tokens (``"mean"``)."""
        return self.position == "mean"

    def index(self, n_tokens: int) -> int:
        """0-based index of the decision position in a sequence of ``n_tokens``
        (for a mean readout: the last token, where the pooled decision is reported)."""
        if self.position in ("last", "mean"):
            return n_tokens - 1
        if self.position == "first":
            return 0
        idx = int(self.position) - 1 if self.position > 0 else n_tokens + int(self.position)
        if not 0 <= idx < n_tokens:
            raise InputError(f"readout position {self.position} outside 1..{n_tokens}")
        return idx


READOUT_POSITIONS = ("last", "first", "mean")


def _enum(cls: type[Enum], value: Any, where: str) -> Any:
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in cls)  # type: ignore[attr-defined]
        raise SpecError(f"unknown value {value!r}", where=where, expected=allowed) from None


@dataclass(frozen=True, eq=False)
class Model:
    """A transformer over a finite alphabet (see module docstring)."""

    alphabet: tuple[str, ...]
    embedding: Embedding
    layers: tuple[Layer, ...]
    readout: Readout
    bos: str | None = None
    eos: str | None = None
    name: str = "model"
    meta: Mapping[str, Any] = field(default_factory=dict)
    final_norm: LayerNorm | None = None  # applied to the last layer's output

    def __post_init__(self) -> None:
        object.__setattr__(self, "alphabet", tuple(self.alphabet))
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))
        validate(self)

    # ----- shapes and tokens -------------------------------------------------
    @property
    def d(self) -> int:
        return self.embedding.d

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @cached_property
    def token_index(self) -> dict[str, int]:
        return {s: k for k, s in enumerate(self.embedding.vocab)}

    def n_tokens(self, n: int) -> int:
        """Number of tokens the model sees for an input of length ``n``."""
        return n + (self.bos is not None) + (self.eos is not None)

    def input_offset(self) -> int:
        """0-based token index of input position 1 (1 if there is a BOS token)."""
        return int(self.bos is not None)

    def encode(self, string: str | tuple[str, ...]) -> list[int]:
        """Token ids of ``string`` with BOS/EOS added; unknown symbols raise InputError."""
        ids = [self.token_index[self.bos]] if self.bos is not None else []
        alphabet = set(self.alphabet)
        for pos, sym in enumerate(string):
            if sym not in alphabet:
                raise InputError(
                    f"unknown symbol {sym!r} at position {pos + 1} of "
                    f"{abbreviate(''.join(string))!r}",
                    expected="symbols of the alphabet " + abbreviate("".join(self.alphabet)),
                )
            ids.append(self.token_index[sym])
        if self.eos is not None:
            ids.append(self.token_index[self.eos])
        return ids

    @property
    def is_hard(self) -> bool:
        """True iff every head uses hard (unique or average) attention."""
        return all(h.kind.is_hard for layer in self.layers for h in layer.heads)

    @cached_property
    def extensions(self) -> tuple[str, ...]:
        """The model-file version-2 and -3 features this model uses, in words (empty for
        a model of the original format: no LayerNorm, ReLU only, no attention biases, no
        mean readout). Tools written for a smaller class refuse the others by name
        (:meth:`require_plain`, :meth:`require_classic`)."""
        norms = [self.final_norm] + [n for layer in self.layers for n in (layer.norm1, layer.norm2)]
        used = []
        if any(n is not None and not n.rms for n in norms):
            used.append("LayerNorm")
        acts = {
            layer.ffn.activation
            for layer in self.layers
            if layer.ffn is not None
            and layer.ffn.activation not in (Activation.RELU, Activation.SILU)
        }
        used += [f"{a.value} activation" for a in sorted(acts, key=lambda a: a.value)]
        if any(h.has_bias for layer in self.layers for h in layer.heads):
            used.append("attention biases")
        if self.readout.pooled:
            used.append("mean readout")
        return tuple(used) + self.new_kinds

    @cached_property
    def new_kinds(self) -> tuple[str, ...]:
        """The model-file version-3 features this model uses (rotary positions, ALiBi,
        RMSNorm, gated MLP, SiLU, parallel residual), in words; empty for a version-1/2
        model."""
        heads = [h for layer in self.layers for h in layer.heads]
        norms = [self.final_norm] + [n for layer in self.layers for n in (layer.norm1, layer.norm2)]
        ffns = [layer.ffn for layer in self.layers if layer.ffn is not None]
        used = []
        if any(h.rotary is not None for h in heads):
            used.append("rotary positions")
        if any(h.alibi is not None for h in heads):
            used.append("ALiBi")
        if any(n is not None and n.rms for n in norms):
            used.append("RMSNorm")
        if any(f.gated for f in ffns):
            used.append("gated MLP")
        if any(f.activation is Activation.SILU for f in ffns):
            used.append("silu activation")
        if any(layer.parallel for layer in self.layers):
            used.append("parallel residual")
        return tuple(used)

    @cached_property
    def positional_scheme(self) -> str:
        """How the model knows positions: ``"rope"``, ``"alibi"``, ``"learned"`` (a
        position table), ``"features"`` (attncert's named features φ(i, N)), ``"none"``
        (NoPE: only through masks); several joined by ``+``."""
        heads = [h for layer in self.layers for h in layer.heads]
        emb = self.embedding
        kinds = [
            name
            for name, used in (
                ("features", bool(emb.features) and bool(np.any(emb.pos_weight))),
                ("learned", emb.table is not None),
                ("rope", any(h.rotary is not None for h in heads)),
                ("alibi", any(h.alibi is not None for h in heads)),
            )
            if used
        ]
        return "+".join(kinds) or "none"

    @cached_property
    def is_rational(self) -> bool:
        """True iff every position-wise map is rational in the weights (no LayerNorm or
        RMSNorm, ReLU only, no rotary angles): hard-attention decisions are then decided
        in exact rationals; otherwise in certified interval arithmetic."""
        irrational = ("LayerNorm", "RMSNorm", "rotary positions")
        return not any(e in irrational or e.endswith("activation") for e in self.extensions)

    def require_plain(self, what: str) -> None:
        """Refuse a model that uses version-2 features ``what`` does not support."""
        if self.extensions:
            raise UnsupportedError(
                f"{what} does not support models with "
                + ", ".join(self.extensions)
                + f" (model {self.name!r})",
                expected="a model without LayerNorm, non-ReLU activations, attention biases "
                "or mean readout",
            )

    def require_classic(self, what: str, supported: tuple[str, ...] = ()) -> None:
        """Refuse a model that uses a version-3 feature (RoPE, ALiBi, RMSNorm, gated MLP,
        parallel residual) other than ``supported``: the evaluator ``what`` would
        otherwise ignore it and compute another model. Every analysis that has not been
        extended to these kinds calls this at its entry."""
        missing = [k for k in self.new_kinds if k not in supported]
        if missing:
            raise UnsupportedError(
                f"{what} does not support models with "
                + ", ".join(missing)
                + f" (model {self.name!r}, positional scheme {self.positional_scheme})",
                expected="absolute, learned or no positions, LayerNorm, ungated MLPs"
                + (" (or " + ", ".join(supported) + ")" if supported else ""),
            )

    # ----- identity -------------------------------------------------------------
    @cached_property
    def digest(self) -> str:
        """sha256 over the canonical encoding of the model file (every float as its exact
        hex form); computed by :func:`attncert.model.serialize.content_hash`."""
        if _CONTENT_HASH is None:  # pragma: no cover - attncert.model registers it on import
            raise RuntimeError("attncert.model.serialize has not been imported")
        return _CONTENT_HASH(self)


_CONTENT_HASH: Callable[[Model], str] | None = None


def set_content_hash(fn: Callable[[Model], str]) -> None:
    """Register the content-hash function (the file format lives in
    :mod:`attncert.model.serialize`, which depends on this module, not the reverse)."""
    global _CONTENT_HASH
    _CONTENT_HASH = fn
