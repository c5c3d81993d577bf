"""The trusted checker for restriction certificates (Hahn 2020, Theorem 1 and
Corollary 2 on one model and one length n) — part of **the trust boundary**.

``check(certificate, model)`` accepts only if every claim holds:

1. the certificate is for this model (content hash), this alphabet, this n, and the
   model has hard attention only;
2. the restrictions form a chain ρ₀ ≼ ρ₁ ≼ … ≼ ρ_L of length-n restrictions;
3. for each layer ℓ, each token position i and each assignment a of its *claimed*
   dependency set S_i (under ρ_ℓ), the activation y⁽ˡ⁾_i is determined by a: its own
   input y⁽ˡ⁻¹⁾_i is (S⁽ˡ⁻¹⁾_i ⊆ S_i), and for every head the attended position is —
   the best key among the positions whose tables are determined by a beats, by score
   or by the head's tie rule, *every* value of every other visible position. This is
   Lemma 4's conclusion on this instance (layer ℓ is computed by a c-transformer with
   the claimed tables), verified claim by claim — it does not search for dependency
   sets, and shares no code with the search's collapse (:mod:`attncert.hard.collapse`);
4. the decision depends only on the claimed output dependency set under ρ_L
   (Theorem 1 on this instance);
5. the misclassified strings are ρ_L-compatible, agree on that set, get the claimed
   decisions from an independent rigorous forward pass
   (:mod:`attncert.kernel.forward`), and differ in membership (Corollary 2).

Arithmetic: exact rationals for rational models; arb balls for models with LayerNorm
or GELU, precision escalating 53 → 4096 bits, ties decided structurally (equal
identity keys: the same computation on identical exact inputs). A comparison still
undecided at the cap rejects the certificate ("arithmetic" claim), never guesses.

Imports no solver and no search code (an import contract enforces this).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product

import numpy as np
from flint import arb

from attncert.arith.field import (
    Field,
    Interner,
    Number,
    Undecided,
    escalate,
    rows_of,
    to_floats,
)
from attncert.arith.filter import Enclosed, row_bounds
from attncert.arith.positionwise import (
    ModelMaps,
    attention_inputs,
    finish_layer,
    model_maps,
    projections,
    readout_terms,
)
from attncert.certificates.hard import Certificate
from attncert.kernel.forward import decide, is_rational, position_rows, word_rows
from attncert.model.spec import AttentionKind, Model
from attncert.restriction import Restriction


@dataclass(frozen=True)
class Failure:
    claim: str  # "model", "restrictions", "dependency_sets", "output", "misclassified", ...
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.claim} ({self.where}): {self.reason}"


@dataclass(frozen=True)
class CheckReport:
    accepted: bool
    failures: tuple[Failure, ...]
    facts: tuple[str, ...] = ()  # what was established, in words
    seconds: float = 0.0
    output_dependency: tuple[int, ...] = field(default=())
    arithmetic: str = ""  # "exact rationals" or "arb, P bits"

    def summary(self) -> str:
        if self.accepted:
            return "CHECKED: " + "; ".join(_short(f) for f in self.facts)
        return "REJECTED: " + "; ".join(_short(str(f)) for f in self.failures)


def _short(text: str, limit: int = 160) -> str:
    """Long quoted strings abbreviated (a 512-symbol input is not one line of a summary)."""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


_CHUNK = 128  # token positions whose query rows are scored in one float block


class _Reject(Exception):
    def __init__(self, failure: Failure):
        super().__init__(str(failure))
        self.failure = failure


def _fail(claim: str, where: str, reason: str):
    """Reject the certificate: ``claim`` failed at ``where`` because ``reason``."""
    raise _Reject(Failure(claim, where, reason))


def _fmt(positions) -> str:
    return "{" + ", ".join(str(u + 1) for u in sorted(positions)) + "}"


# --------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class _Table:
    """Kernel tables: y_t as a function of ``deps``: ``vid[r]`` is the value id for the
    assignment r (base-|Σ| digits, deps[0] most significant)."""

    deps: tuple[int, ...]
    vid: tuple[int, ...]


class _Values:
    """Every activation vector of one layer, with identity keys."""

    def __init__(self) -> None:
        self.vectors: list[list[Number]] = []
        self.keys: list[int] = []
        self._by_key: dict[int, int] = {}

    def add(self, vec: list[Number], key: int) -> int:
        got = self._by_key.get(key)
        if got is None:
            got = self._by_key[key] = len(self.vectors)
            self.vectors.append(vec)
            self.keys.append(key)
        return got


def _assignments(deps: Sequence[int], base: int):
    return product(range(base), repeat=len(deps))


def _row_of(deps: Sequence[int], sym: dict[int, int], base: int) -> int:
    r = 0
    for u in deps:
        r = r * base + sym[u]
    return r


def _restrict(table: _Table, rho: Restriction) -> _Table:
    """Substitute the positions ρ fixes."""
    if all(rho.is_free(u) for u in table.deps):
        return table
    alpha = {s: k for k, s in enumerate(rho.symbols)}
    base = len(rho.symbols)
    deps = tuple(u for u in table.deps if rho.is_free(u))
    vid = []
    for combo in _assignments(deps, base):
        sym = dict(zip(deps, combo, strict=True))
        full = {u: sym[u] if u in sym else alpha[rho.fixed[u]] for u in table.deps}
        vid.append(table.vid[_row_of(table.deps, full, base)])
    return _Table(deps, tuple(vid))


def _layer0(
    model: Model, rho: Restriction, fld: Field, intern: Interner
) -> tuple[list[_Table], _Values]:
    """Layer-0 tables: a free input position depends on itself (one value per free
    symbol), every other token is constant; values are the exact layer-0 rows."""
    vals = _Values()
    off = model.input_offset()
    tokens = model.encode(rho.complete({}))
    word = word_rows(model)
    pos = position_rows(model, len(tokens))
    tables = []
    for t, tok in enumerate(tokens):
        u = t - off
        free = 0 <= u < rho.n and rho.is_free(u)
        options = [model.token_index[s] for s in rho.symbols] if free else [tok]
        ids = []
        for o in options:
            exact = tuple(w + p for w, p in zip(word[o], pos[t], strict=True))
            vec = list(exact) if fld.exact else [arb(x) for x in exact]
            ids.append(vals.add(vec, intern.key_exact(exact)))
        tables.append(_Table((u,) if free else (), tuple(ids)))
    return tables, vals


# --------------------------------------------------------------------------- one layer
@dataclass(frozen=True, eq=False)
class _Projected:
    q: list[list[Number]]
    k: list[list[Number]]
    ov: list[list[Number]]
    qf: Enclosed
    kf: Enclosed


def _project(maps: ModelMaps, li: int, vals: _Values) -> list[_Projected]:
    fld = maps.field
    d = maps.model.d
    x = fld.matrix(len(vals.vectors), d, [c for v in vals.vectors for c in v])
    u = attention_inputs(maps, li, x)
    out = []
    for hi in range(len(maps.layers[li].heads)):
        q, k, ov = projections(maps, li, hi, u)
        out.append(
            _Projected(
                rows_of(q),
                rows_of(k),
                rows_of(ov),
                Enclosed(*to_floats(q)),
                Enclosed(*to_floats(k)),
            )
        )
    return out


def _check_layer(
    model: Model,
    maps: ModelMaps,
    ell: int,
    tables: list[_Table],
    vals: _Values,
    claimed: Sequence[Sequence[int]],
    rho: Restriction,
    intern: Interner,
    stats: dict[str, int] | None = None,
) -> tuple[list[_Table], _Values]:
    """Verify layer ℓ's claimed dependency sets and compute its tables (module docstring,
    claim 3). ``stats``, if given, counts the (head, position, assignment) cases and those
    whose attended key is a constant position (a blocker, S1 Definition 7)."""
    fld = maps.field
    li = ell - 1
    layer = model.layers[li]
    base = len(rho.symbols)
    n_tok = len(tables)
    d = model.d
    proj = _project(maps, li, vals)
    for i, s in enumerate(claimed):
        bad = [u for u in s if not rho.is_free(u)]
        if bad:
            _fail(
                "dependency_sets",
                f"layer {ell}, token position {i}",
                f"claims dependence on input {bad[0] + 1}, which ρ_{ell} fixes",
            )
        missing = set(tables[i].deps) - set(s)
        if missing:
            _fail(
                "dependency_sets",
                f"layer {ell}, token position {i}",
                f"the activation's own input depends on input position(s) {_fmt(missing)} "
                f"not in the claimed set {_fmt(s)}",
            )
    # which positions' tables are determined by an assignment of S_i
    by_input: dict[int, list[int]] = {}
    for m, t in enumerate(tables):
        for u in t.deps:
            by_input.setdefault(u, []).append(m)
    constant = np.array([not t.deps for t in tables])
    # every value of every position, grouped per position (for the undetermined maxima)
    pos_vids = [sorted(set(t.vid)) for t in tables]
    const_vids = {t.vid[0] for t in tables if not t.deps}
    grouping = _Grouping(pos_vids)
    x_rows: list[list[Number]] = []
    attn_rows: list[list[Number]] = []
    prov: list[tuple] = []
    spans = []
    bos = [rows_of(maps.layers[li].heads[hi].bo)[0] for hi in range(len(layer.heads))]
    zero = fld.zero()
    for c0 in range(0, n_tok, _CHUNK):
        chunk = range(c0, min(n_tok, c0 + _CHUNK))
        own_vids = sorted({v for i in chunk for v in pos_vids[i]})
        scores = [_ScoreRows(pr, own_vids, grouping) for pr in proj]
        for i in chunk:
            s_i = tuple(claimed[i])
            s_set = set(s_i)
            determined = constant.copy()
            for u in s_i:
                for m in by_input.get(u, ()):
                    if set(tables[m].deps) <= s_set:
                        determined[m] = True
            start = len(x_rows)
            for combo in _assignments(s_i, base):
                sym = dict(zip(s_i, combo, strict=True))
                own = tables[i].vid[_row_of(tables[i].deps, sym, base)]
                acc = [zero] * d
                attended_keys = []
                for hi, head in enumerate(layer.heads):
                    visible = head.mask.matrix(n_tok)[i]
                    if not visible.any():
                        acc = [a + b for a, b in zip(acc, bos[hi], strict=True)]
                        attended_keys.append(())
                        continue
                    where = (
                        f"layer {ell}, token position {i}, assignment "
                        f"{_show(s_i, combo, rho)}, head {hi}"
                    )
                    pick = _attend(
                        fld,
                        head.kind,
                        proj[hi],
                        scores[hi],
                        vals,
                        tables,
                        pos_vids,
                        own,
                        sym,
                        base,
                        visible,
                        determined,
                        where,
                    )
                    if stats is not None:
                        stats["cases"] = stats.get("cases", 0) + 1
                        stats["blocked"] = stats.get("blocked", 0) + (pick[0] in const_vids)
                    ov = proj[hi].ov
                    if len(pick) == 1:
                        mean = ov[pick[0]]
                    else:
                        inv = fld.num(1) / len(pick)
                        mean = [sum((ov[v][c] for v in pick), zero) * inv for c in range(d)]
                    acc = [a + m + b for a, m, b in zip(acc, mean, bos[hi], strict=True)]
                    attended_keys.append(tuple(sorted(vals.keys[v] for v in pick)))
                x_rows.append(vals.vectors[own])
                attn_rows.append(acc)
                prov.append((ell, vals.keys[own], tuple(attended_keys)))
            spans.append((start, len(x_rows)))
    x = fld.matrix(len(x_rows), d, [c for r in x_rows for c in r])
    a = fld.matrix(len(attn_rows), d, [c for r in attn_rows for c in r])
    out_rows = rows_of(finish_layer(maps, li, x, a))
    new_vals = _Values()
    new_tables = []
    for i, (lo, hi) in enumerate(spans):
        ids = []
        for r in range(lo, hi):
            vec = out_rows[r]
            key = intern.key_exact(tuple(vec)) if fld.exact else intern.key(prov[r])
            ids.append(new_vals.add(vec, key))
        new_tables.append(_Table(tuple(claimed[i]), tuple(ids)))
    return new_tables, new_vals


def _show(deps, combo, rho: Restriction) -> str:
    return (
        "{"
        + ", ".join(f"x{u + 1}={rho.symbols[c]}" for u, c in zip(deps, combo, strict=True))
        + "}"
    )


class _Grouping:
    """Value ids grouped by token position, for per-position maxima of score bounds."""

    def __init__(self, pos_vids: list[list[int]]):
        self.order = np.array([v for vids in pos_vids for v in vids], dtype=np.int64)
        sizes = np.array([len(v) for v in pos_vids], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


class _ScoreRows:
    """Float scores of some query values against every value, with rigorous bounds
    (:func:`attncert.arith.filter.score_block`), and per key position the largest upper
    bound over its values."""

    def __init__(self, pr: _Projected, query_vids: list[int], grouping: _Grouping):
        qv = np.array(query_vids, dtype=np.int64)
        q = pr.qf.take(qv)
        s = q.mid @ pr.kf.mid.T
        e = row_bounds(q, pr.kf)  # one bound per query row, valid against every key
        self.row_of = {v: t for t, v in enumerate(query_vids)}
        self.s, self.e = s, e
        self.up = np.maximum.reduceat(s[:, grouping.order], grouping.starts, axis=1) + e[:, None]

    def get(self, vid: int) -> tuple[np.ndarray, float, np.ndarray]:
        t = self.row_of[vid]
        return self.s[t], float(self.e[t]), self.up[t]


def _attend(
    fld: Field,
    kind: AttentionKind,
    pr: _Projected,
    rows: _ScoreRows,
    vals: _Values,
    tables: list[_Table],
    pos_vids: list[list[int]],
    own: int,
    sym: dict[int, int],
    base: int,
    visible: np.ndarray,
    determined: np.ndarray,
    where: str,
) -> list[int]:
    """The value ids a head attends to when the query is value ``own`` and the
    determined positions take their values under ``sym``; rejects if a position whose
    table is not determined could be attended."""
    s, e, up = rows.get(own)
    det_pos = np.nonzero(visible & determined)[0]
    und_pos = np.nonzero(visible & ~determined)[0]
    if not len(det_pos):
        m = int(und_pos[0])
        _fail(
            "dependency_sets",
            where,
            f"no key position is determined by the claimed set; position {m} "
            f"depends on input(s) {_fmt(tables[m].deps)}",
        )
    det_vid = [tables[m].vid[_row_of(tables[m].deps, sym, base)] for m in det_pos.tolist()]
    sd = s[np.array(det_vid)]
    near = np.nonzero(sd + 2 * e >= sd.max())[0].tolist()

    def score(v: int) -> Number:
        return sum((a * b for a, b in zip(pr.q[own], pr.k[v], strict=True)), fld.zero())

    def cmp(v: int, w: int) -> int:
        same = vals.keys[v] == vals.keys[w]
        return fld.compare(score(v), score(w), same, f"a score comparison at {where}")

    # the best determined key(s), by the head's rule
    best = [near[0]]
    for t in near[1:]:
        c = cmp(det_vid[t], det_vid[best[0]])
        if c > 0:
            best = [t]
        elif c == 0:
            best.append(t)
    best.sort(key=lambda t: det_pos[t])
    if kind is AttentionKind.LEFTMOST:
        winners = [best[0]]
    elif kind is AttentionKind.RIGHTMOST:
        winners = [best[-1]]
    else:
        winners = best
    b_pos = int(det_pos[winners[0]])
    b_vid = det_vid[winners[0]]
    b_lo = s[b_vid] - e
    # every value of every undetermined position must lose to the winner; the float
    # bounds settle all but the positions whose best upper bound reaches the winner
    for m in und_pos[up[und_pos] >= b_lo].tolist():
        for v in pos_vids[m]:
            if s[v] + e < b_lo:
                continue
            c = cmp(v, b_vid)
            if kind is AttentionKind.AVERAGE:
                loses = c < 0
            elif kind is AttentionKind.LEFTMOST:
                loses = c < 0 or (c == 0 and m > b_pos)
            else:
                loses = c < 0 or (c == 0 and m < b_pos)
            if not loses:
                _fail(
                    "dependency_sets",
                    where,
                    f"token position {m}, whose activation depends on input(s) "
                    f"{_fmt(tables[m].deps)} outside the claimed set, may be attended "
                    f"(it can score {'above' if c > 0 else 'level with'} the best "
                    f"determined key at position {b_pos})",
                )
    return [det_vid[t] for t in winners]


# --------------------------------------------------------------------------- the output
def _decisions(
    model: Model,
    maps: ModelMaps,
    tables: list[_Table],
    vals: _Values,
    pos: int,
    base: int,
    cap: int,
) -> tuple[tuple[int, ...], list[bool]]:
    """(deps, decision per assignment of deps) of the readout."""
    fld = maps.field
    d = model.d
    x = fld.matrix(len(vals.vectors), d, [c for v in vals.vectors for c in v])
    terms = readout_terms(maps, x)
    bias = maps.readout_bias
    if not model.readout.pooled:
        t = tables[pos]
        return t.deps, [fld.sign(terms[v] + bias, "the readout's sign") > 0 for v in t.vid]
    inv = fld.num(1) / len(tables)
    deps = tuple(sorted({u for t in tables for u in t.deps}))
    lo = fld.zero()
    hi = fld.zero()
    for t in tables:
        ts = [terms[v] for v in set(t.vid)]
        lo, hi = lo + _min(fld, ts), hi + _max(fld, ts)
    if lo * inv + bias > 0:
        return (), [True]
    if hi * inv + bias < 0:
        return (), [False]
    if len(deps) > cap:
        _fail(
            "output",
            "readout",
            f"the mean readout's sign is not fixed by the per-position ranges and may depend "
            f"on {len(deps)} free inputs (more than {cap} to enumerate)",
        )
    out = []
    for combo in _assignments(deps, base):
        sym = dict(zip(deps, combo, strict=True))
        total = sum((terms[t.vid[_row_of(t.deps, sym, base)]] for t in tables), fld.zero())
        out.append(fld.sign(total * inv + bias, "the mean readout's sign") > 0)
    return deps, out


def _min(fld: Field, xs):
    if fld.exact:
        return min(xs)
    out = xs[0]
    for x in xs[1:]:
        out = out.min(x)
    return out


def _max(fld: Field, xs):
    if fld.exact:
        return max(xs)
    out = xs[0]
    for x in xs[1:]:
        out = out.max(x)
    return out


def _clash(deps: tuple[int, ...], base: int, decisions: list[bool], claimed: set[int]):
    """None if the decision is a function of the claimed positions; else the positions
    where two assignments with different decisions differ."""
    keep = [t for t, u in enumerate(deps) if u in claimed]
    seen: dict[tuple[int, ...], tuple[int, ...]] = {}
    for combo, dec in zip(_assignments(deps, base), decisions, strict=True):
        key = tuple(combo[t] for t in keep)
        other = seen.setdefault(key, combo)
        if decisions[_index(other, base)] != dec:
            return {u for u, a, b in zip(deps, combo, other, strict=True) if a != b}
    return None


def _index(combo: Sequence[int], base: int) -> int:
    r = 0
    for c in combo:
        r = r * base + c
    return r


# --------------------------------------------------------------------------- the check
def check(cert: Certificate, model: Model) -> CheckReport:
    """Re-derive every claim of ``cert`` from ``model`` (module docstring)."""
    t0 = time.perf_counter()
    facts: list[str] = []
    try:
        _check_identity(cert, model)
        arithmetic, output = escalate(
            lambda fld: _check_claims(cert, model, fld, facts), rational=is_rational(model)
        )
        if cert.misclassified is not None:
            _check_misclassified(cert, model, output, facts)
    except _Reject as rej:
        return CheckReport(False, (rej.failure,), tuple(facts), time.perf_counter() - t0)
    except Undecided as err:
        failure = Failure("arithmetic", "precision", err.message)
        return CheckReport(False, (failure,), tuple(facts), time.perf_counter() - t0)
    return CheckReport(
        True, (), tuple(facts), time.perf_counter() - t0, cert.output_dependency, arithmetic
    )


def _check_identity(cert: Certificate, model: Model) -> None:
    if cert.model_sha256 != model.digest:
        _fail(
            "model",
            "model.sha256",
            f"certificate is for model {cert.model_sha256[:12]}…, this model hashes to "
            f"{model.digest[:12]}… (a different or changed model)",
        )
    if tuple(cert.alphabet) != tuple(model.alphabet):
        _fail("alphabet", "alphabet", f"{cert.alphabet} is not the model's {model.alphabet}")
    if not model.is_hard:
        _fail(
            "model", "layers", "the model has softmax heads; restrictions apply to hard attention"
        )
    L = model.num_layers
    if len(cert.restrictions) != L + 1:
        _fail(
            "restrictions",
            "restrictions",
            f"{len(cert.restrictions)} restrictions, expected L + 1 = {L + 1}",
        )
    for k, rho in enumerate(cert.restrictions):
        if rho.n != cert.n:
            _fail("restrictions", f"restrictions[{k}]", f"has length {rho.n}, but n = {cert.n}")
        if k and not rho.refines(cert.restrictions[k - 1]):
            prev = cert.restrictions[k - 1]
            bad = next(
                i
                for i in range(cert.n)
                if prev.fixed[i] is not None and prev.fixed[i] != rho.fixed[i]
            )
            _fail(
                "restrictions",
                f"restrictions[{k}] position {bad + 1}",
                f"does not refine restrictions[{k - 1}]: {prev.fixed[bad]!r} became "
                f"{rho.fixed[bad] or '*'!r}",
            )
    if len(cert.dependency_sets) != L:
        _fail(
            "dependency_sets",
            "dependency_sets",
            f"{len(cert.dependency_sets)} layers, expected {L}",
        )
    n_tok = model.n_tokens(cert.n)
    for ell, claimed in enumerate(cert.dependency_sets, start=1):
        if len(claimed) != n_tok:
            _fail(
                "dependency_sets",
                f"dependency_sets[{ell - 1}]",
                f"{len(claimed)} positions, expected {n_tok} tokens",
            )
        big = max((len(s) for s in claimed), default=0)
        if big > cert.max_deps:
            _fail(
                "dependency_sets",
                f"dependency_sets[{ell - 1}]",
                f"a claimed set has {big} inputs, more than the certificate's cap {cert.max_deps}",
            )
    pos = model.readout.index(n_tok)
    if cert.output_position != pos:
        _fail(
            "output", "output.position", f"decision position is {pos}, not {cert.output_position}"
        )


def _check_claims(
    cert: Certificate, model: Model, fld: Field, facts: list[str]
) -> tuple[str, tuple[tuple[int, ...], int, list[bool]]]:
    maps = model_maps(model, fld)
    intern = Interner()
    base = len(cert.restrictions[0].symbols)
    facts_here: list[str] = []
    tables, vals = _layer0(model, cert.restrictions[0], fld, intern)
    for ell in range(1, model.num_layers + 1):
        rho = cert.restrictions[ell]
        tables = [_restrict(t, rho) for t in tables]
        claimed = cert.dependency_sets[ell - 1]
        tables, vals = _check_layer(model, maps, ell, tables, vals, claimed, rho, intern)
        biggest = max((len(s) for s in claimed), default=0)
        facts_here.append(
            f"layer {ell}: every activation depends on ≤ {biggest} free inputs under ρ_{ell} "
            f"({rho.num_free}/{cert.n} free)"
        )
    final = cert.final_restriction
    tables = [_restrict(t, final) for t in tables]
    deps, decisions = _decisions(
        model, maps, tables, vals, cert.output_position, base, cert.max_deps
    )
    clash = _clash(deps, base, decisions, set(cert.output_dependency))
    if clash is not None:
        _fail(
            "output",
            "output.dependency_set",
            f"two inputs that agree on the claimed set {_fmt(cert.output_dependency)} get "
            f"different decisions; they differ only at input position(s) {_fmt(clash)}",
        )
    if cert.output_dependency:
        what = f"depends only on input positions {_fmt(cert.output_dependency)}"
    else:
        what = "is constant (it depends on no input position)"
    facts_here.append(
        f"the decision at n = {cert.n} {what} under ρ_L ({final.num_free}/{cert.n} free)"
    )
    facts.extend(facts_here)
    arithmetic = "exact rationals" if fld.exact else f"arb, {fld.prec} bits"
    return arithmetic, (deps, base, decisions)


def _check_misclassified(
    cert: Certificate,
    model: Model,
    output: tuple[tuple[int, ...], int, list[bool]],
    facts: list[str],
) -> None:
    from attncert.languages.registry import language as get_language

    m = cert.misclassified
    assert m is not None
    if cert.language is None:
        _fail("misclassified", "language", "misclassified strings given but no language named")
    try:
        lang = get_language(cert.language)
    except Exception as err:  # an unknown language name is a rejected claim
        _fail("misclassified", "language", str(err))
    rho = cert.final_restriction
    a, b = m.strings
    for k, s in enumerate(m.strings):
        if len(s) != cert.n:
            _fail("misclassified", f"strings[{k}]", f"has length {len(s)}, not n = {cert.n}")
        if not rho.compatible(s):
            bad = next(
                i for i in range(cert.n) if rho.fixed[i] is not None and rho.fixed[i] != s[i]
            )
            _fail(
                "misclassified",
                f"strings[{k}] position {bad + 1}",
                f"is {s[bad]!r} but the final restriction fixes it to {rho.fixed[bad]!r}",
            )
        if any(c not in rho.symbols for c in s):
            _fail(
                "misclassified",
                f"strings[{k}]",
                f"uses a symbol outside the free symbols {''.join(rho.symbols)}",
            )
    differ = [u for u in cert.output_dependency if a[u] != b[u]]
    if differ:
        _fail(
            "misclassified",
            "strings",
            f"the strings differ at position {differ[0] + 1} of the output dependency set",
        )
    deps, base, decisions = output
    alpha = {c: k for k, c in enumerate(rho.symbols)}
    for k, s in enumerate(m.strings):
        try:
            run = decide(model, s)
        except Undecided as err:
            _fail("misclassified", f"strings[{k}]", err.message)
        table = decisions[_row_of(deps, {u: alpha[s[u]] for u in deps}, base)]
        if run != table:
            _fail(
                "misclassified",
                f"strings[{k}]",
                f"the rigorous forward pass gives {run}, the collapsed tables {table}",
            )
        if run != m.decisions[k]:
            _fail(
                "misclassified", f"decisions[{k}]", f"the model answers {run}, not {m.decisions[k]}"
            )
        member = lang.contains(s)
        if member != m.membership[k]:
            _fail(
                "misclassified",
                f"membership[{k}]",
                f"{_short(s, 40)!r} ∈ {cert.language} is {member}",
            )
    if m.membership[0] == m.membership[1]:
        _fail(
            "misclassified",
            "membership",
            "both strings have the same membership: nothing is misclassified",
        )
    if m.decisions[0] != m.decisions[1]:
        _fail(
            "misclassified",
            "decisions",
            "the model answers the two strings differently: nothing is misclassified",
        )
    wrong = next(
        s for s, mem, dec in zip(m.strings, m.membership, m.decisions, strict=True) if mem != dec
    )
    facts.append(f"the model misclassifies {_short(wrong, 40)!r} for {cert.language}")
    outside = [u for u in rho.free_positions if u not in set(cert.output_dependency)]
    if cert.language in ("parity", "parity-odd") and outside:
        facts.append(
            f"flipping free position {outside[0] + 1} (outside the dependency set) pairs the "
            "ρ_L-compatible strings so that each pair gets one answer but has both parities: "
            "accuracy on them is exactly 1/2"
        )
