"""Uniform–tieless average-hard transformers and their softmax simulation
(Yang et al. §5: Lemma 24, Lemma 25, Theorem 26).

An attention head is *uniform* when W_Qᵀ W_K = 0 (every score is 0, so softmax and
average-hard attention coincide exactly) and *tieless with gap γ(n)* when, for every
input of length n and every query, the maximal visible score is attained at exactly
one key and beats every other visible key by ≥ γ(n) (Def. 5). A model all of whose
heads are one of the two is uniform–tieless.

* :func:`check_uniform_tieless` decides this **exactly** for all lengths 1…N by
  enumerating every input string (|Σ|ⁿ of them; refused above ``max_strings``) and
  running the exact rational forward pass (:mod:`attncert.model.exact`). It reports,
  per n, the minimal gap of every head, the activation bound Y_n (largest |entry| of
  any hard activation), the smallest decision margin |logit|, or a witness
  (string, layer, head, position, tied keys) when a head ties.
* :func:`soft_simulation` builds the Theorem-26 transformer: the same parameters with
  softmax attention at inverse temperature β(N). For each n it finds a β_n for which a
  layer-by-layer error bound (Lemmas 30–34 in sup norms, evaluated in arb ball
  arithmetic with outward rounding) keeps the soft activations within ε_n of the hard
  ones and every decision unchanged; then it fits β(N) = c·N^p·log(N)^q ≥ β_n for all
  checked n. The guarantee covers the checked lengths only (recorded in ``meta``).

Error bound per layer (input error e, activations ≤ Y, sup norms):
scores err η ≤ ‖W_QᵀW_K‖_sum (2Ye + e²); a tieless head's soft weight off the
maximum is ≤ ω = (m−1)·exp(−β(γ − 2η)) (needs 2η < γ); head output error
≤ ‖W_OW_V‖_∞ (e + 2Yω) (uniform heads: ‖W_OW_V‖_∞·e); the FFN multiplies by
(1 + ‖W₂‖_∞‖W₁‖_∞) with residual connections (ReLU is 1-Lipschitz, Lemma 30).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from flint import arb, fmpq

from attncert.errors import ParameterError, UnsupportedError
from attncert.model.exact import exact_weights, forward_exact_tokens, to_fraction
from attncert.model.spec import AttentionKind, Head, Layer, Model, Temperature

__implements__ = (
    "Yang Definition 5",
    "Yang Lemma 24",
    "Yang Lemma 25",
    "Yang Theorem 26",
)

MAX_STRINGS = 200_000


@dataclass(frozen=True)
class Tie:
    """A witness that a head is not tieless: tied maximal keys (1-based token positions)."""

    string: str
    layer: int
    head: int
    position: int
    keys: tuple[int, ...]


@dataclass(frozen=True)
class LengthReport:
    n: int
    strings: int
    gaps: dict[tuple[int, int], Fraction | None]  # (layer, head) -> min gap (None: uniform)
    activation_bound: Fraction  # max |entry| of every hard activation, all layers
    margin: Fraction  # min |logit| at the decision position
    ties: tuple[Tie, ...] = ()
    accepted: frozenset[str] = frozenset()  # of the `strings` enumerated, those accepted

    @property
    def tieless(self) -> bool:
        return not self.ties

    @property
    def min_gap(self) -> Fraction | None:
        gs = [g for g in self.gaps.values() if g is not None]
        return min(gs) if gs else None


@dataclass(frozen=True)
class TielessReport:
    model_name: str
    max_len: int
    uniform_heads: tuple[tuple[int, int], ...]
    lengths: tuple[LengthReport, ...] = field(default_factory=tuple)

    @property
    def uniform_tieless(self) -> bool:
        return all(r.tieless for r in self.lengths)

    @property
    def first_tie(self) -> Tie | None:
        for r in self.lengths:
            if r.ties:
                return r.ties[0]
        return None

    def summary(self) -> list[dict[str, Any]]:
        return [
            {
                "n": r.n,
                "strings": r.strings,
                "tieless": r.tieless,
                "min_gap": None if r.min_gap is None else str(r.min_gap),
                "activation_bound": str(r.activation_bound),
                "margin": str(r.margin),
            }
            for r in self.lengths
        ]


def uniform_heads(model: Model) -> tuple[tuple[int, int], ...]:
    """Heads with W_Qᵀ W_K = 0 exactly (scores identically 0)."""
    key = (model.digest, "uniform_heads")
    if key not in _UNIFORM_CACHE:
        _UNIFORM_CACHE[key] = _uniform_heads(model)
    return _UNIFORM_CACHE[key]


# a function of the weights alone (the content hash); asked once per length by the
# per-length certification up to n = 1024
_UNIFORM_CACHE: dict[tuple[str, str], tuple[tuple[int, int], ...]] = {}


def _uniform_heads(model: Model) -> tuple[tuple[int, int], ...]:
    ew = exact_weights(model)
    out = []
    for li, layer in enumerate(ew.layers):
        for hi, h in enumerate(layer.heads):
            if all(h.wqk[r, c] == 0 for r in range(h.wqk.nrows()) for c in range(h.wqk.ncols())):
                out.append((li, hi))
    return tuple(out)


def check_uniform_tieless(
    model: Model, max_len: int, *, max_strings: int = MAX_STRINGS, stop_at_tie: bool = True
) -> TielessReport:
    """Exact uniform–tieless check of a hard-attention model on all inputs of length ≤ N."""
    if not model.is_hard:
        raise UnsupportedError(
            "the tieless check needs a hard-attention model",
            expected="leftmost, rightmost or average heads (see to_average_hard)",
        )
    total = sum(len(model.alphabet) ** n for n in range(1, max_len + 1))
    if total > max_strings:
        raise ParameterError(
            f"{total} strings of length ≤ {max_len} over {len(model.alphabet)} symbols",
            where="max_len",
            expected=f"at most {max_strings} strings (raise max_strings)",
        )
    key = (model.digest, model.name, max_len, stop_at_tie)
    if key not in _TIELESS_CACHE:
        _TIELESS_CACHE[key] = _check_all(model, max_len, stop_at_tie)
    return _TIELESS_CACHE[key]


# the check is a function of the weights (the content hash) and the name it reports: the
# compiler, the proof kinds and the CLI ask it again for the same model
_TIELESS_CACHE: dict[tuple[str, str, int, bool], TielessReport] = {}


def _check_all(model: Model, max_len: int, stop_at_tie: bool) -> TielessReport:
    uni = set(uniform_heads(model))
    reports = []
    for n in range(1, max_len + 1):
        rep = _check_length(model, n, uni, stop_at_tie)
        reports.append(rep)
        if rep.ties and stop_at_tie:
            break
    return TielessReport(model.name, max_len, tuple(sorted(uni)), tuple(reports))


def _check_length(model: Model, n: int, uni: set[tuple[int, int]], stop: bool) -> LengthReport:
    gaps: dict[tuple[int, int], Fraction | None] = {}
    for li, layer in enumerate(model.layers):
        for hi in range(len(layer.heads)):
            gaps[(li, hi)] = None
    ties: list[Tie] = []
    act = fmpq(0)
    margin: fmpq | None = None
    count = 0
    accepted: set[str] = set()
    for symbols in itertools.product(model.alphabet, repeat=n):
        string = "".join(symbols)
        count += 1
        tr = forward_exact_tokens(model, model.encode(string))
        if tr.accept:
            accepted.add(string)
        for mat in (
            tr.embeddings,
            *(lt.output for lt in tr.layers),
            *(lt.after_attention for lt in tr.layers),
        ):
            for r in range(mat.nrows()):
                for c in range(mat.ncols()):
                    v = abs(mat[r, c])
                    if v > act:
                        act = v
        lg = abs(tr.logit)
        margin = lg if margin is None or lg < margin else margin
        n_tok = len(tr.tokens)
        for li, (layer, lt) in enumerate(zip(model.layers, tr.layers, strict=True)):
            for hi, head in enumerate(layer.heads):
                if (li, hi) in uni:
                    continue
                scores = lt.scores[hi]
                for i in range(n_tok):
                    vis = [j for j in range(n_tok) if head.mask.allowed(i, j)]
                    if len(vis) < 1:
                        continue
                    row = [scores[i, j] for j in vis]
                    best = max(row)
                    top = [vis[k] for k, v in enumerate(row) if v == best]
                    if len(top) > 1:
                        ties.append(Tie(string, li, hi, i + 1, tuple(j + 1 for j in top)))
                        if stop:
                            return LengthReport(
                                n,
                                count,
                                _fr(gaps),
                                to_fraction(act),
                                to_fraction(margin),
                                tuple(ties),
                                frozenset(accepted),
                            )
                        continue
                    if len(vis) > 1:
                        second = max(v for v in row if v != best)
                        g = to_fraction(best - second)
                        cur = gaps[(li, hi)]
                        gaps[(li, hi)] = g if cur is None or g < cur else cur
    return LengthReport(
        n,
        count,
        _fr(gaps),
        to_fraction(act),
        to_fraction(margin or fmpq(0)),
        tuple(ties),
        frozenset(accepted),
    )


def _fr(g: dict) -> dict:
    return dict(g)


# ----- Theorem 26: the softmax simulation ----------------------------------------------------


def _arb(x: Fraction | float | int) -> arb:
    fr = Fraction(x)
    return arb(fmpq(fr.numerator, fr.denominator))


def _norm_sum(m: Any) -> arb:
    return _arb(sum(abs(to_fraction(m[r, c])) for r in range(m.nrows()) for c in range(m.ncols())))


def _norm_inf(rows: list[list[Fraction]]) -> arb:
    return _arb(max((sum(abs(v) for v in row) for row in rows), default=0))


def _fr_rows(m: Any, transpose: bool = False) -> list[list[Fraction]]:
    rows = [[to_fraction(m[r, c]) for c in range(m.ncols())] for r in range(m.nrows())]
    return [list(col) for col in zip(*rows, strict=True)] if transpose and rows else rows


@dataclass(frozen=True)
class _LayerNorms:
    heads: tuple[tuple[arb, arb, bool], ...]  # (‖W_QᵀW_K‖_sum, ‖W_OW_V‖_∞, uniform)
    ffn_gain: arb  # ‖W₂‖_∞‖W₁‖_∞ (0 without FFN)
    residual: bool


def layer_norms(model: Model) -> tuple[_LayerNorms, ...]:
    ew = exact_weights(model)
    uni = set(uniform_heads(model))
    out = []
    for li, (layer, el) in enumerate(zip(model.layers, ew.layers, strict=True)):
        heads = []
        for hi, eh in enumerate(el.heads):
            # wov is (W_O W_V)ᵀ; ‖W_O W_V‖_∞ is the max row sum of W_O W_V.
            heads.append(
                (_norm_sum(eh.wqk), _norm_inf(_fr_rows(eh.wov, transpose=True)), (li, hi) in uni)
            )
        gain = arb(0)
        if el.w1t is not None:
            gain = _norm_inf(_fr_rows(el.w2t, transpose=True)) * _norm_inf(
                _fr_rows(el.w1t, transpose=True)
            )
        out.append(_LayerNorms(tuple(heads), gain, layer.residual))
    return tuple(out)


def error_bound(
    model: Model, rep: LengthReport, beta: float, norms: tuple[_LayerNorms, ...] | None = None
) -> arb | None:
    """Certified bound (arb ball; use ``.upper()``) on max |soft − hard| activation at length
    ``rep.n`` with inverse temperature ``beta``; None if some score error reaches its gap."""
    norms = norms or layer_norms(model)
    y = _arb(rep.activation_bound)
    n_tok = model.n_tokens(rep.n)
    b = _arb(beta)
    e = arb(0)
    for li, ln in enumerate(norms):
        total = arb(0)
        for hi, (mqk, mov, uniform) in enumerate(ln.heads):
            if uniform:
                total += mov * e
                continue
            gap = rep.gaps.get((li, hi))
            if gap is None:  # never more than one visible key: attention is exact
                total += mov * e
                continue
            eta = mqk * (2 * y * e + e * e)
            margin = _arb(gap) - 2 * eta
            if not margin > 0:
                return None
            omega = (n_tok - 1) * (-(b * margin)).exp()
            total += mov * (e + 2 * y * omega)
        e = (e + total) if ln.residual else total
        if ln.ffn_gain != 0:
            e = (e + ln.ffn_gain * e) if ln.residual else ln.ffn_gain * e
    return e


def required_beta(
    model: Model,
    rep: LengthReport,
    eps: Fraction | float | None = None,
    norms: tuple[_LayerNorms, ...] | None = None,
) -> tuple[float, arb]:
    """Smallest β (to within 1%) whose certified error keeps every decision (‖w‖₁·err <
    margin) and, if given, err ≤ eps. Returns (β, certified error)."""
    norms = norms or layer_norms(model)
    w1 = _arb(sum(abs(Fraction(float(v))) for v in model.readout.weight))
    if rep.margin == 0:
        raise ParameterError(
            f"a hard logit is exactly 0 at length {rep.n}: the decision is not robust to any error",
            where="model",
        )
    limit = _arb(rep.margin) / w1 if w1 != 0 else arb(math.inf)
    if eps is not None:
        limit = min(limit, _arb(eps)) if w1 != 0 else _arb(eps)

    def ok(beta: float) -> arb | None:
        e = error_bound(model, rep, beta, norms)
        if e is None or not (e < limit):
            return None
        return e

    if model.n_tokens(rep.n) == 1 or all(g is None for g in rep.gaps.values()):
        e = ok(0.0)
        if e is not None:
            return 0.0, e
    hi = 1.0
    while ok(hi) is None:
        hi *= 2
        if hi > 1e12:
            raise ParameterError(
                f"no temperature makes the error bound small enough at n = {rep.n}", where="model"
            )
    lo = 0.0
    while hi - lo > 0.01 * hi:
        mid = (lo + hi) / 2
        if ok(mid) is None:
            lo = mid
        else:
            hi = mid
    return hi, ok(hi)


@dataclass(frozen=True)
class SoftSimulation:
    """Theorem 26 for lengths 1…N: the softmax model and the per-n derivation."""

    model: Model
    report: TielessReport
    per_n: tuple[dict[str, Any], ...]
    temperature: Temperature


def soft_simulation(
    hard: Model,
    max_len: int,
    *,
    eps: float | None = None,
    n_power: float | None = None,
    log_power: float = 1.0,
    max_strings: int = MAX_STRINGS,
) -> SoftSimulation:
    """Theorem 26: replace average-hard by softmax attention with β(N) = c·N^p·log(N)^q.

    Requires the model to be uniform–tieless on all lengths ≤ ``max_len`` (checked exactly;
    otherwise :class:`ParameterError` names the tie). ``n_power`` defaults to the smallest
    integer p ≤ 8 for which the coefficient fitted on the first half of the lengths also
    covers the second half."""
    report = check_uniform_tieless(hard, max_len, max_strings=max_strings)
    tie = report.first_tie
    if tie is not None:
        raise ParameterError(
            f"not uniform–tieless: layer {tie.layer} head {tie.head} ties at position "
            f"{tie.position} on {tie.string!r} (keys {list(tie.keys)})",
            where="model",
            expected="a uniform–tieless average-hard transformer",
        )
    norms = layer_norms(hard)
    per_n = []
    for rep in report.lengths:
        beta, err = required_beta(hard, rep, eps, norms)
        per_n.append(
            {
                "n": rep.n,
                "N": hard.n_tokens(rep.n),
                "min_gap": _s(rep.min_gap),
                "gaps": {f"{li}.{hi}": _s(g) for (li, hi), g in rep.gaps.items()},
                "activation_bound": str(rep.activation_bound),
                "margin": str(rep.margin),
                "beta_needed": beta,
                "error_bound": float(err.upper()),
            }
        )
    temp = _fit(per_n, n_power, log_power)
    layers = []
    for layer in hard.layers:
        heads = tuple(
            Head(
                w_q=h.w_q,
                w_k=h.w_k,
                w_v=h.w_v,
                w_o=h.w_o,
                kind=AttentionKind.SOFTMAX,
                mask=h.mask,
                temperature=temp,
            )
            for h in layer.heads
        )
        layers.append(Layer(heads, layer.ffn, layer.residual))
    meta = dict(hard.meta)
    meta["tieless"] = {
        "theorem": "Yang et al. Theorem 26 (uniform–tieless AHAT → SMAT with temperature)",
        "source_model": hard.name,
        "source_digest": hard.digest,
        "valid_for": f"input lengths 1..{max_len} (tielessness, gaps and activation bounds "
        "checked exactly on every string)",
        "temperature": temp.to_dict(),
        "error_bound": "per layer: η ≤ ‖W_QᵀW_K‖_sum(2Ye+e²), ω ≤ (m−1)exp(−β(γ−2η)), "
        "head ≤ ‖W_OW_V‖_∞(e+2Yω), FFN ×(1+‖W₂‖‖W₁‖); arb arithmetic",
        "per_n": per_n,
    }
    soft = Model(
        alphabet=hard.alphabet,
        embedding=hard.embedding,
        layers=tuple(layers),
        readout=hard.readout,
        bos=hard.bos,
        eos=hard.eos,
        name=f"{hard.name} [Thm 26 softmax]",
        meta=meta,
    )
    return SoftSimulation(soft, report, tuple(per_n), temp)


def _s(g: Fraction | None) -> str | None:
    return None if g is None else str(g)


def _fit(per_n: list[dict], n_power: float | None, log_power: float) -> Temperature:
    pts = [(p["N"], p["beta_needed"]) for p in per_n if p["N"] >= 2 and p["beta_needed"] > 0]
    if not pts:
        return Temperature(1.0)

    def coef(p: float, sub: list[tuple[int, float]]) -> float:
        return max(beta / (big_n**p * math.log(big_n) ** log_power) for big_n, beta in sub)

    if n_power is None:
        half = pts[: max(1, len(pts) // 2)]
        n_power = 8.0
        for p in range(0, 9):
            if coef(p, half) >= coef(p, pts):
                n_power = float(p)
                break
    c = coef(n_power, pts)
    c = math.ceil(c * 1.01 * 64) / 64  # small safety margin, dyadic
    return Temperature(c, n_power=n_power, log_power=log_power)


def to_average_hard(model: Model, name: str | None = None) -> Model:
    """The same parameters with every head average-hard (no temperature)."""
    layers = []
    for layer in model.layers:
        heads = tuple(
            Head(
                w_q=h.w_q, w_k=h.w_k, w_v=h.w_v, w_o=h.w_o, kind=AttentionKind.AVERAGE, mask=h.mask
            )
            for h in layer.heads
        )
        layers.append(Layer(heads, layer.ffn, layer.residual))
    return Model(
        alphabet=model.alphabet,
        embedding=model.embedding,
        layers=tuple(layers),
        readout=model.readout,
        bos=model.bos,
        eos=model.eos,
        name=name or f"{model.name} [average-hard]",
        meta=dict(model.meta),
    )
