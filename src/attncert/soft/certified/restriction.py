"""Soft restrictions (Corollary 2's soft analogue): fix some positions so that the
decision is *certified constant* over every completion, with as many positions free as
the search can find.

A restriction ρ ∈ (Σ ∪ {*})ⁿ is certified when the logit's certified range over all its
completions excludes 0: z_lo > 0 (every completion accepted) or z_hi < 0 (every one
rejected). Two propagations can certify it:

* ``"box"`` — interval bounds per row (:func:`attncert.soft.certified.propagate.propagate`
  with the restriction's option sets; the kernel re-derives them with its own code);
* ``"affine"`` — affine forms in the free positions' choices around a base completion
  (:func:`attncert.kernel.soft.affine.bound.restriction_range`, the kernel's own evaluator,
  which the search calls as its oracle and the checker calls again from the
  certificate). It keeps the correlations that boxes lose through LayerNorm and a
  second attention layer, and is what certifies restrictions on the trained two-layer
  models.

The search (untrusted) orders the positions by a heuristic influence — the attention
mass a position receives at the base string and at its complement, where every
position carries another symbol — gallops up the longest certified prefix of that
order (16, 32, 64, … free positions, then a binary search), then tries to free the
remaining positions one block at a time. Freeing a position only widens the box
propagation's bounds; the affine bounds are not monotone in general, so every
candidate is certified afresh.

Two completions of a certified ρ that differ in membership (PARITY: flip one free bit)
are classified the same, so the model is wrong on one of them; the pair is re-checked by
the rigorous evaluator of :mod:`attncert.kernel.soft.checker`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from attncert.kernel.core.bounds import Undecided
from attncert.kernel.soft.affine.bound import Unsupported, applicable, restriction_range
from attncert.model.forward import forward
from attncert.model.spec import Model
from attncert.soft.certified.propagate import propagate, restriction_inputs

METHODS = ("auto", "affine", "box")
PROBED = 3  # bases probed per method, the largest float margins first


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
    method: str = "box"  # the propagation that certified it

    @property
    def free(self) -> int:
        return self.rho.count("*")

    @property
    def margin(self) -> float:
        """The certified distance of the logit from 0 over all completions."""
        return self.z_lo if self.decision else -self.z_hi


@dataclass(frozen=True)
class _Range:
    z_lo: float
    z_hi: float


def certify(
    model: Model, rho: str, method: str = "box", base: str | None = None
) -> tuple[bool | None, _Range]:
    """(decision, range): the constant decision over all completions of ``rho``, or None
    if the certified range contains 0 (or the affine bound overflowed, or its work budget
    was exceeded at this many free positions)."""
    if method == "affine":
        try:
            got = restriction_range(model, rho, base)
        except (Undecided, Unsupported):
            return None, _Range(-np.inf, np.inf)
        p = _Range(got.z_lo, got.z_hi)
    else:
        prop = propagate(model, restriction_inputs(model, rho))
        p = _Range(prop.z_lo, prop.z_hi)
    if p.z_lo > 0:
        return True, p
    if p.z_hi < 0:
        return False, p
    return None, p


def _attention_mass(model: Model, string: str) -> np.ndarray:
    tr = forward(model, [string], keep_attention=True)
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
    return score[off : off + len(string)]


def influence(model: Model, base: str) -> np.ndarray:
    """Untrusted ranking: how much each input position can matter for the decision of
    ``base`` — the attention mass it receives (readout query of the last layer, plus
    the average over queries of earlier layers), summed over heads, at ``base`` and at
    its complement (every symbol replaced by the next one of Σ), whichever is larger."""
    alpha = list(model.alphabet)
    other = "".join(alpha[(alpha.index(c) + 1) % len(alpha)] for c in base)
    return np.maximum(_attention_mass(model, base), _attention_mass(model, other))


def _rho(base: str, free: np.ndarray) -> str:
    return "".join("*" if f else c for c, f in zip(base, free, strict=True))


def search_restriction(
    model: Model,
    base: str,
    *,
    time_limit: float = 60.0,
    block: int | None = None,
    method: str = "box",
    order: np.ndarray | None = None,
    known: dict | None = None,
    strategy: str = "falsi",
    progress=None,
) -> SoftRestriction | None:
    """Grow a certified restriction from ``base`` (module docstring); None if even the
    fully fixed base is not certified (its logit's enclosure contains 0). ``order``: the
    positions by increasing influence, if the caller has it (:func:`_order`); ``known``:
    propagations already run, by (ρ, method) (the probe's, say), reused; ``strategy``:
    ``"falsi"`` (the margins' regula falsi, below) or ``"midpoint"`` (plain bisection, the
    method before issue 22; kept for ``benchmarks/bench_restriction_search.py``)."""
    t0 = time.perf_counter()
    n = len(base)
    calls = 0

    known = {} if known is None else known

    def check(free: np.ndarray):
        nonlocal calls
        key = (_rho(base, free), method)
        if key not in known:
            calls += 1
            known[key] = certify(model, key[0], method, base)
            if progress is not None:
                progress(int(best_free.sum()), calls)  # the best before this propagation
        return known[key]

    none_free = np.zeros(n, dtype=bool)
    best_free = none_free
    decision, prop = check(none_free)
    if decision is None:
        return None
    if order is None:
        order = _order(model, base)
    best_free, best = none_free, (decision, prop)

    def signed(p: _Range) -> float:
        """The certified margin on the side of ``decision`` (negative: not certified)."""
        m = p.z_lo if decision else -p.z_hi
        return float(m) if np.isfinite(m) else -np.inf

    margins = {0: signed(prop)}

    def prefix(k: int) -> bool:
        nonlocal best_free, best
        free = none_free.copy()
        free[order[:k]] = True
        dec, p = check(free)
        margins[k] = signed(p)
        if dec == decision:
            best_free, best = free, (dec, p)
            return True
        return False

    # gallop: 16, 32, 64, … free positions until one fails
    lo, hi, k = 0, n, min(16, n)
    while time.perf_counter() - t0 < time_limit:
        if prefix(k):
            lo = k
            if k == n:
                hi = n
                break
            k = min(n, 2 * k)
        else:
            hi = k - 1
            break
    # then search [lo, hi] for the last certified prefix: the margin falls with k, so the
    # next candidate is where the line through the two end margins crosses 0 (regula
    # falsi, Illinois variant: an end kept twice in a row has its margin halved, since
    # the margin falls ever faster near the edge), kept at least an eighth of the
    # interval from either end
    kept, weight = None, 1.0
    while lo < hi and time.perf_counter() - t0 < time_limit:
        m_lo, m_hi = margins.get(lo, 0.0), margins.get(hi + 1, -np.inf)
        if strategy == "falsi" and np.isfinite(m_hi) and m_lo > 0 > m_hi:
            m_hi *= weight
            guess = lo + (hi + 1 - lo) * m_lo / (m_lo - m_hi)
        else:
            guess = (lo + hi + 1) / 2
        pad = max(1, (hi - lo) // 8)
        mid = int(min(max(round(guess), lo + pad), hi - pad + 1)) if hi - lo > 2 else hi
        if prefix(mid):
            lo = mid
            weight = weight / 2 if kept == "hi" else 1.0
            kept = "hi"
        else:
            hi = mid - 1
            weight, kept = 1.0, "lo"
    # second pass: the positions after the prefix, in blocks split on failure (not when
    # not even the first position of the order could be freed, and not after 32 failures
    # in a row: the base is then a poor one)
    step = block or max(1, (n - lo) // 16)
    rest = [int(i) for i in order[lo:]] if lo else []
    queue = [rest[k : k + step] for k in range(0, len(rest), step)]
    misses = 0
    while queue and misses < 32 and time.perf_counter() - t0 < time_limit:
        chunk = queue.pop(0)
        free = best_free.copy()
        free[chunk] = True
        dec, p = check(free)
        if dec == decision:
            best_free, best = free, (dec, p)
            misses = 0
        else:
            misses += 1
            if len(chunk) > 1:
                half = len(chunk) // 2
                queue[0:0] = [chunk[:half], chunk[half:]]
    dec, p = best
    return SoftRestriction(
        _rho(base, best_free),
        bool(dec),
        p.z_lo,
        p.z_hi,
        base,
        calls,
        time.perf_counter() - t0,
        method,
    )


def base_candidates(model: Model, n: int, seed: int = 0, count: int = 4) -> list[str]:
    """Starting strings: every constant string, the alternating one, a few random."""
    rng = np.random.default_rng(seed)
    alpha = list(model.alphabet)
    out = [a * n for a in alpha]
    out.append("".join(alpha[i % len(alpha)] for i in range(n)))
    out += ["".join(rng.choice(alpha, n)) for _ in range(count)]
    return out


def _order(model: Model, base: str) -> np.ndarray:
    """The input positions by increasing influence (:func:`influence`)."""
    return np.argsort(influence(model, base), kind="stable")


def _probe(model: Model, base: str, method: str, order: np.ndarray, known: dict) -> float | None:
    """The certified margin with the 16 least influential positions free, or None: a
    cheap test of whether ``base`` is worth a search (kept in ``known`` for it)."""
    free = np.zeros(len(base), dtype=bool)
    free[order[:16]] = True
    key = (_rho(base, free), method)
    if key not in known:
        known[key] = certify(model, key[0], method, base)
    dec, p = known[key]
    if dec is None:
        return None
    return p.z_lo if dec else -p.z_hi


def best_restriction(
    model: Model,
    n: int,
    *,
    time_limit: float = 120.0,
    seed: int = 0,
    bases=None,
    method: str = "auto",
    strategy: str = "falsi",
    progress=None,
) -> SoftRestriction | None:
    """The restriction with most free positions over several starting strings.

    The :data:`PROBED` bases with the largest float margins are probed first
    (:func:`_probe`); the search then runs from those that passed, the largest certified
    probe margin first (the first one usually takes the whole time), and from the others
    if time is left. ``method``: "affine", "box", or "auto" — the affine propagation where
    it applies (two thirds of the time), then, only if it freed no position, the box
    propagation with the rest."""
    if method not in METHODS:
        raise ValueError(f"restriction method {method!r}: expected one of {METHODS}")
    t0 = time.perf_counter()
    cands = bases or base_candidates(model, n, seed)
    z = forward(model, cands, keep_attention=False).logits
    ranked = [cands[k] for k in np.argsort(-np.abs(z), kind="stable")]
    plan = [method]
    if method == "auto":
        plan = ["affine", "box"] if applicable(model, n) is None else ["box"]
    orders: dict[str, np.ndarray] = {}  # one influence ranking per base, both methods
    known: dict = {}  # propagations by (ρ, method): the probe's first step is the search's
    best = None
    shown = [0, 0]  # the most free positions reported, the propagations run

    def report(free: int, _calls: int) -> None:  # across bases and methods
        shown[0], shown[1] = max(shown[0], free), shown[1] + 1
        progress(*shown)

    for step, how in enumerate(plan):
        if step and best is not None and best.free:
            break  # auto: the box propagation only where the affine one found nothing
        share = 2.0 / 3.0 if (len(plan) == 2 and step == 0) else 1.0
        deadline = time.perf_counter() + (time_limit - (time.perf_counter() - t0)) * share
        probed = []
        for base in ranked[:PROBED]:
            if time.perf_counter() >= deadline:
                break
            if base not in orders:
                orders[base] = _order(model, base)
            margin = _probe(model, base, how, orders[base], known)
            probed.append((-np.inf if margin is None else margin, base))
        order = [b for _, b in sorted(probed, key=lambda mb: -mb[0])]
        for base in order:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            res = search_restriction(
                model,
                base,
                time_limit=left,
                method=how,
                order=orders[base],
                known=known,
                strategy=strategy,
                progress=report if progress is not None else None,
            )
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
