"""The checker of length-uniform sensitivity certificates (trusted; issue 23): Hahn's Lemma 5
and Theorem 6 for one model at **every** length n ≥ N₀.

A certificate (``format: "attncert-uniform-sensitivity"``, ``version: 1``) claims: for every
n ≥ N₀, every string x of length n and every position i other than the readout token,

    |z(x) − z(x^i)| ≤ K/n,        z the accept logit,

and, for a model over {0, 1}, Theorem 6 for this model at every n ≥ N₀:
E[CE_n] ≥ log(1 + e^{−min(K/n, Z)/2}) ≥ log(1 + e^{−K/(2n)}) nats on uniform strings of
length n with PARITY labels, which tends to log 2 (Z is the logit's range over all strings
of every length ≥ N₀: any two strings differ by at most Z).

``check(data, model)`` accepts only if every claim is re-derived from the model and the
certificate by :func:`attncert.kernel.uniform.propagate.propagate_uniform` (its own code;
imports: numpy, python-flint, :mod:`attncert.kernel.core.bounds`, :mod:`attncert.kernel.soft.heads`,
:mod:`attncert.kernel.soft.propagate`, ``classes``, ``dyadic``, the model spec, and the
certificate reader :mod:`attncert.certificates.uniform`: typed values, a malformed field
named — the claim ``format``), in this order, the first failure named:

1. **identity and hypotheses** — the model's content hash; Lemma 5's hypotheses
   (:func:`attncert.kernel.uniform.classes.hypotheses`: softmax heads without masks,
   temperatures not growing with n, bounded positional features, no learned table, no
   ALiBi); rotary heads, RMSNorm, gated MLPs and the parallel residual are inside (the
   model-file version-3 kinds :data:`attncert.kernel.soft.propagate.SUPPORTED`);
2. **classes** — N₀, the number of bins M, every position class and the exact range of
   every used positional feature over the class (e.g. i/N ∈ [0, 1/N₀']), and each middle
   class's count fraction must equal the re-derived ones;
3. **heads and steps** — β's range per head, the one-key constant (N − 1)·max a_ji
   (≤ e^Δ) and, after every step, the largest change coefficient and box width: claimed
   bounds must be sound (≥ the re-derived) and within the relative ``tolerance``;
4. **K** — per readout symbol the logit's range and K_tok (|Δz| ≤ K_tok/(N − 1)); the
   factor sup_{n ≥ N₀} n/(N − 1) (1 with BOS or EOS, N₀/(N₀ − 1) without); K ≥ max_σ
   K_tok·factor;
5. **cap and n\\*** — the range cap Z ≥ max_σ (z_hi − z_lo), and n* = max(N₀, ⌊K/Z⌋ + 1),
   the least n ≥ N₀ from which K/n < Z (below it the cap, not Lemma 5's rate, decides);
6. **floor** — each tabulated value ≤ log(1 + e^{−min(K/n, Z)/2}) in arb.

Soundness never uses the tolerance; it only catches edited files (the producer widens its
claims by 2⁻³⁰ so that two runs of the same floating-point code never disagree on it).

**Format** (JSON; numbers that may exceed float64 are exact dyadics written
``0x1.<hex>p<exponent>``, :mod:`attncert.kernel.uniform.dyadic`; ranges of features and count
fractions are exact rationals written ``"p/q"``)::

    format, version, model {sha256, name, source}, statement, tolerance,
    n0, n0_tokens (= N₀ + [BOS] + [EOS]), bins (M),
    cases: [ {n_parity: "even" | "odd" | null,
              classes:    [{name, kind, k, bin, tokens, changeable, count_fraction,
                            features: {label: [lo, hi]}}],
              heads:      [{layer, head, beta: [lo, hi], one_key}],
              steps:      [{label, other, width}],
              per_symbol: [{symbol, z_range: [lo, hi], K_tokens, K}]} ],
    token_factor ("1" or "N₀/(N₀ − 1)"), K, cap (Z), nontrivial_from (n*, a decimal string),
    floor: {kind: "parity", statement, at: [{n, nats}]} | null,
    trace (untrusted notes: the bins tried, Hahn's published constant; not checked)
"""

from __future__ import annotations

from fractions import Fraction

from flint import ctx

from attncert.certificates.uniform import (
    FORMAT,
    VERSION,
    Case,
    FloorClaim,
    UniformCertificate,
    certificate_from_dict,
    model_sha256,
)
from attncert.errors import SpecError, UnsupportedError
from attncert.kernel.core import bounds as B
from attncert.kernel.core.failure import CheckReport, Failure
from attncert.kernel.uniform import dyadic as Q
from attncert.kernel.uniform.classes import (
    count_fraction,
    hypotheses,
    layout,
    length_cases,
    used_features,
)
from attncert.kernel.uniform.propagate import SUPPORTED, UniformPropagation, propagate_uniform
from attncert.model.spec import Model

__implements__ = (
    "Hahn Lemma 5",
    "Hahn Theorem 6",
)

__all__ = ["FORMAT", "STATEMENT", "VERSION", "check", "derive", "nontrivial_from", "parity_floor"]

STATEMENT = (
    "for every n ≥ N₀, every string x of length n and every position i other than the "
    "readout token: |z(x) − z(x^i)| ≤ K/n, z the accept logit"
)


UniformCheckReport = CheckReport  # what the checker answers (attncert.kernel.core.failure)


# ----------------------------------------------------------------------------- the statement


def token_factor(model: Model, n0: int) -> Fraction:
    """sup over n ≥ N₀ of n/(N − 1), N = n + [BOS] + [EOS]: K_tok/(N − 1) ≤ K_tok·factor/n."""
    extra = int(model.bos is not None) + int(model.eos is not None)
    return Fraction(1) if extra >= 1 else Fraction(n0, n0 - 1)


def nontrivial_from(k: Fraction, cap: Fraction, n0: int) -> int | None:
    """The least n ≥ N₀ with K/n < Z (None when Z = 0: the logit is constant)."""
    if cap <= 0:
        return None
    return max(n0, int(k // cap) + 1)


def parity_floor(k: Fraction, cap: Fraction, n: int) -> float:
    """A float ≤ log(1 + e^{−min(K/n, Z)/2}) (Theorem 6's floor for B(n) ≤ min(K/n, Z))."""
    old = ctx.prec
    ctx.prec = 200
    try:
        b = min(k / n, cap)
        return max(B.ball((1 + (-Q.to_arb(b) / 2).exp()).log())[0], 0.0)
    finally:
        ctx.prec = old


def floor_applies(model: Model) -> bool:
    """The PARITY floor is about σ(accept logit) on {0, 1}ⁿ."""
    return set(model.alphabet) == {"0", "1"}


PARITY_NAMES = {None: None, 0: "even", 1: "odd"}


def derive(model: Model, n0: int, bins: int) -> dict:
    """Every claim of a certificate for (model, N₀, M), re-derived, unwidened: the kernel's
    own numbers (a producer widens them; :func:`check` compares against these). One *case*
    per parity of N when a used feature depends on it (:func:`.classes.length_cases`)."""
    cases = [_case(model, propagate_uniform(model, n0, bins, p)) for p in length_cases(model)]
    lay = layout(model, n0, bins)
    factor = token_factor(model, n0)
    k = max(Q.parse(p["K"]) for c in cases for p in c["per_symbol"])
    cap = max(
        float(B.up(p["z_range"][1] - p["z_range"][0])) for c in cases for p in c["per_symbol"]
    )
    n_star = nontrivial_from(k, Fraction(cap), n0)
    return {
        "n0": n0,
        "n0_tokens": lay.n0_tokens,
        "bins": bins,
        "cases": cases,
        "token_factor": str(factor),
        "K": Q.text(k),
        "cap": cap,
        "nontrivial_from": None if n_star is None else str(n_star),
    }


def _case(model: Model, prop: UniformPropagation) -> dict:
    lay = prop.layout
    names = [model.embedding.features[fi].label for fi in used_features(model)]
    classes = []
    for c, ranges in zip(lay.classes, prop.features, strict=True):
        d = c.to_dict()
        d["features"] = {nm: [str(lo), str(hi)] for nm, (lo, hi) in zip(names, ranges, strict=True)}
        d["count_fraction"] = str(count_fraction(c, lay))
        classes.append(d)
    factor = token_factor(model, lay.n0)
    return {
        "n_parity": PARITY_NAMES[lay.n_parity],
        "classes": classes,
        "heads": [
            {
                "layer": h.layer,
                "head": h.head,
                "beta": list(h.beta),
                "one_key": Q.text(Q.up(h.one_key)),
            }
            for h in prop.heads
        ],
        "steps": [
            {"label": s.label, "other": Q.text(Q.up(s.other)), "width": s.width} for s in prop.steps
        ],
        "per_symbol": [
            {
                "symbol": r.symbol,
                "z_range": [r.z_lo, r.z_hi],
                "K_tokens": Q.text(Q.up(r.k_tok)),
                "K": Q.text(Q.up(Q.up(r.k_tok) * factor)),
            }
            for r in prop.rows
        ],
    }


# ----------------------------------------------------------------------------- the check


def check(data: dict | UniformCertificate, model: Model) -> UniformCheckReport:
    """Re-derive every claim of the certificate ``data`` (a parsed JSON object, read by
    :func:`attncert.certificates.uniform.certificate_from_dict`, or its value) for ``model``
    (module docstring)."""
    fails: list[Failure] = []
    facts: list[str] = []

    def fail(claim, where, reason):
        fails.append(Failure(claim, where, reason))
        return UniformCheckReport(False, tuple(fails), tuple(facts))

    try:
        typed = isinstance(data, UniformCertificate)
        digest = data.model_sha256 if typed else model_sha256(data)
        if digest != model.digest:
            return fail(
                "model",
                "model.sha256",
                f"certificate is for model {digest[:12]}…, this model's hash is "
                f"{model.digest[:12]}…",
            )
        bad = hypotheses(model)
        if bad:
            return fail("hypotheses", "model", "outside Lemma 5's hypotheses: " + "; ".join(bad))
        unsupported = [k for k in model.new_kinds if k not in SUPPORTED]
        if unsupported:
            return fail(
                "model",
                "model",
                "the length-uniform checker does not support models with " + ", ".join(unsupported),
            )
        cert = data if typed else certificate_from_dict(data)
        n0, bins, tol = cert.n0, cert.bins, cert.tolerance
        if not 0 <= tol <= 1e-3:
            return fail("tolerance", "tolerance", f"{tol} is outside [0, 1e-3]")
        try:
            got = derive(model, n0, bins)
        except UnsupportedError as err:
            return fail("n0", "n0/bins", err.message)
        facts.append(f"model {model.name} ({model.digest[:12]}…), every n ≥ N₀ = {n0}, {bins} bins")
        if cert.n0_tokens != got["n0_tokens"]:
            return fail(
                "n0",
                "n0",
                f"N₀ = {n0}, but n0_tokens = {cert.n0_tokens!r}: the token count from "
                f"N₀ on is N₀ + [BOS] + [EOS] = {got['n0_tokens']}",
            )
        cases = cert.cases
        if [c.n_parity for c in cases] != [c["n_parity"] for c in got["cases"]]:
            return fail(
                "cases",
                "cases",
                "one case per parity of N is needed: "
                + repr([c["n_parity"] for c in got["cases"]]),
            )
        if cert.token_factor != got["token_factor"]:
            return fail(
                "token_factor",
                "token_factor",
                f"claimed {cert.token_factor!r}; sup over n ≥ N₀ of n/(N − 1) is "
                f"{got['token_factor']}",
            )
        for ci, (case, g) in enumerate(zip(cases, got["cases"], strict=True)):
            pre = f"cases[{ci}]."
            msg = _check_classes(case, g, got["n0_tokens"])
            if msg:
                return fail("classes", pre + msg[0], msg[1])
            msg = _check_list(case, g, "heads", tol) or _check_list(case, g, "steps", tol)
            if msg:
                return fail(msg[0].split("[")[0], pre + msg[0], msg[1])
            msg = _check_k(case, g, Fraction(got["token_factor"]), tol)
            if msg:
                return fail(msg[0].split(".")[0].split("[")[0], pre + msg[0], msg[1])
        # K and Z against the kernel's own: K = max_σ K_tok·factor, Z = max_σ (z_hi − z_lo)
        # rounded up, both re-derived (never from the claimed parts)
        k, cap = cert.k, Fraction(cert.cap)
        msg = _close(k, Q.parse(got["K"]), tol, "K")
        if msg:
            return fail("K", "K", msg)
        msg = _close(cap, Fraction(got["cap"]), tol, "range cap Z")
        if msg:
            return fail("cap", "cap", msg)
        facts.append(
            f"B(n) ≤ K/n with K = {Q.approx(k)} for every n ≥ {n0} (re-derived; "
            f"{len(got['cases'])} case(s) of N's parity, "
            f"{len(got['cases'][0]['per_symbol'])} readout symbol(s)); logit range over every length "
            f"≤ Z = {float(cap):.6g}"
        )
        n_star = nontrivial_from(k, cap, n0)
        claimed = cert.nontrivial_from
        if claimed != (None if n_star is None else str(n_star)):
            return fail(
                "nontrivial_from",
                "nontrivial_from",
                f"claimed {claimed!r}; the least n ≥ N₀ with K/n < Z is {n_star}",
            )
        if n_star is not None:
            facts.append(f"K/n < Z from n = {Q.approx(Fraction(n_star))} on")
        floor = cert.floor
        if floor is not None:
            msg = _check_floor(floor, model, k, cap, n0, tol)
            if msg:
                return fail("floor", *msg)
            facts.append(
                "Theorem 6 for this model: E[CE_n] ≥ log(1 + e^{−min(K/n, Z)/2}) for every "
                f"n ≥ {n0} ({len(floor.at)} values re-derived)"
            )
    except SpecError as err:
        return fail("format", err.where or "certificate", err.message)
    except B.Undecided as err:
        return fail("arithmetic", "propagation", f"undecided: {err}")
    return UniformCheckReport(True, (), tuple(facts))


def _check_classes(case: Case, got, n0_tokens: int):
    """Exact equality of N₀'s consequences: the classes, their feature ranges and counts."""
    cls = case.classes
    if len(cls) != len(got["classes"]):
        return "classes", f"{len(cls)} classes; N₀ and the bins give {len(got['classes'])}"
    for i, (c, g) in enumerate(zip(cls, got["classes"], strict=True)):
        where = f"classes[{i}]"
        claimed = {
            "name": c.name,
            "kind": c.kind,
            "k": c.k,
            "bin": c.bin,
            "tokens": list(c.tokens),
            "changeable": c.changeable,
            "count_fraction": c.count_fraction,
        }
        for key, value in claimed.items():
            if value != g[key]:
                return f"{where}.{key}", f"claimed {value!r}, re-derived {g[key]!r}"
        feats = {name: list(rng) for name, rng in c.features}
        if len(feats) != len(c.features) or set(feats) != set(g["features"]):
            return f"{where}.features", f"the used features are {sorted(g['features'])}"
        for name, rng in g["features"].items():
            if feats[name] != rng:
                return (
                    f"{where}.features[{name!r}]",
                    f"claimed range {feats[name]!r}; over every N ≥ N₀' = {n0_tokens} "
                    f"the feature lies in {rng!r}",
                )
    return None


def _close(claimed: Fraction, derived: Fraction, tol: float, what: str):
    """Sound (claimed ≥ derived) and within the tolerance of it."""
    if claimed < derived:
        return (
            f"claimed {what} {Q.approx(claimed, 8)} is not sound: re-derived {Q.approx(derived, 8)}"
        )
    if claimed - derived > Fraction(tol) * max(Fraction(1), abs(derived)):
        return (
            f"claimed {what} {Q.approx(claimed, 8)} is not what the propagation gives "
            f"({Q.approx(derived, 8)}, tolerance {tol})"
        )
    return None


def _check_list(case: Case, got, key, tol):
    items = case.heads if key == "heads" else case.steps
    if len(items) != len(got[key]):
        return key, f"{len(items)} entries, re-derived {len(got[key])}"
    for i, (c, g) in enumerate(zip(items, got[key], strict=True)):
        where = f"{key}[{i}]"
        if key == "heads":
            claimed = [c.layer, c.head, list(c.beta)]
            if claimed != [g["layer"], g["head"], g["beta"]]:
                return (
                    f"{where}.beta",
                    f"claimed layer/head/β {claimed!r}, "
                    f"re-derived {[g['layer'], g['head'], g['beta']]!r}",
                )
            msg = _close(c.one_key, Q.parse(g["one_key"]), tol, "one-key constant")
            if msg:
                return f"{where}.one_key", msg
        else:
            if c.label != g["label"]:
                return f"{where}.label", f"claimed {c.label!r}, re-derived {g['label']!r}"
            msg = _close(c.other, Q.parse(g["other"]), tol, "change coefficient")
            if msg:
                return f"{where}.other", msg
            msg = _close(Fraction(c.width), Fraction(g["width"]), tol, "box width")
            if msg:
                return f"{where}.width", msg
    return None


def _check_k(case: Case, got, factor: Fraction, tol):
    """None when one case's per-symbol claims are sound and faithful, else (where, reason)."""
    per = case.per_symbol
    if [p.symbol for p in per] != [g["symbol"] for g in got["per_symbol"]]:
        want = [g["symbol"] for g in got["per_symbol"]]
        return "per_symbol", f"one entry per readout symbol {want!r}"
    for i, (c, g) in enumerate(zip(per, got["per_symbol"], strict=True)):
        where = f"per_symbol[{i}]"
        lo, hi = Fraction(c.z_range[0]), Fraction(c.z_range[1])
        msg = _close(-lo, -Fraction(g["z_range"][0]), tol, "−z_lo") or _close(
            hi, Fraction(g["z_range"][1]), tol, "z_hi"
        )
        if msg:
            return f"{where}.z_range", msg
        msg = _close(c.k_tokens, Q.parse(g["K_tokens"]), tol, "K_tokens")
        if msg:
            return f"{where}.K_tokens", msg
        msg = _close(c.k, Q.parse(g["K"]), tol, "K")
        if msg:
            return f"{where}.K", msg
    return None


def _check_floor(floor: FloorClaim, model: Model, k: Fraction, cap: Fraction, n0: int, tol: float):
    if not floor_applies(model):
        return "floor", "the PARITY floor needs a model over {0, 1}"
    if floor.kind != "parity":
        return "floor.kind", f"unknown floor kind {floor.kind!r}"
    for i, (n, nats) in enumerate(floor.at):
        where = f"floor.at[{i}]"
        if n < n0:
            return f"{where}.n", f"n = {n} < N₀ = {n0}: not covered"
        derived = parity_floor(k, cap, n)
        if nats > derived:
            return f"{where}.nats", f"claimed floor {nats!r} exceeds the certified {derived!r}"
        if derived - nats > tol * max(1.0, derived):
            return f"{where}.nats", f"claimed floor {nats!r} is not what K gives ({derived!r})"
    return None
