"""Theorem 26's hypotheses at every length, derived from the weights (trusted; issue 23).

For an average-hard transformer built like the Appendix-E Dyck program
(:mod:`attncert.compile.dyck`) this module proves, for **every** length N (tokens) at once,
the three hypotheses :mod:`attncert.kernel.tieless.checker` needs:

* **H1** every non-uniform head has a unique maximal score with gap ≥ γ on every query with
  two or more visible keys (one or none: nothing to choose);
* **H2** every hard activation satisfies |y| ≤ P(N) for an explicit polynomial P;
* **H3** the hard logit takes finitely many values, none closer to 0 than μ.

It runs the transformer *symbolically*: every coordinate at a generic position i is an exact
polynomial over **atoms** — the token count N, a position's index I(p), [I(p) = 1] B(p),
U(p) = 1/(I(p) − 1) (0 at p = 1), symbol indicators S(a, p) (one-hot over the vocabulary) and
opaque integers Z(name, p) with a derived range. A position p is i, or the argmax of a head
for a query at another position (a path such as ``i → L3H0``). The rules, each proved in its
docstring:

* EMB — the embedding and the features 1, i, n, i², n·i, n·i², [i=1] are polynomials;
* MEAN — a uniform head under the strict future mask (W_QᵀW_K = 0) averages over j < i:
  a constant c gives c·(U·I − U), B(j) gives U, S(a, j) gives U·Z(#a<), Z ∈ [0, N];
* ARG-A (tie-break modulo N) — score = ±I(j) + N·(integer polynomial) + (query-only terms):
  two visible keys j ≠ j' in [1, N] differ by N·k ± (j − j') ≠ 0, an integer: gap ≥ 1;
* ARG-B (integer vertex) — score = −K·I(j)² + 2K·D·I(j) + (query-only terms), K a positive
  monomial with K ≥ k₀, D an integer polynomial: score = K(D² − (I(j) − D)²), so the
  visible key nearest D (consecutive integers) is the unique maximum, gap ≥ K ≥ k₀;
  the head's output is its value at the argmax position (atoms renamed to ``i → head``),
  times (1 − B(i)) under the strict mask (no key at i = 1: output 0);
* FFN — each output coordinate's increment Σ_u w_u·ReLU(pre_u) + b is a fresh Z whose range
  is computed exactly: finite atoms (symbols at each position, small-range Z, B) are
  enumerated; what remains must be s_u·z + b_u for one integer polynomial z, so the
  increment is piecewise linear in the integer z with integer breakpoints — evaluated at
  every integer between the breakpoints (±1), and constant beyond them (end slopes 0);
  otherwise a magnitude bound. It is an integer when every input and weight is;
* H2 — |polynomial| ≤ Σ|c|·Π hi(atom), hi(N) = hi(I) = N, hi(B, S, U) = 1, hi(Z) from its
  range; H3 — the readout's logit polynomial over finite atoms only, enumerated.

Models outside these patterns raise :class:`NotDerived` naming the head, coordinate or
feature; the all-length checker then states its result as conditional on H1–H3.
No solver, no search code and no expression simplifier is imported.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from flint import fmpq

from attncert.kernel.tieless.polynomial import (
    ONE,
    Atom,
    NPoly,
    Poly,
    add,
    atom,
    const,
    exact,
    is_integral,
    mat,
    matmul,
    mul,
    nadd,
    nmax,
    nmul,
    path_of,
    rebase,
    scale,
    subst,
    transpose,
)
from attncert.model.spec import AttentionKind, Mask, Model

__implements__ = ("Yang Lemma 24", "Yang Theorem 26")

ENUM_LIMIT = 20_000  # assignments one FFN range may enumerate


class NotDerived(Exception):
    """The model leaves the patterns this module can prove (the reason names where)."""


@dataclass(frozen=True)
class Derived:
    """H1–H3 for every N: gap γ, activation bound P(N) (coefficients by power), margin μ,
    and the logit's possible values."""

    gap: fmpq
    activation: tuple[tuple[int, fmpq], ...]
    margin: fmpq
    logits: tuple[fmpq, ...]
    heads: tuple[str, ...]  # the rule each head satisfies, e.g. "L3H0: ARG-A (gap 1)"

    def activation_at_most(self, coef: fmpq, power: int, n0: int) -> bool:
        """P(N) ≤ coef·N^power for every N ≥ n0 (each c_k·N^k ≤ c_k·n0^{k−power}·N^power
        when k ≤ power)."""
        if any(k > power for k, _ in self.activation):
            return False
        total = sum((c * fmpq(n0) ** (k - power) for k, c in self.activation), fmpq(0))
        return total <= coef


# ----- the symbolic transformer ---------------------------------------------------------------

FEATURES = {
    "1": const(1),
    "i": atom(("I", ("i",))),
    "n": atom(("N",)),
    "i^2": atom(("I", ("i",)), 2),
    "n*i": mul(atom(("N",)), atom(("I", ("i",)))),
    "n*i^2": mul(atom(("N",)), atom(("I", ("i",)), 2)),
    "[i=1]": atom(("B", ("i",))),
}


class _Run:
    def __init__(self, model: Model) -> None:
        if model.extensions:
            raise NotDerived("the model has " + ", ".join(model.extensions))
        if model.embedding.table is not None:
            raise NotDerived("a learned position table has no closed form in N")
        self.model = model
        self.vocab = tuple(model.embedding.vocab)
        self.z: dict[str, tuple[NPoly, list[fmpq] | None]] = {}  # name -> (|·| ≤, values)
        self.heads: list[str] = []
        self.gap: fmpq | None = None
        self.act: NPoly = {}

    # -- ranges
    def hi(self, x: Atom) -> NPoly:
        if x[0] in ("N", "I"):
            return {1: fmpq(1)}
        if x[0] in ("Z", "R"):
            return self.z[x[1]][0]
        return {0: fmpq(1)}

    def magnitude(self, p: Poly) -> NPoly:
        out: NPoly = {}
        for m, c in p.items():
            term: NPoly = {0: abs(c)}
            for x, e in m:
                for _ in range(e):
                    term = nmul(term, self.hi(x))
            out = nadd(out, term)
        return out

    def note(self, ys: list[Poly]) -> None:
        for y in ys:
            self.act = nmax(self.act, self.magnitude(y))

    def finite_values(self, x: Atom) -> list[fmpq] | None:
        if x[0] in ("B", "S"):
            return [fmpq(0), fmpq(1)]
        if x[0] in ("Z", "R"):
            vals = self.z[x[1]][1]
            if vals is not None and len(vals) <= 16:
                return vals
        return None

    # -- EMB
    def embed(self) -> list[Poly]:
        emb = self.model.embedding
        d = emb.d
        ys: list[Poly] = []
        labels = [f.label for f in emb.features]
        for lab in labels:
            if lab not in FEATURES:
                raise NotDerived(f"positional feature {lab!r} has no rule (EMB)")
        for c in range(d):
            col = [exact(v) for v in emb.word[:, c]]
            if len(set(col)) == 1:
                y = const(col[0])
            else:
                y = add(
                    *(
                        scale(atom(("S", a, ("i",))), v)
                        for a, v in zip(self.vocab, col, strict=True)
                    )
                )
            for k, lab in enumerate(labels):
                w = exact(emb.pos_weight[c, k])
                if w != 0:
                    y = add(y, scale(FEATURES[lab], w))
            ys.append(y)
        return ys

    # -- one layer
    def layer(self, li: int, ys: list[Poly]) -> list[Poly]:
        layer = self.model.layers[li]
        d = len(ys)
        total: list[Poly] = [{} for _ in range(d)]
        keys = [rebase(y, "i", ("j",)) for y in ys]
        for hi, h in enumerate(layer.heads):
            name = f"L{li}H{hi}"
            if h.kind is not AttentionKind.SOFTMAX and h.kind is not AttentionKind.AVERAGE:
                raise NotDerived(f"{name}: {h.kind.value} attention (needs average-hard/softmax)")
            if h.mask not in (Mask.FUTURE, Mask.FUTURE_STRICT):
                raise NotDerived(f"{name}: mask {h.mask.value} (rules cover future masks)")
            wqk = matmul(transpose(mat(h.w_q)), mat(h.w_k))
            wov = matmul(mat(h.w_o), mat(h.w_v))  # out[c] = Σ_k wov[c][k]·y[k]
            values = [
                add(*(scale(keys[k], wov[c][k]) for k in range(d) if wov[c][k] != 0))
                for c in range(d)
            ]
            if all(v == 0 for row in wqk for v in row):
                outs = self.mean(name, h.mask, values)
            else:
                self.argmax(name, h.mask, wqk, ys, keys)
                strict = h.mask is Mask.FUTURE_STRICT
                guard = add(const(1), scale(atom(("B", ("i",))), -1)) if strict else const(1)
                outs = [mul(guard, rebase(v, "j", ("i", name))) for v in values]
            total = [add(t, o) for t, o in zip(total, outs, strict=True)]
        after = [add(y, t) for y, t in zip(ys, total, strict=True)] if layer.residual else total
        self.note(after)
        if layer.ffn is None:
            return after
        return self.ffn(li, after)

    def mean(self, name: str, mask: Mask, values: list[Poly]) -> list[Poly]:
        """Rule MEAN (strict future mask: j < i, mean = U·Σ_{j<i})."""
        if mask is not Mask.FUTURE_STRICT:
            raise NotDerived(f"{name}: a uniform head under mask {mask.value} (MEAN needs j < i)")
        self.heads.append(f"{name}: MEAN")
        u = atom(("U", ("i",)))
        outs = []
        for c, v in enumerate(values):
            out: Poly = {}
            for m, coef in v.items():
                if m == ONE:  # Σ_{j<i} c = c·(I − 1): mean c·U·(I − 1)
                    term = mul(u, add(atom(("I", ("i",))), const(-1)))
                elif len(m) == 1 and m[0][1] == 1 and m[0][0][0] == "B":
                    term = u  # Σ_{j<i} [j = 1] = 1 for i ≥ 2 (U = 0 at i = 1)
                elif len(m) == 1 and m[0][1] == 1 and m[0][0][0] == "S":
                    zname = f"#{m[0][0][1]}<"
                    self.z[zname] = ({1: fmpq(1)}, None)  # a count of j < i: [0, N]
                    term = mul(u, atom(("Z", zname, ("i",))))
                else:
                    raise NotDerived(f"{name}: value coordinate {c} has a term MEAN cannot sum")
                out = add(out, scale(term, coef))
            outs.append(out)
        return outs

    def argmax(self, name: str, mask: Mask, wqk, ys: list[Poly], keys: list[Poly]) -> None:
        """H1 for a non-uniform head (queries i ≥ 2; at i = 1 at most one key is visible)."""
        d = len(ys)
        score: Poly = {}
        for a in range(d):
            row = [(b, wqk[a][b]) for b in range(d) if wqk[a][b] != 0]
            if row:
                kpart = add(*(scale(keys[b], w) for b, w in row))
                score = add(score, mul(ys[a], kpart))
        score = subst(score, lambda x: const(0) if x == ("B", ("i",)) else None)
        keyed = {m: c for m, c in score.items() if any(path_of(x)[:1] == ("j",) for x, _ in m)}
        gap = _arg_a(keyed) or _arg_b(keyed)
        if gap is None:
            raise NotDerived(f"{name}: its scores fit neither ARG-A nor ARG-B")
        rule, g = gap
        self.heads.append(f"{name}: {rule} (gap ≥ {g})")
        self.gap = g if self.gap is None else min(self.gap, g)

    def ffn(self, li: int, after: list[Poly]) -> list[Poly]:
        f = self.model.layers[li].ffn
        assert f is not None
        w1, b1, w2, b2 = (
            mat(f.w1),
            [exact(v) for v in f.b1],
            mat(f.w2),
            [exact(v) for v in f.b2],
        )
        pre = [
            add(
                const(b1[u]),
                *(scale(after[c], w1[u][c]) for c in range(len(after)) if w1[u][c] != 0),
            )
            for u in range(len(w1))
        ]
        out = list(after)
        for c in range(len(after)):
            units = [(u, w2[c][u]) for u in range(len(pre)) if w2[c][u] != 0]
            if not units and b2[c] == 0:
                if not self.model.layers[li].residual:
                    out[c] = {}  # without the residual the FFN's 0 replaces the coordinate
                continue
            zname = f"L{li}F{c}"
            mag, vals, integer = self.ffn_range(units, pre, b2[c])
            self.z[zname] = (mag, vals)
            delta = atom(("Z" if integer else "R", zname, ("i",)))
            out[c] = add(after[c], delta) if self.model.layers[li].residual else delta
        self.note(out)
        return out

    def ffn_range(
        self, units: list[tuple[int, fmpq]], pre: list[Poly], bias: fmpq
    ) -> tuple[NPoly, list[fmpq] | None, bool]:
        """Rule FFN: a magnitude bound of Σ_u w_u·ReLU(pre_u) + bias, its exact values when
        they are finitely many, and whether it is an integer."""
        atoms = sorted({x for u, _ in units for m in pre[u] for x, _ in m})
        finite = [(x, v) for x in atoms if (v := self.finite_values(x)) is not None]
        integral = all(w.q == 1 for _, w in units) and bias.q == 1
        integral = integral and all(is_integral(pre[u]) for u, _ in units)
        groups = _symbol_groups(finite, self.vocab)
        if _count(groups) <= ENUM_LIMIT:
            values: set[fmpq] = set()
            for combo in itertools.product(*groups):
                env = dict(kv for part in combo for kv in part)
                ps = [
                    (subst(pre[u], lambda x, env=env: const(env[x]) if x in env else None), w)
                    for u, w in units
                ]
                vals = _piecewise(ps, bias)
                if vals is None:
                    break
                values |= vals
            else:
                exact_ints = all(v.q == 1 for v in values)
                return {0: max(abs(v) for v in values)}, sorted(values), exact_ints
        hi = {0: abs(bias)}
        for u, w in units:
            hi = nadd(hi, {k: abs(w) * v for k, v in self.magnitude(pre[u]).items()})
        return hi, None, integral


def _symbol_groups(finite: list[tuple[Atom, list[fmpq]]], vocab: tuple[str, ...]) -> list[list]:
    """Enumeration groups: one-hot symbols at each position enumerate together."""
    groups: list[list] = []
    by_pos: dict[tuple[str, ...], list[Atom]] = {}
    for x, vals in finite:
        if x[0] == "S":
            by_pos.setdefault(x[2], []).append(x)
        else:
            groups.append([((x, v),) for v in vals])
    for xs in by_pos.values():
        groups.append([tuple((x, fmpq(int(x[1] == a))) for x in xs) for a in vocab])
    return groups


def _count(groups: list[list]) -> int:
    total = 1
    for g in groups:
        total *= len(g)
    return total


def _piecewise(ps: list[tuple[Poly, fmpq]], bias: fmpq) -> set[fmpq] | None:
    """The values of Σ w·ReLU(p) + bias where each p = s·z + b for one integer-valued
    polynomial z (integer coefficients and atoms): f is linear between the breakpoints
    −b/s and must be constant beyond them; it is evaluated at every integer in between."""
    z: Poly | None = None
    lin: list[tuple[fmpq, fmpq, fmpq]] = []  # (s, b, w)
    for p, w in ps:
        free = {m: c for m, c in p.items() if m != ONE}
        b = p.get(ONE, fmpq(0))
        if not free:
            lin.append((fmpq(0), b, w))
            continue
        if z is None:
            z = free
        ratio = {free[m] / z[m] for m in free if m in z}
        if set(free) != set(z) or len(ratio) != 1:
            return None
        lin.append((next(iter(ratio)), b, w))
    if z is None:
        return {sum((w * max(b, fmpq(0)) for _, b, w in lin), bias)}
    if not is_integral(z):
        return None
    up = sum((w * s for s, _, w in lin if s > 0), fmpq(0))
    down = sum((w * s for s, _, w in lin if s < 0), fmpq(0))
    if up != 0 or down != 0:
        return None  # unbounded in z
    bps = [-b / s for s, b, _ in lin if s != 0]
    lo, hi = int(min(bps).floor()) - 1, int(max(bps).ceil()) + 1
    return {sum((w * max(s * v + b, fmpq(0)) for s, b, w in lin), bias) for v in range(lo, hi + 1)}


def _arg_a(keyed: Poly) -> tuple[str, fmpq] | None:
    """Rule ARG-A: ±I(j) + N·(integer polynomial)."""
    tie = [(m, c) for m, c in keyed.items() if m == ((("I", ("j",)), 1),)]
    if len(tie) != 1 or abs(tie[0][1]) != 1:
        return None
    for m, c in keyed.items():
        if m == tie[0][0]:
            continue
        atoms = dict(m)
        if c.q != 1 or atoms.get(("N",), 0) < 1 or any(x[0] in "UR" for x in atoms):
            return None
    return "ARG-A", fmpq(1)


def _arg_b(keyed: Poly) -> tuple[str, fmpq] | None:
    """Rule ARG-B: −K·I(j)² + 2K·D·I(j), K a positive monomial, D integer."""
    jj = ("I", ("j",))
    sq: Poly = {}
    lin: Poly = {}
    for m, c in keyed.items():
        atoms = dict(m)
        e = atoms.pop(jj, 0)
        if any(path_of(x)[:1] == ("j",) for x in atoms) or e not in (1, 2):
            return None
        rest = tuple(sorted(atoms.items()))
        (sq if e == 2 else lin)[rest] = c
    if len(sq) != 1:
        return None
    ((km, kc),) = sq.items()
    kdict = dict(km)
    # K's atoms must be positive for i ≥ 2: N, I(·) ≥ 1 and U(i) = 1/(I(i) − 1) > 0
    if kc >= 0 or any(x != ("N",) and x != ("U", ("i",)) and x[0] != "I" for x in kdict):
        return None
    # K = −kc·N^a·U^b·I^c ≥ −kc when a ≥ b (N·U = N/(I − 1) ≥ 1 for i ≥ 2)
    if kdict.get(("N",), 0) < kdict.get(("U", ("i",)), 0):
        return None
    dpoly: Poly = {}
    for m, c in lin.items():
        md = dict(m)
        for x, e in kdict.items():
            md[x] = md.get(x, 0) - e
            if md[x] < 0:
                return None
            if md[x] == 0:
                del md[x]
        dpoly[tuple(sorted(md.items()))] = c / (-2 * kc)
    if not is_integral(dpoly):
        return None
    return "ARG-B", -kc


# ----- H1–H3 ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Symbolic:
    """The symbolic run: each layer's output coordinates (index 0: the embedding) as
    polynomials at the generic position i, and each opaque Z/R atom's magnitude bound and
    finite values (None: not finitely many)."""

    layers: tuple[tuple[Poly, ...], ...]
    ranges: dict[str, tuple[NPoly, list[fmpq] | None]]


def symbolic_run(model: Model) -> tuple[Symbolic, _Run]:
    run = _Run(model)
    ys = run.embed()
    run.note(ys)
    stages = [tuple(ys)]
    for li in range(len(model.layers)):
        ys = run.layer(li, ys)
        stages.append(tuple(ys))
    return Symbolic(tuple(stages), dict(run.z)), run


def derive(model: Model) -> Derived:
    """H1–H3 for every length, or :class:`NotDerived` naming what leaves the rules."""
    sym, run = symbolic_run(model)
    ys = list(sym.layers[-1])
    r = model.readout  # one position: a mean readout is among model.extensions, refused
    logit = add(
        const(exact(r.bias)),
        *(scale(ys[c], exact(w)) for c, w in enumerate(r.weight) if w != 0),
    )
    atoms = sorted({x for m in logit for x, _ in m})
    fin = [(x, run.finite_values(x)) for x in atoms]
    if any(v is None for _, v in fin):
        raise NotDerived("the logit depends on a quantity with no finite range (H3)")
    values: set[fmpq] = set()
    for combo in itertools.product(*_symbol_groups(fin, run.vocab)):  # type: ignore[arg-type]
        env = dict(kv for part in combo for kv in part)
        v = subst(logit, lambda x, env=env: const(env[x]))
        values.add(v.get(ONE, fmpq(0)))
    margin = min(abs(v) for v in values)
    if margin == 0:
        raise NotDerived("the logit can be exactly 0 (H3 needs a margin)")
    return Derived(
        gap=run.gap if run.gap is not None else fmpq(1),
        activation=tuple(sorted(run.act.items())),
        margin=margin,
        logits=tuple(sorted(values)),
        heads=tuple(run.heads),
    )


__all__ = [
    "Derived",
    "NotDerived",
    "Symbolic",
    "derive",
    "exact",
    "mat",
    "matmul",
    "symbolic_run",
    "transpose",
]
