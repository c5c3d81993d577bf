"""Soft-attention models for §6: an exact PARITY transformer and a trained one.

* :func:`soft_parity` (zoo ``soft_parity``) — a 3-layer softmax transformer with
  bounded positional encodings (1, i/N, 1/N, cos(πi)) that accepts exactly the
  bit strings with an even number of 1s, at every length, in the style of
  Chiang & Cholak (2022, §4): with BOS/EOS around the input (N = n + 2 tokens),

  1. a head with zero scores (uniform attention) writes c = k/N, k = #1s;
     the FFN builds the triangle B_i = ReLU(t+1/N) − 2ReLU(t) + ReLU(t−1/N) of
     t = c + 1/N − i/N, i.e. B_i = [i = k+1]/N;
  2. an FFN signs it with cos(πi): g_i = ReLU(B_i − ½ + ½cos πi) − ReLU(B_i − ½ − ½cos πi)
     = (−1)^i B_i;
  3. a uniform head averages g: out = (−1)^{k+1}/N²; the readout is −out.

  So the accept logit is exactly (−1)^k / N² and the *gap* |logit| shrinks like
  1/N² — within Lemma 5's O(1/n) (the same 1/n² is what Chiang & Cholak's
  construction gives before layer normalisation rescales it).  Every head has
  all scores equal, so softmax and average-hard attention coincide on it:
  :func:`soft_parity_exact_twin` is the same model with average-hard heads,
  which the exact evaluator can run.
* :func:`soft_parity_ln` (zoo ``soft_parity_ln``) — the same plus a final LayerNorm that
  rescales the 1/N² offset to a logit of ±2.12: exact PARITY with a margin that does
  not shrink, the adversarial model for certified sensitivity bounds.
* :func:`soft_parity_lm` (zoo ``soft_parity_lm``) — a 1-layer softmax model with
  a next-symbol head over ("0", "1", "$") trained here in numpy
  (:func:`train_parity_lm`, hand-written backpropagation, seeded, < 30 s) on
  prefixes of Hahn's PARITY automaton distribution; the weights ship as
  ``soft/data/soft_parity_lm.json`` so nothing retrains at import;
  :func:`soft_dyck2_lm` (zoo ``soft_dyck2_lm``) is the same for the 2-Dyck PCFG.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources

import numpy as np

from attncert.model.positional import PosFeature
from attncert.model.spec import (
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    LayerNorm,
    Model,
    Readout,
    Temperature,
)
from attncert.model.zoo import register

# coordinates of soft_parity
_IS1, _ONE, _POS, _INV, _COS, _C, _B, _G, _OUT = range(9)
_D = 9


def _e(k: int, d: int = _D) -> np.ndarray:
    v = np.zeros(d)
    v[k] = 1.0
    return v


def soft_parity(kind: AttentionKind | str = AttentionKind.SOFTMAX) -> Model:
    """The exact soft PARITY transformer (module docstring); logit = (−1)^k / N²."""
    kind = AttentionKind(kind)
    temp = Temperature(1.0) if kind is AttentionKind.SOFTMAX else None

    def uniform_head(src: int, dst: int) -> Head:
        return Head(
            w_q=np.zeros((1, _D)),
            w_k=np.zeros((1, _D)),
            w_v=_e(src).reshape(1, _D),
            w_o=_e(dst).reshape(_D, 1),
            kind=kind,
            temperature=temp,
        )

    vocab = ("0", "1", "^", "$")
    word = np.zeros((4, _D))
    word[1, _IS1] = 1.0
    features = (PosFeature("1"), PosFeature("i/n"), PosFeature("1/n"), PosFeature("cos(pi*i)"))
    pos_weight = np.zeros((_D, 4))
    for f, coord in enumerate((_ONE, _POS, _INV, _COS)):
        pos_weight[coord, f] = 1.0
    # layer 1 FFN: t = c + 1/N − i/N; hidden ReLU(t + 1/N), ReLU(t), ReLU(t − 1/N)
    w1 = np.zeros((3, _D))
    for row, off in enumerate((2.0, 1.0, 0.0)):
        w1[row, _C] = 1.0
        w1[row, _POS] = -1.0
        w1[row, _INV] = off
    w2 = np.zeros((_D, 3))
    w2[_B] = [1.0, -2.0, 1.0]
    ffn1 = FeedForward(w1=w1, b1=np.zeros(3), w2=w2, b2=np.zeros(_D))
    # layer 2 FFN: g = ReLU(B − ½ + ½cos) − ReLU(B − ½ − ½cos) = (−1)^i B
    v1 = np.zeros((2, _D))
    v1[0, [_B, _ONE, _COS]] = [1.0, -0.5, 0.5]
    v1[1, [_B, _ONE, _COS]] = [1.0, -0.5, -0.5]
    v2 = np.zeros((_D, 2))
    v2[_G] = [1.0, -1.0]
    ffn2 = FeedForward(w1=v1, b1=np.zeros(2), w2=v2, b2=np.zeros(_D))
    layers = (
        Layer((uniform_head(_IS1, _C),), ffn1),
        Layer((), ffn2),
        Layer((uniform_head(_G, _OUT),), None),
    )
    return Model(
        alphabet=("0", "1"),
        embedding=Embedding(vocab=vocab, word=word, features=features, pos_weight=pos_weight),
        layers=layers,
        readout=Readout(weight=-_e(_OUT), bias=0.0),
        bos="^",
        eos="$",
        name="soft_parity" if kind is AttentionKind.SOFTMAX else f"soft_parity_{kind.value}",
        meta={
            "language": "parity (even number of 1s)",
            "description": "exact soft-attention PARITY (Chiang & Cholak style); logit = (-1)^k/N^2",
            "gap": "1/N^2, N = n + 2",
        },
    )


def soft_parity_ln(eps: float = 1e-30) -> Model:
    """An *adversarial* model for the certified bounds: :func:`soft_parity` followed by a
    layer that writes (−out, out) into coordinates 0 and 1 and zeroes the rest, and a
    final LayerNorm (γ = 1, β = 0, ε = ``eps``). The normalised vector is
    ±(1, −1, 0, …)·√(d/2)/√(1 + dε/(2out²)), so the accept logit (coordinate 0) is
    ≈ (−1)^k·√(9/2) ≈ ±2.12 at every tested length: the model computes PARITY exactly
    with a margin that does not shrink, because LayerNorm divides the 1/N² offset by its
    own size. Any sound sensitivity bound must be ≥ 2·2.12 here, and no restriction with
    a free position can have a constant decision."""
    base = soft_parity()
    # hidden units ReLU(y_c), ReLU(−y_c) for every coordinate c; the residual y + FFN(y)
    # then keeps only coordinate 0 = −out and coordinate 1 = +out (y_c − (ReLU(y_c) −
    # ReLU(−y_c)) = 0 exactly, also in float)
    w1 = np.concatenate([np.eye(_D), -np.eye(_D)])
    w2 = np.concatenate([-np.eye(_D), np.eye(_D)], axis=1)
    w2[0, _OUT], w2[0, _D + _OUT] = -1.0, 1.0
    w2[1, _OUT], w2[1, _D + _OUT] = 1.0, -1.0
    ffn = FeedForward(w1=w1, b1=np.zeros(2 * _D), w2=w2, b2=np.zeros(_D))
    sign = Layer((), ffn)
    return Model(
        alphabet=base.alphabet,
        embedding=base.embedding,
        layers=(*base.layers, sign),
        readout=Readout(weight=_e(0), bias=0.0),
        bos=base.bos,
        eos=base.eos,
        name="soft_parity_ln",
        final_norm=LayerNorm(np.ones(_D), np.zeros(_D), eps),
        meta={
            "language": "parity",
            "description": "exact PARITY whose final LayerNorm amplifies the 1/N^2 offset to "
            "a logit of about ±2.12 (adversarial for sensitivity bounds)",
        },
    )


def soft_parity_exact_twin() -> Model:
    """:func:`soft_parity` with average-hard heads: identical function (all scores are
    equal), evaluable by :func:`attncert.model.forward_exact`."""
    return soft_parity(AttentionKind.AVERAGE)


# ----------------------------------------------------------------------------- training

_LM_FEATURES = (PosFeature("1"), PosFeature("i/n"), PosFeature("cos(pi*i)"))


@dataclass(frozen=True)
class TrainReport:
    """What :func:`train_parity_lm` did."""

    steps: int
    seconds: float
    final_loss: float
    seed: int


def _init_params(
    rng: np.random.Generator, d: int, d_ff: int, n_sym: int = 2
) -> dict[str, np.ndarray]:
    s = 1.0 / np.sqrt(d)
    return {
        "word": rng.normal(0, 1.0, (n_sym + 1, d)),  # input symbols, then BOS
        "pos": rng.normal(0, s, (d, len(_LM_FEATURES))),
        "wq": rng.normal(0, s, (d, d)),
        "wk": rng.normal(0, s, (d, d)),
        "wv": rng.normal(0, s, (d, d)),
        "wo": rng.normal(0, s, (d, d)),
        "w1": rng.normal(0, s, (d_ff, d)),
        "b1": np.zeros(d_ff),
        "w2": rng.normal(0, 1.0 / np.sqrt(d_ff), (d, d_ff)),
        "b2": np.zeros(d),
        "lm": rng.normal(0, s, (n_sym + 1, d)),  # input symbols, then end
        "lmb": np.zeros(n_sym + 1),
    }


def lm_loss_and_grad(
    params: dict[str, np.ndarray], tokens: np.ndarray, targets: np.ndarray
) -> tuple[float, dict[str, np.ndarray]]:
    """Mean cross-entropy of the next-symbol head at the last position against target
    distributions (B, 3), and its gradient (hand-written backpropagation).

    The model is exactly the attncert 1-layer model that :func:`_to_model` builds:
    y⁰ = word + W_pos φ; u = y⁰_r + W_O Σ_j a_j W_V y⁰_j with a = softmax(q·k_j),
    q = W_Q y⁰_r, k_j = W_K y⁰_j (β = 1, unmasked); y = u + W₂ReLU(W₁u + b₁) + b₂;
    logits = W_lm y + b_lm.
    """
    bsz, n_tok = tokens.shape
    phi = np.array([[float(f.exact(i, n_tok)) for f in _LM_FEATURES] for i in range(1, n_tok + 1)])
    y0 = params["word"][tokens] + (phi @ params["pos"].T)[None]  # (B, N, d)
    yr = y0[:, -1]  # (B, d)
    q = yr @ params["wq"].T  # (B, d)
    k = y0 @ params["wk"].T  # (B, N, d)
    v = y0 @ params["wv"].T
    s = np.einsum("bd,bnd->bn", q, k)
    s = s - s.max(axis=1, keepdims=True)
    a = np.exp(s)
    a /= a.sum(axis=1, keepdims=True)
    ctx = np.einsum("bn,bnd->bd", a, v)
    u = yr + ctx @ params["wo"].T
    hpre = u @ params["w1"].T + params["b1"]
    h = np.maximum(hpre, 0.0)
    y = u + h @ params["w2"].T + params["b2"]
    logits = y @ params["lm"].T + params["lmb"]
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    loss = float(-(targets * logp).sum(axis=1).mean())
    # backward
    g = {key: np.zeros_like(val) for key, val in params.items()}
    dlog = (np.exp(logp) - targets) / bsz  # (B, 3)
    g["lm"] = dlog.T @ y
    g["lmb"] = dlog.sum(axis=0)
    dy = dlog @ params["lm"]
    g["w2"] = dy.T @ h
    g["b2"] = dy.sum(axis=0)
    dh = (dy @ params["w2"]) * (hpre > 0)
    g["w1"] = dh.T @ u
    g["b1"] = dh.sum(axis=0)
    du = dy + dh @ params["w1"]
    g["wo"] = du.T @ ctx
    dctx = du @ params["wo"]
    da = np.einsum("bd,bnd->bn", dctx, v)
    dv = a[:, :, None] * dctx[:, None, :]
    ds = a * (da - (a * da).sum(axis=1, keepdims=True))
    dq = np.einsum("bn,bnd->bd", ds, k)
    dk = ds[:, :, None] * q[:, None, :]
    g["wq"] = dq.T @ yr
    g["wk"] = np.einsum("bnd,bne->de", dk, y0)
    g["wv"] = np.einsum("bnd,bne->de", dv, y0)
    dy0 = dk @ params["wk"] + dv @ params["wv"]
    dy0[:, -1] += du + dq @ params["wq"]
    np.add.at(g["word"], tokens, dy0)
    g["pos"] = np.einsum("bnd,nf->df", dy0, phi)
    return loss, g


def _batch(
    rng: np.random.Generator, dist, n: int, size: int, cache: dict | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Prefixes from the conditioned prefix law (BOS id = |Σ|) and exact next-symbol laws."""
    cache = {} if cache is None else cache
    xs = dist.sample_prefixes(rng, n, size)
    index = {c: i for i, c in enumerate(dist.input_symbols)}
    bos = len(dist.input_symbols)
    tokens = np.array([[bos] + [index[c] for c in x] for x in xs], dtype=np.int64)
    rows = []
    for x in xs:
        if x not in cache:
            cache[x] = [float(q) for q in dist.next_symbol_probs(x).values()]
        rows.append(cache[x])
    return tokens, np.array(rows)


def train_lm(
    dist,
    *,
    seed: int = 0,
    d: int = 16,
    d_ff: int = 32,
    max_len: int = 8,
    steps: int = 20000,
    batch: int = 64,
    lr: float = 0.003,
    time_limit: float = 25.0,
    name: str = "soft_lm",
) -> tuple[Model, TrainReport]:
    """Train a 1-layer next-symbol model on ``dist`` with Adam (seeded; stops after
    ``time_limit`` seconds); prefix lengths uniform in 1..max_len."""
    k = len(dist.input_symbols)
    rng = np.random.default_rng(seed)
    params = _init_params(rng, d, d_ff, k)
    m = {key: np.zeros_like(v) for key, v in params.items()}
    vel = {key: np.zeros_like(v) for key, v in params.items()}
    cache: dict = {}
    t0 = time.perf_counter()
    loss = float("nan")
    step = 0
    for step in range(1, steps + 1):
        n = int(rng.integers(1, max_len + 1))
        tokens, targets = _batch(rng, dist, n, batch, cache)
        loss, grad = lm_loss_and_grad(params, tokens, targets)
        for key in params:
            m[key] = 0.9 * m[key] + 0.1 * grad[key]
            vel[key] = 0.999 * vel[key] + 0.001 * grad[key] ** 2
            mh = m[key] / (1 - 0.9**step)
            vh = vel[key] / (1 - 0.999**step)
            params[key] = params[key] - lr * mh / (np.sqrt(vh) + 1e-8)
        if time.perf_counter() - t0 > time_limit:
            break
    model = _to_model(params, dist, name=name, p=str(dist.p), seed=seed, steps=step, loss=loss)
    return model, TrainReport(step, time.perf_counter() - t0, loss, seed)


def train_parity_lm(*, seed: int = 0, p: str = "1/4", **kw) -> tuple[Model, TrainReport]:
    """:func:`train_lm` on Hahn's PARITY automaton distribution (zoo ``soft_parity_lm``)."""
    from attncert.languages.distributions import ParityDistribution

    return train_lm(ParityDistribution(p), seed=seed, name="soft_parity_lm", **kw)


def train_dyck_lm(*, seed: int = 0, p: str = "3/10", **kw) -> tuple[Model, TrainReport]:
    """:func:`train_lm` on Hahn's 2-Dyck PCFG (zoo ``soft_dyck2_lm``)."""
    from attncert.languages.distributions import DyckDistribution

    kw.setdefault("steps", 8000)
    return train_lm(DyckDistribution(p), seed=seed, name="soft_dyck2_lm", **kw)


def _to_model(params: dict[str, np.ndarray], dist, *, name: str, **info) -> Model:
    d = params["wq"].shape[0]
    head = Head(
        w_q=params["wq"],
        w_k=params["wk"],
        w_v=params["wv"],
        w_o=params["wo"],
        kind=AttentionKind.SOFTMAX,
        temperature=Temperature(1.0),
    )
    ffn = FeedForward(w1=params["w1"], b1=params["b1"], w2=params["w2"], b2=params["b2"])
    lm = params["lm"]
    symbols = tuple(dist.input_symbols)
    return Model(
        alphabet=symbols,
        embedding=Embedding(
            vocab=(*symbols, "^"),
            word=params["word"],
            features=_LM_FEATURES,
            pos_weight=params["pos"],
        ),
        layers=(Layer((head,), ffn),),
        # accept iff the head prefers the end symbol to the first input symbol
        # (for PARITY: the model believes the prefix has an even number of 1s)
        readout=Readout(
            weight=lm[-1] - lm[0],
            bias=float(params["lmb"][-1] - params["lmb"][0]),
            lm_weight=lm,
            lm_bias=params["lmb"],
            lm_symbols=(*symbols, dist.end),
        ),
        bos="^",
        name=name,
        meta={
            "task": f"next symbol on Hahn's {type(dist).__name__} (Theorem 6)",
            "training": {
                k: (v if isinstance(v, (int, float)) else str(v)) for k, v in info.items()
            },
            "d": d,
        },
    )


def _shipped(filename: str) -> Model:
    from attncert.model import load_model

    ref = resources.files("attncert.soft") / "data" / filename
    with resources.as_file(ref) as path:
        return load_model(path)


def soft_parity_lm() -> Model:
    """The shipped trained PARITY next-symbol model (``soft/data/soft_parity_lm.json``)."""
    return _shipped("soft_parity_lm.json")


def soft_dyck2_lm() -> Model:
    """The shipped trained 2-Dyck next-symbol model (``soft/data/soft_dyck2_lm.json``)."""
    return _shipped("soft_dyck2_lm.json")


register(
    "soft_parity",
    soft_parity,
    "exact 3-layer softmax PARITY transformer (Chiang & Cholak style, BOS/EOS): accept "
    "logit (−1)^k/N², inside Lemma 5's O(1/n)",
)
register(
    "soft_parity_ln",
    soft_parity_ln,
    "soft_parity plus a final LayerNorm that keeps its PARITY margin at ±2.12 for every n "
    "(adversarial for certified sensitivity bounds)",
)
register(
    "soft_parity_lm",
    soft_parity_lm,
    "1-layer softmax next-symbol model over 0 1 $, trained (numpy, seeded) on Hahn's PARITY "
    "automaton distribution (Theorem 6)",
)
register(
    "soft_dyck2_lm",
    soft_dyck2_lm,
    "1-layer softmax next-symbol model, trained (numpy, seeded) on Hahn's 2-Dyck PCFG (Theorem 6)",
)
