"""Lemma 5 uniformly in n: a certified K with B(n) ≤ K/n for **every** n ≥ N₀, and Theorem 6
for the model at every n ≥ N₀ (issue 23, item 3).

B(n) is the certified sensitivity of :mod:`.sensitivity` — the largest |z(x) − z(x^i)| over
strings x of length n and positions i other than the readout token. Hahn's Lemma 5 says
B(n) = O(1/n) for a softmax transformer whose parameters do not depend on n and whose
positional features are bounded; :func:`certify_uniform` computes the constant for one
model, with one propagation valid for all n ≥ N₀ at once
(:mod:`attncert.kernel.uniform.propagate`: position classes whose feature ranges hold for
every length, one key's weight ≤ e^Δ/(n − 1), every change bound a multiple of 1/(N − 1)),
and has :mod:`attncert.kernel.uniform.checker` re-derive every claim. What is untrusted here is
only the choice of the number of relative-position bins M (the smallest K over a few M),
the 2⁻³⁰ widening of the claims, and the comparison with Hahn's published constant
(:mod:`attncert.soft.bounds`).

Models outside the hypothesis — a masked head, an inverse temperature growing with n, a
used unbounded positional feature (i, n, n·i, …), a learned position table — get the
verdict OUTSIDE-THEOREM with the reasons; a bound that overflows float64 boxes gets
UNDECIDED; a certificate the kernel rejects, REFUTED.

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.soft.certified.uniform import certify_uniform
    >>> u = certify_uniform(zoo_model("soft_parity"), n0=64, bins=8)
    >>> u.verdict, 4 < float(u.k) < 5
    ('CERTIFIED', True)

CLI: ``attncert sensitivity zoo:soft_parity --uniform --n0 64 --n 64,256,1024``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath

from attncert.errors import ParameterError, UnsupportedError
from attncert.io import write_atomic
from attncert.kernel.core.bounds import Undecided
from attncert.kernel.uniform import checker as KU
from attncert.kernel.uniform import dyadic as Q
from attncert.kernel.uniform.classes import hypotheses
from attncert.kernel.uniform.propagate import up_float
from attncert.kernel.verdict import undecided, uniform
from attncert.model.spec import Model
from attncert.soft.certified.certify import widen

__implements__ = ("Hahn Lemma 5", "Hahn Theorem 6")

DEFAULT_N0 = 64
BIN_CHOICES = (1, 2, 4, 8, 16, 32)
ASTRONOMICAL = 10**9  # n* beyond this: "beyond any length one would run"
MARGIN = Fraction(1, 2**30)


@dataclass(frozen=True)
class PublishedConstant:
    """Hahn's Lemma 5 constant for the same weights, as published: the closed form
    ‖Δy^{(L)}‖ ≤ H^L C^{2L} D/n times ‖w‖ (:mod:`attncert.soft.bounds`), valid by the
    published proof from ``n0`` tokens on; ``value`` None with ``reason`` when the
    constants are not defined for the model."""

    value: mpmath.mpf | None
    n0: int | None = None
    reason: str = ""

    @property
    def text(self) -> str:
        if self.value is None:
            return f"n/a ({self.reason})"
        return mpmath.nstr(self.value, 4)


def published_constant(model: Model) -> PublishedConstant:
    """Hahn's constant ‖w‖·H^L·C^{2L}·D for ``model`` (module docstring)."""
    from attncert.soft.bounds import lemma5_constants

    try:
        c = lemma5_constants(model)
    except (UnsupportedError, ParameterError) as err:
        return PublishedConstant(None, reason=err.message)
    with mpmath.workprec(160):
        value = c.closed_form(c.L, 1)[1] * c.readout_norm
    return PublishedConstant(value, c.n0_original)


@dataclass(frozen=True, eq=False)
class UniformOutcome:
    """What :func:`certify_uniform` produced and what the kernel said."""

    model_name: str
    digest: str
    verdict: str
    reasons: tuple[str, ...] = ()
    certificate: dict | None = None
    check: KU.UniformCheckReport | None = None
    published: PublishedConstant | None = None
    seconds: float = 0.0
    tried: tuple[tuple[int, str], ...] = field(default=())  # (bins, K) of the search

    @property
    def k(self) -> Fraction | None:
        return None if self.certificate is None else Q.parse(self.certificate["K"])

    @property
    def n0(self) -> int | None:
        return None if self.certificate is None else self.certificate["n0"]

    @property
    def cap(self) -> float | None:
        return None if self.certificate is None else self.certificate["cap"]

    @property
    def nontrivial_from(self) -> int | None:
        c = self.certificate
        return None if c is None or c["nontrivial_from"] is None else int(c["nontrivial_from"])

    def per_symbol(self) -> list[tuple[str | None, Fraction]]:
        """K per readout symbol (the larger over the cases of N's parity)."""
        if self.certificate is None:
            return []
        out: dict = {}
        for case in self.certificate["cases"]:
            for p in case["per_symbol"]:
                out[p["symbol"]] = max(out.get(p["symbol"], Fraction(0)), Q.parse(p["K"]))
        return list(out.items())

    def bound_at(self, n: int) -> Fraction | None:
        """min(K/n, Z) for n ≥ N₀ (None below N₀ or without a certificate)."""
        if self.certificate is None or n < self.n0:
            return None
        return min(self.k / n, Fraction(self.cap))

    def floor_at(self, n: int) -> float | None:
        if self.certificate is None or n < self.n0 or self.certificate.get("floor") is None:
            return None
        return KU.parity_floor(self.k, Fraction(self.cap), n)

    def save(self, path) -> None:
        if self.certificate is None:
            raise UnsupportedError("no certificate: " + "; ".join(self.reasons))
        import json

        write_atomic(path, json.dumps(self.certificate, indent=1, ensure_ascii=False) + "\n")

    def notes(self) -> tuple[str, ...]:
        """Honest remarks on the size of K (printed with the result)."""
        if self.certificate is None:
            return ()
        out = []
        ns = self.nontrivial_from
        if ns is None:
            out.append("the logit is constant over all strings (Z = 0)")
        elif ns > self.n0:
            out.append(
                f"K/n exceeds the logit's range Z = {self.cap:.4g} for N₀ ≤ n < {_int(ns)}: "
                "there B(n) ≤ Z is all that is certified and Theorem 6's floor is only the "
                f"cap's; Lemma 5's rate decides from n = {_int(ns)} on"
            )
        if ns is not None and ns > ASTRONOMICAL:
            out.append(
                f"K = {Q.approx(self.k)} is astronomically large: the 1/n regime starts beyond "
                "any length one would run"
            )
        return tuple(out)

    def as_dict(self) -> dict:
        pub = self.published
        return {
            "model": self.model_name,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "n0": self.n0,
            "bins": None if self.certificate is None else self.certificate["bins"],
            "K": None if self.certificate is None else self.certificate["K"],
            "K_approx": None if self.k is None else Q.approx(self.k, 6),
            "cap": self.cap,
            "nontrivial_from": None if self.nontrivial_from is None else str(self.nontrivial_from),
            "published": None
            if pub is None
            else {
                "value": None if pub.value is None else mpmath.nstr(pub.value, 6),
                "n0": pub.n0,
                "reason": pub.reason or None,
            },
            "notes": list(self.notes()),
            "check": None
            if self.check is None
            else {
                "accepted": self.check.accepted,
                "facts": list(self.check.facts),
                "failures": [str(f) for f in self.check.failures],
            },
            "seconds": self.seconds,
        }


def _int(n: int) -> str:
    return str(n) if n < 10**12 else Q.approx(Fraction(n))


def _widen_big(text: str) -> str:
    q = Q.parse(text)
    return Q.text(Q.up(q + q * MARGIN))


def _widen_case(case: dict, factor: Fraction) -> dict:
    per = []
    for p in case["per_symbol"]:
        kt = _widen_big(p["K_tokens"])
        per.append(
            {
                "symbol": p["symbol"],
                "z_range": [widen(p["z_range"][0], "down"), widen(p["z_range"][1], "up")],
                "K_tokens": kt,
                "K": Q.text(Q.up(Q.parse(kt) * factor)),
            }
        )
    return dict(
        case,
        heads=[dict(h, one_key=_widen_big(h["one_key"])) for h in case["heads"]],
        steps=[
            dict(s, other=_widen_big(s["other"]), width=widen(s["width"], "up"))
            for s in case["steps"]
        ],
        per_symbol=per,
    )


def _widened(model: Model, got: dict, source: str | None, floor_at) -> dict:
    """The certificate from the kernel's numbers, every bound moved outward by 2⁻³⁰."""
    factor = Fraction(got["token_factor"])
    cases = [_widen_case(c, factor) for c in got["cases"]]
    per = [p for c in cases for p in c["per_symbol"]]
    k = max(Q.parse(p["K"]) for p in per)
    width = max(Fraction(p["z_range"][1]) - Fraction(p["z_range"][0]) for p in per)
    cap = widen(up_float(width), "up")
    cap_q = Fraction(cap)
    n_star = KU.nontrivial_from(k, cap_q, got["n0"])
    floor = None
    if KU.floor_applies(model):
        ns = sorted({n for n in floor_at if n >= got["n0"]} | {got["n0"]})
        if n_star is not None and n_star <= 10**15:
            ns = sorted(set(ns) | {n_star})
        floor = {
            "kind": "parity",
            "statement": "E[CE_n] ≥ log(1 + e^{−min(K/n, Z)/2}) ≥ log(1 + e^{−K/(2n)}) nats for "
            "uniform strings of length n with PARITY labels, every n ≥ N₀ (→ log 2)",
            "at": [{"n": n, "nats": widen(KU.parity_floor(k, cap_q, n), "down")} for n in ns],
        }
    return {
        "format": KU.FORMAT,
        "version": KU.VERSION,
        "model": {"sha256": model.digest, "name": model.name, "source": source},
        "statement": KU.STATEMENT,
        "n0": got["n0"],
        "n0_tokens": got["n0_tokens"],
        "bins": got["bins"],
        "tolerance": 1e-6,
        "cases": cases,
        "token_factor": got["token_factor"],
        "K": Q.text(k),
        "cap": cap,
        "nontrivial_from": None if n_star is None else str(n_star),
        "floor": floor,
        "trace": {},
    }


def certify_uniform(
    model: Model,
    n0: int = DEFAULT_N0,
    *,
    bins: int | None = None,
    source: str | None = None,
    floor_at: tuple[int, ...] = (64, 256, 1024, 4096),
) -> UniformOutcome:
    """The length-uniform Lemma 5 certificate for ``model`` from N₀ = ``n0`` on, checked
    by the kernel (module docstring). ``bins`` None tries M ∈ {1, 2, 4, …, 32} (M ≤ N₀)
    and keeps the smallest K."""
    t0 = time.perf_counter()
    pub = published_constant(model)
    if hypotheses(model):
        a = uniform(None, model, cap=None)  # OUTSIDE-THEOREM, with the hypotheses that fail
        return UniformOutcome(
            model.name, model.digest, a.verdict.value, a.reasons, published=pub,
            seconds=time.perf_counter() - t0,
        )  # fmt: skip
    choices = (bins,) if bins is not None else tuple(m for m in BIN_CHOICES if m <= max(1, n0))
    best, tried = None, []
    for m in choices:
        try:
            got = KU.derive(model, n0, m)
        except Undecided as err:
            tried.append((m, f"undecided ({err})"))
            continue
        k = Q.parse(got["K"])
        tried.append((m, got["K"]))
        if best is None or k < Q.parse(best["K"]):
            best = got
    if best is None:
        a = undecided(f"every propagation overflowed float64 ({tried[0][1]})")
        return UniformOutcome(
            model.name, model.digest, a.verdict.value, a.reasons, published=pub,
            seconds=time.perf_counter() - t0, tried=tuple(tried),
        )  # fmt: skip
    cert = _widened(model, best, source, floor_at)
    cert["trace"] = {
        "bins_tried": [{"bins": m, "K": k} for m, k in tried],
        "published_constant": pub.text,
        "K_approx": Q.approx(Q.parse(cert["K"]), 6),
    }
    report = KU.check(cert, model)
    a = uniform(report, model, cap=Fraction(cert["cap"]) if report.accepted else None)
    return UniformOutcome(
        model.name, model.digest, a.verdict.value, a.reasons, cert, report, pub,
        time.perf_counter() - t0, tuple(tried),
    )  # fmt: skip


def format_uniform(u: UniformOutcome, ns=(), measured=None) -> str:
    """The text report: K beside Hahn's published constant, the cap, n*, and per asked n
    the bound min(K/n, Z), the floor and (when given) the measured maximum."""
    lines = [f"Lemma 5 uniformly in n — {u.model_name}: {u.verdict}"]
    if u.certificate is None:
        lines += [f"  {r}" for r in u.reasons]
        if u.published is not None:
            lines.append(f"  Lemma 5's constant as published: {u.published.text}")
        return "\n".join(lines)
    c = u.certificate
    lines.append(
        f"  for every n ≥ N₀ = {c['n0']}: B(n) ≤ K/n with K = {Q.approx(u.k, 6)} "
        f"({c['bins']} relative-position bins; checked by attncert.kernel.uniform.checker)"
    )
    pub = u.published
    if pub is not None:
        lines.append(
            f"  Lemma 5's constant as published (‖w‖·H^L·C^(2L)·D, same weights): {pub.text}"
            + (f", valid from {pub.n0} tokens" if pub.value is not None else "")
        )
    per = u.per_symbol()
    if len(per) > 1:
        lines.append(
            "  per readout symbol: " + ", ".join(f"{s!r}: K = {Q.approx(k)}" for s, k in per)
        )
    if len(c["cases"]) > 1:
        lines.append(
            "  (two cases, N even and N odd: a used feature depends on the parity of positions)"
        )
    lines.append(f"  logit range over every length ≥ N₀: Z = {u.cap:.6g} (the range cap)")
    ns_ = u.nontrivial_from
    if ns_ is not None:
        lines.append(f"  K/n < Z from n = {_int(ns_)} on")
    if c.get("floor"):
        lines.append(
            "  Theorem 6 for this model: E[CE_n] ≥ log(1 + e^(−min(K/n, Z)/2)) nats on uniform "
            "PARITY strings for every n ≥ N₀, → log 2 = 0.6931"
        )
    else:
        lines.append("  Theorem 6's PARITY floor: n/a (the alphabet is not {0, 1})")
    rows = [n for n in ns]
    if rows:
        lines.append("")
        head = f"  {'n':>8}  {'K/n':>12}  {'min(K/n, Z)':>12}  {'floor [nats]':>12}"
        if measured is not None:
            head += f"  {'measured':>10}"
        lines.append(head)
        for n in rows:
            if n < c["n0"]:
                lines.append(f"  {n:>8}  {'n < N₀: not covered':>40}")
                continue
            kn = u.k / n
            b = u.bound_at(n)
            fl = u.floor_at(n)
            row = f"  {n:>8}  {Q.approx(kn):>12}  {Q.approx(b):>12}  " + (
                f"{fl:>12.6g}" if fl is not None else f"{'n/a':>12}"
            )
            if measured is not None and n in measured:
                row += f"  {measured[n]:>10.4g}"
            lines.append(row)
    for note in u.notes():
        lines.append(f"  note: {note}")
    if u.check is not None and not u.check.accepted:
        lines.append("  kernel: " + u.check.summary())
    return "\n".join(lines)
