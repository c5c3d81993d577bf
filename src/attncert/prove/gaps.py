"""Gap certificates of one attention row over the layer's possible inputs (step (b)).

For a query position i the head's scores are q_i·k_j with q_i, k_j, v_j terms over the
atoms of :mod:`attncert.prove.expr`. Three shapes cover the compiled constructions and
many hand-built models; anything else raises :class:`Unsupported`:

* **key options** (constant query): each key j ranges over the assignments of its own
  atoms (finite). The hard winner is the first entry of the exact descending order that
  matches the input (a decision list); a tie is possible iff two keys can share the top
  score. Gaps and the staircase use the independent-options relaxation (sound: every
  string gives one option per key).
* **query options** (constant keys, query atoms with few values, e.g. a count in
  [0, i−1]): enumerate the query's values; float scores with a rigorous rounding bound
  decide the winner, exact rationals settle near-ties.
* **sign** (constant keys on a line k_j = k₀ + λ_j u): the winner is the max- or min-λ
  group according to the sign of z = q·u; |z| ≥ δ is derived exactly (gcd argument) and
  proved by z3 per length (:func:`sign_query`).

Uniform heads (W_Qᵀ W_K = 0) are exact averages and become count atoms.
The result of a row is the hard output (a term), its minimal gap and a
:class:`~attncert.prove.intervals.Staircase` for the error bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from flint import fmpq

from attncert.model.spec import AttentionKind, Mask
from attncert.prove import expr as E
from attncert.prove.intervals import Staircase

ULP = 2.0**-52
MAX_KEY_OPTIONS = 64
MAX_QUERY_OPTIONS = 4096
NEGLIGIBLE_LEVELS = 40


class Unsupported(Exception):
    """The row does not fit a supported shape (the length falls back to enumeration)."""


class PossibleTie(Exception):
    """Two keys can attain the maximal score at ``row`` (no gap: Theorem 26 fails)."""

    def __init__(self, row: int, keys: tuple[int, ...], detail: str = ""):
        super().__init__(f"row {row}: keys {keys} can tie{': ' + detail if detail else ''}")
        self.row, self.keys, self.detail = row, keys, detail


@dataclass
class RowResult:
    outputs: list[E.Term]  # hard head output per value row
    stair: Staircase | None  # None: at most one visible key / uniform / hard
    eta: fmpq  # score perturbation bound (gaps shrink by 2η)
    method: str
    sign_check: tuple[E.Term, fmpq] | None = None  # (z, δ) to be proved by z3


def visible(mask: Mask, i: int, n: int) -> list[int]:
    return [j for j in range(1, n + 1) if mask.allowed(i, j)]


# ----- uniform heads -------------------------------------------------------------------------


def uniform_row(
    mask: Mask, i: int, n: int, values: dict[int, list[E.Term]], lit_of
) -> list[E.Term]:
    """Exact average of the value terms over the visible keys, via count atoms."""
    keys = visible(mask, i, n)
    dv = len(next(iter(values.values()))) if values else 0
    if not keys:
        return [E.const(0)] * dv
    out = []
    for r in range(dv):
        c0 = fmpq(0)
        coefs: dict[str, fmpq] = {}
        for j in keys:
            t = values[j][r]
            if not isinstance(t, E.Lin):
                raise Unsupported("uniform head over a non-affine value")
            c0 += t.const
            for v, c in t.coefs.items():
                lit = lit_of(v, j)
                if lit is None:
                    raise Unsupported("uniform head over a value that is not a 0/1 literal")
                if coefs.setdefault(lit, c) != c:
                    raise Unsupported("uniform head: coefficient varies with the position")
        acc: E.Term = E.const(c0)
        for lit, c in coefs.items():
            acc = E.add(acc, _window_count(mask, lit, i, n, lit_of), c)
        out.append(E.scale(acc, fmpq(1, len(keys))))
    return out


def _window_count(mask: Mask, lit: str, i: int, n: int, lit_of) -> E.Term:
    from attncert.prove.semantics import count_atom

    here = lit_of.var_at(lit, i)
    left = E.var(E.Var(count_atom(lit, "L", i, n))) if i > 1 else E.const(0)
    right = E.var(E.Var(count_atom(lit, "R", i, n))) if i < n else E.const(0)
    if mask is Mask.FUTURE:
        return E.add(left, E.var(here))
    if mask is Mask.FUTURE_STRICT:
        return left
    if mask is Mask.PAST:
        return E.add(right, E.var(here))
    if mask is Mask.PAST_STRICT:
        return right
    return E.add(E.add(left, right), E.var(here))


# ----- key options (constant query) ------------------------------------------------------------


@dataclass
class _Entry:
    score: fmpq
    key: int
    asg: dict
    vals: list[E.Term]


def key_options_row(
    i: int,
    q: list[fmpq],
    keys: dict[int, list[E.Term]],
    values: dict[int, list[E.Term]],
    kind: AttentionKind,
    cache: dict,
) -> tuple[list[E.Term], Staircase | None, int]:
    """Decision list and staircase for a constant query (see module docstring)."""
    order = sorted(keys)
    entries: list[_Entry] = []
    n_opts: dict[int, int] = {}
    qkey = tuple(q)
    for j in order:
        ck = (qkey, j)
        opts = cache.get(ck)
        if opts is None:
            kv = keys[j]
            ats = set()
            for t in kv:
                E.atoms(t, ats)
            if any(a.kind == "int" for a in ats):
                raise Unsupported("key depends on a count")
            if E.n_assignments(ats) > MAX_KEY_OPTIONS:
                raise Unsupported("too many key options")
            opts = []
            for asg in E.assignments(ats):
                sc = fmpq(0)
                for qr, t in zip(q, kv, strict=True):
                    if qr != 0:
                        sc += qr * E.ev(t, asg)
                vals = []
                for t in values[j]:
                    va = E.atoms(t)
                    vals.append(E.const(E.ev(t, asg)) if va <= set(asg) else t)
                opts.append((sc, asg, vals))
            cache[ck] = opts
        n_opts[j] = len(opts)
        for sc, asg, vals in opts:
            entries.append(_Entry(sc, j, asg, vals))
    if not entries:
        return [], None, 0
    # exact descending order; unique-hard kinds break ties by position
    if kind is AttentionKind.LEFTMOST:
        entries.sort(key=lambda e: (e.score, -e.key), reverse=True)
    elif kind is AttentionKind.RIGHTMOST:
        entries.sort(key=lambda e: (e.score, e.key), reverse=True)
    else:
        entries.sort(key=lambda e: e.score, reverse=True)
    unique_hard = kind in (AttentionKind.LEFTMOST, AttentionKind.RIGHTMOST)
    # minimum option score per key, top two over keys (feasibility of winners)
    mins: dict[int, fmpq] = {}
    for e in entries:
        m = mins.get(e.key)
        if m is None or e.score < m:
            mins[e.key] = e.score
    ranked = sorted(mins.items(), key=lambda kv: kv[1], reverse=True)
    top_key, top_min = ranked[0]
    second_min = ranked[1][1] if len(ranked) > 1 else None

    def others_floor(j: int) -> fmpq | None:
        return second_min if j == top_key else top_min

    # decision list up to the first always-present key; ties between keys at a reachable top
    dv = len(entries[0].vals)
    chain: list[tuple[dict, list[E.Term]]] = []
    anchors: list[int] = []  # indices of feasible winners
    terminal: list[_Entry] | None = None
    seen: dict[int, int] = {}
    k = 0
    while k < len(entries) and terminal is None:
        size = 1
        while (
            not unique_hard
            and k + size < len(entries)
            and entries[k + size].score == entries[k].score
        ):
            size += 1
        grp = entries[k : k + size]
        gkeys = {e.key for e in grp}
        floors = [others_floor(e.key) for e in grp]
        if len(gkeys) > 1 and all(f is None or grp[0].score >= f for f in floors):
            # two keys can share the top score: a tie (allowed only for always-present keys)
            if all(n_opts[j] == 1 for j in gkeys):
                terminal = grp
                anchors.append(k)
                break
            raise PossibleTie(i, tuple(sorted(gkeys)), f"score {grp[0].score}")
        for off, (e, f) in enumerate(zip(grp, floors, strict=True)):
            if f is None or e.score > f:
                anchors.append(k + off)
            seen[e.key] = seen.get(e.key, 0) + 1
            if seen[e.key] == n_opts[e.key]:  # every other option of this key failed
                terminal = [e]
                break
            chain.append((e.asg, e.vals))
        k += size
    if terminal is None:  # pragma: no cover - the key with the largest minimum is always hit
        raise Unsupported("decision list without a terminal entry")
    if len(terminal) == 1:
        out_terms = list(terminal[0].vals)
    else:
        out_terms = [
            E.scale(E.linear((fmpq(1), e.vals[r]) for e in terminal), fmpq(1, len(terminal)))
            for r in range(dv)
        ]
    for asg, vals in reversed(chain):
        cond = E._asg_cond(asg)
        out_terms = [E.ite(cond, vals[r], out_terms[r]) for r in range(dv)]
    if unique_hard or len(keys) == 1:
        return out_terms, None, len(terminal)
    # ----- gap staircase (independent-options relaxation) -----
    group = len(terminal)
    scores = [e.score for e in entries]
    n_keys = len(keys)
    min_gap: fmpq | None = None
    anchor_scores = []
    for a in anchors:
        e = entries[a]
        members = {x.key for x in terminal} if a == anchors[-1] and group > 1 else {e.key}
        nxt = None
        for b in range(a + 1, len(entries)):
            if entries[b].key not in members and entries[b].score < e.score:
                nxt = entries[b]
                break
        if nxt is None:
            continue
        g = e.score - nxt.score
        min_gap = g if min_gap is None or g < min_gap else min_gap
        anchor_scores.append(e.score)
    if min_gap is None:
        return out_terms, None, group
    spreads = _spreads(entries, dv)
    # distinct (key, score) pairs: options of one key with equal scores count once
    uniq = sorted({(e.key, e.score) for e in entries}, key=lambda ks: ks[1])
    den = math.lcm(*(int(sc.q) for _, sc in uniq), *(int(sc.q) for sc in anchor_scores))
    exact = den < 2**40 and all(abs(sc * den) < 2**60 for _, sc in uniq)
    if exact:  # integer scores: windows (s* − γ, s*) counted exactly
        f = np.array([int(sc * den) for _, sc in uniq], dtype=np.int64)
        af = np.array([int(sc * den) for sc in anchor_scores], dtype=np.int64)
    else:  # float scores, windows widened by a rigorous rounding margin (overcounts)
        f = np.array([float(sc) for _, sc in uniq])
        af = np.array([float(x) for x in anchor_scores])
        smax = max(abs(float(x)) for x in scores)
    gammas, counts = [], []
    for gamma in level_thresholds(min_gap):
        gammas.append(gamma)
        nxt_gamma = gamma * 2 if len(gammas) > FINE_LEVELS else min_gap * (len(gammas) + 1)
        if exact:
            gi = int(nxt_gamma * den)
            lo = np.searchsorted(f, af - gi, side="right")
            hi = np.searchsorted(f, af, side="right")
        else:
            mu = 8 * ULP * (smax + float(nxt_gamma)) + 1e-300
            lo = np.searchsorted(f, af - float(nxt_gamma) - mu, side="left")
            hi = np.searchsorted(f, af + mu, side="right")
        c = min(int(np.max(hi - lo)) - 1, n_keys - 1)
        counts.append(c)
        if c >= n_keys - 1:
            break
    counts[-1] = n_keys - 1
    stair = Staircase(tuple(gammas), tuple(counts), tuple([spreads] * len(gammas)), group)
    return out_terms, stair, group


FINE_LEVELS = 16


def level_thresholds(g1: fmpq):
    """γ₁·k for k = 1..FINE_LEVELS, then doubling (the staircase's gap levels)."""
    for k in range(1, FINE_LEVELS + 1):
        yield g1 * k
    g = g1 * FINE_LEVELS
    for _ in range(NEGLIGIBLE_LEVELS):
        g = g * 2
        yield g


def _spreads(entries: list[_Entry], dv: int) -> fmpq:
    """Max over value rows of (max value − min value) over all entries (exact)."""
    best = fmpq(0)
    for r in range(dv):
        lo = hi = None
        for e in entries:
            a, b = E.bounds(e.vals[r])
            lo = a if lo is None or a < lo else lo
            hi = b if hi is None or b > hi else hi
        if hi - lo > best:
            best = hi - lo
    return best


# ----- query options (constant keys) -------------------------------------------------------------


def query_options_row(
    i: int,
    qvec: list[E.Term],
    keys: dict[int, list[fmpq]],
    values: dict[int, list[fmpq]],
    kind: AttentionKind,
) -> tuple[list[E.Term], Staircase | None]:
    qats = set()
    for t in qvec:
        E.atoms(t, qats)
    if E.n_assignments(qats) > MAX_QUERY_OPTIONS:
        raise Unsupported("too many query values")
    order = sorted(keys)
    dv = len(next(iter(values.values())))
    if not order:
        return [E.const(0)] * dv, None
    opts = list(E.assignments(qats))
    qex = [[E.ev(t, asg) for t in qvec] for asg in opts]
    kex = [keys[j] for j in order]
    vex = [values[j] for j in order]
    qf = np.array([[float(x) for x in row] for row in qex])
    kf = np.array([[float(x) for x in row] for row in kex])
    vf = np.array([[float(x) for x in row] for row in vex])
    if not (np.all(np.isfinite(qf)) and np.all(np.isfinite(kf)) and np.all(np.isfinite(vf))):
        raise Unsupported("values outside the float range")
    dk = kf.shape[1]
    s = qf @ kf.T
    err = (dk + 4) * ULP * (np.abs(qf) @ np.abs(kf).T) * 1.001 + 1e-300
    n_keys = len(order)
    per_out: list[list[tuple[dict, E.Term]]] = [[] for _ in range(dv)]
    gaps_all = []
    wins = []
    for o, asg in enumerate(opts):
        w = int(np.argmax(s[o]))
        lo_w = s[o, w] - err[o, w]
        close = np.flatnonzero(s[o] + err[o] >= lo_w)
        if len(close) > 1:  # settle exactly
            ex = {
                c: sum((a * b for a, b in zip(qex[o], kex[c], strict=True)), fmpq(0)) for c in close
            }
            best = max(ex.values())
            top = [c for c in close if ex[c] == best]
            if len(top) > 1:
                if kind is AttentionKind.LEFTMOST:
                    top = [min(top)]
                elif kind is AttentionKind.RIGHTMOST:
                    top = [max(top)]
                elif len({tuple(kex[c]) for c in top}) > 1 or len({tuple(vex[c]) for c in top}) > 1:
                    raise PossibleTie(i, tuple(order[c] for c in top), "query options")
                else:
                    raise Unsupported("tied identical keys under query options")
            w = top[0]
            g = s[o, w] - s[o]  # float gaps for the others; exact for close ones
            glo = g - err[o, w] - err[o] - 2 * ULP * np.abs(g)
            for c in close:
                if c != w:
                    glo[c] = float(ex[w] - ex[c]) * (1 - 4 * ULP)
        else:
            g = s[o, w] - s[o]
            glo = g - err[o, w] - err[o] - 2 * ULP * np.abs(g)
        glo[w] = np.inf
        if np.any(glo[np.arange(n_keys) != w] <= 0):
            raise Unsupported("float filter could not certify a gap")
        gaps_all.append(glo)
        wins.append(w)
        for r in range(dv):
            per_out[r].append((asg, E.const(vex[w][r])))
    outputs = [E.table(per_out[r]) for r in range(dv)]
    if kind in (AttentionKind.LEFTMOST, AttentionKind.RIGHTMOST):
        return outputs, None
    if n_keys == 1:
        return outputs, None
    G = np.array(gaps_all)  # options × keys (lower bounds; winner = inf)
    Wv = np.array([vf[w] for w in wins])  # options × dv
    # |v_j − v_w| from floats: subtraction error + conversion error of both operands
    diff = np.abs(vf[None, :, :] - Wv[:, None, :])
    slack = 4 * ULP * (np.abs(vf)[None, :, :] + np.abs(Wv)[:, None, :])
    spread = np.max(diff * (1 + 4 * ULP) + slack, axis=2) + 1e-300
    gmin_f = float(np.min(G))
    gmin = _floor_q(gmin_f)
    gammas, counts, spreads = [], [], []
    for gamma in level_thresholds(gmin):
        gammas.append(gamma)
        nxt = gamma * 2 if len(gammas) > FINE_LEVELS else gmin * (len(gammas) + 1)
        inside = float(nxt) > G
        c = int(np.max(np.sum(inside, axis=1)))
        sp = float(np.max(np.where(inside, spread, 0.0)))
        counts.append(min(c, n_keys - 1))
        spreads.append(_ceil_q(sp))
        if c >= n_keys - 1:
            break
    counts[-1] = n_keys - 1
    spreads[-1] = _ceil_q(float(np.max(np.where(np.isfinite(G), spread, 0.0))))
    return outputs, Staircase(tuple(gammas), tuple(counts), tuple(spreads))


def _floor_q(x: float) -> fmpq:
    """An exact rational ≤ x (x is a float lower bound already; keep it exact)."""
    a, b = float(np.nextafter(x, -np.inf)).as_integer_ratio()
    return fmpq(a, b)


def _ceil_q(x: float) -> fmpq:
    a, b = float(np.nextafter(x, np.inf)).as_integer_ratio()
    return fmpq(a, b)


# ----- sign heads (1-d keys) ---------------------------------------------------------------------


def line_params(kvecs: list[list[fmpq]]) -> tuple[list[fmpq], list[fmpq]] | None:
    """(u, λ) with k_j = k_0 + λ_j·u for all j, or None if the keys are not collinear."""
    base = kvecs[0]
    u = None
    for kv in kvecs[1:]:
        if kv != base:
            u = [a - b for a, b in zip(kv, base, strict=True)]
            break
    if u is None:
        return [fmpq(0)] * len(base), [fmpq(0)] * len(kvecs)
    r0 = next(r for r, x in enumerate(u) if x != 0)
    lam = []
    for kv in kvecs:
        diff = [a - b for a, b in zip(kv, base, strict=True)]
        lj = diff[r0] / u[r0]
        if any(diff[r] != lj * u[r] for r in range(len(u))):
            return None
        lam.append(lj)
    return u, lam


def sign_delta(z: E.Term) -> fmpq:
    """Exact lower bound on |z| over integer/Boolean atoms: z·D ∈ C₀ + gℤ (gcd argument)."""
    z = E.normalize(z)
    if not isinstance(z, E.Lin):
        ats = E.atoms(z)
        if E.n_assignments(ats) > MAX_QUERY_OPTIONS:
            raise Unsupported("sign head with a non-affine query")
        return min(abs(E.ev(z, asg)) for asg in E.assignments(ats))
    dens = [int(z.const.q)] + [int(c.q) for c in z.coefs.values()]
    den = math.lcm(*dens)
    c0 = int(z.const * den)
    coefs = [int(c * den) for c in z.coefs.values()]
    if not coefs:
        return fmpq(abs(c0), den)
    g = 0
    for c in coefs:
        g = math.gcd(g, abs(c))
    r = c0 % g
    dist = min(r, g - r)
    return fmpq(dist, den)


def sign_row(
    i: int,
    qvec: list[E.Term],
    keys: dict[int, list[fmpq]],
    values: dict[int, list[E.Term]],
    zeta_of,
) -> tuple[list[E.Term], list[Staircase], E.Term, fmpq, fmpq]:
    """Hard output, staircases for z > 0 and z < 0, z, δ and the perturbation ζ."""
    order = sorted(keys)
    kvecs = [keys[j] for j in order]
    lp = line_params(kvecs)
    if lp is None:
        raise Unsupported("keys not on a line")
    u, lam = lp
    z = E.linear((u[r], qvec[r]) for r in range(len(u)))
    delta = sign_delta(z)
    zeta = zeta_of(u)
    if delta - zeta <= 0:
        raise PossibleTie(i, tuple(order), f"|z| ≥ {delta} not above its perturbation {zeta}")
    dv = len(values[order[0]])
    lmax, lmin = max(lam), min(lam)
    outs, stairs = [], []
    for sgn in (1, -1):
        ext = lmax if sgn > 0 else lmin
        grp = [j for j, lj in zip(order, lam, strict=True) if lj == ext]
        avg = [
            E.scale(E.linear((fmpq(1), values[j][r]) for j in grp), fmpq(1, len(grp)))
            for r in range(dv)
        ]
        outs.append(avg)
        # competitors: distinct Δλ levels (exact)
        levels: dict[fmpq, list[int]] = {}
        for j, lj in zip(order, lam, strict=True):
            if j in grp:
                continue
            levels.setdefault(abs(ext - lj), []).append(j)
        if not levels:
            stairs.append(Staircase((), (), (), len(grp)))
            continue
        gammas, counts, spreads = [], [], []
        cum = 0
        for dl in sorted(levels):
            cum += len(levels[dl])
            sp = fmpq(0)
            for r in range(dv):
                alo, ahi = E.bounds(avg[r])
                for j in levels[dl]:
                    blo, bhi = E.bounds(values[j][r])
                    sp = max(sp, bhi - alo, ahi - blo)
            gammas.append((delta - zeta) * dl)
            counts.append(cum)
            spreads.append(max(sp, spreads[-1]) if spreads else sp)
        stairs.append(Staircase(tuple(gammas), tuple(counts), tuple(spreads), len(grp)))
    cond = E.cmp(z, ">")
    out = [E.normalize(E.ite(cond, outs[0][r], outs[1][r])) for r in range(dv)]
    return out, stairs, z, delta, zeta
