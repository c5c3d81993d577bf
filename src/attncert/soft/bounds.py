"""Lemma 5 of Hahn (2020) on a concrete model: constants and induction bounds.

Lemma 5: exchanging one input symbol xᵢ (i not the readout position) changes the
decoder activation y_n^{(L)} by O(1/n).  The proof (Hahn p. 11; supplement S2)
uses, for a model whose weights do not depend on n:

* D — ‖vᵢ − vᵢ′‖, the largest distance between two word embeddings;
* F — a bound on every activation norm ‖y_j^{(k)}‖ (needs bounded positional
  encodings: the k = 0 step);
* A — a bound on every attention logit (dot product: A = F² C_att with
  C_att = |β|·‖W_Qᵀ W_K‖; additive: A = 2F C_att), so every softmax weight is
  ≤ e^{2A}/n;
* L_fact — a Lipschitz constant of y_j^{(k)} = f^act(y_j^{(k−1)}, b_{j,k,1..H}),
  here f^act(y, b) = g(r·y + Σ_h W_O^h W_V^h b_h) with g(u) = u + W₂ReLU(W₁u + b₁) + b₂
  (r = 1 with residual connections), so L_fact = L_g · max(r, maxₕ‖W_O^h W_V^h‖),
  L_g = r + ‖W₂‖‖W₁‖;
* C = 2(1 + e^{2A} + L_fact), and the claimed bounds ‖Δy_i^{(k)}‖ ≤ C^{2k}D,
  ‖Δy_j^{(k)}‖ ≤ H^k C^{2k} D / n (j ≠ i).

Soundness: every operator norm is an upper bound computed in exact rational
arithmetic (Frobenius norm, or the tighter certified ‖(MᵀM)^{2^m}‖_F^{1/2^{m+1}}
bound), and everything transcendental is evaluated in mpmath interval arithmetic;
reported numbers are upper endpoints (``mpmath.mpf``; they may exceed float range).

The *rigorous recurrence* (:func:`induction_bounds`) replaces the proof's "as
n → ∞" steps by explicit inequalities valid for every n, including the
supplement's missing term Σ_w |â_{j,w} − â′_{j,w}|·‖y′_w‖.  The ℓ₁ change of a
softmax row is bounded along the segment between the two logit vectors (every
point of which has logits in [−A, A], hence weights ≤ e^{2A}/n):
Σ_w |Δâ_{j,w}| ≤ 2(max_{w≠i}|Δs_{j,w}| + (e^{2A}/n)|Δs_{j,i}|), with
|Δs_{j,w}| ≤ C_att·F·(δ_j + δ_w).  With ``corrected=False`` the missing term is
dropped (Hahn's published inequality) — *not* a sound bound; for comparison only.

Python::

    >>> from attncert.model import random_model
    >>> from attncert.soft.bounds import lemma5_constants, induction_bounds
    >>> c = lemma5_constants(random_model(1, 1, 4, kind="softmax", seed=1))
    >>> b = induction_bounds(c, 64)
    >>> b.readout_change > 0
    True

CLI: ``attncert sensitivity MODEL --n 16,64`` prints these bounds next to the
measured changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import flint
import mpmath
import numpy as np

from attncert.errors import ParameterError, UnsupportedError
from attncert.model.spec import AttentionKind, Mask, Model

__implements__ = (
    "Hahn Lemma 5",
    "Hahn S2 eq. (35)",
)

iv = mpmath.iv
_PREC = 160

# ----------------------------------------------------------------------------- norms


def _q(x: float) -> flint.fmpq:
    return flint.fmpq(*Fraction(float(x)).as_integer_ratio())


def _qmat(m: np.ndarray) -> flint.fmpq_mat:
    r, c = m.shape
    return flint.fmpq_mat(r, c, [_q(v) for v in np.asarray(m, dtype=float).ravel()])


def _frac(x: flint.fmpq) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def root_upper(x: Fraction, r: int) -> Fraction:
    """A rational upper bound u ≥ x^{1/r} (x ≥ 0), checked exactly (u^r ≥ x)."""
    if x < 0:
        raise ValueError("negative radicand")
    if x == 0:
        return Fraction(0)
    with mpmath.workprec(_PREC):
        guess = mpmath.root(mpmath.mpf(x.numerator) / x.denominator, r)
        guess *= 1 + mpmath.mpf(2) ** -100
        u = _mpf_fraction(guess)
    while u**r < x:  # exact check; loops only if mpmath was (impossibly) off
        u *= Fraction(1000001, 1000000)
    return u


def _mpf_fraction(x: mpmath.mpf) -> Fraction:
    man, exp = mpmath.mpf(x).man_exp
    return Fraction(int(man)) * (Fraction(2) ** int(exp))


def frobenius_norm_upper(m: np.ndarray) -> Fraction:
    """Exact upper bound on ‖M‖_F (≥ the spectral norm ‖M‖₂)."""
    m = np.asarray(m, dtype=float)
    if m.size == 0:
        return Fraction(0)
    sq = sum((Fraction(float(v)) ** 2 for v in m.ravel()), Fraction(0))
    return root_upper(sq, 2)


def spectral_norm_upper(m: np.ndarray, method: str = "certified", squarings: int = 4) -> Fraction:
    """A sound upper bound on the spectral norm ‖M‖₂ (exact rational arithmetic).

    ``"frobenius"``: ‖M‖_F.  ``"certified"``: with B = MᵀM and k = 2^squarings,
    ‖M‖₂ = λ_max(B)^{1/2} ≤ ‖B^k‖_F^{1/(2k)} (λ_max(B)^k = ‖B^k‖₂ ≤ ‖B^k‖_F); the
    overestimate factor is at most rank^{1/(4k)}.
    """
    m = np.asarray(m, dtype=float)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    if m.size == 0 or not np.any(m):
        return Fraction(0)
    if method == "frobenius":
        return frobenius_norm_upper(m)
    if method != "certified":
        raise ParameterError(
            f"unknown norm method {method!r}", expected="'frobenius' or 'certified'"
        )
    qm = _qmat(m if m.shape[0] >= m.shape[1] else m.T)
    b = qm.transpose() * qm
    for _ in range(squarings):
        b = b * b
    k = 2**squarings
    entries = [_frac(b[i, j]) for i in range(b.nrows()) for j in range(b.ncols())]
    fro_sq = sum((e * e for e in entries), Fraction(0))
    return min(root_upper(fro_sq, 4 * k), frobenius_norm_upper(m))


def _ivq(x: Fraction) -> mpmath.ctx_iv.ivmpf:
    return iv.mpf(x.numerator) / iv.mpf(x.denominator)


def _up(x) -> mpmath.mpf:
    """Upper endpoint of an interval as an mpf."""
    return mpmath.mpf(x.b)


# ----------------------------------------------------------------------------- assumptions


def check_lemma5_assumptions(model: Model) -> None:
    """Raise if ``model`` violates a hypothesis of Lemma 5, naming the hypothesis.

    * soft attention (hard heads are §5's subject) — :class:`UnsupportedError`;
    * every query attends to all n positions (no masking) — :class:`UnsupportedError`;
    * parameters independent of n, so attention logits are bounded: an inverse
      temperature growing with n is refused — :class:`ParameterError`;
    * bounded positional encodings (the k = 0 step; supplement S2) — a used
      unbounded feature is refused — :class:`ParameterError`.

    Lemma 5's constants are derived here for the original model class (no LayerNorm,
    ReLU, no attention biases); other models are refused by name
    (:mod:`attncert.soft.certified` bounds them soundly instead).
    """
    model.require_plain("Lemma 5's constants (attncert.soft.bounds)")
    for li, layer in enumerate(model.layers):
        for hi, h in enumerate(layer.heads):
            where = f"layers[{li}].heads[{hi}]"
            if h.kind is not AttentionKind.SOFTMAX:
                raise UnsupportedError(
                    f"head uses {h.kind.value!r} (hard) attention; Lemma 5 is about soft "
                    "attention (hard attention is Theorem 1's subject)",
                    where=where,
                    expected="kind 'softmax'",
                )
            if h.mask is not Mask.NONE:
                raise UnsupportedError(
                    f"head is masked ({h.mask.value!r}); Lemma 5's proof assumes every query "
                    "attends to all n positions, so each weight is ≤ e^{2A}/n",
                    where=where,
                    expected="mask 'none'",
                )
            t = h.temperature
            if not (t.log_power == 0 and t.n_power <= 0):
                raise ParameterError(
                    f"inverse temperature β(N) = {t} grows with n: Lemma 5 assumes parameters "
                    "independent of n, so that attention logits are bounded by a constant A",
                    where=f"{where}.temperature",
                    expected="a constant (or non-increasing) inverse temperature",
                )
    emb = model.embedding
    for fi, f in enumerate(emb.features):
        if not f.bounded and np.any(emb.pos_weight[:, fi] != 0):
            raise ParameterError(
                f"positional feature {f.label!r} is unbounded; Lemma 5 needs bounded "
                "positional encodings (the k = 0 step of its proof and supplement S2: "
                "‖y_j^{(k)}‖ ≤ F requires ‖p_j‖ bounded)",
                where=f"embedding.features[{fi}]",
                expected="bounded features such as 'i/n', 'cos(pi*i)', '1/i'",
            )


# ----------------------------------------------------------------------------- constants


@dataclass(frozen=True)
class LayerConstants:
    """Constants of one layer k (1-based); norms are sound upper bounds."""

    index: int
    heads: int
    residual: bool
    F_in: mpmath.mpf  # ‖y^{(k−1)}‖ ≤ F_in
    F_out: mpmath.mpf  # ‖y^{(k)}‖ ≤ F_out
    c_att: tuple[mpmath.mpf, ...]  # |β|·‖W_Qᵀ W_K‖ per head
    A: tuple[mpmath.mpf, ...]  # logit bound per head: c_att · F_in²
    M: tuple[mpmath.mpf, ...]  # ‖W_O W_V‖ per head
    L_g: mpmath.mpf  # Lipschitz constant of u ↦ r·u + FFN(u)
    L_fact: mpmath.mpf  # L_g · max(r, max_h M_h)


@dataclass(frozen=True)
class Lemma5Constants:
    """Lemma 5's constants for one model (Hahn p. 11), uniform over layers as in the
    paper: A = max A, L_fact = max L_fact, C = 2(1 + e^{2A} + L_fact), H = max heads."""

    model_name: str
    digest: str
    norm_method: str
    D: mpmath.mpf
    F: mpmath.mpf
    A: mpmath.mpf
    L_fact: mpmath.mpf
    C: mpmath.mpf
    H: int
    L: int
    layers: tuple[LayerConstants, ...]
    readout_norm: mpmath.mpf  # ‖w‖ of the accept readout
    n0_original: int  # n from which the published (uncorrected) proof's steps hold
    tokens_extra: int  # BOS/EOS tokens added to an input of length n

    def closed_form(self, k: int, n_tokens: int) -> tuple[mpmath.mpf, mpmath.mpf]:
        """Hahn's claimed bounds (C^{2k}D, H^k C^{2k} D / n) at layer k for n tokens."""
        with mpmath.workprec(_PREC):
            ci = self.C ** (2 * k) * self.D
            return ci, mpmath.mpf(self.H) ** k * ci / n_tokens

    def as_dict(self) -> dict:
        def f(x: mpmath.mpf) -> str:
            return mpmath.nstr(x, 6)

        return {
            "model": self.model_name,
            "digest": self.digest,
            "norm_method": self.norm_method,
            "D": f(self.D),
            "F": f(self.F),
            "A": f(self.A),
            "L_fact": f(self.L_fact),
            "C": f(self.C),
            "H": self.H,
            "L": self.L,
            "readout_norm": f(self.readout_norm),
            "n0_original": self.n0_original,
            "layers": [
                {
                    "k": lc.index,
                    "F_in": f(lc.F_in),
                    "F_out": f(lc.F_out),
                    "A": [f(a) for a in lc.A],
                    "c_att": [f(a) for a in lc.c_att],
                    "M": [f(a) for a in lc.M],
                    "L_g": f(lc.L_g),
                    "L_fact": f(lc.L_fact),
                }
                for lc in self.layers
            ],
        }


def logit_bound(F: mpmath.mpf, c_att: mpmath.mpf, attention: str = "dot") -> mpmath.mpf:
    """Hahn's attention-logit bound: A = F²·C_att (dot product) or 2F·C_att (additive)."""
    with mpmath.workprec(_PREC):
        if attention == "dot":
            return _up(iv.mpf(F) ** 2 * iv.mpf(c_att))
        if attention == "additive":
            return _up(2 * iv.mpf(F) * iv.mpf(c_att))
    raise ParameterError(f"unknown attention {attention!r}", expected="'dot' or 'additive'")


def lemma5_constants(model: Model, *, norm: str = "certified") -> Lemma5Constants:
    """Compute D, F, A, L_fact, C for ``model`` soundly (see module docstring).

    Raises :class:`UnsupportedError`/:class:`ParameterError` naming the failed
    hypothesis if the model is outside Lemma 5 (:func:`check_lemma5_assumptions`).
    """
    check_lemma5_assumptions(model)

    def nrm(m: np.ndarray) -> mpmath.ctx_iv.ivmpf:
        return _ivq(spectral_norm_upper(m, norm))

    emb = model.embedding
    symbols = [model.token_index[s] for s in model.alphabet]
    with mpmath.workprec(_PREC):
        d_sq = max(
            (
                sum((Fraction(float(v)) ** 2 for v in emb.word[a] - emb.word[b]), Fraction(0))
                for a in symbols
                for b in symbols
                if a != b
            ),
            default=Fraction(0),
        )
        D = _ivq(root_upper(d_sq, 2))
        # layer 0: ‖word‖ + Σ_f ‖W_pos[:, f]‖·sup|φ_f| (+ table rows); every bounded
        # feature of the registry has |φ| ≤ 1.
        F0 = max(_ivq(frobenius_norm_upper(row)) for row in emb.word)
        for fi, f in enumerate(emb.features):
            if f.bounded:
                F0 = F0 + _ivq(frobenius_norm_upper(emb.pos_weight[:, fi]))
        if emb.table is not None:
            F0 = F0 + max(_ivq(frobenius_norm_upper(r)) for r in emb.table)
        F_prev = F0
        layers = []
        for li, layer in enumerate(model.layers):
            r = 1 if layer.residual else 0
            c_att, A, M = [], [], []
            for h in layer.heads:
                beta = abs(Fraction(float(h.temperature.coef)))
                # ‖W_Qᵀ W_K‖ of the exact rational product (a float product could round down)
                gq = _qmat(h.w_q).transpose() * _qmat(h.w_k)
                ca = _ivq(beta) * _ivq(_norm_qmat(gq, norm))
                c_att.append(ca)
                A.append(ca * F_prev**2)
                mq = _qmat(h.w_o) * _qmat(h.w_v)
                M.append(_ivq(_norm_qmat(mq, norm)))
            u_bound = (r + sum(M, iv.mpf(0))) * F_prev
            if layer.ffn is not None:
                f = layer.ffn
                w1, w2 = nrm(f.w1), nrm(f.w2)
                L_g = r + w2 * w1
                F_out = L_g * u_bound + w2 * nrm(f.b1) + nrm(f.b2)
            else:
                L_g = iv.mpf(1)
                F_out = u_bound
            m_max = max([iv.mpf(r), *M], key=lambda x: x.b)
            L_fact = L_g * m_max
            layers.append(
                LayerConstants(
                    index=li + 1,
                    heads=len(layer.heads),
                    residual=layer.residual,
                    F_in=_up(F_prev),
                    F_out=_up(F_out),
                    c_att=tuple(_up(x) for x in c_att),
                    A=tuple(_up(x) for x in A),
                    M=tuple(_up(x) for x in M),
                    L_g=_up(L_g),
                    L_fact=_up(L_fact),
                )
            )
            F_prev = F_out
        F = max([_up(F0), *(lc.F_out for lc in layers)])
        A_max = max([mpmath.mpf(0), *(a for lc in layers for a in lc.A)])
        L_fact = max([mpmath.mpf(0), *(lc.L_fact for lc in layers)])
        C = _up(2 * (1 + iv.exp(2 * iv.mpf(A_max)) + iv.mpf(L_fact)))
        H = max([1, *(lc.heads for lc in layers)])
        readout_norm = _up(_ivq(frobenius_norm_upper(model.readout.weight)))
        n0 = _n0_original(C, L_fact, H, len(layers))
    return Lemma5Constants(
        model_name=model.name,
        digest=model.digest,
        norm_method=norm,
        D=_up(D),
        F=F,
        A=A_max,
        L_fact=L_fact,
        C=C,
        H=H,
        L=len(layers),
        layers=tuple(layers),
        readout_norm=readout_norm,
        n0_original=n0,
        tokens_extra=model.n_tokens(0),
    )


def _norm_qmat(qm: flint.fmpq_mat, method: str) -> Fraction:
    """Spectral-norm upper bound of an exact rational matrix."""
    rows, cols = qm.nrows(), qm.ncols()
    entries = [_frac(qm[i, j]) for i in range(rows) for j in range(cols)]
    if rows == 0 or cols == 0 or not any(entries):
        return Fraction(0)
    fro = root_upper(sum((e * e for e in entries), Fraction(0)), 2)
    if method == "frobenius":
        return fro
    b = qm.transpose() * qm if rows >= cols else qm * qm.transpose()
    squarings = 4
    for _ in range(squarings):
        b = b * b
    k = 2**squarings
    bs = [_frac(b[i, j]) for i in range(b.nrows()) for j in range(b.ncols())]
    return min(fro, root_upper(sum((e * e for e in bs), Fraction(0)), 4 * k))


def _n0_original(C: mpmath.mpf, L_fact: mpmath.mpf, H: int, L: int) -> int:
    """Smallest n ≥ 2 from which every step of the published induction holds.

    The j ≠ i steps need only n ≥ 2 (they follow from C ≥ 2(1 + e^{2A}) and
    L_fact ≤ C/2).  The j = i step "L_fact(C^{2(k−1)}D + o(1)) ≤ C^{2k}D", with the
    o(1) term equal to H·H^{k−1}C^{2k−1}D/n, needs L_fact(1 + H^k C/n) ≤ C², i.e.
    n ≥ H^k·C·L_fact/(C² − L_fact), for every k ≤ L.
    """
    n0 = 2
    with mpmath.workprec(_PREC):
        for k in range(1, L + 1):
            need = mpmath.mpf(H) ** k * C * L_fact / (C * C - L_fact)
            n0 = max(n0, int(mpmath.ceil(need)))
    return n0


# ----------------------------------------------------------------------------- induction


@dataclass(frozen=True)
class LayerBound:
    """Bounds on the change at layer k for an input of n tokens."""

    k: int
    delta_i: mpmath.mpf  # bound on ‖Δy_i^{(k)}‖ (the changed position)
    delta_o: mpmath.mpf  # bound on ‖Δy_j^{(k)}‖, j ≠ i
    original_rhs_o: mpmath.mpf  # Σ_w â‖Δy_w‖ part of ‖Δb_j‖ (j ≠ i), summed over heads
    missing_term_o: mpmath.mpf  # Σ_w |Δâ|‖y′_w‖ part of ‖Δb_j‖ (j ≠ i), summed over heads
    closed_i: mpmath.mpf  # Hahn's C^{2k} D
    closed_o: mpmath.mpf  # Hahn's H^k C^{2k} D / n


@dataclass(frozen=True)
class InductionBounds:
    """The per-layer bounds for n tokens and the implied readout bounds."""

    n_tokens: int
    corrected: bool
    layers: tuple[LayerBound, ...]
    activation_change: mpmath.mpf  # ‖Δy_r^{(L)}‖ ≤ this (r the readout position)
    readout_change: mpmath.mpf  # |Δ(w·y_r + b)| ≤ ‖w‖ · activation_change
    probability_change: mpmath.mpf  # |Δσ(logit)| ≤ readout_change / 4
    closed_form_holds: bool  # Hahn's closed forms dominate this recurrence at every layer
    # the printed bound is a cap, not Lemma 5's O(1/n): some weight bound e^{2A}/n was
    # clipped to 1 (n < e^{2A}) or the last layer's bound is the trivial 2·F_out
    capped: bool = False


def induction_bounds(
    consts: Lemma5Constants, n_tokens: int, *, corrected: bool = True
) -> InductionBounds:
    """Lemma 5's induction as explicit inequalities valid for this n (module docstring).

    ``n_tokens`` counts every position attention sees (``model.n_tokens(n)``).  With
    ``corrected=False`` the supplement's missing term is dropped (unsound; comparison).
    """
    if n_tokens < 2:
        raise ParameterError(f"n = {n_tokens} tokens", where="n", expected="n ≥ 2")
    with mpmath.workprec(_PREC):
        N = iv.mpf(n_tokens)
        di, do = iv.mpf(consts.D), iv.mpf(0)
        out = []
        closed_ok = True
        capped = False
        for lc in consts.layers:
            F = iv.mpf(lc.F_in)
            r = 1 if lc.residual else 0
            sum_i = iv.mpf(0)
            sum_o = iv.mpf(0)
            orig_o = iv.mpf(0)
            miss_o = iv.mpf(0)
            for A, ca, M in zip(lc.A, lc.c_att, lc.M, strict=True):
                abar = iv.exp(2 * iv.mpf(A)) / N
                if abar.a > 1:
                    abar = iv.mpf(1)
                    capped = True
                kap = iv.mpf(ca) * F
                t_i = abar * di + do
                t_o = abar * di + do
                if corrected:
                    tv_i = 2 * (kap * (di + do) + abar * kap * 2 * di)
                    tv_o = 2 * (kap * 2 * do + abar * kap * (do + di))
                    m_i = F * (tv_i if tv_i.b < 2 else iv.mpf(2))
                    m_o = F * (tv_o if tv_o.b < 2 else iv.mpf(2))
                else:
                    m_i = m_o = iv.mpf(0)
                sum_i += iv.mpf(M) * (t_i + m_i)
                sum_o += iv.mpf(M) * (t_o + m_o)
                orig_o += t_o
                miss_o += m_o
            Lg = iv.mpf(lc.L_g)
            di, do = Lg * (r * di + sum_i), Lg * (r * do + sum_o)
            trivial = 2 * iv.mpf(lc.F_out)  # both activations have norm ≤ F_out
            di = trivial if di.a > trivial.b else di
            last_cap = do.a > trivial.b
            do = trivial if last_cap else do
            ci, co = consts.closed_form(lc.index, n_tokens)
            closed_ok = closed_ok and di.b <= ci and do.b <= co
            out.append(LayerBound(lc.index, _up(di), _up(do), _up(orig_o), _up(miss_o), ci, co))
        act = do
        readout = iv.mpf(consts.readout_norm) * act
    return InductionBounds(
        n_tokens=n_tokens,
        corrected=corrected,
        layers=tuple(out),
        activation_change=_up(act),
        readout_change=_up(readout),
        probability_change=_up(readout / 4),
        closed_form_holds=closed_ok,
        capped=capped or last_cap,
    )


def n_below_cap(consts: Lemma5Constants, limit_log2: int = 8192) -> int | None:
    """The least token count N (to 6 significant digits: a valid N with N·(1 − 10⁻⁶) not
    certainly valid) from which the corrected recurrence is not capped (no weight bound
    e^{2A}/N clipped to 1, no trivial 2·F_out at the last layer), i.e. from which the
    printed number is Lemma 5's O(1/n) bound and not a cap; None if not even at
    N = 2^limit_log2.

    The recurrence is non-increasing in N (every term is a polynomial in 1/N with
    non-negative coefficients, capped), so "below the cap" holds on an up-set of N:
    binary search on the exponent, then on N."""
    if not consts.layers:
        return 2

    def ok(n: int) -> bool:
        return not induction_bounds(consts, n).capped

    if ok(2):
        return 2
    lo_k, hi_k = 1, limit_log2
    if not ok(2**hi_k):
        return None
    while hi_k - lo_k > 1:
        mid = (lo_k + hi_k) // 2
        lo_k, hi_k = (lo_k, mid) if ok(2**mid) else (mid, hi_k)
    lo, hi = 2**lo_k, 2**hi_k
    while hi - lo > max(1, hi >> 20):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def n0_corrected(consts: Lemma5Constants, limit_log2: int = 200) -> int | None:
    """Smallest token count n from which Hahn's closed forms C^{2k}D and
    H^k C^{2k} D/n dominate the *corrected* rigorous recurrence at every layer.

    Both sides of each comparison are non-increasing in n (n·δ_o and δ_i are
    polynomials in 1/n with non-negative coefficients), so the set of valid n is
    an up-set; binary search finds its least element.  ``None`` if even
    n = 2^limit_log2 fails: then the published constants are too small for this
    model once the missing term is included.
    """
    hi = 2**limit_log2
    if not induction_bounds(consts, hi).closed_form_holds:
        return None
    lo = 2
    if induction_bounds(consts, lo).closed_form_holds:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if induction_bounds(consts, mid).closed_form_holds:
            hi = mid
        else:
            lo = mid
    return hi


def log10(x: mpmath.mpf) -> float:
    """log₁₀ of a (possibly huge) positive bound, as a float; −inf for 0."""
    return -math.inf if x == 0 else float(mpmath.log10(x))
