"""The one-layer mass bound of Proposition (PARITY rate): an explicit constant C with
Σ_k |Δ²O(k)| ≤ C/N along every one-residue-class family (``docs/parity-rate.md``, Lemmas
R1–R3 and the one-layer theorem), from the exact weights in interval arithmetic.
Re-exported by :mod:`attncert.soft.parity_rate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from attncert.errors import ParameterError, UnsupportedError
from attncert.model.spec import AttentionKind, Mask, Model
from attncert.soft.parity_rate_family import _check_binary

iv = mpmath.iv
_PREC = 160

# ----------------------------------------------------------------------------- 1-layer bound

# features whose value along the family is a polynomial of degree ≤ 2 in t = i/N
# (the others are constant along it, for fixed N and residue class)
_T_DEGREE = {"i/n": 1, "(i/n)^2": 2}
_CONST_FEATURES = ("1", "1/n", "(-1)^i", "cos(pi*i)", "(-1)^n")


@dataclass(frozen=True)
class ChannelBound:
    """Bounds for one scalar channel R(k) = ψ·(head output) along the family:
    |ΔR(k)| ≤ P/N, |Δ²R(k)| ≤ Q/N²; ``degree`` = degree in t of ψ·value along the
    family, so the ReLU argument changes sign at most ``degree + 1`` times."""

    name: str
    weight: mpmath.mpf  # |μ_h| (1 for the linear channel)
    width: mpmath.mpf  # W: range of ψ·value over all tokens
    P: mpmath.mpf
    Q: mpmath.mpf
    degree: int


@dataclass(frozen=True)
class OneLayerMassBound:
    """C with Σ_k |Δ²O(k)| ≤ C/N ≤ C/n along every one-residue-class family, every n
    (``docs/parity-rate.md``, Lemma R1–R3).  Numbers are upper endpoints of intervals."""

    model_name: str
    digest: str
    C: mpmath.mpf
    rho: mpmath.mpf  # e^{s_max − s_min} ≥ ratio of any two attention weights
    spacing: int  # h: consecutive family positions differ by ≤ h
    channels: tuple[ChannelBound, ...]
    score_range: tuple[mpmath.mpf, mpmath.mpf] = (mpmath.mpf(0), mpmath.mpf(0))  # ⊇ β·scores

    def bound(self, n: int, extra_tokens: int = 0) -> float:
        """Upper bound C/N on the mass at input length n (N = n + extra_tokens), rounded up."""
        with mpmath.workprec(_PREC):
            return float(mpmath.mpf(self.C) / (n + extra_tokens)) * (1 + 2.0**-40)


def _fr(x: float) -> Fraction:
    return Fraction(float(x))


def _ivq(x: Fraction):
    return iv.mpf(x.numerator) / iv.mpf(x.denominator)


def _dot_iv(a, b):
    out = iv.mpf(0)
    for x, y in zip(a, b, strict=True):
        out += x * y
    return out


def _absmax(x) -> mpmath.mpf:
    return max(abs(mpmath.mpf(x.a)), abs(mpmath.mpf(x.b)))


def _check_one_layer(model: Model) -> tuple[object, dict[int, int]]:
    """Refuse models outside the rigorous class; return the head and {feature col: t-degree}."""
    if len(model.layers) != 1:
        raise UnsupportedError(
            f"model has {len(model.layers)} layers; the rigorous mass bound covers one layer "
            "with an explicit constant (for several layers the O(1/n) mass is a conjecture: "
            "docs/parity-rate.md, 'Several layers')",
            where="layers",
            expected="exactly one layer",
        )
    layer = model.layers[0]
    if len(layer.heads) != 1:
        raise UnsupportedError(
            f"layer has {len(layer.heads)} heads; the sign-change count (Lemma R2) is proved "
            "for the ratio of one softmax head",
            where="layers[0].heads",
            expected="exactly one head",
        )
    h = layer.heads[0]
    where = "layers[0].heads[0]"
    if h.kind is not AttentionKind.SOFTMAX:
        raise UnsupportedError(
            f"head uses {h.kind.value!r} attention; the Proposition is about softmax",
            where=where,
            expected="kind 'softmax'",
        )
    if h.mask is not Mask.NONE:
        raise UnsupportedError(
            f"head is masked ({h.mask.value!r}); the proof needs every query to attend to all "
            "N positions (so each weight is ≤ ρ/N)",
            where=where,
            expected="mask 'none'",
        )
    if not h.temperature.is_constant:
        raise ParameterError(
            f"inverse temperature β(N) = {h.temperature} depends on n; the Proposition assumes "
            "parameters independent of n",
            where=f"{where}.temperature",
            expected="a constant inverse temperature",
        )
    emb = model.embedding
    if emb.table is not None:
        raise UnsupportedError(
            "a learned position table is not a function of (i/N, (−1)^i)",
            where="embedding.table",
            expected="positional features only",
        )
    rp_last = model.readout.position == "last" and model.eos is None
    allowed_indicator = {"[i=1]": model.bos is not None, "[i=n]": model.eos is not None or rp_last}
    degrees: dict[int, int] = {}
    for fi, f in enumerate(emb.features):
        if not np.any(emb.pos_weight[:, fi]):
            continue
        fw = f"embedding.features[{fi}]"
        if not f.bounded:
            raise ParameterError(
                f"positional feature {f.label!r} is unbounded; the Proposition (like Lemma 5) "
                "needs bounded positional encodings",
                where=fw,
                expected="bounded features: 1, i/n, (i/n)^2, 1/n, (-1)^i, cos(pi*i), (-1)^n",
            )
        if f.name in _T_DEGREE:
            degrees[fi] = _T_DEGREE[f.name]
        elif f.name in _CONST_FEATURES or allowed_indicator.get(f.name, False):
            degrees[fi] = 0
        else:
            raise UnsupportedError(
                f"positional feature {f.label!r} is not a polynomial in i/N along the family "
                "(it is not a function of (i/N, (−1)^i) plus constants)",
                where=fw,
                expected="features 1, i/n, (i/n)^2, 1/n, (-1)^i, cos(pi*i), (-1)^n",
            )
    return h, degrees


_T_PIECES = 8  # subintervals of t = i/N for the range enclosures
_V_PIECES = 2  # subintervals of 1/N ∈ (0, 1/3]


def _assignments(model: Model, degrees: dict[int, int], role: str) -> list[dict]:
    """Interval values of the used features at a token, as a list of sub-boxes whose union
    covers every (position, N ≥ 3) the role allows.  Roles: "input" (an input position),
    "bos", "eos", "last"/"first" (the readout query at that end), "any".

    Each sub-box is {feature column: interval} plus key ``"t"`` (the t-interval, for the
    derivative d/dt along the family).  N ≥ 3 suffices: for K < 2 the mass is 0.
    """
    feats = model.embedding.features
    third = Fraction(1, 3)
    if role in ("eos", "last"):
        t_pieces = [(Fraction(1), Fraction(1))]
    elif role in ("bos", "first"):
        t_pieces = [(Fraction(0), third)]
    else:
        t_pieces = [(Fraction(k, _T_PIECES), Fraction(k + 1, _T_PIECES)) for k in range(_T_PIECES)]
    v_pieces = [(third * k / _V_PIECES, third * (k + 1) / _V_PIECES) for k in range(_V_PIECES)]
    names = {feats[fi].name for fi in degrees}
    uses_v = "1/n" in names
    uses_sn = "(-1)^n" in names
    uses_si = bool(names & {"(-1)^i", "cos(pi*i)"})
    out = []
    for ta, tb in t_pieces:
        for va, vb in v_pieces if uses_v else [(Fraction(0), third)]:
            for sn in (-1, 1) if (uses_sn or (uses_si and role in ("eos", "last"))) else (0,):
                if role in ("bos", "first"):
                    sis = (-1,)
                elif role in ("eos", "last"):
                    sis = (sn,)
                else:
                    sis = (-1, 1) if uses_si else (0,)
                for si in sis:
                    if role in ("bos", "first"):
                        ind = [(1, 0)]
                    elif role in ("eos", "last"):
                        ind = [(0, 1)]
                    elif role == "input":
                        ind = [
                            (a, b)
                            for a in ((0,) if model.bos is not None else (0, 1))
                            for b in ((0,) if model.eos is not None else (0, 1))
                        ]
                    else:
                        ind = [(a, b) for a in (0, 1) for b in (0, 1)]
                    for i1, i_n in ind:
                        box: dict = {"t": iv.mpf([_q_mpf(ta), _q_mpf(tb)])}
                        for fi in degrees:
                            name = feats[fi].name
                            box[fi] = {
                                "1": iv.mpf(1),
                                "i/n": iv.mpf([_q_mpf(ta), _q_mpf(tb)]),
                                "(i/n)^2": iv.mpf([_q_mpf(ta * ta), _q_mpf(tb * tb)]),
                                "1/n": iv.mpf([_q_mpf(va), _q_mpf(vb)]),
                                "(-1)^n": iv.mpf(sn) if sn else iv.mpf([-1, 1]),
                                "(-1)^i": iv.mpf(si) if si else iv.mpf([-1, 1]),
                                "cos(pi*i)": iv.mpf(si) if si else iv.mpf([-1, 1]),
                                "[i=1]": iv.mpf(i1),
                                "[i=n]": iv.mpf(i_n),
                            }[name]
                        out.append(box)
    return out


def _q_mpf(x: Fraction):
    """A rational as a (thin, outward-rounded) interval."""
    return _ivq(x)


def one_layer_mass_bound(model: Model) -> OneLayerMassBound:
    """A sound constant C with Σ_k |Δ²O(k)| ≤ C/N along every one-residue-class family
    (both residues, every n; N = tokens seen), for a one-layer model: one unmasked
    softmax head with constant β, optional ReLU FFN, linear readout, positional features
    polynomial (degree ≤ 2) in i/N along the family.  Proof: ``docs/parity-rate.md``
    (Lemmas R1–R3); all arithmetic is exact rational or interval (mpmath ``iv``); the
    ranges of scores and values are enclosed over sub-boxes of the feature values.

    Raises :class:`UnsupportedError` / :class:`ParameterError` naming the failed
    assumption for models outside this class.
    """
    _check_binary(model)
    head, degrees = _check_one_layer(model)
    layer = model.layers[0]
    emb = model.embedding
    d = model.d
    pos = model.readout.position
    spacing = 2 if pos in ("last", "first") else 4
    tok = model.token_index
    word = [[_fr(v) for v in row] for row in emb.word]
    P = [[_fr(v) for v in row] for row in emb.pos_weight]  # d × F

    # (token id, role) of every token that can occur in a family sequence
    keys = [(tok["0"], "input"), (tok["1"], "input")]
    if model.bos is not None:
        keys.append((tok[model.bos], "bos"))
    if model.eos is not None:
        keys.append((tok[model.eos], "eos"))
    # the readout query: BOS/EOS, or an input position holding "0" (excluded from the family)
    if pos == "first":
        queries = [(tok[model.bos], "bos")] if model.bos is not None else [(tok["0"], "first")]
    elif pos == "last":
        queries = [(tok[model.eos], "eos")] if model.eos is not None else [(tok["0"], "last")]
    else:
        queries = [(t, "any") for t, _ in keys if t != tok["1"]]

    def mat(m) -> list[list[Fraction]]:
        return [[_fr(v) for v in row] for row in np.atleast_2d(m)]

    def matmul(a, b):
        return [
            [sum((a[i][k] * b[k][j] for k in range(len(b))), Fraction(0)) for j in range(len(b[0]))]
            for i in range(len(a))
        ]

    wq, wk, wv, wo = mat(head.w_q), mat(head.w_k), mat(head.w_v), mat(head.w_o)
    qk = matmul([list(r) for r in zip(*wq, strict=True)], wk)  # W_Qᵀ W_K, d × d
    ov = matmul(wo, wv)  # W_O W_V, d × d
    beta = _fr(head.temperature.coef)
    y1 = [sum((P[a][fi] for fi, g in degrees.items() if g == 1), Fraction(0)) for a in range(d)]
    y2 = [sum((P[a][fi] for fi, g in degrees.items() if g == 2), Fraction(0)) for a in range(d)]

    with mpmath.workprec(_PREC):

        def y_of(t: int, box: dict) -> list:
            return [
                _ivq(word[t][a]) + sum((_ivq(P[a][fi]) * box[fi] for fi in degrees), iv.mpf(0))
                for a in range(d)
            ]

        key_boxes = [
            (t, box, y_of(t, box)) for t, role in keys for box in _assignments(model, degrees, role)
        ]
        # d/dt of a family token's embedding, y1 + 2t·y2, over the t-pieces
        dys = [
            [_ivq(y1[a]) + 2 * box["t"] * _ivq(y2[a]) for a in range(d)]
            for _t, box, _y in key_boxes
            if _t == tok["0"]
        ]
        s_lo = s_hi = None
        ds = mpmath.mpf(0)
        for qt, role in queries:
            for qbox in _assignments(model, degrees, role):
                yq = y_of(qt, qbox)
                # score s_j = β y_rᵀ (W_Qᵀ W_K) y_j = u·y_j
                u = [
                    _ivq(beta) * sum((yq[a] * _ivq(qk[a][b]) for a in range(d)), iv.mpf(0))
                    for b in range(d)
                ]
                for _t, _box, yk in key_boxes:
                    s = _dot_iv(u, yk)
                    s_lo = s.a if s_lo is None else min(s_lo, s.a)
                    s_hi = s.b if s_hi is None else max(s_hi, s.b)
                for dy in dys:
                    ds = max(ds, _absmax(_dot_iv(u, dy)))  # |ds/dt| along the family
        rho = iv.mpf(iv.exp(iv.mpf([s_hi, s_hi]) - iv.mpf([s_lo, s_lo])).b)  # E_hi/E_lo
        dsv = iv.mpf(ds)
        h = iv.mpf(spacing)

        def channel(name: str, psi: list[Fraction], weight: Fraction) -> ChannelBound:
            g = [sum((psi[i] * ov[i][a] for i in range(d)), Fraction(0)) for a in range(d)]
            gi = [_ivq(v) for v in g]
            vals = [_dot_iv(gi, yk) for _t, _box, yk in key_boxes]
            width = iv.mpf(max(v.b for v in vals)) - iv.mpf(min(v.a for v in vals))
            width = iv.mpf(width.b)
            V = width / 2
            D1 = iv.mpf(max((_absmax(_dot_iv(gi, dy)) for dy in dys), default=mpmath.mpf(0)))
            Lz = 2 * dsv * rho  # |d/dt (E_1 − E_0)|, E_lo = 1
            Lp = 2 * rho * (dsv * V + D1)  # |d/dt (E_1 f_1 − E_0 f_0)|, f centred
            Pc = 2 * rho * width  # N·|ΔR|
            Dz = rho - 1  # |E_1 − E_0|
            Qc = h * (Lp + V * Lz) + Pc * Dz + 2 * rho * width * Dz  # N²·|Δ²R|
            gy2 = sum((g[a] * y2[a] for a in range(d)), Fraction(0))
            gy1 = sum((g[a] * y1[a] for a in range(d)), Fraction(0))
            deg = 2 if gy2 != 0 else (1 if gy1 != 0 else 0)
            return ChannelBound(
                name,
                mpmath.mpf(_ivq(abs(weight)).b),
                mpmath.mpf(width.b),
                mpmath.mpf(Pc.b),
                mpmath.mpf(Qc.b),
                deg,
            )

        w = [_fr(v) for v in model.readout.weight]
        channels = []
        total = iv.mpf(0)
        if layer.residual or layer.ffn is None:
            lin = channel("linear", w, Fraction(1))
            channels.append(lin)
            total += iv.mpf(lin.Q) / 2  # Lemma R1 summed over K − 1 ≤ N/2 indices
        if layer.ffn is not None:
            w1, w2 = mat(layer.ffn.w1), mat(layer.ffn.w2)
            for j in range(len(w1)):
                mu = sum((w[a] * w2[a][j] for a in range(d)), Fraction(0))
                if mu == 0:
                    continue
                cb = channel(f"relu[{j}]", w1[j], mu)
                channels.append(cb)
                # Lemma R3: Σ|Δ²ρ(z)| ≤ Σ|Δ²z| + 4·S·max|Δz|, S ≤ degree + 1 (Lemma R2)
                total += _ivq(abs(mu)) * (iv.mpf(cb.Q) / 2 + 4 * (cb.degree + 1) * iv.mpf(cb.P))
        C = mpmath.mpf(total.b)
    return OneLayerMassBound(
        model.name,
        model.digest,
        C,
        mpmath.mpf(rho.b),
        spacing,
        tuple(channels),
        (mpmath.mpf(s_lo), mpmath.mpf(s_hi)),
    )
