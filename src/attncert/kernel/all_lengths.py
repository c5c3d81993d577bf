"""The all-length agreement checker (trusted; issue 23): a compiled softmax transformer
computes a temporal-logic formula at every position of every string of every length
n ≥ N₀ (Yang, Strobl, Chiang, Angluin, Proposition 11, Theorems 12–21, Corollaries 17,
18, 22, 23, on the concrete model).

``check(cert, model)`` re-derives, from the model's exact weights and the certificate's
description of the construction (its *gadgets*), and accepts only if every step holds:

1. **identity** — the model's content hash is the certificate's; N₀ ≥ 2 and the bounded
   part covers exactly n < N₀ (that part is z3's, not the kernel's: it is re-checked by
   :mod:`attncert.proofcheck.kinds.all_lengths` and named in every verdict);
2. **gadgets, in order** — for each gadget its coordinates have exactly the writers the
   construction says (embedding, one head, one FFN — so nothing else interferes, at any
   layer), its heads' exact scores have the gadget's shape
   (:mod:`attncert.kernel.all_lengths_heads`, which also turns the score gaps into the
   closed-form error bound E(n)), and its FFN, evaluated exactly by rule FFN-BOX on every
   case the gadget's lemma distinguishes (:mod:`attncert.kernel.all_lengths_view`), gives
   exactly the formula's value whenever each head is within its stored ``budget`` of its
   hard value. The coordinate then holds [φ at i] exactly from its layer on, for every n;
3. **inequalities** — the list of "E(n) ≤ budget for every n ≥ N₀" (or every i ≥ 1) the
   gadgets produce is compared, field by field, with the stored list, and each stored
   proof is checked by rules R1–R5 (:mod:`attncert.kernel.closed_form`: arb points,
   Sturm sequences, a log lower bound, monotone atoms);
4. **readout** — the model accepts iff the root coordinate exceeds ½ at the last
   position, and the root coordinate holds the certificate's formula.

Each gadget's lemma (why its hard value is the formula's value) is stated in the
docstring of its handler; ``docs/all-lengths.md`` lists them with the paper's proofs.
No solver, no search code and no expression simplifier is imported.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flint import fmpq

from attncert.certificates.all_lengths import AllLengthsCertificate
from attncert.errors import SpecError
from attncert.kernel import all_lengths_heads as H
from attncert.kernel.all_lengths_view import (
    BoxFailure,
    Interval,
    ModelView,
    NotSupported,
    Val,
    affine_is,
    combo_value,
    embedding_val,
    ffn_affine,
    point,
)
from attncert.kernel.closed_form import (
    Atom,
    Inequality,
    ProofFailure,
    TailProof,
    check_inequality,
    q_of,
    q_str,
)
from attncert.logic import syntax as s
from attncert.logic.parser import parse
from attncert.model.spec import Model

__implements__ = (
    "Yang Lemma 6",
    "Yang Lemma 8",
    "Yang Lemma 9",
    "Yang Theorem 12",
    "Yang Theorem 13",
    "Yang Theorem 15",
    "Yang Theorem 16",
    "Yang Corollary 17",
    "Yang Corollary 18",
)


@dataclass(frozen=True)
class Failure:
    claim: str  # "identity", "gadget 3 (prev-parity)", "inequality g3:L0H0", "readout"
    where: str
    reason: str
    n: int | None = None  # the first length where an inequality fails, when known
    undecided: bool = False

    def line(self) -> str:
        return f"{self.claim} ({self.where}): {self.reason}"


@dataclass(frozen=True)
class AllLengthsReport:
    accepted: bool
    n0: int
    failures: tuple[Failure, ...]
    facts: tuple[str, ...]
    inequalities: int
    seconds: float
    first_failing_n: int | None = None

    @property
    def undecided(self) -> bool:
        return bool(self.failures) and all(f.undecided for f in self.failures)

    def summary(self) -> str:
        if self.accepted:
            return (
                f"accepted: {len(self.facts)} facts, {self.inequalities} inequalities checked "
                f"for every length from N0 = {self.n0} on ({self.seconds:.2f} s)"
            )
        return "rejected: " + "; ".join(f.line() for f in self.failures[:3])


class Reject(Exception):
    def __init__(self, where: str, reason: str):
        super().__init__(reason)
        self.where, self.reason = where, reason


@dataclass
class _Derived:
    gadget: int
    bound: H.HeadBound
    budget: fmpq


@dataclass
class _State:
    view: ModelView
    n0: int
    known: dict[int, Val] = field(default_factory=dict)
    derived: list[_Derived] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    claimed: set[int] = field(default_factory=set)


# ----- small helpers ------------------------------------------------------------------------


def _int(g: dict, key: str) -> int:
    v = g.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise Reject(key, f"{v!r} is not an integer")
    return v


def _ints(g: dict, key: str, k: int) -> list[int]:
    v = g.get(key)
    if not isinstance(v, list) or len(v) != k or not all(isinstance(x, int) for x in v):
        raise Reject(key, f"{v!r} is not a list of {k} integers")
    return v


def _formula(g: dict) -> s.Formula:
    try:
        return parse(g.get("formula", ""))
    except SpecError as err:
        raise Reject("formula", err.message) from None


def _budget(g: dict) -> fmpq:
    try:
        b = q_of(g.get("budget"), "budget")
    except SpecError as err:
        raise Reject("budget", err.message) from None
    if not (0 < b < fmpq(1, 2)):
        raise Reject("budget", f"{q_str(b)} is not in (0, 1/2)")
    return b


def _bool_at(st: _State, c: int, layer: int, want: s.Formula | None = None) -> s.Formula:
    v = st.known.get(c)
    if v is None or v.formula is None:
        raise Reject(f"coordinate {c}", "does not hold a proved Boolean")
    if v.level > layer:
        raise Reject(f"coordinate {c}", f"holds {v.formula} only from layer {v.level} on")
    if want is not None and v.formula != want:
        raise Reject(f"coordinate {c}", f"holds {v.formula}, not {want}")
    return v.formula


def _writers(st: _State, c: int, want: set[tuple]) -> None:
    got = st.view.writers.get(c)
    if got is None:
        raise Reject(f"coordinate {c}", "no such coordinate")
    if got != want:
        raise Reject(
            f"coordinate {c}",
            f"is written by {sorted(got)}, the construction says only {sorted(want)}",
        )


def _claim(st: _State, c: int) -> None:
    if c in st.claimed or c in st.known:
        raise Reject(f"coordinate {c}", "is already used by another gadget")
    st.claimed.add(c)


def _pe_box(st: _State, layer: int, coord: int, case: dict[str, Any], box: dict) -> None:
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


def ge_formula(terms: tuple[tuple[int, s.CountTerm], ...], b: int) -> s.Formula:
    """The comparison Σ a_k·t_k ≥ b as a formula."""
    return s.Compare(s.Linear(terms), s.CmpOp.GE, s.Linear((), b))


# ----- gadgets ------------------------------------------------------------------------------


def _g_bool(st: _State, k: int, g: dict) -> None:
    """FFN Boolean connective: the coordinate equals [formula] on every 0/1 assignment of
    its inputs (exact, FFN-BOX with point boxes) — stronger than needed, since some
    assignments may be impossible."""
    f, layer, out = _formula(g), _int(g, "layer"), _int(g, "coord")
    inputs = g.get("inputs")
    if not isinstance(inputs, list) or not inputs or not all(isinstance(c, int) for c in inputs):
        raise Reject("inputs", "not a non-empty list of coordinates")
    forms = [_bool_at(st, c, layer) for c in inputs]
    _claim(st, out)
    _writers(st, out, {("ffn", layer)})
    for bits in itertools.product((0, 1), repeat=len(inputs)):
        env: dict[s.Formula, bool] = {}
        for fm, b in zip(forms, bits, strict=True):
            if env.get(fm, bool(b)) != bool(b):
                break  # contradictory assignment (same formula twice)
            env[fm] = bool(b)
        else:
            try:
                want = truth(f, env)
            except KeyError as err:
                raise Reject(
                    "formula",
                    f"{f} is not a Boolean combination of the inputs ({err.args[0]} undetermined)",
                ) from None
            box = {c: point(b) for c, b in zip(inputs, bits, strict=True)}
            _ffn_point(st, layer, out, box, fmpq(int(want)), f"inputs {bits}")
    st.known[out] = Val(layer + 1, formula=f)


def _ffn_point(
    st: _State, layer: int, out: int, box: dict, target: fmpq, case: str, forms=None, base=None
) -> None:
    try:
        got = ffn_affine(st.view.layers[layer], out, box, forms, base)
    except BoxFailure as err:
        raise Reject(f"FFN of layer {layer} → coordinate {out}, case {case}", str(err)) from None
    why = affine_is(got, box, target)
    if why:
        raise Reject(f"FFN of layer {layer} → coordinate {out}, case {case}", why)


def _round_cases(
    st: _State, layer: int, out: int, raw: int, b: fmpq, case: dict[str, Any], extra: dict
) -> None:
    """Lemma 9: the FFN rounds raw ∈ [v − b, v + b] to exactly v (v ∈ {0, 1})."""
    for v in (0, 1):
        box: dict[Any, Interval] = {raw: (fmpq(v) - b, fmpq(v) + b), **extra}
        _pe_box(st, layer, out, case, box)
        _ffn_point(st, layer, out, box, fmpq(v), f"{case}, hard value {v} ± budget {q_str(b)}")


def _g_prev_parity(st: _State, k: int, g: dict) -> None:
    """◁φ / ▷φ, bounded encodings (Thm 12a, 13c). Lemma: the head preferring the parity of
    j* = i ∓ 1 has hard value φ at j* (its nearest key of that parity, Lemma 8); the
    other head returns a convex combination of 0/1 values, in [0, 1]; with no visible key
    (i = 1 for ◁, i = n for ▷) both return 0. The FFN must give φ(j*) in the first two
    cases and 0 in the last — which is [◁φ at i] / [▷φ at i]."""
    f, layer, out = _formula(g), _int(g, "layer"), _int(g, "coord")
    if not isinstance(f, (s.Prev, s.Next)):
        raise Reject("formula", f"{f} is not ◁φ or ▷φ")
    prev = isinstance(f, s.Prev)
    hs, raws = _ints(g, "heads", 2), _ints(g, "raws", 2)
    a, par, tie = _int(g, "value"), _int(g, "parity"), _int(g, "tie")
    _bool_at(st, a, layer, f.arg)
    b = _budget(g)
    parities = []
    for hi, raw in zip(hs, raws, strict=True):
        h = st.view.head(layer, hi)
        H.value_weight(h, raw, a)
        parity, hb = H.prev_parity(h, st.known, prev, par, tie)
        parities.append(parity)
        st.derived.append(_Derived(k, hb, b))
        _claim(st, raw)
        _writers(st, raw, {("head", layer, hi)})
    if parities != [0, 1]:
        raise Reject("heads", f"the heads prefer parities {parities}, expected [even, odd]")
    _claim(st, out)
    _writers(st, out, {("ffn", layer)})
    edge = {"first": True, "last": False} if prev else {"first": False, "last": True}
    for p in (0, 1) if not prev else (1,):  # no visible key: i = 1 (odd) / i = n
        box = {raws[0]: point(0), raws[1]: point(0)}
        case = {**edge, "parity": p}
        _pe_box(st, layer, out, case, box)
        _ffn_point(st, layer, out, box, fmpq(0), f"no visible key, {case}")
    inner = {"first": False} if prev else {"last": False}
    for p in (0, 1):  # i of parity p; j* = i ∓ 1 has parity 1 − p
        active = 1 - p
        _round_cases(
            st,
            layer,
            out,
            raws[active],
            b,
            {**inner, "parity": p},
            {raws[1 - active]: (fmpq(0), fmpq(1))},
        )
    st.known[out] = Val(layer + 1, formula=f)


def _since_common(st: _State, g: dict) -> tuple[s.Formula, int, int, int, int, int, bool]:
    f, layer, out = _formula(g), _int(g, "layer"), _int(g, "coord")
    if not isinstance(f, (s.Since, s.Until)):
        raise Reject("formula", f"{f} is not φ S ψ or φ U ψ")
    raw, guard, val = _int(g, "raw"), _int(g, "guard"), _int(g, "value")
    _bool_at(st, val, layer, f.right)
    gf = _bool_at(st, guard, layer)
    ok = {s.Or(f.right, s.Not(f.left)), s.Or(s.Not(f.left), f.right)}
    if isinstance(f.left, s.Top):
        ok.add(f.right)
    if gf not in ok:
        raise Reject("guard", f"holds {gf}, not ψ ∨ ¬φ = {s.Or(f.right, s.Not(f.left))}")
    return f, layer, out, raw, guard, val, isinstance(f, s.Since)


def _since_ffn(st: _State, layer: int, out: int, raw: int, b: fmpq, since: bool) -> None:
    """Lemma (since/until): let j* be the nearest position on the visible side (j < i for
    S, j > i for U) where χ = ψ ∨ ¬φ holds. If j* exists, φ S ψ (φ U ψ) holds at i iff
    ψ holds at j*: every position strictly between has φ ∧ ¬ψ, and a witness farther than
    j* would need φ at j*, where ¬ψ forces ¬φ. If no χ-position is visible, the formula is
    false and every visible ψ_j is 0 (ψ ⇒ χ), so the head's output is exactly 0."""
    _claim(st, out)
    _writers(st, out, {("ffn", layer)})
    side = {"first": None, "last": None}
    box = {raw: point(0)}
    _pe_box(st, layer, out, side, box)
    _ffn_point(st, layer, out, box, fmpq(0), "no χ-position visible")
    _round_cases(st, layer, out, raw, b, side, {})


def _g_since_tie(st: _State, k: int, g: dict) -> None:
    """φ S ψ / φ U ψ, bounded encodings (Thm 15a, 16a): see :func:`_since_ffn`."""
    f, layer, out, raw, guard, val, since = _since_common(st, g)
    b = _budget(g)
    hi = _int(g, "head")
    h = st.view.head(layer, hi)
    H.value_weight(h, raw, val)
    st.derived.append(_Derived(k, H.since_tie(h, st.known, since, guard, _int(g, "tie")), b))
    _claim(st, raw)
    _writers(st, raw, {("head", layer, hi)})
    _since_ffn(st, layer, out, raw, b, since)
    st.known[out] = Val(layer + 1, formula=f)


def _g_since_shift(st: _State, k: int, g: dict) -> None:
    """φ S ψ / φ U ψ, unbounded encodings (Thm 15b, 16b): see :func:`_since_ffn`."""
    f, layer, out, raw, guard, val, since = _since_common(st, g)
    b = _budget(g)
    hi = _int(g, "head")
    h = st.view.head(layer, hi)
    H.value_weight(h, raw, val)
    st.derived.append(_Derived(k, H.since_shift(h, st.known, since, guard), b))
    _claim(st, raw)
    _writers(st, raw, {("head", layer, hi)})
    _since_ffn(st, layer, out, raw, b, since)
    st.known[out] = Val(layer + 1, formula=f)


def _g_prev_shift(st: _State, k: int, g: dict) -> None:
    """◁φ / ▷φ, unbounded encodings (Thm 12b, 13d). Lemma: the hard value is φ at
    j* = i ∓ 1 when it is visible (then [◁φ] = φ(j*)), and there is no visible key at
    i = 1 (◁) / i = n (▷), where the output is 0 = [◁φ at 1]."""
    f, layer, out = _formula(g), _int(g, "layer"), _int(g, "coord")
    if not isinstance(f, (s.Prev, s.Next)):
        raise Reject("formula", f"{f} is not ◁φ or ▷φ")
    raw, a, hi = _int(g, "raw"), _int(g, "value"), _int(g, "head")
    _bool_at(st, a, layer, f.arg)
    b = _budget(g)
    h = st.view.head(layer, hi)
    H.value_weight(h, raw, a)
    st.derived.append(_Derived(k, H.prev_shift(h, st.known, isinstance(f, s.Prev)), b))
    _claim(st, raw)
    _writers(st, raw, {("head", layer, hi)})
    _claim(st, out)
    _writers(st, out, {("ffn", layer)})
    side = {"first": None, "last": None}
    box = {raw: point(0)}
    _pe_box(st, layer, out, side, box)
    _ffn_point(st, layer, out, box, fmpq(0), "no visible key")
    _round_cases(st, layer, out, raw, b, side, {})
    st.known[out] = Val(layer + 1, formula=f)


GADGETS: dict[str, Callable[[_State, int, dict], None]] = {
    "bool": _g_bool,
    "prev-parity": _g_prev_parity,
    "prev-shift": _g_prev_shift,
    "since-tie": _g_since_tie,
    "since-shift": _g_since_shift,
}


def register_gadget(kind: str, fn: Callable[[_State, int, dict], None]) -> None:
    """Add a gadget handler (the counting and Proposition 11 modules register theirs)."""
    GADGETS[kind] = fn


# ----- inequalities -------------------------------------------------------------------------


def _expected(st: _State) -> list[tuple[str, _Derived, Inequality]]:
    out = []
    for d in st.derived:
        hb = d.bound
        start = st.n0 if hb.var == "n" else 1
        iid = f"g{d.gadget}:L{hb.head[0]}H{hb.head[1]}"
        out.append((iid, d, Inequality(hb.var, hb.atoms, d.budget, start)))
    return out


def expected_inequalities(cert: AllLengthsCertificate, model: Model) -> list[dict[str, Any]]:
    """The inequalities the checker derives for ``cert``'s gadgets (without proofs): what
    the finder must prove. Raises :class:`Reject` like :func:`check` would."""
    st = _run_gadgets(cert, model)
    return [
        {
            "id": iid,
            "gadget": d.gadget,
            "head": list(d.bound.head),
            "what": d.bound.what,
            "inequality": ineq,
        }
        for iid, d, ineq in _expected(st)
    ]


def _compare(entry: dict, iid: str, d: _Derived, ineq: Inequality) -> None:
    """The stored inequality must be the derived one, field by field (named)."""
    simple = {
        "id": iid,
        "gadget": d.gadget,
        "head": list(d.bound.head),
        "what": d.bound.what,
        "var": ineq.var,
        "start": ineq.start,
        "bound": q_str(ineq.bound),
    }
    for key, want in simple.items():
        if entry.get(key) != want:
            raise Reject(key, f"stored {entry.get(key)!r}, derived from the model {want!r}")
    atoms = entry.get("atoms")
    if not isinstance(atoms, list) or len(atoms) != len(ineq.atoms):
        raise Reject("atoms", f"{len(ineq.atoms)} atoms derived from the model")
    for k, (raw, want) in enumerate(zip(atoms, ineq.atoms, strict=True)):
        try:
            got = Atom.from_json(raw, f"atoms[{k}]")
        except SpecError as err:
            raise Reject(f"atoms[{k}]", str(err)) from None
        for name, a, b in (
            ("coefficient P", got.p, want.p),
            ("exponent Phi", got.phi, want.phi),
            ("exponent Psi", got.psi, want.psi),
            ("power k", got.k, want.k),
        ):
            if a != b:
                raise Reject(
                    f"atoms[{k}]",
                    f"stored {name} differs from the one derived from the model's weights",
                )
    if entry.get("text") != ineq.text():
        raise Reject("text", f"stored {entry.get('text')!r}, derived {ineq.text()!r}")


def _run_gadgets(cert: AllLengthsCertificate, model: Model) -> _State:
    try:
        view = ModelView(model)
    except NotSupported as err:
        raise Reject("model", str(err)) from None
    st = _State(view, cert.n0)
    for c in range(view.d):
        v = embedding_val(view, c)
        if v is not None:
            st.known[c] = v
    for k, g in enumerate(cert.gadgets):
        kind = g.get("kind")
        fn = GADGETS.get(kind)
        if fn is None:
            raise Reject(f"gadget {k}", f"unknown kind {kind!r}")
        try:
            fn(st, k, g)
        except Reject as err:
            raise Reject(f"gadget {k} ({kind}): {err.where}", err.reason) from None
        except NotSupported as err:
            raise Reject(f"gadget {k} ({kind})", str(err)) from None
        st.facts.append(f"gadget {k} ({kind}): {g.get('formula', g.get('coord'))}")
    return st


def check(cert: AllLengthsCertificate, model: Model) -> AllLengthsReport:
    """Re-derive the certificate from the model (module docstring)."""
    t0 = time.perf_counter()
    fails: list[Failure] = []
    first_bad: int | None = None

    def done() -> AllLengthsReport:
        return AllLengthsReport(
            not fails,
            cert.n0,
            tuple(fails),
            tuple(st.facts) if st else (),
            len(cert.inequalities),
            time.perf_counter() - t0,
            first_bad,
        )

    st: _State | None = None
    if model.digest != cert.model_sha256:
        fails.append(
            Failure(
                "identity",
                "model",
                f"content hash {model.digest[:12]}… is not "
                f"the certificate's {cert.model_sha256[:12]}…",
            )
        )
        return done()
    if cert.n0 < 2:
        fails.append(
            Failure(
                "identity",
                "N0",
                f"N0 = {cert.n0}; the kernel's part starts at "
                "n ≥ 2 (n = 1 belongs to the bounded proof)",
            )
        )
        return done()
    bmax = (cert.bounded or {}).get("max_len")
    if bmax != cert.n0 - 1 or (cert.bounded or {}).get("verdict") != "proved":
        fails.append(
            Failure(
                "identity",
                "bounded",
                f"the bounded proof covers n ≤ {bmax} "
                f"({(cert.bounded or {}).get('verdict')}), not n < N0 = {cert.n0}",
            )
        )
        return done()
    try:
        st = _run_gadgets(cert, model)
    except Reject as err:
        fails.append(Failure("construction", err.where, err.reason))
        return done()
    # readout and root
    try:
        _check_readout(st, cert, model)
    except Reject as err:
        fails.append(Failure("readout", err.where, err.reason))
    expected = _expected(st)
    if len(cert.inequalities) != len(expected):
        fails.append(
            Failure(
                "inequalities",
                "count",
                f"{len(cert.inequalities)} stored, {len(expected)} derived from the model",
            )
        )
        return done()
    for entry, (iid, d, ineq) in zip(cert.inequalities, expected, strict=True):
        name = f"inequality {iid}"
        try:
            _compare(entry, iid, d, ineq)
            proof = TailProof.from_json(entry.get("proof"), f"{iid}.proof")
        except Reject as err:
            fails.append(Failure(name, err.where, err.reason))
            continue
        except SpecError as err:
            fails.append(Failure(name, "proof", str(err)))
            continue
        try:
            check_inequality(ineq, proof)
        except ProofFailure as err:
            fails.append(Failure(name, f"{err.rule} {err.where}", err.reason, err.x, err.undecided))
            if err.x is not None and ineq.var == "n":
                first_bad = err.x if first_bad is None else min(first_bad, err.x)
            continue
        st.facts.append(f"{name}: {ineq.text()}")
    return done()


def _check_readout(st: _State, cert: AllLengthsCertificate, model: Model) -> None:
    r = model.readout
    c = cert.coordinate
    if r.position != "last" or r.lm_weight is not None:
        raise Reject("readout", "the decision is not read at the last position")
    w = [fmpq(*float(x).as_integer_ratio()) for x in r.weight]
    if not (0 <= c < len(w)) or any(x != (1 if k == c else 0) for k, x in enumerate(w)):
        raise Reject("readout.weight", f"is not the indicator of coordinate {c}")
    if fmpq(*float(r.bias).as_integer_ratio()) != fmpq(-1, 2):
        raise Reject("readout.bias", "is not −1/2")
    try:
        f = parse(cert.formula)
    except SpecError as err:
        raise Reject("formula", err.message) from None
    v = st.known.get(c)
    if v is None or v.formula != f:
        raise Reject(f"coordinate {c}", f"holds {None if v is None else v.formula}, not {f}")
