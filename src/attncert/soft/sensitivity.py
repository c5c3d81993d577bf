"""Measured sensitivity: the largest effect of exchanging one input symbol (Lemma 5).

For input length n, the *sensitivity* is the maximum over strings x, positions i
(other than the readout position, as in Lemma 5's "i < n") and replacement
symbols σ′ of

* ``activation``: ‖y_r^{(L)}(x) − y_r^{(L)}(x′)‖₂ (r the readout position),
* ``logit``: |(w·y_r + b)(x) − (w·y_r + b)(x′)|,
* ``probability``: |σ(logit(x)) − σ(logit(x′))| (σ the logistic function),

with x′ = x[i := σ′].  :func:`exhaustive_sensitivity` enumerates every string
(small n, vectorized); :func:`search_sensitivity` is a hill-climbing search with
restarts over (x, i, σ′) for large n (untrusted: it finds a *lower* bound of the
maximum, i.e. a real witness pair).  :func:`sensitivity_profile` runs the right
one per n and fits the decay exponent of the maximum against n.

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.soft.sensitivity import sensitivity_profile
    >>> prof = sensitivity_profile(zoo_model("soft_parity"), [64, 256, 1024], seed=0)
    >>> -2.05 < prof.exponent < -1.95  # the gap of this model is 2/(n+2)²
    True

CLI: ``attncert sensitivity zoo:soft_parity --n 16,64,256,1024 --plot out.png``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from attncert.errors import InputError, ParameterError
from attncert.model.spec import Model
from attncert.soft.final import (  # final_activation is re-exported: it lived here
    _CHUNK,
    _change,
    _FirstLayerCache,
    _incremental_ok,
    _metrics,
    final_activation,
)

__implements__ = ("Hahn Lemma 5",)

METRICS = ("logit", "activation", "probability")
# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Witness:
    """A pair x, x′ = x[i := σ′] (i 1-based input position) and its changes."""

    x: str
    position: int
    symbol: str
    activation: float
    logit: float
    probability: float

    @property
    def x_prime(self) -> str:
        return self.x[: self.position - 1] + self.symbol + self.x[self.position :]


@dataclass(frozen=True)
class SensitivityResult:
    """The largest change found at one n, and how it was found."""

    n: int
    metric: str
    value: float
    witness: Witness
    method: str  # "exhaustive" or "search"
    evaluations: int
    seconds: float


@dataclass(frozen=True)
class SensitivityProfile:
    """Results over several n and the least-squares slope of log value vs log n."""

    model_name: str
    metric: str
    results: tuple[SensitivityResult, ...]
    exponent: float
    bounds: tuple[float, ...] = field(default=())  # log10 of Lemma 5 bounds (if computed)


def _positions(model: Model, n: int) -> list[int]:
    """0-based input positions that may be exchanged (not the readout token; every one
    for a mean readout)."""
    off = model.input_offset()
    if model.readout.pooled:
        return list(range(n))
    r = model.readout.index(model.n_tokens(n))
    return [p for p in range(n) if p + off != r]


def _tokens(model: Model, xs: np.ndarray) -> np.ndarray:
    """(B, n) symbol indices into alphabet → (B, N) token ids with BOS/EOS."""
    ids = np.array([model.token_index[s] for s in model.alphabet], dtype=np.int64)[xs]
    parts = []
    if model.bos is not None:
        parts.append(np.full((len(xs), 1), model.token_index[model.bos]))
    parts.append(ids)
    if model.eos is not None:
        parts.append(np.full((len(xs), 1), model.token_index[model.eos]))
    return np.concatenate(parts, axis=1)


def _batched_final(model: Model, xs: np.ndarray) -> np.ndarray:
    n_tok = model.n_tokens(xs.shape[1])
    per = max(1, _CHUNK // max(1, n_tok * max(1, n_tok)))
    out = [final_activation(model, _tokens(model, xs[s : s + per])) for s in range(0, len(xs), per)]
    return np.concatenate(out) if out else np.zeros((0, model.d))


def _witness(
    model: Model, x: np.ndarray, pos: int, sym: int, fa: np.ndarray, fb: np.ndarray
) -> Witness:
    alpha = model.alphabet
    ch = {m: float(_change(model, fa[None], fb[None], m)[0]) for m in METRICS}
    return Witness("".join(alpha[v] for v in x), pos + 1, alpha[sym], **ch)


def exhaustive_sensitivity(model: Model, n: int, metric: str = "logit") -> SensitivityResult:
    """The exact maximum over all |Σ|^n strings, positions and replacements (small n)."""
    _check_metric(metric)
    k = len(model.alphabet)
    total = k**n
    if total > 1 << 20:
        raise ParameterError(f"{total} strings for n = {n}", where="n", expected="|Σ|^n ≤ 2^20")
    t0 = time.perf_counter()
    idx = np.arange(total)
    digits = (idx[:, None] // (k ** np.arange(n)[None, :])) % k  # digit p = symbol at p
    acts = _batched_final(model, digits)
    mets = _metrics(model, acts)
    best = (-1.0, 0, 0, 0)
    for p in _positions(model, n):
        for shift in range(1, k):
            other_digit = (digits[:, p] + shift) % k
            other = idx + (other_digit - digits[:, p]) * k**p
            if metric == "activation":
                diff = np.linalg.norm(acts - acts[other], axis=-1)
            else:
                diff = np.abs(mets[metric] - mets[metric][other])
            j = int(np.argmax(diff))
            if diff[j] > best[0]:
                best = (float(diff[j]), j, p, int(other_digit[j]))
    value, j, p, sym = best
    other = j + (sym - digits[j, p]) * k**p
    w = _witness(model, digits[j], p, sym, acts[j], acts[other])
    return SensitivityResult(n, metric, value, w, "exhaustive", total, time.perf_counter() - t0)


def _balanced(rng, n: int, op: int, cl: int, k: int) -> np.ndarray:
    """A random Dyck word of length n over the symbols ``op``/``cl`` (other symbols of a
    k-letter alphabet unused): n/2 of each in random order, rotated to start after the
    lowest prefix height (the cycle lemma), so every prefix height is ≥ 0."""
    seq = np.array([op] * (n // 2) + [cl] * (n // 2))
    rng.shuffle(seq)
    height = np.cumsum(np.where(seq == op, 1, -1))
    cut = int(np.argmin(height)) + 1
    return np.roll(seq, -cut)


def search_sensitivity(
    model: Model,
    n: int,
    metric: str = "logit",
    *,
    seed: int = 0,
    restarts: int = 8,
    candidates: int = 32,
    max_steps: int = 200,
    time_budget: float | None = None,
) -> SensitivityResult:
    """Hill-climbing over (x, i, σ′) with restarts (untrusted; returns a real witness).

    Starts: all-σ strings, the alternating string, and random strings, with the
    exchanged position at the start, middle and random places.  A step evaluates
    ``candidates`` random moves (or every move when n·|Σ| is small) — change a
    context symbol x_j (j ≠ i), move i, change σ′ — in one batch and takes the best
    strict improvement; a restart ends when no sampled move improves twice in a row
    (every move, for small n) or after ``max_steps``.
    """
    _check_metric(metric)
    rng = np.random.default_rng(seed)
    k = len(model.alphabet)
    positions = np.array(_positions(model, n))
    if len(positions) == 0:
        raise ParameterError(f"no exchangeable position for n = {n}", where="n")
    t0 = time.perf_counter()
    evals = 0
    full = n * k <= 4 * candidates  # small n: enumerate the whole neighbourhood

    def value_of(xs: np.ndarray, ps: np.ndarray, ss: np.ndarray) -> tuple[np.ndarray, ...]:
        nonlocal evals
        xp = xs.copy()
        xp[np.arange(len(xs)), ps] = ss
        both = _batched_final(model, np.concatenate([xs, xp]))
        evals += 2 * len(xs)
        a, b = both[: len(xs)], both[len(xs) :]
        return _change(model, a, b, metric), a, b

    starts: list[tuple] = []
    mid = int(positions[len(positions) // 2])
    if not full:  # the best pairs of two structured families come first
        extra = max(2, restarts // 2)
        starts += _family_starts(model, n, positions, value_of, count=extra)
        starts += _boundary_starts(model, n, positions, value_of, rng, count=extra)
    for s in range(k):
        starts.append((np.full(n, s), int(positions[0])))
        starts.append((np.full(n, s), mid))
    ends = (int(positions[0]), mid, int(positions[-1]))
    starts += [(np.arange(n) % k, p) for p in ends]
    if "(" in model.alphabet and ")" in model.alphabet and n % 2 == 0:
        # balanced strings: exchanging one bracket moves them across Dyck membership, at
        # either end most of all (the first or last bracket unbalances every prefix/suffix)
        op, cl = model.alphabet.index("("), model.alphabet.index(")")
        for p in (*ends, int(rng.choice(positions))):
            starts.append((_balanced(rng, n, op, cl, k), p))
    elif k == 2:
        # a count threshold (majority-like models): the string where one more 1 flips the
        # decision, found by bisection on the count
        starts += _threshold_starts(model, n, positions, rng)
    while len(starts) < restarts + 2 * k + 1 + (0 if full else 2 * max(2, restarts // 2)):
        starts.append((rng.integers(0, k, n), int(rng.choice(positions))))

    use_inc = not full and _incremental_ok(model) and n >= 128
    off = model.input_offset()

    sym_tok = np.array([model.token_index[c] for c in model.alphabet])

    def encode_moves(x: np.ndarray, moves: list):
        """Each move as two strings (A = y, B = y[q := sq]), each the base x with
        two (distinct) token slots replaced."""
        pos_a, tok_a, pos_b, tok_b = [], [], [], []
        for y, q, sq in moves:
            diff = np.nonzero(y != x)[0]
            j = int(diff[0]) if len(diff) else (q + 1) % n
            j2 = (j + 1) % n
            pos_a.append((j + off, j2 + off))
            tok_a.append((sym_tok[y[j]], sym_tok[y[j2]]))
            yb = y.copy()
            yb[q] = sq
            jb = j if j != q else (q + 1) % n
            pos_b.append((jb + off, q + off))
            tok_b.append((sym_tok[yb[jb]], sym_tok[yb[q]]))
        return (np.array(pos_a), np.array(tok_a), np.array(pos_b), np.array(tok_b))

    def value_inc(cache: _FirstLayerCache, x: np.ndarray, moves: list) -> np.ndarray:
        nonlocal evals
        pa, ta, pb, tb = encode_moves(x, moves)
        fa, fb = cache.final(pa, ta), cache.final(pb, tb)
        evals += 2 * len(moves)
        return _change(model, fa, fb, metric)

    best = None
    starts = [
        (st[0], st[1], int(st[2]) if len(st) > 2 else int((st[0][st[1]] + 1) % k)) for st in starts
    ]
    if time_budget is not None and not full:
        # the most promising starts first, each with a share of the budget
        first = np.array(
            [value_of(np.array([x]), np.array([p]), np.array([s]))[0][0] for x, p, s in starts]
        )
        starts = [starts[j] for j in np.argsort(-first, kind="stable")]
    share = None if time_budget is None else time_budget / min(len(starts), 4)
    for start in starts:
        if time_budget is not None and time.perf_counter() - t0 > time_budget and best is not None:
            break
        x, p, s = start[0].copy(), start[1], start[2]
        cur, fa, fb = value_of(x[None], np.array([p]), np.array([s]))
        cur_v = float(cur[0])
        cache = _FirstLayerCache(model, _tokens(model, x[None])[0]) if use_inc else None
        stale = 0
        t_start = time.perf_counter()
        for _ in range(max_steps):
            now = time.perf_counter()
            if time_budget is not None and (now - t0 > time_budget or now - t_start > share):
                break
            moves = _moves(rng, n, k, x, p, s, positions, None if full else candidates)
            if use_inc:
                vals = value_inc(cache, x, moves)
            else:
                xs = np.array([m[0] for m in moves])
                ps = np.array([m[1] for m in moves])
                ss = np.array([m[2] for m in moves])
                vals, a, b = value_of(xs, ps, ss)
            j = int(np.argmax(vals))
            if vals[j] > cur_v:
                y, q, sq = moves[j]
                if use_inc:
                    diff = np.nonzero(y != x)[0]
                    if len(diff):
                        jj = int(diff[0])
                        jn = (jj + 1) % n
                        cache = cache.moved(
                            np.array([jj + off, jn + off]),
                            np.array([sym_tok[y[jj]], sym_tok[y[jn]]]),
                        )
                else:
                    fa, fb = a[j : j + 1], b[j : j + 1]
                x, p, s, cur_v = np.array(y), int(q), int(sq), float(vals[j])
                stale = 0
            else:
                stale += 1
                if full or stale >= 2:
                    break
        if use_inc:  # the reported value comes from the reference evaluator
            cur, fa, fb = value_of(x[None], np.array([p]), np.array([s]))
            cur_v = float(cur[0])
        if best is None or cur_v > best[0]:
            best = (cur_v, x.copy(), p, s, fa[0], fb[0])
    value, x, p, s, fa, fb = best
    w = _witness(model, x, p, s, fa, fb)
    return SensitivityResult(n, metric, value, w, "search", evals, time.perf_counter() - t0)


def _family_starts(model: Model, n: int, positions, value_of, count: int, grid: int = 12):
    """Starts from the family "background σ, one special τ at position p, exchanged to τ′"
    (every readout symbol), scanned on a grid of p: where one key can win the softmax
    this family holds the largest changes. Returns the ``count`` best as (x, p, τ′)."""
    k = len(model.alphabet)
    ps = np.unique(positions[np.linspace(0, len(positions) - 1, grid).astype(int)])
    off = model.input_offset()
    r = None if model.readout.pooled else model.readout.index(model.n_tokens(n)) - off
    lasts = range(k) if r is not None and 0 <= r < n else [None]
    xs, pp, ss = [], [], []
    for bg in range(k):
        for last in lasts:
            for tau in range(k):
                for tau2 in range(k):
                    if tau2 == tau:
                        continue
                    for p in ps:
                        x = np.full(n, bg)
                        if last is not None:
                            x[r] = last
                        x[p] = tau
                        xs.append(x)
                        pp.append(int(p))
                        ss.append(tau2)
    vals = []
    for s in range(0, len(xs), 256):
        vals.append(
            value_of(
                np.array(xs[s : s + 256]), np.array(pp[s : s + 256]), np.array(ss[s : s + 256])
            )[0]
        )
    order = np.argsort(-np.concatenate(vals))[:count]
    return [(xs[j], pp[j], ss[j]) for j in order]


def _threshold_starts(model: Model, n: int, positions, rng) -> list[tuple]:
    """Binary alphabets: with the exchangeable positions in a random order, x_c has the
    second symbol at the first c of them. If the decision differs at c = 0 and at the
    largest c, bisection on c finds x_c and x_{c+1} on either side of it, one exchange
    apart (≈ log₂ n forward passes)."""
    order = rng.permutation(positions)

    def x_of(c: int) -> np.ndarray:
        x = np.zeros(n, dtype=np.int64)
        x[order[:c]] = 1
        return x

    def logit(c: int) -> float:
        return float(_metrics(model, _batched_final(model, x_of(c)[None]))["logit"][0])

    lo, hi = 0, len(order)
    z_lo = logit(lo)
    if (z_lo > 0) == (logit(hi) > 0):
        return []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (logit(mid) > 0) == (z_lo > 0):
            lo = mid
        else:
            hi = mid
    return [(x_of(lo), int(order[lo]), 1)]


def _boundary_starts(model: Model, n: int, positions, value_of, rng, count: int, samples=96):
    """Starts near a decision boundary, where one change can flip the decision: the
    half-and-half strings σ^{n/2}τ^{n/2} (balanced counts, nested brackets) and random
    strings of varied symbol densities, each with its middle position exchanged, ranked
    by that change."""
    k = len(model.alphabet)
    xs = []
    for a in range(k):
        for b in range(k):
            if a != b:
                x = np.full(n, a)
                x[n // 2 :] = b
                xs.append(x)
    for _ in range(samples):
        xs.append(rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 0.5))))
    xs = np.array(xs)
    mid = int(positions[len(positions) // 2])
    ss = (xs[:, mid] + 1) % k
    vals = np.concatenate(
        [
            value_of(xs[s : s + 64], np.full(len(xs[s : s + 64]), mid), ss[s : s + 64])[0]
            for s in range(0, len(xs), 64)
        ]
    )
    order = np.argsort(-vals)[:count]
    return [(xs[j], mid, int(ss[j])) for j in order]


def _moves(rng, n, k, x, p, s, positions, count):
    """Neighbours of (x, i=p, σ′=s): all of them if ``count`` is None, else a sample."""
    out = []
    if count is None:
        for j in range(n):
            if j == p:
                continue
            for d in range(1, k):
                y = x.copy()
                y[j] = (y[j] + d) % k
                out.append((y, p, s))
        for q in positions:
            if q != p:
                for d in range(1, k):
                    out.append((x, int(q), int((x[q] + d) % k)))
        for d in range(1, k):
            if (s + d) % k != x[p]:
                out.append((x, p, (s + d) % k))
        return out
    for _ in range(count):
        kind = rng.random()
        if kind < 0.7:
            j = int(rng.integers(0, n))
            if j == p:
                continue
            y = x.copy()
            y[j] = (y[j] + rng.integers(1, k)) % k if k > 1 else y[j]
            out.append((y, p, s))
        else:
            q = int(rng.choice(positions))
            out.append((x, q, int((x[q] + rng.integers(1, k)) % k)))
    if not out:
        q = int(rng.choice(positions))
        out.append((x, q, int((x[q] + 1) % k)))
    return out


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}", expected=", ".join(METRICS))


def fit_exponent(ns: Sequence[int], values: Sequence[float]) -> float:
    """Least-squares slope of log(value) against log(n) (NaN if < 2 positive values)."""
    pts = [(math.log(n), math.log(v)) for n, v in zip(ns, values, strict=True) if v > 0]
    if len(pts) < 2:
        return math.nan
    xs, ys = np.array(pts).T
    return float(np.polyfit(xs, ys, 1)[0])


def sensitivity_profile(
    model: Model,
    ns: Sequence[int],
    metric: str = "logit",
    *,
    seed: int = 0,
    exhaustive_max: int = 12,
    restarts: int = 8,
    candidates: int = 32,
    time_budget: float | None = None,
    progress: bool = False,
) -> SensitivityProfile:
    """Largest change per n (exhaustive when |Σ|^n ≤ 2^exhaustive_max, else search)
    and the fitted decay exponent."""
    results = []
    it = ns
    if progress:
        from tqdm import tqdm

        it = tqdm(ns, desc="sensitivity", unit="n", file=__import__("sys").stderr)
    for n in it:
        if n < 1:
            raise ParameterError(f"length n = {n}", where="n", expected="n ≥ 1")
        if len(model.alphabet) ** n <= 2**exhaustive_max:
            results.append(exhaustive_sensitivity(model, n, metric))
        else:
            results.append(
                search_sensitivity(
                    model,
                    n,
                    metric,
                    seed=seed,
                    restarts=restarts,
                    candidates=candidates,
                    time_budget=time_budget,
                )
            )
    exp = fit_exponent([r.n for r in results], [r.value for r in results])
    return SensitivityProfile(model.name, metric, tuple(results), exp)
