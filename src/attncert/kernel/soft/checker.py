"""The independent checker of soft certificates (trusted; issue 15).

``check(cert, model)`` re-derives every number of an ``attncert-soft-certificate`` from
the model and the certificate, with its own code (imports: numpy, python-flint,
:mod:`attncert.errors`, the certificate reader :mod:`attncert.certificates.soft` (typed
values, a malformed field named — the claim ``format``), the model loader, the languages,
and :mod:`attncert.kernel.soft.propagate`, ``heads``, ``readout``,
:mod:`attncert.kernel.core.bounds`, :mod:`attncert.kernel.soft.affine`,
:mod:`attncert.kernel.core.trace`), and accepts only if every claim holds:

1. **identity** — the model's content hash and n are the certificate's;
2. **sensitivity** — for every readout symbol, an outward-rounded bound propagation over
   all strings of length n re-derives the logit's range [z_lo, z_hi] and the
   one-position change bound; the claims must be sound (range ⊇ re-derived, change ≥
   re-derived) and ``bound`` ≥ max_σ min(z_hi − z_lo, change);
3. **floor** — Theorem 6's floor ≤ log(1 + e^{−B/2}) (arb), for PARITY, or
   ≤ (1 − p)·P(U_n)·log(1 + e^{−B/2}) for the 2-Dyck bracket-type sub-task (P(U_n) by a
   height DP in arb);
4. **restriction** — the same propagation over all completions of ρ (or, for
   ``method: "affine"``, the affine-form propagation around the recorded completion
   ``base``, :mod:`attncert.kernel.soft.affine.bound`) re-derives a logit range that excludes
   0 on the side of the claimed decision;
5. **pair** — two completions of ρ that differ in membership, whose logits, evaluated by
   the kernel's rigorous forward pass (:func:`attncert.kernel.core.trace.forward_rigorous`:
   arb at the least precision that decides the sign, 53 → 4096 bits), are exactly the
   recorded balls at the recorded precisions and both have the
   decision's sign (an undecided sign is refused).

Besides soundness, every claimed number must be within the certificate's relative
``tolerance`` of what is re-derived (this detects edited files; soundness never uses
it).

The propagation (per token position: a box over all inputs, a bound on the change when
another position changes, and one when the position itself changes):

* layer 0 exactly per allowed token; LayerNorm with the variance lower bound
  mean_k dist(0, C_k)² over the box (C_k the exact range of the centred coordinate),
  Lipschitz constant 1/√(var_lo + ε) (:mod:`attncert.kernel.core.bounds`);
* a softmax head at query j: score intervals s_jw = β q_j·k_w; a key's weight lies in
  [L_w/(L_w + Σ_{v≠w} U_v), U_w/(U_w + Σ_{v≠w} L_v)] (L ≤ e^{lo − m} ≤ e^{hi − m} ≤ U);
  the output range is the hull of the visible values ∩ the weight-box LP bounded by
  weak duality, t + Σ u(h − t)⁺ − Σ l(t − h)⁺ at 32 candidate t; in layer 1 the exact
  fractional program (Dinkelbach, certified by F(λ⁺) ≤ 0). The change at j ≠ i is
  max_i u_ji·max(v_hi,i − M_lo, M_hi − v_lo,i) + max_w Δṽ_w + min(1, 2ε_j)·width_j with
  ε_j = β(Δq_j·max|k| + max|q_j|·max Δk); at j = i the width of j's output range;
* feed-forward layers: interval maps, act′ enclosures for the change;
* version-3 kinds (model-file version 3; ALiBi stays refused): RMSNorm as LayerNorm
  without centring (m ≥ mean_k dist(0, [lo_k, hi_k])², Jacobian s(I − nnᵀ/d)); gated
  MLPs with J = [W₂ W₂] diag(act′(g)⊙u, act(g)) [W_g; W₁]; SiLU (unimodal, min ≥
  −0.2785 with argmin in (−1.28, −1.27), SiLU′ ∈ [−0.1, 1.1]); RoPE heads rotate q and
  k boxes at each row's position with arb cos/sin enclosures, changes by
  |c|δ₁ + |s|δ₂ ∧ √(δ₁² + δ₂²) per pair; a parallel layer's FFN reads the layer input;
* at the readout (no LayerNorm after the last attention): the logit is bounded through
  the last FFN by per-unit lines act(p) − s·p ∈ [m, M] and a linear functional of the
  attention outputs, bounded by the same LP / fractional program.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from flint import arb, ctx

from attncert.arith.field import Undecided
from attncert.certificates.soft import (
    FORMAT,
    VERSION,
    FloorClaim,
    Functional,
    PairClaim,
    SoftCertificate,
    certificate_from_dict,
    model_sha256,
    readout_json,
)
from attncert.errors import InputError, SpecError
from attncert.kernel.core import bounds as B
from attncert.kernel.core.failure import CheckReport, Failure
from attncert.kernel.core.trace import forward_rigorous
from attncert.kernel.soft.affine.bound import Unsupported, restriction_range
from attncert.kernel.soft.propagate import (
    SUPPORTED,
    propagate,
    readout_index,
    split_by_symbol,
)
from attncert.model.spec import Model, Readout

__implements__ = (
    "Hahn Lemma 5",
    "Hahn Theorem 6",
)

__all__ = [
    "FORMAT",
    "VERSION",
    "Failure",
    "SoftCheckReport",
    "ball_text",
    "change_exceeds",
    "check",
    "decide",
]


@dataclasses.dataclass(frozen=True)
class SoftCheckReport(CheckReport):
    """What the checker answers (:class:`attncert.kernel.core.failure.CheckReport`) and,
    when it accepts, the numbers *it* re-derived that a verdict needs: per readout symbol
    of every sensitivity claim, (the logit range's width, the one-position change bound)
    — B(n) is only a cap where the change is not below the width; the restriction's
    re-derived logit range and the number of its free positions."""

    widths: tuple[tuple[float, float], ...] = ()
    restriction_range: tuple[float, float] | None = None
    free: int = 0
    pair: bool = False


# ----------------------------------------------------------------------------- pairs


def decide(model: Model, string: str) -> tuple[int | None, arb | None]:
    """The precision at which :func:`attncert.kernel.core.trace.forward_rigorous` decides the
    logit's sign (53 → 4096 bits; None for a rational model, decided in exact rationals)
    and the logit's value there; (None, None) if even 4096 bits leave 0 inside (never
    guessed)."""
    try:
        trace = forward_rigorous(model, string)
    except Undecided:
        return None, None
    return trace.precision, trace.logit


def change_exceeds(model: Model, x: str, y: str, bound) -> arb | None:
    """|z(x) − z(y)| as an arb ball when it *certainly* exceeds ``bound`` (a float or a
    Fraction: a claimed B(n) or K/n), decided by the rigorous forward pass — a refutation
    of the bound; None when it does not, or when a logit's sign is undecided at 4096 bits
    (then nothing is refuted)."""
    zx, zy = decide(model, x)[1], decide(model, y)[1]
    if zx is None or zy is None:
        return None
    diff = abs(zx - zy)
    b = arb(bound) if isinstance(bound, (int, float)) else arb(bound.numerator) / bound.denominator
    return diff if diff > b else None


def ball_text(x: arb) -> str:
    """An exact text of the ball: mantissa p exponent ± mantissa p exponent."""
    mm, me = x.mid().man_exp()
    rm, re_ = x.rad().man_exp()
    return f"{mm}p{me} +/- {rm}p{re_}"


# ----------------------------------------------------------------------------- the check


def _readout_model(model: Model, readout: Functional):
    """The model whose readout is the claimed functional, and the rounding error of its
    weights (lm_difference a − b is rounded to float; the error is added to the bound)."""
    if readout == "accept":
        return model, 0.0
    r = model.readout
    if isinstance(readout, str) or not all(p in r.lm_symbols for p in readout):
        raise SpecError(
            f"readout {readout_json(readout)!r}",
            where="sensitivity",
            expected=f"'accept' or {{'lm_difference': [a, b]}} with a, b in {list(r.lm_symbols)}",
        )
    i, j = (r.lm_symbols.index(p) for p in readout)
    w = r.lm_weight[i] - r.lm_weight[j]
    b = float(r.lm_bias[i] - r.lm_bias[j])
    err_w = np.maximum(B.up(w) - w, w - B.dn(w))  # ≥ |exact − float| (one rounding)
    err_b = float(max(B.up(b) - b, b - B.dn(b)))
    derived = dataclasses.replace(model, readout=Readout(w, b, position=r.position))
    return derived, (err_w, err_b)


def check(data: dict | SoftCertificate, model: Model) -> SoftCheckReport:
    """Re-derive every claim of the certificate ``data`` (a parsed JSON object, read by
    :func:`attncert.certificates.soft.certificate_from_dict`, or its value) for ``model``
    (module docstring)."""
    fails: list[Failure] = []
    facts: list[str] = []

    def fail(claim, where, reason):
        fails.append(Failure(claim, where, reason))
        return SoftCheckReport(False, tuple(fails), tuple(facts))

    try:
        typed = isinstance(data, SoftCertificate)
        digest = data.model_sha256 if typed else model_sha256(data)
        if digest != model.digest:
            return fail(
                "model",
                "model.sha256",
                f"certificate is for model {digest[:12]}…, "
                f"this model's hash is {model.digest[:12]}…",
            )
        unsupported = [k for k in model.new_kinds if k not in SUPPORTED]
        if unsupported:
            return fail(
                "model",
                "model",
                "the soft checker's propagation does not support models with "
                + ", ".join(unsupported),
            )
        cert = data if typed else certificate_from_dict(data)
        n, lp, tol = cert.n, cert.lp, cert.tolerance
        if n < 1:
            return fail("n", "n", f"length {n}")
        if not 0 <= tol <= 1e-3:
            return fail("method", "method.tolerance", f"{tol} is outside [0, 1e-3]")
        facts.append(f"model {model.name} ({model.digest[:12]}…), n = {n}")

        def close(claimed, derived, what, where, side):
            """Soundness (side 'up': claimed ≥ derived; 'down': ≤) and fidelity."""
            bad = claimed < derived if side == "up" else claimed > derived
            if bad:
                return f"claimed {what} {claimed!r} is not sound: re-derived {derived!r}"
            if abs(claimed - derived) > tol * max(1.0, abs(derived)):
                return (
                    f"claimed {what} {claimed!r} is not what the propagation gives "
                    f"({derived!r}, tolerance {tol})"
                )
            return None

        widths: list[tuple[float, float]] = []  # re-derived (width, change) per symbol
        derived_range = None
        for sens in cert.sensitivity:
            model_s, err = _readout_model(model, sens.readout)
            per = sens.per_symbol
            r = readout_index(model, n)
            off = model.input_offset()
            symbols = list(model.alphabet) if r is not None and 0 <= r - off < n else [None]
            if [e.symbol for e in per] != symbols:
                return fail(
                    "sensitivity",
                    "sensitivity.per_symbol",
                    f"one entry per readout symbol {symbols} is needed",
                )
            worst = 0.0
            shared = None  # one pass for all symbols unless the back-substitution applies
            if symbols != [None] and not split_by_symbol(model_s, r):
                shared = propagate(model_s, "*" * n, True, lp)[4]
            for k, (entry, sym) in enumerate(zip(per, symbols, strict=True)):
                where = f"sensitivity.per_symbol[{k}]"
                rho = ["*"] * n
                if shared is not None:
                    _, z_lo, z_hi, change, r_abs = shared[k]
                else:
                    if sym is not None:
                        rho[r - off] = sym
                    z_lo, z_hi, change, r_abs, _ = propagate(model_s, "".join(rho), True, lp)
                if err != 0.0:  # the float lm difference errs by ≤ err_w·|r| + err_b
                    slack = float(B.up(B.pmat_up(err[0][None], r_abs[:, None])[0, 0] + err[1]))
                    z_lo, z_hi = float(B.dn(z_lo - slack)), float(B.up(z_hi + slack))
                    change = float(B.up(change + 2 * slack))
                c_lo, c_hi = entry.z_range
                for msg in (
                    close(c_lo, z_lo, "z_lo", where, "down"),
                    close(c_hi, z_hi, "z_hi", where, "up"),
                    close(entry.propagated, change, "propagated bound", where, "up"),
                ):
                    if msg:
                        return fail("sensitivity", where, msg)
                # B(n) from the re-derived numbers only: min(range width, change bound)
                width = float(B.up(z_hi - z_lo))
                bound = min(width, change)
                msg = close(entry.bound, bound, "bound", where, "up")
                if msg:
                    return fail("sensitivity", where, msg)
                widths.append((width, change))
                worst = max(worst, bound)
            b_claim = sens.bound
            msg = close(b_claim, worst, "B(n)", "sensitivity.bound", "up")
            if msg:
                return fail("sensitivity", "sensitivity.bound", msg)
            facts.append(
                f"B({n}) = {b_claim:.6g} for readout {readout_json(sens.readout)} re-derived "
                f"({len(symbols)} readout symbol(s))"
            )
            floor = sens.floor
            if floor is not None:
                msg = _floor_applies(floor, sens.readout, model) or _check_floor(
                    floor, b_claim, n, tol
                )
                if msg:
                    return fail("floor", "sensitivity.floor", msg)
                facts.append(f"cross-entropy floor {floor.nats:.6g} nats ({floor.kind})")
        rest = cert.restriction
        rho = None
        decision = None
        if rest is not None:
            rho = rest.rho
            if len(rho) != n or any(c != "*" and c not in model.alphabet for c in rho):
                return fail(
                    "restriction", "restriction.rho", f"not a length-{n} restriction over Σ ∪ {{*}}"
                )
            decision = rest.decision
            c_lo, c_hi = rest.z_range
            how = rest.method
            if how == "box":
                z_lo, z_hi, _, _, _ = propagate(model, rho, False, lp)
            elif how == "affine":
                base = rest.base
                if base is None:
                    raise SpecError("missing field 'base'", where="restriction")
                try:
                    got = restriction_range(model, rho, base)
                except InputError as err:
                    return fail("restriction", "restriction.base", err.message)
                except Unsupported as err:
                    return fail("restriction", "restriction.method", str(err))
                z_lo, z_hi = got.z_lo, got.z_hi
            else:
                return fail(
                    "restriction", "restriction.method", f"{how!r}: expected 'box' or 'affine'"
                )
            # soundness: the decision from the re-derived range (accept iff the logit > 0)
            if (decision and not z_lo > 0) or (not decision and not z_hi <= 0):
                return fail(
                    "restriction",
                    "restriction.decision",
                    f"the re-derived range [{z_lo!r}, {z_hi!r}] does not exclude 0 on the side "
                    f"of decision {decision}",
                )
            # fidelity: the claimed range is the search's (⊇ the re-derived one, close to it)
            for msg in (
                close(c_lo, z_lo, "z_lo", "restriction", "down"),
                close(c_hi, z_hi, "z_hi", "restriction", "up"),
            ):
                if msg:
                    return fail("restriction", "restriction.z_range", msg)
            derived_range = (z_lo, z_hi)
            facts.append(
                f"every completion of ρ ({rho.count('*')}/{n} free) gets decision {decision} "
                f"({how} propagation), margin ≥ {min(abs(z_lo), abs(z_hi)):.4g}"
            )
        pair = cert.pair
        if pair is not None:
            msg = _check_pair(pair, model, n, rho, decision)
            if msg:
                return fail("pair", *msg)
            facts.append(
                f"pair {pair.strings[0][:16]}… / {pair.strings[1][:16]}… differs in "
                f"{pair.language} and both get {pair.decision} (arb, {list(pair.precisions)} bits)"
            )
    except SpecError as err:
        return fail("format", err.where or "certificate", err.message)
    except B.Undecided as err:
        return fail("arithmetic", "propagation", f"undecided: {err}")
    return SoftCheckReport(
        True,
        (),
        tuple(facts),
        tuple(widths),
        derived_range,
        0 if rho is None else rho.count("*"),
        pair is not None,
    )


def _floor_applies(floor: FloorClaim, readout: Functional, model: Model):
    """The PARITY floor is about σ(accept logit) on {0,1}ⁿ; the 2-Dyck one about the
    next-symbol head's ) versus ] preference."""
    kind = floor.kind
    if kind == "parity" and (readout != "accept" or set(model.alphabet) != {"0", "1"}):
        return "the PARITY floor needs the accept readout of a model over {0, 1}"
    dyck = set(model.alphabet) == set("()[]")
    if kind == "dyck2-bracket-type" and (readout != (")", "]") or not dyck):
        return (
            "the 2-Dyck floor needs a model over ()[] and the readout {'lm_difference': [')', ']']}"
        )
    return None


def _check_floor(floor: FloorClaim, b_claim: float, n: int, tol: float):
    kind, nats = floor.kind, floor.nats
    old = ctx.prec
    ctx.prec = 200
    try:
        return _floor_at_200(floor, kind, nats, b_claim, n, tol)
    finally:
        ctx.prec = old


def _floor_at_200(floor, kind, nats, b_claim, n, tol):
    term = (1 + (-arb(b_claim) / 2).exp()).log()
    if kind == "parity":
        derived = B.ball(term)[0]
    elif kind == "dyck2-bracket-type":
        p = floor.p
        if p is None:
            raise SpecError("missing field 'p'", where="sensitivity.floor")
        num, _, den = p.partition("/")
        if not (num.isdigit() and (den == "" or den.isdigit())):
            return f"p = {p!r} is not a fraction"
        pa = arb(int(num)) / (int(den) if den else 1)
        if not 0 < pa < arb(1) / 2:
            return f"p = {p} is outside (0, 1/2)"
        pu = _unbalanced(pa, n)
        pu_claim = floor.p_u
        if pu_claim is None:
            raise SpecError("missing field 'P_U'", where="sensitivity.floor")
        if not (B.ball(pu)[0] - tol <= pu_claim <= B.ball(pu)[1]):
            return f"claimed P(U_n) = {pu_claim!r} is not the certified {pu}"
        derived = B.ball((1 - pa) * pu * term)[0]
    else:
        return f"unknown floor kind {kind!r}"
    derived = max(derived, 0.0)  # an excess over the optimum is never negative
    if nats > derived:
        return f"claimed floor {nats!r} nats exceeds the certified {derived!r}"
    if derived - nats > tol * max(1.0, derived):
        return f"claimed floor {nats!r} is not what B gives ({derived!r})"
    return None


def _unbalanced(pa: arb, n: int) -> arb:
    """P(prefix of length n is unbalanced and ends with a closer | length ≥ n), 2-Dyck PCFG
    (heights chain: up p, down 1 − p if h > 0, stop 1 − p at h = 0), in arb."""
    if n < 2:
        return arb(0)
    qa = 1 - pa
    opened, closed = [arb(0)] * (n + 2), [arb(0)] * (n + 2)
    opened[1] = pa
    for _ in range(n - 1):
        tot = [a + b for a, b in zip(opened, closed, strict=True)]
        opened = [arb(0)] + [x * pa for x in tot[:-1]]
        closed = [x * qa for x in tot[1:]] + [arb(0)]
        s = float((sum(opened, arb(0)) + sum(closed, arb(0))).mid())  # exact rescaling
        opened, closed = [x / s for x in opened], [x / s for x in closed]
    return sum(closed[1:], arb(0)) / (sum(opened, arb(0)) + sum(closed, arb(0)))


def _check_pair(pair: PairClaim, model: Model, n: int, rho, decision):
    strings = pair.strings
    if len(strings) != 2 or not all(len(s) == n for s in strings):
        return "pair.strings", f"two strings of length {n} are needed"
    if strings[0] == strings[1]:
        return "pair.strings", "the two strings are equal"
    if rho is None:
        return "pair", "a pair needs a restriction whose decision it inherits"
    for s in strings:
        if any(r != "*" and r != c for r, c in zip(rho, s, strict=True)) or any(
            c not in model.alphabet for c in s
        ):
            return "pair.strings", f"{s[:24]}… is not a completion of the restriction"
    name = pair.language
    lang = _language(name)
    if lang is None:
        return (
            "pair.language",
            f"{name!r} is not a language the checker knows (attncert.languages)",
        )
    if set(lang.alphabet) != set(model.alphabet):
        return (
            "pair.language",
            f"{name} is over {''.join(lang.alphabet)!r}, the model over "
            f"{''.join(model.alphabet)!r}",
        )
    member = lang.contains
    mem = [member(s) for s in strings]
    if mem[0] == mem[1]:
        return "pair.strings", f"both strings have membership {mem[0]} in {name}"
    if list(pair.membership) != mem:
        return "pair.membership", f"the strings' membership is {mem}"
    if pair.decision != decision:
        return "pair.decision", f"the restriction's certified decision is {decision}"
    precs, texts = pair.precisions, pair.logits
    if len(precs) != 2 or len(texts) != 2:
        return "pair", "two precisions and two logit enclosures are needed"
    for k, s in enumerate(strings):
        prec, ball_ = decide(model, s)
        if prec is None:
            return f"pair.logits[{k}]", "the logit's sign is undecided at 4096 bits"
        if precs[k] != prec:
            return f"pair.precisions[{k}]", f"the sign is decided at {prec} bits, not {precs[k]!r}"
        if not (ball_ > 0 if decision else ball_ <= 0):  # accept iff logit > 0
            return f"pair.logits[{k}]", f"the logit {ball_} does not give the decision {decision}"
        if texts[k] != ball_text(ball_):
            return (
                f"pair.logits[{k}]",
                f"the recorded enclosure is not the evaluation at {prec} bits ({ball_text(ball_)})",
            )
    return None


def _language(name: str):
    """The pair's language by its trusted definition (:mod:`attncert.languages`): every
    language a command's ``--language`` names (parity, parity-odd, dyck1, dyck2, majority,
    first_last, ones_star, …); None for a name the registry does not know."""
    from attncert.errors import AttncertError
    from attncert.languages.registry import language

    try:
        return language(name)
    except AttncertError:
        return None
