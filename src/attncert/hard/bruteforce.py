"""Brute-force confirmation of a certificate for small n — a second, independent
route to the claims the checker verifies (used by tests and notebooks).

Enumerates every ρ_L-compatible input, runs the model (numpy, batched; any string
whose float decision is within 1e-6 of the threshold or whose attention has a
near-tie is re-run rigorously, :func:`attncert.kernel.hard.decide.decide`), and confirms that the decision is a function of the
certified output dependency set, and that the language's membership is too when
the certificate found no separating pair.

:func:`confirm_witness_by_enumeration` enumerates *every* string of length n (not only
the ρ_L-compatible ones) and re-derives the certificate's non-constancy claims: whether
the model is constant at n at all (so whether a witness exists), the decisions of the
witness strings, and the set of fixed positions of ρ_L the decision depends on (a
ρ_L-compatible string whose decision changes when that one position changes) — of which
the certificate's ``fixed_dependence`` must be a subset.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np

from attncert.certificates.hard import Certificate
from attncert.errors import InputError
from attncert.kernel.hard.decide import decide
from attncert.model.forward import forward
from attncert.model.spec import Model

MAX_STRINGS = 1 << 16


@dataclass(frozen=True)
class BruteForceReport:
    strings: int
    groups: int  # distinct assignments of the output dependency set
    decision_is_function: bool
    membership_is_function: bool | None
    exact_reruns: int
    counterexample: tuple[str, str] | None  # two strings agreeing on S with different decisions


def _near_tie(trace, b: int) -> bool:
    for lt in trace.layers:
        s = lt.scores[b]
        if s.shape[-1] < 2:
            continue
        srt = np.sort(np.where(np.isfinite(s), s, -np.inf), axis=-1)
        top, second = srt[..., -1], srt[..., -2]
        ok = np.isfinite(second)
        gap = np.abs(top[ok] - second[ok])
        scale = 1.0 + np.abs(top[ok])
        if np.any(gap <= 1e-9 * scale):
            return True
    return False


def decisions_by_enumeration(model: Model, strings: list[str]) -> tuple[np.ndarray, int]:
    """Float decisions of equal-length ``strings`` in batches; a string whose logit is
    within 1e-6 of 0 or whose attention has a near-tie is decided rigorously instead.
    Returns (decisions, number of rigorous re-runs)."""
    decisions = np.zeros(len(strings), dtype=bool)
    reruns = 0
    for c0 in range(0, len(strings), 2048):
        batch = strings[c0 : c0 + 2048]
        tr = forward(model, batch)
        for b, s in enumerate(batch):
            if abs(tr.logits[b]) <= 1e-6 or _near_tie(tr, b):
                decisions[c0 + b] = decide(model, s)
                reruns += 1
            else:
                decisions[c0 + b] = tr.accept[b]
    return decisions, reruns


@dataclass(frozen=True)
class WitnessReport:
    strings: int  # |Σ|ⁿ
    constant: bool  # the model gives one answer on every string of length n
    witness_decisions: tuple[bool, bool] | None  # by enumeration, None without a witness
    fixed_dependence: frozenset[int]  # every fixed position of ρ_L the decision depends on
    exact_reruns: int


def confirm_witness_by_enumeration(model: Model, cert: Certificate) -> WitnessReport:
    """All |Σ|ⁿ strings (at most 2¹⁶): is the model constant at n, what does it answer
    on the witness strings, and which fixed positions of ρ_L does it depend on."""
    n = cert.n
    symbols = model.alphabet
    total = len(symbols) ** n
    if total > MAX_STRINGS:
        raise InputError(f"{total} strings exceed the brute-force limit of {MAX_STRINGS}")
    strings = ["".join(c) for c in product(symbols, repeat=n)]
    decisions, reruns = decisions_by_enumeration(model, strings)
    index = {s: k for k, s in enumerate(strings)}
    rho = cert.final_restriction
    depends: set[int] = set()
    for s, dec in zip(strings, decisions.tolist(), strict=True):
        if not rho.compatible(s):
            continue
        for u in range(n):
            if rho.fixed[u] is None or u in depends:
                continue
            for c in symbols:
                if c != s[u] and bool(decisions[index[s[:u] + c + s[u + 1 :]]]) != dec:
                    depends.add(u)
                    break
    w = cert.witness
    got = None
    if w is not None:
        got = (bool(decisions[index[w.strings[0]]]), bool(decisions[index[w.strings[1]]]))
    return WitnessReport(
        total, bool(np.all(decisions == decisions[0])), got, frozenset(depends), reruns
    )


def confirm_by_enumeration(model: Model, cert: Certificate, language=None) -> BruteForceReport:
    """Enumerate all ρ_L-compatible strings (at most 2¹⁶) and compare decisions."""
    rho = cert.final_restriction
    free = rho.free_positions
    total = len(rho.symbols) ** len(free)
    if total > MAX_STRINGS:
        raise InputError(
            f"{total} compatible strings exceed the brute-force limit of {MAX_STRINGS}"
        )
    strings = [
        rho.complete(dict(zip(free, combo, strict=True)))
        for combo in product(rho.symbols, repeat=len(free))
    ]
    decisions, reruns = decisions_by_enumeration(model, strings)
    S = cert.output_dependency
    seen: dict[tuple[str, ...], tuple[bool, str]] = {}
    member_seen: dict[tuple[str, ...], bool] = {}
    counterexample = None
    member_fn: bool | None = None if language is None else True
    for s, dec in zip(strings, decisions.tolist(), strict=True):
        key = tuple(s[u] for u in S)
        prev = seen.setdefault(key, (dec, s))
        if prev[0] != dec and counterexample is None:
            counterexample = (prev[1], s)
        if language is not None:
            mem = language.contains(s)
            if member_seen.setdefault(key, mem) != mem:
                member_fn = False
    return BruteForceReport(
        len(strings), len(seen), counterexample is None, member_fn, reruns, counterexample
    )
