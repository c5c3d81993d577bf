"""Gadget rules of the all-length checker (trusted; issue 23): the temporal part of Yang et
al.'s constructions — Boolean FFNs (Lemma 9 rounding), ◁ / ▷ (Theorems 12, 13) and S / U
(Theorems 15, 16) in every regime — and Proposition 11's first/last marks.

A handler receives the checker's state (what is known about each coordinate, the error
bounds derived so far) and one gadget of the certificate; it checks the gadget against
the model's exact weights, adds the heads' closed-form error bounds
(:mod:`attncert.kernel.all_lengths.heads`) with the gadget's budget, checks the FFN by rule
FFN-BOX on every case of the gadget's lemma, and records the coordinate's new fact. Any
mismatch raises :class:`Reject` naming the field and the reason. Each handler's docstring
states its lemma.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flint import fmpq

from attncert.certificates.all_lengths import formula_from_json
from attncert.errors import SpecError
from attncert.kernel.all_lengths import heads as H
from attncert.kernel.all_lengths.closed_form import q_of, q_str
from attncert.kernel.all_lengths.view import (
    BoxFailure,
    Interval,
    ModelView,
    Val,
    affine_is,
    combo_value,
    ffn_affine,
    point,
)
from attncert.logic import syntax as s
from attncert.model.spec import Mask

__implements__ = (
    "Yang Lemma 9",
    "Yang Proposition 11",
    "Yang Theorem 12",
    "Yang Theorem 13",
    "Yang Theorem 15",
    "Yang Theorem 16",
)


class Reject(Exception):
    def __init__(self, where: str, reason: str):
        super().__init__(reason)
        self.where, self.reason = where, reason


@dataclass
class Derived:
    gadget: int
    bound: H.HeadBound
    budget: fmpq


@dataclass
class State:
    view: ModelView
    n0: int
    known: dict[int, Val] = field(default_factory=dict)
    derived: list[Derived] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    claimed: set[int] = field(default_factory=set)
    lookups: dict[s.CountTerm, dict[str, Any]] = field(default_factory=dict)


# ----- small helpers ------------------------------------------------------------------------


def get_int(g: dict, key: str) -> int:
    v = g.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise Reject(key, f"{v!r} is not an integer")
    return v


def get_ints(g: dict, key: str, k: int) -> list[int]:
    v = g.get(key)
    if not isinstance(v, list) or len(v) != k or not all(isinstance(x, int) for x in v):
        raise Reject(key, f"{v!r} is not a list of {k} integers")
    return v


def get_formula(g: dict) -> s.Formula:
    try:
        return formula_from_json(g.get("formula"), "formula")
    except SpecError as err:
        raise Reject("formula", err.message) from None


def get_budget(g: dict) -> fmpq:
    try:
        b = q_of(g.get("budget"), "budget")
    except SpecError as err:
        raise Reject("budget", err.message) from None
    if not (0 < b < fmpq(1, 2)):
        raise Reject("budget", f"{q_str(b)} is not in (0, 1/2)")
    return b


def bool_at(
    st: State, c: int, layer: int, want: s.Formula | None = None, what: str = ""
) -> s.Formula:
    """The formula coordinate ``c`` holds exactly from layer ``layer`` on (Reject otherwise;
    ``what`` names the gadget field in the message)."""
    where = f"{what} (coordinate {c})" if what else f"coordinate {c}"
    v = st.known.get(c)
    if v is None or v.formula is None:
        raise Reject(where, "does not hold a proved Boolean")
    if v.level > layer:
        raise Reject(where, f"holds {v.formula} only from layer {v.level} on")
    if want is not None and canon(v.formula) != canon(want):
        raise Reject(where, f"holds {v.formula}, not {want}")
    return v.formula


def require_writers(st: State, c: int, want: set[tuple]) -> None:
    got = st.view.writers.get(c)
    if got is None:
        raise Reject(f"coordinate {c}", "no such coordinate")
    if got != want:
        raise Reject(
            f"coordinate {c}",
            f"is written by {sorted(got)}, the construction says only {sorted(want)}",
        )


def claim(st: State, c: int) -> None:
    if c in st.claimed or c in st.known:
        raise Reject(f"coordinate {c}", "is already used by another gadget")
    st.claimed.add(c)


def pe_box(st: State, layer: int, coord: int, case: dict[str, Any], box: dict) -> None:
    """Add to ``box`` every positional coordinate the units writing ``coord`` read, at its
    exact value in ``case`` (Reject if the case does not determine it)."""
    lv = st.view.layers[layer]
    for u in lv.w2.get(coord, {}):
        for c in lv.units[u][0]:
            if c in box:
                continue
            v = st.known.get(c)
            if v is None or v.pe is None or v.level > layer:
                continue  # reported by ffn_affine as unbounded
            x = combo_value(v.combo, case)
            if x is None:
                raise Reject(f"FFN of layer {layer}", f"reads {c}, not determined in case {case}")
            box[c] = point(x)


def truth(f: s.Formula, env: dict[s.Formula, bool]) -> bool:
    """[f] from the values of the formulas in ``env`` by the Boolean connectives (and
    Compare(op) as a combination of its ≥-normal forms); KeyError if undetermined."""
    f = canon(f)
    if f in env:
        return env[f]
    if isinstance(f, s.Top):
        return True
    if isinstance(f, s.Bottom):
        return False
    if isinstance(f, s.Not):
        return not truth(f.arg, env)
    if isinstance(f, s.And):
        return truth(f.left, env) and truth(f.right, env)
    if isinstance(f, s.Or):
        return truth(f.left, env) or truth(f.right, env)
    if isinstance(f, s.Compare) and f.op is not s.CmpOp.GE:
        terms, b = f.normalized()
        neg = tuple((-k, t) for k, t in terms)
        ge, le = ge_formula(terms, b), ge_formula(neg, -b)
        op = f.op
        if op is s.CmpOp.GT:
            return truth(ge_formula(terms, b + 1), env)
        if op is s.CmpOp.LE:
            return truth(le, env)
        if op is s.CmpOp.LT:
            return truth(ge_formula(neg, -b + 1), env)
        both = truth(ge, env) and truth(le, env)
        return both if op is s.CmpOp.EQ else not both
    raise KeyError(f)


def leaves(f: s.Formula) -> set[s.Formula]:
    """The maximal subformulas of ``f`` below its Boolean connectives (in canonical form; an
    = / ≠ comparison contributes its two ≥ forms)."""
    f = canon(f)
    if isinstance(f, (s.Top, s.Bottom)):
        return set()
    if isinstance(f, s.Not):
        return leaves(f.arg)
    if isinstance(f, (s.And, s.Or)):
        return leaves(f.left) | leaves(f.right)
    if isinstance(f, s.Compare) and f.op in (s.CmpOp.EQ, s.CmpOp.NE):
        terms, b = f.normalized()
        return {ge_formula(terms, b), ge_formula(tuple((-k, t) for k, t in terms), -b)}
    return {f}


def ge_formula(terms: tuple[tuple[int, s.CountTerm], ...], b: int) -> s.Formula:
    """The comparison Σ a_k·t_k ≥ b as a formula."""
    return s.Compare(s.Linear(terms), s.CmpOp.GE, s.Linear((), b))


def ge_form(f: s.Compare) -> tuple[tuple[tuple[int, s.CountTerm], ...], int] | None:
    """(terms, b) with [f] = [Σ a·t ≥ b] for ≥, >, ≤, < (integer counts); None for =, ≠."""
    terms, b = f.normalized()
    neg = tuple((-k, t) for k, t in terms)
    return {
        s.CmpOp.GE: (terms, b),
        s.CmpOp.GT: (terms, b + 1),
        s.CmpOp.LE: (neg, -b),
        s.CmpOp.LT: (neg, -b + 1),
    }.get(f.op)


def canon(f: s.Formula) -> s.Formula:
    """A comparison by ≥, >, ≤ or < as its ≥-normal form, a comparison without count terms
    as ⊤ or ⊥ (what the compiler builds for it); any other formula unchanged."""
    if isinstance(f, s.Compare):
        terms, b = f.normalized()
        if not terms:
            return s.Top() if f.op.holds(0, b) else s.Bottom()
        g = ge_form(f)
        if g is not None:
            return ge_formula(*g)
    return f


# ----- gadgets ------------------------------------------------------------------------------


def _g_bool(st: State, k: int, g: dict) -> None:
    """FFN Boolean connective: the coordinate equals [formula] on every 0/1 assignment of
    its inputs (exact, FFN-BOX with point boxes) — stronger than needed, since some
    assignments may be impossible."""
    f, layer, out = get_formula(g), get_int(g, "layer"), get_int(g, "coord")
    inputs = g.get("inputs")
    if not isinstance(inputs, list) or not all(isinstance(c, int) for c in inputs):
        raise Reject("inputs", "not a list of coordinates")
    forms = [canon(bool_at(st, c, layer)) for c in inputs]
    free = sorted(leaves(f) - set(forms), key=str)  # leaves the inputs do not fix
    claim(st, out)
    require_writers(st, out, {("ffn", layer)})
    for bits in itertools.product((0, 1), repeat=len(inputs)):
        env: dict[s.Formula, bool] = {}
        for fm, b in zip(forms, bits, strict=True):
            if env.get(fm, bool(b)) != bool(b):
                break  # contradictory assignment (same formula twice)
            env[fm] = bool(b)
        else:
            values = set()
            for extra in itertools.product((False, True), repeat=len(free)):
                values.add(truth(f, {**env, **dict(zip(free, extra, strict=True))}))
            if len(values) != 1:
                raise Reject(
                    "formula", f"{f} is not determined by the inputs (it depends on {free[0]})"
                )
            want = values.pop()
            box = {c: point(b) for c, b in zip(inputs, bits, strict=True)}
            ffn_point(st, layer, out, box, fmpq(int(want)), f"inputs {bits}")
    st.known[out] = Val(layer + 1, formula=f)


def ffn_point(
    st: State, layer: int, out: int, box: dict, target: fmpq, case: str, forms=None, base=None
) -> None:
    try:
        got = ffn_affine(st.view.layers[layer], out, box, forms, base)
    except BoxFailure as err:
        raise Reject(f"FFN of layer {layer} → coordinate {out}, case {case}", str(err)) from None
    why = affine_is(got, box, target)
    if why:
        raise Reject(f"FFN of layer {layer} → coordinate {out}, case {case}", why)


def round_cases(
    st: State, layer: int, out: int, raw: int, b: fmpq, case: dict[str, Any], extra: dict
) -> None:
    """Lemma 9: the FFN rounds raw ∈ [v − b, v + b] to exactly v (v ∈ {0, 1})."""
    for v in (0, 1):
        box: dict[Any, Interval] = {raw: (fmpq(v) - b, fmpq(v) + b), **extra}
        pe_box(st, layer, out, case, box)
        ffn_point(st, layer, out, box, fmpq(v), f"{case}, hard value {v} ± budget {q_str(b)}")


def _g_prev_parity(st: State, k: int, g: dict) -> None:
    """◁φ / ▷φ, bounded encodings (Thm 12a, 13c). Lemma: the head preferring the parity of
    j* = i ∓ 1 has hard value φ at j* (its nearest key of that parity, Lemma 8); the
    other head returns a convex combination of 0/1 values, in [0, 1]; with no visible key
    (i = 1 for ◁, i = n for ▷) both return 0. The FFN must give φ(j*) in the first two
    cases and 0 in the last — which is [◁φ at i] / [▷φ at i]."""
    f, layer, out = get_formula(g), get_int(g, "layer"), get_int(g, "coord")
    if not isinstance(f, (s.Prev, s.Next)):
        raise Reject("formula", f"{f} is not ◁φ or ▷φ")
    prev = isinstance(f, s.Prev)
    hs, raws = get_ints(g, "heads", 2), get_ints(g, "raws", 2)
    a, par, tie = get_int(g, "value"), get_int(g, "parity"), get_int(g, "tie")
    bool_at(st, a, layer, f.arg)
    b = get_budget(g)
    parities = []
    for hi, raw in zip(hs, raws, strict=True):
        h = st.view.head(layer, hi)
        H.value_weight(h, raw, a)
        parity, hb = H.prev_parity(h, st.known, prev, par, tie)
        parities.append(parity)
        st.derived.append(Derived(k, hb, b))
        claim(st, raw)
        require_writers(st, raw, {("head", layer, hi)})
    if parities != [0, 1]:
        raise Reject("heads", f"the heads prefer parities {parities}, expected [even, odd]")
    claim(st, out)
    require_writers(st, out, {("ffn", layer)})
    edge = {"first": True, "last": False} if prev else {"first": False, "last": True}
    for p in (0, 1) if not prev else (1,):  # no visible key: i = 1 (odd) / i = n
        box = {raws[0]: point(0), raws[1]: point(0)}
        case = {**edge, "parity": p}
        pe_box(st, layer, out, case, box)
        ffn_point(st, layer, out, box, fmpq(0), f"no visible key, {case}")
    inner = {"first": False} if prev else {"last": False}
    for p in (0, 1):  # i of parity p; j* = i ∓ 1 has parity 1 − p
        active = 1 - p
        round_cases(
            st,
            layer,
            out,
            raws[active],
            b,
            {**inner, "parity": p},
            {raws[1 - active]: (fmpq(0), fmpq(1))},
        )
    st.known[out] = Val(layer + 1, formula=f)


def _since_common(st: State, g: dict) -> tuple[s.Formula, int, int, int, int, int, bool]:
    f, layer, out = get_formula(g), get_int(g, "layer"), get_int(g, "coord")
    if not isinstance(f, (s.Since, s.Until)):
        raise Reject("formula", f"{f} is not φ S ψ or φ U ψ")
    raw, guard, val = get_int(g, "raw"), get_int(g, "guard"), get_int(g, "value")
    bool_at(st, val, layer, f.right)
    gf = bool_at(st, guard, layer)
    ok = {s.Or(f.right, s.Not(f.left)), s.Or(s.Not(f.left), f.right)}
    if isinstance(f.left, s.Top):
        ok.add(f.right)
    if gf not in ok:
        raise Reject("guard", f"holds {gf}, not ψ ∨ ¬φ = {s.Or(f.right, s.Not(f.left))}")
    return f, layer, out, raw, guard, val, isinstance(f, s.Since)


def _since_ffn(st: State, layer: int, out: int, raw: int, b: fmpq, since: bool) -> None:
    """Lemma (since/until): let j* be the nearest position on the visible side (j < i for
    S, j > i for U) where χ = ψ ∨ ¬φ holds. If j* exists, φ S ψ (φ U ψ) holds at i iff
    ψ holds at j*: every position strictly between has φ ∧ ¬ψ, and a witness farther than
    j* would need φ at j*, where ¬ψ forces ¬φ. If no χ-position is visible, the formula is
    false and every visible ψ_j is 0 (ψ ⇒ χ), so the head's output is exactly 0."""
    _round_or_zero(st, layer, out, raw, b, "no χ-position visible")


def _round_or_zero(st: State, layer: int, out: int, raw: int, b: fmpq, empty: str) -> None:
    """The rounding FFN writing ``out`` from the head output ``raw``: it alone writes
    ``out``, gives 0 where the head sees no key (``empty`` says when), and rounds every
    value within the budget ``b`` of 0 or 1 (rule FFN-BOX)."""
    claim(st, out)
    require_writers(st, out, {("ffn", layer)})
    side = {"first": None, "last": None}
    box = {raw: point(0)}
    pe_box(st, layer, out, side, box)
    ffn_point(st, layer, out, box, fmpq(0), empty)
    round_cases(st, layer, out, raw, b, side, {})


def _g_since(st: State, k: int, g: dict, tie: bool) -> None:
    """φ S ψ / φ U ψ: the head's score shape (a tie-break term with bounded encodings,
    Thm 15a, 16a; a shift with unbounded ones, Thm 15b, 16b), then :func:`_since_ffn`."""
    f, layer, out, raw, guard, val, since = _since_common(st, g)
    b = get_budget(g)
    hi = get_int(g, "head")
    h = st.view.head(layer, hi)
    H.value_weight(h, raw, val)
    if tie:
        bound = H.since_tie(h, st.known, since, guard, get_int(g, "tie"))
    else:
        bound = H.since_shift(h, st.known, since, guard)
    st.derived.append(Derived(k, bound, b))
    claim(st, raw)
    require_writers(st, raw, {("head", layer, hi)})
    _since_ffn(st, layer, out, raw, b, since)
    st.known[out] = Val(layer + 1, formula=f)


def _g_since_tie(st: State, k: int, g: dict) -> None:
    """φ S ψ / φ U ψ, bounded encodings (Thm 15a, 16a): see :func:`_since_ffn`."""
    _g_since(st, k, g, tie=True)


def _g_since_shift(st: State, k: int, g: dict) -> None:
    """φ S ψ / φ U ψ, unbounded encodings (Thm 15b, 16b): see :func:`_since_ffn`."""
    _g_since(st, k, g, tie=False)


def _g_prev_shift(st: State, k: int, g: dict) -> None:
    """◁φ / ▷φ, unbounded encodings (Thm 12b, 13d). Lemma: the hard value is φ at
    j* = i ∓ 1 when it is visible (then [◁φ] = φ(j*)), and there is no visible key at
    i = 1 (◁) / i = n (▷), where the output is 0 = [◁φ at 1]."""
    f, layer, out = get_formula(g), get_int(g, "layer"), get_int(g, "coord")
    if not isinstance(f, (s.Prev, s.Next)):
        raise Reject("formula", f"{f} is not ◁φ or ▷φ")
    raw, a, hi = get_int(g, "raw"), get_int(g, "value"), get_int(g, "head")
    bool_at(st, a, layer, f.arg)
    b = get_budget(g)
    h = st.view.head(layer, hi)
    H.value_weight(h, raw, a)
    st.derived.append(Derived(k, H.prev_shift(h, st.known, isinstance(f, s.Prev)), b))
    claim(st, raw)
    require_writers(st, raw, {("head", layer, hi)})
    _round_or_zero(st, layer, out, raw, b, "no visible key")
    st.known[out] = Val(layer + 1, formula=f)


GADGETS: dict[str, Callable[[State, int, dict], None]] = {
    "bool": _g_bool,
    "prev-parity": _g_prev_parity,
    "prev-shift": _g_prev_shift,
    "since-tie": _g_since_tie,
    "since-shift": _g_since_shift,
}


def _g_proposition11(st: State, k: int, g: dict) -> None:
    """Proposition 11: a uniform head (exact for any temperature) averages (−1)^j. Under
    future masking a_i = mean_{j≤i} (−1)^j is −1 at i = 1 and lies in [−1/2, 0] for i ≥ 2
    (the partial sums of (−1)^j are −1 and 0); under past masking a_i = mean_{j≥i} (−1)^j
    is (−1)^n = ±1 at i = n and lies in [−1/2, 1/2] for i < n (the sum over j ≥ i is 0 or
    (−1)^n). The FFN must map the mark's values to 1 and the rest to 0."""
    f, layer, out = get_formula(g), get_int(g, "layer"), get_int(g, "coord")
    if f not in (s.First(), s.Last()):
        raise Reject("formula", f"{f} is not 'first' or 'last'")
    first = f == s.First()
    hi, mean, sign = get_int(g, "head"), get_int(g, "mean"), get_int(g, "sign")
    h = st.view.head(layer, hi)
    if not h.uniform or h.mask is not (Mask.FUTURE if first else Mask.PAST):
        raise Reject("head", f"{h.name} is not uniform {'future' if first else 'past'}-masked")
    sv = st.known.get(sign)
    if sv is None or sv.pe is None or sv.combo != {"(-1)^i": 1}:
        raise Reject("sign", f"coordinate {sign} is not (−1)^i")
    H.value_weight(h, mean, sign)
    claim(st, mean)
    require_writers(st, mean, {("head", layer, hi)})
    claim(st, out)
    require_writers(st, out, {("ffn", layer)})
    marks = [-1] if first else [-1, 1]
    for a in marks:
        ffn_point(st, layer, out, {mean: point(a)}, fmpq(1), f"mark, mean {a}")
    rest = (fmpq(-1, 2), fmpq(0)) if first else (fmpq(-1, 2), fmpq(1, 2))
    ffn_point(st, layer, out, {mean: rest}, fmpq(0), f"other positions, mean in {rest}")
    st.known[out] = Val(layer + 1, formula=f)


GADGETS["proposition11"] = _g_proposition11
