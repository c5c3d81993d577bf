"""The one-residue-class family of Proposition (PARITY rate) and its exact profile
(``docs/parity-rate.md``; re-exported by :mod:`attncert.soft.parity_rate`).

x^{(0)}, …, x^{(K)}: x^{(k)} has 1s exactly at the first k positions of one parity class
(:func:`residue_family`). :func:`family_profile` evaluates the accept logit O(k) along it —
exactly where the model allows — with the margin, the second-difference mass M and the
inequality (†) g ≤ M/(4(K − 1)); :func:`rate_table` does so over n. Lemmas A1/A2's
quantities (:func:`crossing_mass`, :func:`max_step`, :func:`second_difference_mass`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import fmpq, fmpq_mat

from attncert.errors import InputError, ParameterError
from attncert.model.exact import embed_exact, exact_weights, forward_exact_tokens, to_fraction
from attncert.model.spec import AttentionKind, Mask, Model
from attncert.soft.sensitivity import final_activation, fit_exponent

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
    ``docs/parity-rate.md`` bounds it by M(h) + V(h), which is what lets a ReLU keep
    M = O(1/N) (Lemma A2: M(ReLU∘h) ≤ 6M(h) + 4V(h)); checked exhaustively in
    :mod:`attncert.soft.parity_rate_checks`."""
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
