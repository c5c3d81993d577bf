"""Theorem 26 at every length (trusted; issue 23): the softmax simulation of a uniform–tieless
average-hard transformer keeps the hard decision on every input of every length N ≥ N₀
(Yang, Strobl, Chiang, Angluin §5, Lemmas 24–25 and Theorem 26, on the concrete model).

The statement is Theorem 26's own: it is conditional on the hard transformer's hypotheses,
which the certificate states (``facts``) and this module does **not** prove — they are
properties of the average-hard program on all inputs, established by the construction's
proof (for the Appendix-E Dyck program: :mod:`attncert.compile.dyck`, each head record) and
re-checked exactly on every input of length ≤ ``max_len`` by the proof artifact
(:mod:`attncert.proofcheck.kinds.tieless_simulation`). Every verdict names them:

* **H1 (gap)** — every non-uniform head of the average-hard model has, on every input, a
  unique maximal score, every other visible key lower by at least γ;
* **H2 (activations)** — every hard activation satisfies |y| ≤ Y·N^p (N tokens);
* **H3 (margin)** — the hard logit satisfies |w·y + b| ≥ μ at the readout position.

What this module checks, from the model's exact weights and the certificate alone:

1. **structure** — no LayerNorm, bias or non-ReLU activation; every head softmax with one
   temperature β(N) = c·N^p·log(N)^q, c > 0, whose β(N)/log N is non-decreasing from N₀ on
   (p·log N₀ ≥ 1 − q), so e^{−β(N)·m} ≤ N^{−κm} with κ = c·N₀^p·log(N₀)^{q−1};
   a head is uniform iff W_QᵀW_K = 0 (then softmax = average exactly);
2. **the error recursion** (Lemmas 24–25), written for the maximal soft–hard activation
   difference e after each layer: per head with norms ‖W_QᵀW_K‖_sum, ‖W_OW_V‖_∞, score error
   η ≤ ‖W_QᵀW_K‖(2Ye + e²), off-maximum softmax mass ω ≤ (N − 1)e^{−β(γ − 2η)}, head error
   ≤ ‖W_OW_V‖(e + 2Yω); residual sum; ReLU FFN ×(1 + ‖W₂‖_∞‖W₁‖_∞);
3. **monomial majorants** — each layer's e is bounded, for every N ≥ N₀ at once, by
   C·N^a (rule MAJ: a sum of C_k·N^{a_k} is ≤ (Σ C_k·N₀^{a_k − A})·N^A for A = max a_k, since
   N^{a_k − A} ≤ N₀^{a_k − A} when a_k ≤ A and N ≥ N₀; η's power must be ≤ 0 so that
   γ − 2η ≥ m₀ := γ − 2·C_η·N₀^{a_η} > 0 for all N ≥ N₀). The certificate stores each
   layer's (C, a); each must dominate the one derived from the previous stored step
   (arb, outward) and be tight (within 10⁻⁵ relative, 10⁻⁶ in the exponent), so an edit in
   either direction is named;
4. **the decision** — the last layer's power is ≤ 0 and C·N₀^a·‖w‖₁ < μ, so the soft logit has
   the hard logit's sign at every N ≥ N₀.

No solver, no search code and no expression simplifier is imported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from flint import arb, fmpq

from attncert.kernel.tieless.program import (
    Derived,
    NotDerived,
    derive,
    exact,
    mat,
    matmul,
    transpose,
)
from attncert.model.spec import AttentionKind, Model

__implements__ = ("Yang Lemma 24", "Yang Lemma 25", "Yang Theorem 26")

PROOF_KIND = "tieless-all-lengths"
COEF_SLACK = fmpq(1, 10**5)  # a stored coefficient may exceed the derived one by this (relative)
POWER_SLACK = fmpq(1, 10**6)  # … and a stored exponent by this (absolute)

HYPOTHESES = (
    "H1: every non-uniform head of the average-hard model has a unique maximal score on every "
    "input, every other visible key lower by at least γ",
    "H2: every hard activation satisfies |y| ≤ Y·N^p",
    "H3: the hard logit satisfies |w·y + b| ≥ μ at the readout position",
)


class Reject(Exception):
    """A step of the all-length argument fails; ``field`` names the certificate field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class Facts:
    """The hypotheses H1–H3 as numbers: gap γ, activation bound Y·N^p, margin μ."""

    gap: fmpq
    act_coef: fmpq
    act_power: fmpq
    margin: fmpq


@dataclass(frozen=True)
class Majorant:
    """e(N) ≤ coef·N^power for every N ≥ N₀ (power None: e = 0 exactly)."""

    coef: fmpq
    power: fmpq | None


@dataclass(frozen=True)
class HeadNorms:
    qk_sum: fmpq  # ‖W_QᵀW_K‖_sum (0 iff the head is uniform)
    ov_inf: fmpq  # ‖W_OW_V‖_∞ (max row sum)


@dataclass(frozen=True)
class LayerNorms:
    heads: tuple[HeadNorms, ...]
    ffn_gain: fmpq  # ‖W₂‖_∞·‖W₁‖_∞ (0 without an FFN)
    residual: bool


@dataclass(frozen=True)
class TailReport:
    accepted: bool
    n0: int  # N₀ in tokens
    failures: tuple[str, ...]
    steps: tuple[Majorant, ...]
    bound: fmpq | None  # ‖w‖₁·C·N₀^a (the stored final bound), if reached
    limit: fmpq
    seconds: float
    derived: Derived | None = None  # H1–H3 derived from the weights (else: hypotheses)

    def summary(self) -> str:
        if self.accepted:
            given = (
                "H1–H3 derived from the weights for every N"
                if self.derived is not None
                else "given H1–H3 (not derived here)"
            )
            return (
                f"accepted: for every N ≥ {self.n0} tokens the soft–hard logit difference is "
                f"≤ {float(self.bound or 0):.3g} < μ = {self.limit}, {given} "
                f"({len(self.steps)} layer majorants, {self.seconds:.2f} s)"
            )
        return "rejected: " + "; ".join(self.failures[:3])


# ----- exact numbers ----------------------------------------------------------------------


def q_of(x: Any, field: str) -> fmpq:
    """A rational from a certificate string ("3/2", "-0.25", "7") or int."""
    if isinstance(x, bool) or not isinstance(x, (int, str)):
        raise Reject(field, f"{x!r} is not a rational (a string such as '3/2' or an integer)")
    try:
        if isinstance(x, int):
            return fmpq(x)
        f = Fraction(x)
        return fmpq(f.numerator, f.denominator)
    except (ValueError, ZeroDivisionError):
        raise Reject(field, f"{x!r} is not a rational") from None


def up(x: arb) -> fmpq:
    """The exact upper endpoint of an arb ball."""
    if not x.is_finite():
        raise Reject("arithmetic", f"an enclosure is not finite ({x})")
    man, e = x.upper().man_exp()
    return fmpq(int(man)) * fmpq(2) ** int(e) if e >= 0 else fmpq(int(man), 2 ** (-int(e)))


def _a(x: fmpq | int) -> arb:
    x = fmpq(x)
    return arb(int(x.p)) / arb(int(x.q))


def _inf(m: list[list[fmpq]]) -> fmpq:
    """‖M‖_∞ = the largest row sum of |entries| (bounds ‖Mv‖_∞ by ‖M‖_∞‖v‖_∞)."""
    return max((sum((abs(v) for v in row), fmpq(0)) for row in m), default=fmpq(0))


# ----- 1. structure -----------------------------------------------------------------------


@dataclass(frozen=True)
class Beta:
    """β(N) = c·N^p·log(N)^q with exact c, p, q."""

    c: fmpq
    p: fmpq
    q: fmpq

    def lower(self, n_tok: int) -> arb:
        b = _a(self.c) * arb(n_tok) ** _a(self.p)
        if self.q != 0:
            b *= arb(n_tok).log() ** _a(self.q)
        return b

    def kappa(self, n0: int) -> arb:
        """κ with β(N) ≥ κ·log N for every N ≥ N₀: β/log N = c·N^p·log(N)^{q−1} is
        non-decreasing where p·log N ≥ 1 − q (its log-derivative is (p + (q−1)/log N)/N)."""
        log0 = arb(n0).log()
        if not _a(self.p) * log0 >= _a(1 - self.q):
            raise Reject(
                "temperature",
                f"β(N) = {self}: β(N)/log N is not non-decreasing from N₀ = {n0} on "
                "(p·log N₀ ≥ 1 − q fails), so e^{−β·m} has no power-law bound N^{−κm}",
            )
        return _a(self.c) * arb(n0) ** _a(self.p) * log0 ** _a(self.q - 1)

    def __str__(self) -> str:
        return f"{self.c}·N^{self.p}·log(N)^{self.q}"


def structure(model: Model) -> tuple[Beta, tuple[LayerNorms, ...]]:
    """Part 1: the model is a softmax transformer of the class Lemmas 24–25 cover; its one
    temperature and its exact per-layer norms."""
    if model.extensions:
        raise Reject(
            "model",
            "the error recursion covers bias-free ReLU transformers without LayerNorm; this "
            "model has " + ", ".join(model.extensions),
        )
    temps = set()
    layers = []
    for li, layer in enumerate(model.layers):
        heads = []
        for hi, h in enumerate(layer.heads):
            where = f"model.layers[{li}].heads[{hi}]"
            if h.kind is not AttentionKind.SOFTMAX or h.temperature is None:
                raise Reject(where, f"kind {h.kind.value}: Theorem 26's simulation is softmax")
            t = h.temperature
            temps.add((t.coef, t.n_power, t.log_power))
            wqk = matmul(transpose(mat(h.w_q)), mat(h.w_k))
            wov = matmul(mat(h.w_o), mat(h.w_v))
            qk_sum = sum((abs(v) for row in wqk for v in row), fmpq(0))
            heads.append(HeadNorms(qk_sum, _inf(wov)))
        gain = fmpq(0)
        if layer.ffn is not None:
            gain = _inf(mat(layer.ffn.w2)) * _inf(mat(layer.ffn.w1))
        layers.append(LayerNorms(tuple(heads), gain, bool(layer.residual)))
    if len(temps) != 1:
        raise Reject("model", f"the heads have {len(temps)} temperatures, the argument needs one")
    c, p, q = (exact(v) for v in next(iter(temps)))
    if not c > 0 or p < 0 or q < 0:
        raise Reject("temperature", f"β(N) = {c}·N^{p}·log(N)^{q}: needs c > 0, p ≥ 0, q ≥ 0")
    return Beta(c, p, q), tuple(layers)


# ----- 2–3. the recursion on majorants ------------------------------------------------------


def _combine(terms: list[tuple[arb, fmpq]], n0: int) -> tuple[arb, fmpq] | None:
    """Rule MAJ: Σ C_k·N^{a_k} ≤ (Σ C_k·N₀^{a_k − A})·N^A for every N ≥ N₀, A = max a_k."""
    terms = [(c, a) for c, a in terms if c != 0]
    if not terms:
        return None
    big = max(a for _, a in terms)
    return sum((c * arb(n0) ** _a(a - big) for c, a in terms), arb(0)), big


def layer_step(
    prev: Majorant, norms: LayerNorms, facts: Facts, kappa: arb, n0: int, where: str
) -> tuple[arb, fmpq] | None:
    """Lemmas 24–25 for one layer: from e_prev(N) ≤ prev, a majorant (C, a) of the layer's
    output error for every N ≥ N₀ (None: exactly 0)."""
    y_c, y_p = _a(facts.act_coef), facts.act_power
    e_c = _a(prev.coef)
    terms: list[tuple[arb, fmpq]] = []
    for hi, h in enumerate(norms.heads):
        if prev.power is not None:
            terms.append((_a(h.ov_inf) * e_c, prev.power))
        if h.qk_sum == 0:  # uniform: softmax of equal scores is the average, exactly
            continue
        eta_c = arb(0)
        if prev.power is not None:
            eta = _combine(
                [
                    (_a(h.qk_sum) * 2 * y_c * e_c, y_p + prev.power),
                    (_a(h.qk_sum) * e_c * e_c, 2 * prev.power),
                ],
                n0,
            )
            assert eta is not None
            c_eta, a_eta = eta
            if a_eta > 0:
                raise Reject(
                    f"{where}.heads[{hi}]",
                    f"the score error η grows like N^{float(a_eta):.4g} (> 0): no margin for every N",
                )
            eta_c = c_eta * arb(n0) ** _a(a_eta)
        m0 = _a(facts.gap) - 2 * eta_c
        if not m0 > 0:
            raise Reject(
                f"{where}.heads[{hi}]",
                f"the score error η ≤ {eta_c.upper()} reaches half the gap γ = {facts.gap} at "
                f"N₀ = {n0}",
            )
        # ω ≤ (N − 1)·e^{−β(N)·m₀} ≤ N^{1 − κ·m₀}; the head adds ‖W_OW_V‖·2Y·ω
        terms.append((_a(h.ov_inf) * 2 * y_c, up(_a(y_p + 1) - kappa * m0)))
    total = _combine(terms, n0)
    if norms.residual and prev.power is not None:
        total = _combine([(e_c, prev.power), *([total] if total else [])], n0)
    if total is None:
        return None
    c, a = total
    if norms.ffn_gain != 0:
        c = c * (1 + _a(norms.ffn_gain)) if norms.residual else c * _a(norms.ffn_gain)
    return c, a


def _dominates(stored: Majorant, derived: tuple[arb, fmpq] | None, n0: int, field: str) -> None:
    if derived is None:
        if stored.coef != 0 or stored.power is not None:
            raise Reject(field, f"recorded {stored.coef}·N^{stored.power}, derived exactly 0")
        return
    c, a = derived
    if stored.power is None:
        raise Reject(field, f"recorded 0, derived ≤ {c.upper()}·N^{a}")
    if not a <= stored.power <= a + POWER_SLACK:
        raise Reject(
            f"{field}.power",
            f"recorded exponent {stored.power}, derived {a} (must be ≥ it and within "
            f"{POWER_SLACK})",
        )
    need = c * arb(n0) ** _a(a - stored.power)  # C·N^a ≤ C·N₀^{a − a'}·N^{a'} for N ≥ N₀
    lo = _a(stored.coef)
    if not lo >= need:
        raise Reject(
            f"{field}.coef",
            f"recorded {stored.coef} is not ≥ the derived coefficient {need.upper()}",
        )
    if not lo <= need * (1 + _a(COEF_SLACK)):
        raise Reject(
            f"{field}.coef",
            f"recorded {stored.coef} exceeds the derived coefficient {need.upper()} by more "
            f"than {COEF_SLACK} (relative)",
        )


def readout_l1(model: Model) -> fmpq:
    return sum((abs(exact(v)) for v in model.readout.weight), fmpq(0))


# ----- the certificate --------------------------------------------------------------------


def _facts(cert: dict) -> Facts:
    f = cert.get("facts")
    if not isinstance(f, dict) or not isinstance(f.get("activation"), dict):
        raise Reject("facts", "missing: {gap, activation: {coef, power}, margin}")
    facts = Facts(
        q_of(f.get("gap"), "facts.gap"),
        q_of(f["activation"].get("coef"), "facts.activation.coef"),
        q_of(f["activation"].get("power"), "facts.activation.power"),
        q_of(f.get("margin"), "facts.margin"),
    )
    if facts.act_power.q != 1 or facts.act_power < 0:
        raise Reject("facts.activation.power", f"{facts.act_power} is not an integer ≥ 0")
    for name, v in (
        ("gap", facts.gap),
        ("activation.coef", facts.act_coef),
        ("margin", facts.margin),
    ):
        if not v > 0:
            raise Reject(f"facts.{name}", f"{v} is not positive")
    return facts


def _majorant(entry: Any, field: str) -> Majorant:
    if not isinstance(entry, dict):
        raise Reject(field, "not an object {coef, power}")
    coef = q_of(entry.get("coef"), f"{field}.coef")
    power = entry.get("power")
    if coef < 0:
        raise Reject(f"{field}.coef", f"{coef} is negative")
    return Majorant(coef, None if power is None else q_of(power, f"{field}.power"))


def check(cert: dict, model: Model) -> TailReport:
    """Check the ``all_lengths`` section of a Theorem-26 proof against the softmax model:
    parts 1–4 of the module docstring. Conditional on H1–H3 (:data:`HYPOTHESES`)."""
    t0 = time.perf_counter()
    n0 = cert.get("n0_tokens") if isinstance(cert, dict) else None
    limit = fmpq(0)
    steps: list[Majorant] = []
    bound = None
    hyp = None
    try:
        if not isinstance(cert, dict) or cert.get("kind") != PROOF_KIND:
            raise Reject("all_lengths", f"not a {PROOF_KIND!r} object")
        if not isinstance(n0, int) or isinstance(n0, bool) or n0 < 2:
            raise Reject("n0_tokens", f"{n0!r} is not an integer ≥ 2")
        facts = _facts(cert)
        limit = facts.margin
        beta, norms = structure(model)
        hyp = _hypotheses(cert, facts, model, n0)
        kappa = beta.kappa(n0)
        stored = cert.get("steps")
        if not isinstance(stored, list) or len(stored) != len(norms):
            raise Reject("steps", f"not one majorant per layer ({len(norms)} layers)")
        prev = Majorant(fmpq(0), None)
        for li, ln in enumerate(norms):
            field = f"steps[{li}]"
            step = layer_step(prev, ln, facts, kappa, n0, f"model.layers[{li}]")
            cur = _majorant(stored[li], field)
            _dominates(cur, step, n0, field)
            steps.append(cur)
            prev = cur
        w1 = readout_l1(model)
        final = cert.get("final_bound")
        rec = q_of(final, "final_bound")
        if prev.power is None:
            derived_final = arb(0)
        else:
            if prev.power > 0:
                raise Reject(
                    f"steps[{len(norms) - 1}].power",
                    f"the last layer's error grows like N^{prev.power}: no bound for every N",
                )
            derived_final = _a(w1) * _a(prev.coef) * arb(n0) ** _a(prev.power)
        if not (_a(rec) >= derived_final and _a(rec) <= derived_final * (1 + _a(COEF_SLACK))):
            raise Reject(
                "final_bound",
                f"recorded {rec}, derived ‖w‖₁·C·N₀^a = {derived_final.upper()} (must be ≥ it "
                f"and within {COEF_SLACK} relative)",
            )
        if not rec < facts.margin:
            raise Reject(
                "final_bound",
                f"the logit error bound {rec} is not below the hard margin μ = {facts.margin}",
            )
        bound = rec
    except Reject as err:
        return TailReport(
            False,
            n0 if isinstance(n0, int) else 0,
            (str(err),),
            tuple(steps),
            None,
            limit,
            time.perf_counter() - t0,
        )
    return TailReport(True, n0, (), tuple(steps), bound, limit, time.perf_counter() - t0, hyp)


def _hypotheses(cert: dict, facts: Facts, model: Model, n0: int) -> Derived | None:
    """With ``hypotheses_derived: true``, H1–H3 must follow from the weights
    (:func:`attncert.kernel.tieless.program.derive`) and imply the stated facts for every
    N ≥ N₀; with ``false`` they stay hypotheses (and every verdict says so)."""
    flag = cert.get("hypotheses_derived")
    if flag is False:
        return None
    if flag is not True:
        raise Reject("hypotheses_derived", f"{flag!r} is not true or false")
    try:
        der = derive(model)
    except NotDerived as err:
        raise Reject("hypotheses_derived", f"H1–H3 do not follow from the weights: {err}") from None
    if der.gap < facts.gap:
        raise Reject("facts.gap", f"stated γ = {facts.gap}, the weights give only γ ≥ {der.gap}")
    if not der.activation_at_most(facts.act_coef, int(facts.act_power), n0):
        poly = " + ".join(f"{c}·N^{k}" for k, c in der.activation)
        raise Reject(
            "facts.activation",
            f"stated {facts.act_coef}·N^{facts.act_power} does not bound the derived "
            f"{poly} for every N ≥ {n0}",
        )
    if der.margin < facts.margin:
        raise Reject(
            "facts.margin", f"stated μ = {facts.margin}, the weights give only μ = {der.margin}"
        )
    return der


__all__ = [
    "HYPOTHESES",
    "PROOF_KIND",
    "Beta",
    "Facts",
    "Majorant",
    "Reject",
    "TailReport",
    "check",
    "layer_step",
    "readout_l1",
    "structure",
]
