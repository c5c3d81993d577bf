"""Why a soft PARITY transformer's gap is O(1/n²): the one-residue-class family.

**Proposition (PARITY rate, attncert).**  Let T be a fixed softmax transformer
(unmasked heads, ReLU FFNs, no layer norm, parameters independent of n) whose
positional encoding at token i of N is a fixed function of (i/N, (−1)^i) that is
smooth or piecewise linear in i/N, plus constants such as 1/N.  If sign(logit)
decides PARITY on every string, the margin g_n = min_x |logit(x)| over length-n
strings is O(1/n²).

The argument restricts T to the *one-residue-class family* x^{(0)}, …, x^{(K)}:
x^{(k)} has 1s exactly at the first k positions r, r+2, …, r+2(k−1) of one parity
class (:func:`residue_family`).  If sign(O(k)) follows PARITY with |O(k)| ≥ g, the
second differences alternate in sign with |Δ²O(k)| = |O(k+2)| + 2|O(k+1)| + |O(k)|
≥ 4g, hence

    g ≤ Σ_k |Δ²O(k)| / (4(K − 1))                                   (†)

for *any* real sequence — a certified inequality (:func:`family_profile` checks it
in exact rational arithmetic).  The upper half is analytic: along the family the
second-difference *mass* Σ_k |Δ²O(k)| is O(1/n), so g = O(1/n²).  Hahn's Lemma 5
(every single-symbol change moves the logit by O(1/n), the engine of Theorem 6)
gives only |ΔO(k)| = O(1/n), i.e. g = O(1/n); the family's *second* differences
are what pin the rate at 1/n².

* :func:`one_layer_mass_bound` makes the mass bound rigorous for one layer (one
  unmasked softmax head, a ReLU FFN, a linear readout; positional features that are
  polynomials of degree ≤ 2 in i/N along the family): an explicit constant C with
  Σ_k |Δ²O(k)| ≤ C/N ≤ C/n for every n, computed from the exact weights in interval
  arithmetic (``docs/parity-rate.md`` has the proof).  For several layers the
  document proves M = O(1/N) by a regularity invariant (Lemmas A1–A4: crossing mass,
  ReLU, smooth maps, averages with flips) with constants that exist but are not
  computed; :func:`crossing_mass` evaluates Lemma A1's quantity.
* :func:`family_profile` / :func:`rate_table` measure O(k) along the family — in exact
  rational arithmetic when every head has an all-zero score matrix (then softmax is
  exactly the uniform average, e.g. ``soft_parity``) or every head is hard, in
  float64 otherwise (``exact`` records which).

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.soft.parity_rate import family_profile
    >>> p = family_profile(zoo_model("soft_parity"), 16)
    >>> p.exact, p.sign_correct, p.margin, p.second_difference_mass
    (True, True, Fraction(1, 324), Fraction(7, 81))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np
from flint import fmpq, fmpq_mat

from attncert.errors import InputError, ParameterError, UnsupportedError
from attncert.model.exact import embed_exact, exact_weights, forward_exact_tokens, to_fraction
from attncert.model.spec import AttentionKind, Mask, Model
from attncert.soft.sensitivity import final_activation, fit_exponent

iv = mpmath.iv
_PREC = 160
_CHUNK = 1 << 22  # floats per score block in the float64 path

# ----------------------------------------------------------------------------- the family


def residue_family(n: int, residue: int = 1, *, exclude: Sequence[int] = ()) -> tuple[str, ...]:
    """The strings x^{(0)}, …, x^{(K)} over {0, 1} of length ``n``: x^{(k)} has 1s exactly
    at the first k positions (1-based) of the class {p ≤ n : p ≡ residue (mod 2)}, minus
    the positions in ``exclude`` (e.g. a readout position).  K is the size of that class.
    """
    if n < 1:
        raise ParameterError(f"length n = {n}", where="n", expected="n ≥ 1")
    if residue not in (1, 2):
        raise ParameterError(f"residue {residue}", where="residue", expected="1 or 2")
    skip = set(exclude)
    positions = [p for p in range(residue, n + 1, 2) if p not in skip]
    out = []
    chars = ["0"] * n
    out.append("".join(chars))
    for p in positions:
        chars[p - 1] = "1"
        out.append("".join(chars))
    return tuple(out)


def family_positions(n: int, residue: int = 1, *, exclude: Sequence[int] = ()) -> tuple[int, ...]:
    """The 1-based input positions that become 1 along :func:`residue_family`."""
    skip = set(exclude)
    return tuple(p for p in range(residue, n + 1, 2) if p not in skip)


def _readout_input_position(model: Model, n: int) -> int | None:
    """The 1-based input position of the readout token, or None if it is BOS/EOS."""
    r = model.readout.index(model.n_tokens(n))
    p = r - model.input_offset() + 1
    return p if 1 <= p <= n else None


def _check_binary(model: Model) -> None:
    if not {"0", "1"} <= set(model.alphabet):
        raise InputError(
            "the PARITY family needs the symbols '0' and '1'",
            where="model.alphabet",
            expected="an alphabet containing '0' and '1'",
        )


# ----------------------------------------------------------------------------- evaluation


def _is_uniform(head) -> bool:
    """Softmax/average head whose every score is 0 exactly (W_Qᵀ W_K = 0 or β = 0)."""
    if head.mask is not Mask.NONE:
        return False
    if head.kind is AttentionKind.SOFTMAX and head.temperature.coef == 0:
        return True
    if head.kind not in (AttentionKind.SOFTMAX, AttentionKind.AVERAGE):
        return False
    return not np.any(head.w_q) or not np.any(head.w_k) or _zero_qk(head)


def _zero_qk(head) -> bool:
    from attncert.model.exact import qmat

    return all(v == 0 for v in (qmat(head.w_q).transpose() * qmat(head.w_k)).entries())


def evaluation_mode(model: Model) -> str:
    """``"uniform"`` (every head has all scores 0: softmax is exactly the uniform average,
    so the logit is rational and computed exactly), ``"hard"`` (hard heads only: the
    exact evaluator), or ``"float"``."""
    model.require_plain("the PARITY-rate proposition")
    heads = [h for layer in model.layers for h in layer.heads]
    if all(_is_uniform(h) for h in heads):
        return "uniform"
    if all(h.kind.is_hard for h in heads):
        return "hard"
    return "float"


def _relu(m: fmpq_mat) -> fmpq_mat:
    zero = fmpq(0)
    return fmpq_mat(m.nrows(), m.ncols(), [v if v > zero else zero for v in m.entries()])


def _add_row(m: fmpq_mat, row: fmpq_mat) -> fmpq_mat:
    return m + fmpq_mat(m.nrows(), 1, [1] * m.nrows()) * row


def _uniform_logit(model: Model, tokens: list[int]) -> Fraction:
    """Exact logit of a model whose heads all have constant scores (uniform averages)."""
    ew = exact_weights(model)
    n_tok = len(tokens)
    y = embed_exact(model, tokens)
    ones_row = fmpq_mat(1, n_tok, [1] * n_tok)
    for layer, el in zip(model.layers, ew.layers, strict=True):
        if el.heads:
            mean = fmpq_mat(1, model.d)
            for eh in el.heads:
                mean = mean + ones_row * (y * eh.wov)
            att = _add_row(fmpq_mat(n_tok, model.d), mean * fmpq(1, n_tok))
        else:
            att = fmpq_mat(n_tok, model.d)
        after = y + att if layer.residual else att
        if el.w1t is not None:
            ff = _add_row(_relu(_add_row(after * el.w1t, el.b1)) * el.w2t, el.b2)
            y = after + ff if layer.residual else ff
        else:
            y = after
    r = model.readout.index(n_tok)
    logit = sum((y[r, c] * ew.readout[c, 0] for c in range(model.d)), fmpq(0)) + ew.bias
    return to_fraction(logit)


def family_logits(model: Model, strings: Sequence[str]) -> tuple[tuple[Fraction, ...], bool]:
    """Accept logits of equal-length ``strings`` and whether they are exact.

    Exact (rational) for uniform-score or hard models (:func:`evaluation_mode`); else the
    float64 logits of :func:`attncert.soft.sensitivity.final_activation`, each read as the
    exact rational it is (so later arithmetic on them is exact).
    """
    mode = evaluation_mode(model)
    toks = [model.encode(s) for s in strings]
    if mode == "uniform":
        return tuple(_uniform_logit(model, t) for t in toks), True
    if mode == "hard":
        return tuple(forward_exact_tokens(model, t).logit_fraction() for t in toks), True
    arr = np.array(toks, dtype=np.int64)
    n_tok = arr.shape[1]
    per = max(1, _CHUNK // max(1, n_tok * n_tok))
    acts = [final_activation(model, arr[s : s + per]) for s in range(0, len(arr), per)]
    act = np.concatenate(acts)
    logits = act @ model.readout.weight + model.readout.bias
    return tuple(Fraction(float(v)) for v in logits), False


# ----------------------------------------------------------------------------- lemmas A1, A2


def second_difference_mass(seq: Sequence[Fraction]) -> Fraction:
    """M(u) = Σ_k |u(k+2) − 2u(k+1) + u(k)| (exact)."""
    return sum(
        (abs(seq[k + 2] - 2 * seq[k + 1] + seq[k]) for k in range(len(seq) - 2)), Fraction(0)
    )


def max_step(seq: Sequence[Fraction]) -> Fraction:
    """V(u) = max_k |u(k+1) − u(k)| (exact; 0 for fewer than two terms)."""
    return max((abs(seq[k + 1] - seq[k]) for k in range(len(seq) - 1)), default=Fraction(0))


def crossing_mass(seq: Sequence[Fraction]) -> Fraction:
    """Σ |Δh(c)| over the crossing steps c ([h(c) > 0] ≠ [h(c+1) > 0]) — Lemma A1 of
    ``docs/parity-rate.md`` bounds it by M(h) + V(h), which is what lets ReLU layers keep
    M = O(1/N) at every depth (Lemma A2: M(ReLU∘h) ≤ 6M(h) + 4V(h))."""
    return sum(
        (abs(seq[k + 1] - seq[k]) for k in range(len(seq) - 1) if (seq[k] > 0) != (seq[k + 1] > 0)),
        Fraction(0),
    )


# ----------------------------------------------------------------------------- profile


@dataclass(frozen=True)
class FamilyProfile:
    """The accept logit O(k) along the one-residue-class family at one n, and (†).

    ``second_differences[k]`` = O(k+2) − 2O(k+1) + O(k), k = 0 … K−2.  ``sign_correct``:
    O(k) > 0 exactly for the k of the accepted parity (accept iff logit > 0);
    ``first_failure`` is the first k where that fails.  ``implied_margin_bound`` =
    mass / (4(K−1)) and ``inequality_holds`` (None if K < 2): margin ≤ it (true whenever
    ``sign_correct``: a theorem about real sequences, re-checked exactly here).
    All numbers are exact rationals of the computed logits; ``exact`` says whether
    those logits are the model's exact logits (else they are float64 evaluations).
    """

    model_name: str
    n: int
    n_tokens: int
    residue: int
    positions: tuple[int, ...]
    logits: tuple[Fraction, ...]
    second_differences: tuple[Fraction, ...]
    margin: Fraction
    second_difference_mass: Fraction
    sign_correct: bool
    first_failure: int | None
    implied_margin_bound: Fraction | None
    inequality_holds: bool | None
    exact: bool
    accepts_even: bool = True

    @property
    def K(self) -> int:
        return len(self.positions)


def family_profile(
    model: Model, n: int, residue: int = 1, *, accepts_even: bool = True
) -> FamilyProfile:
    """O(k) along :func:`residue_family` (the readout's own input position, if any, is
    left out of the family), its second differences, the margin and inequality (†).

    ``accepts_even``: the model is meant to accept strings with an even number of 1s
    (PARITY); ``False`` for the complement.
    """
    _check_binary(model)
    rp = _readout_input_position(model, n)
    exclude = () if rp is None else (rp,)
    strings = residue_family(n, residue, exclude=exclude)
    positions = family_positions(n, residue, exclude=exclude)
    logits, exact = family_logits(model, strings)
    d2 = tuple(logits[k + 2] - 2 * logits[k + 1] + logits[k] for k in range(len(logits) - 2))
    mass = sum((abs(v) for v in d2), Fraction(0))
    margin = min(abs(v) for v in logits)
    first = None
    for k, v in enumerate(logits):
        if (v > 0) != ((k % 2 == 0) == accepts_even):
            first = k
            break
    K = len(positions)
    implied = mass / (4 * (K - 1)) if K >= 2 else None
    holds = None if implied is None else margin <= implied
    if first is None and holds is False:  # pragma: no cover - a theorem
        raise AssertionError("(†) failed on a sign-correct family: arithmetic bug")
    return FamilyProfile(
        model_name=model.name,
        n=n,
        n_tokens=model.n_tokens(n),
        residue=residue,
        positions=positions,
        logits=logits,
        second_differences=d2,
        margin=margin,
        second_difference_mass=mass,
        sign_correct=first is None,
        first_failure=first,
        implied_margin_bound=implied,
        inequality_holds=holds,
        exact=exact,
        accepts_even=accepts_even,
    )


@dataclass(frozen=True)
class RateRow:
    """One n of :func:`rate_table` (floats for display; the profile keeps exact values)."""

    n: int
    K: int
    margin: float
    n2_margin: float
    mass: float
    n_mass: float
    sign_correct: bool
    first_failure: int | None
    exact: bool


@dataclass(frozen=True)
class RateTable:
    """Margin and second-difference mass over n, with fitted exponents (log–log slopes);
    for a sign-correct model the Proposition predicts margin ≈ n^−2 and mass ≈ n^−1."""

    model_name: str
    residue: int
    rows: tuple[RateRow, ...]
    margin_exponent: float
    mass_exponent: float


def rate_table(
    model: Model, ns: Sequence[int], residue: int = 1, *, accepts_even: bool = True
) -> RateTable:
    """:func:`family_profile` per n: margin, n²·margin, mass, n·mass, fitted exponents
    (:func:`attncert.soft.sensitivity.fit_exponent`)."""
    rows = []
    for n in ns:
        p = family_profile(model, n, residue, accepts_even=accepts_even)
        m, s = float(p.margin), float(p.second_difference_mass)
        rows.append(
            RateRow(n, p.K, m, n * n * m, s, n * s, p.sign_correct, p.first_failure, p.exact)
        )
    return RateTable(
        model.name,
        residue,
        tuple(rows),
        fit_exponent([r.n for r in rows], [r.margin for r in rows]),
        fit_exponent([r.n for r in rows], [r.mass for r in rows]),
    )


def format_rate_table(table: RateTable) -> str:
    """A plain-text table (also used in ``docs/parity-rate.md``)."""
    lines = [
        f"{table.model_name} (residue {table.residue})",
        f"{'n':>6} {'K':>5} {'margin':>11} {'n²·margin':>10} {'mass':>11} {'n·mass':>9} "
        f"{'sign ok':>8} {'exact':>6}",
    ]
    for r in table.rows:
        ok = "yes" if r.sign_correct else f"k={r.first_failure}"
        lines.append(
            f"{r.n:>6} {r.K:>5} {r.margin:>11.4e} {r.n2_margin:>10.4f} {r.mass:>11.4e} "
            f"{r.n_mass:>9.4f} {ok:>8} {'yes' if r.exact else 'no':>6}"
        )
    lines.append(
        f"fitted exponents: margin {table.margin_exponent:+.3f}, mass {table.mass_exponent:+.3f}"
    )
    return "\n".join(lines)


def plot_family_profiles(profiles: Sequence[FamilyProfile], ax=None):
    """|O(k)|·N² against k/K for several profiles (log scale); returns the axes."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6, 4))
    for p in profiles:
        ks = np.arange(len(p.logits)) / max(1, p.K)
        vals = np.array([float(abs(v)) for v in p.logits])
        ax.plot(ks, vals, marker=".", ms=3, lw=0.8, label=f"n = {p.n}")
    ax.set_yscale("log")
    ax.set_xlabel("k / K  (number of 1s, as a fraction of the residue class)")
    ax.set_ylabel("|O(k)|  (accept logit)")
    ax.set_title("one-residue-class family")
    ax.legend(fontsize=8)
    return ax


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
            "with an explicit constant (for several layers docs/parity-rate.md proves O(1/n) "
            "without one)",
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
