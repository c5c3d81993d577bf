"""Soft restrictions (Corollary 2's soft analogue): fix some positions so that the
decision is *certified constant* over every completion, with as many positions free as
the search can find.

A restriction ρ ∈ (Σ ∪ {*})ⁿ is certified when the logit's certified range over all its
completions (:func:`attncert.soft.certified.propagate.propagate` with the restriction's
option sets) excludes 0: z_lo > 0 (every completion accepted) or z_hi < 0 (every one
rejected). Freeing a position only widens every bound (each step of the propagation is
inclusion-monotone), so the search (untrusted) orders the positions by a heuristic
influence on the base string's decision, binary-searches the longest certified prefix
of that order, then tries to free the remaining positions one block at a time.

Two completions of a certified ρ that differ in membership (PARITY: flip one free bit)
are classified the same, so the model is wrong on one of them; the pair is re-checked by
the rigorous evaluator of :mod:`attncert.kernel.soft`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from attncert.model.forward import forward
from attncert.model.spec import Model
from attncert.soft.certified.propagate import Propagation, propagate, restriction_inputs


@dataclass(frozen=True)
class SoftRestriction:
    """A certified restriction: every completion gets ``decision``."""

    rho: str
    decision: bool
    z_lo: float
    z_hi: float
    base: str  # the string the search started from (a completion of rho)
    certifications: int  # propagations run by the search
    seconds: float

    @property
    def free(self) -> int:
        return self.rho.count("*")

    @property
    def margin(self) -> float:
        """The certified distance of the logit from 0 over all completions."""
        return self.z_lo if self.decision else -self.z_hi


def certify(model: Model, rho: str) -> tuple[bool | None, Propagation]:
    """(decision, propagation): the constant decision over all completions of ``rho``,
    or None if the certified range contains 0."""
    p = propagate(model, restriction_inputs(model, rho))
    if p.z_lo > 0:
        return True, p
    if p.z_hi < 0:
        return False, p
    return None, p


def _influence(model: Model, base: str) -> np.ndarray:
    """Untrusted ranking: how much each input position can matter for the decision of
    ``base`` — the attention mass it receives (readout query of the last layer, plus
    the average over queries of earlier layers), summed over heads."""
    tr = forward(model, [base])
    n_tok = tr.tokens.shape[1]
    off = model.input_offset()
    r = model.readout.index(n_tok)
    score = np.zeros(n_tok)
    for li, lt in enumerate(tr.layers):
        w = lt.weights[0]  # (H, N, N)
        if w.size == 0:
            continue
        if li == len(tr.layers) - 1 and not model.readout.pooled:
            score += w[:, r, :].sum(axis=0)
        else:
            score += w.mean(axis=1).sum(axis=0)
    return score[off : off + len(base)]


def _rho(base: str, free: np.ndarray) -> str:
    return "".join("*" if f else c for c, f in zip(base, free, strict=True))


def search_restriction(
    model: Model,
    base: str,
    *,
    time_limit: float = 60.0,
    block: int | None = None,
) -> SoftRestriction | None:
    """Grow a certified restriction from ``base`` (module docstring); None if even the
    fully fixed base is not certified (its logit's enclosure contains 0)."""
    t0 = time.perf_counter()
    n = len(base)
    calls = 0

    def check(free: np.ndarray):
        nonlocal calls
        calls += 1
        return certify(model, _rho(base, free))

    none_free = np.zeros(n, dtype=bool)
    decision, prop = check(none_free)
    if decision is None:
        return None
    order = np.argsort(_influence(model, base), kind="stable")
    best_free, best = none_free, (decision, prop)
    lo, hi = 0, n  # the longest certified prefix of ``order`` has length in [lo, hi]
    while lo < hi and time.perf_counter() - t0 < time_limit:
        mid = (lo + hi + 1) // 2
        free = none_free.copy()
        free[order[:mid]] = True
        dec, p = check(free)
        if dec == decision:
            lo, best_free, best = mid, free, (dec, p)
        else:
            hi = mid - 1
    # second pass: the positions after the prefix, in blocks split on failure
    step = block or max(1, (n - lo) // 16)
    rest = [int(i) for i in order[lo:]]
    queue = [rest[k : k + step] for k in range(0, len(rest), step)]
    while queue and time.perf_counter() - t0 < time_limit:
        chunk = queue.pop(0)
        free = best_free.copy()
        free[chunk] = True
        dec, p = check(free)
        if dec == decision:
            best_free, best = free, (dec, p)
        elif len(chunk) > 1:
            half = len(chunk) // 2
            queue[0:0] = [chunk[:half], chunk[half:]]
    dec, p = best
    return SoftRestriction(
        _rho(base, best_free), bool(dec), p.z_lo, p.z_hi, base, calls, time.perf_counter() - t0
    )


def base_candidates(model: Model, n: int, seed: int = 0, count: int = 4) -> list[str]:
    """Starting strings: every constant string, the alternating one, a few random."""
    rng = np.random.default_rng(seed)
    alpha = list(model.alphabet)
    out = [a * n for a in alpha]
    out.append("".join(alpha[i % len(alpha)] for i in range(n)))
    out += ["".join(rng.choice(alpha, n)) for _ in range(count)]
    return out


def best_restriction(
    model: Model, n: int, *, time_limit: float = 120.0, seed: int = 0, bases=None
) -> SoftRestriction | None:
    """The restriction with most free positions over several starting strings, ranked by
    the float margin |z| of each base (largest first)."""
    t0 = time.perf_counter()
    cands = bases or base_candidates(model, n, seed)
    z = forward(model, cands).logits
    best = None
    for k in np.argsort(-np.abs(z)):
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            break
        res = search_restriction(model, cands[k], time_limit=left)
        if res is not None and (best is None or res.free > best.free):
            best = res
    return best


def misclassified_pair(rho: str, member, alphabet, seed: int = 0, tries: int = 400):
    """Two completions of ``rho`` that differ in ``member``ship, or None: the constant
    fillings, single-symbol changes of them, a balanced bracket filling, random ones."""
    free = [i for i, c in enumerate(rho) if c == "*"]
    if not free:
        return None
    rng = np.random.default_rng(seed)

    def fill(symbols) -> str:
        out = list(rho)
        for i, c in zip(free, symbols, strict=True):
            out[i] = c
        return "".join(out)

    cands = [fill([a] * len(free)) for a in alphabet]
    for a in list(cands):
        for b in alphabet:
            cands.append(a[: free[0]] + b + a[free[0] + 1 :])
            cands.append(a[: free[-1]] + b + a[free[-1] + 1 :])
    if "(" in alphabet and ")" in alphabet:
        cands.append(_balanced_fill(rho, free))
    cands += [fill(rng.choice(list(alphabet), len(free))) for _ in range(tries)]
    seen: dict[bool, str] = {}
    for c in cands:
        if c is None:
            continue
        m = bool(member(c))
        seen.setdefault(m, c)
        if len(seen) == 2:
            return seen[True], seen[False]
    return None


def _balanced_fill(rho: str, free: list[int]) -> str | None:
    """Fill the free positions with ( and ) so that ``rho`` becomes a Dyck-1 word, if the
    fixed symbols allow it (greedy: open while the remaining free slots can still close)."""
    out = list(rho)
    free_set = set(free)
    fixed_after = [0] * (len(rho) + 1)  # net height change of fixed symbols from i on
    for i in range(len(rho) - 1, -1, -1):
        c = rho[i]
        fixed_after[i] = fixed_after[i + 1] + (1 if c == "(" else -1 if c == ")" else 0)
    free_after = [0] * (len(rho) + 1)
    for i in range(len(rho) - 1, -1, -1):
        free_after[i] = free_after[i + 1] + (i in free_set)
    h = 0
    for i, c in enumerate(rho):
        if i in free_set:
            # open if the rest can still bring the height back to 0
            if h + 1 + fixed_after[i + 1] <= free_after[i + 1]:
                out[i], h = "(", h + 1
            else:
                out[i], h = ")", h - 1
        else:
            h += 1 if c == "(" else -1 if c == ")" else 0
        if h < 0:
            return None
    return "".join(out) if h == 0 else None
