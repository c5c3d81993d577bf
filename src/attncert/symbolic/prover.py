"""A small sympy prover for the claims of :mod:`attncert.symbolic.claims`.

Method (sound, incomplete): every variable is replaced by a positive parametrization of its
domain (η ∈ (0,½) ↦ 1/(2(1+t)), c ≥ 1 ↦ 1+t, …) or — following an untrusted
:class:`~attncert.symbolic.claims.Slack` hint whose coverage is re-checked — of the region a
hypothesis allows (k ≥ b ↦ b + s). The parametrized region contains the true one, so if the
conclusion's difference (or its log, for ``log_goal``) is then a fraction whose expanded
numerator and denominator are sums of evidently nonnegative terms, the claim holds for all
admissible values. Limits are computed with ``sympy.limit``. Anything else is "not proved".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from attncert.symbolic.claim_types import Claim, Domain, Kind, Slack

__all__ = ["ProofResult", "prove"]


@dataclass(frozen=True)
class ProofResult:
    proved: bool
    evidence: str


_counter = [0]


def _fresh(name: str, strict: bool) -> sp.Symbol:
    _counter[0] += 1
    if strict:
        return sp.Symbol(f"{name}_{_counter[0]}", positive=True)
    return sp.Symbol(f"{name}_{_counter[0]}", nonnegative=True)


def _domain_reparam(sym: sp.Symbol, dom: Domain) -> sp.Expr | None:
    t_pos = _fresh("t", True)
    t_nn = _fresh("t", False)
    lo, hi = dom.lo, dom.hi
    if dom.integer:
        if lo is not None and hi is None:
            return sp.Rational(lo) + t_nn if lo != 0 else t_nn
        return None
    if lo == 0 and hi is None:
        return None if dom.lo_open else t_nn
    if lo is not None and hi is None:
        return sp.Rational(lo) + (t_pos if dom.lo_open else t_nn)
    if lo is not None and hi is not None and dom.lo_open:
        t = t_pos if dom.hi_open else t_nn
        return sp.Rational(lo) + (sp.Rational(hi) - sp.Rational(lo)) / (1 + t)
    return None


def _slack_expr(sl: Slack, strict: bool) -> sp.Expr:
    s = _fresh("s", strict)
    b = sl.bound
    return {
        "ge": b + s,
        "le": b - s,
        "ratio_le": b / (1 + s),
        "ratio_ge": b * (1 + s),
        "eq": b,
    }[sl.form]


def _outside_expr(sl: Slack) -> sp.Expr:
    """A parametrization of the values the slack form excludes (for the coverage check)."""
    s = _fresh("o", not sl.strict)
    b = sl.bound
    return {
        "ge": b - s,
        "le": b + s,
        "ratio_le": b * (1 + s),
        "ratio_ge": b / (1 + s),
    }[sl.form]


def _terms_sign(expr: sp.Expr) -> tuple[bool, bool]:
    """(evidently ≥ 0, evidently > 0) for an expression, by expansion into terms."""
    if expr.is_positive:
        return True, True
    if expr.is_nonnegative:
        return True, False
    e = sp.expand(expr)
    terms = e.args if isinstance(e, sp.Add) else (e,)
    nonneg = all(t.is_nonnegative for t in terms)
    pos = nonneg and any(t.is_positive for t in terms)
    return nonneg, pos


def _evidently(diff: sp.Expr, strict: bool) -> tuple[bool, str]:
    """Is ``diff`` evidently ≥ 0 (> 0 if strict)? Returns (ok, numerator shown as evidence)."""
    e = sp.together(sp.expand_log(diff))
    num, den = sp.fraction(sp.factor_terms(e))
    n_nn, n_pos = _terms_sign(num)
    _d_nn, d_pos = _terms_sign(den)
    if d_pos and (n_pos if strict else n_nn):
        return True, f"numerator {sp.sstr(sp.expand(num))[:160]} ≥ 0, denominator > 0"
    n2_nn, n2_pos = _terms_sign(-num)
    _d2_nn, d2_pos = _terms_sign(-den)
    if d2_pos and (n2_pos if strict else n2_nn):
        return True, "numerator ≤ 0 and denominator < 0"
    return False, f"could not sign {sp.sstr(sp.expand(num))[:160]}"


def _orient(rel: sp.Basic) -> tuple[sp.Expr, sp.Expr, bool] | None:
    """(big, small, strict) for big ≥ small (or >)."""
    if isinstance(rel, sp.GreaterThan):
        return rel.lhs, rel.rhs, False
    if isinstance(rel, sp.StrictGreaterThan):
        return rel.lhs, rel.rhs, True
    if isinstance(rel, sp.LessThan):
        return rel.rhs, rel.lhs, False
    if isinstance(rel, sp.StrictLessThan):
        return rel.rhs, rel.lhs, True
    return None


def _goal(rel: sp.Basic, log_goal: bool) -> tuple[bool, str]:
    if rel is sp.true:
        return True, "trivially true"
    if rel is sp.false:
        return False, "reduces to False"
    if isinstance(rel, sp.And):
        notes = []
        for a in rel.args:
            ok, why = _goal(a, log_goal)
            if not ok:
                return False, why
            notes.append(why)
        return True, "; ".join(notes)
    if isinstance(rel, sp.Eq):
        d = rel.lhs - rel.rhs
        for f in (sp.simplify, lambda x: sp.simplify(sp.powsimp(sp.expand_power_base(x)))):
            if f(d) == 0:
                return True, "difference simplifies to 0"
        return False, "difference does not simplify to 0"
    o = _orient(rel)
    if o is None:
        return False, f"unsupported relation {rel}"
    big, small, strict = o
    if log_goal:
        if not (big.is_positive and small.is_positive):
            return False, "log_goal: sides not evidently positive"
        big, small = sp.expand_log(sp.log(big)), sp.expand_log(sp.log(small))
        return _evidently(big - small, strict)
    ok, why = _evidently(big - small, strict)
    if ok:
        return ok, why
    # big − small = P − N with P, N sums of evidently positive terms: compare log P, log N
    # (log is strictly increasing on (0, ∞))
    terms = sp.Add.make_args(sp.expand(big - small))
    pos = [t for t in terms if t.is_positive]
    neg = [-t for t in terms if (-t).is_positive]
    if pos and neg and len(pos) + len(neg) == len(terms):
        P, N = sp.Add(*pos), sp.Add(*neg)
        ok2, why2 = _evidently(sp.expand_log(sp.log(P)) - sp.expand_log(sp.log(N)), strict)
        if ok2:
            return True, f"in logs ({sp.sstr(P)[:40]} vs {sp.sstr(N)[:40]}): {why2}"
    return ok, why


def prove(claim: Claim, fixed: Mapping[str, Fraction] | None = None) -> ProofResult:
    """Try to prove ``claim`` for all admissible values of its non-``fixed`` variables."""
    fixed = dict(fixed or {})
    names = {v.name for v in claim.parameters}
    fsubs = {
        v.symbol: sp.Rational(str(Fraction(fixed[v.name])))
        for v in claim.parameters
        if v.name in fixed
    }
    # also substitute fixed values of symbols that appear but are not declared as variables
    for sym in claim.conclusion.free_symbols | set().union(
        *(h.free_symbols for h in claim.hypotheses)
    ):
        if sym.name in fixed and sym.name not in names:
            fsubs[sym] = sp.Rational(str(Fraction(fixed[sym.name])))
    if claim.kind is Kind.ORACLE:
        return ProofResult(False, "decided by finite computation only")
    if claim.kind is Kind.CUSTOM:
        return CUSTOM_PROOFS[claim.custom]()
    if claim.kind is Kind.LIMIT:
        lim = claim.conclusion.lhs
        expr, var = lim.args[0].xreplace(fsubs), lim.args[1]
        try:
            val = sp.limit(expr, var, sp.oo)
        except Exception as err:
            return ProofResult(False, f"sympy.limit failed: {err}")
        ok = sp.simplify(val - claim.conclusion.rhs) == 0
        return ProofResult(ok, f"sympy.limit(…, k, oo) = {val}")
    hyps = [h.xreplace(fsubs) for h in claim.hypotheses]
    concl = claim.conclusion.xreplace(fsubs)
    free_vars = [v for v in claim.parameters if v.name not in fixed]
    by_name = {v.name: v for v in free_vars}
    # domain parametrizations (used for vars without slack, and in coverage checks)
    dom: dict[sp.Symbol, sp.Expr] = {}
    for v in free_vars:
        rp = v.reparam if v.reparam is not None else _domain_reparam(v.symbol, v.domain)
        if rp is not None:
            dom[v.symbol] = rp
    slacks = [sl for sl in claim.slacks if sl.var in by_name]
    # hint sanity: acyclic order
    seen: set[str] = set()
    for sl in slacks:
        b = sl.bound.xreplace(fsubs)
        if sl.var in {s.name for s in b.free_symbols} or seen & {s.name for s in b.free_symbols}:
            return ProofResult(False, f"slack hint for {sl.var} is not in substitution order")
        seen.add(sl.var)
    steps = []
    for sl in slacks:
        var = by_name[sl.var].symbol
        b = sl.bound.xreplace(fsubs)
        slb = Slack(sl.var, sl.form, b, sl.strict)
        if sl.form == "eq":
            if not any(
                isinstance(h, sp.Eq) and sp.simplify(h.lhs - h.rhs - (var - b)) == 0 for h in hyps
            ) and not any(
                isinstance(h, sp.Eq) and sp.simplify(h.lhs - h.rhs + (var - b)) == 0 for h in hyps
            ):
                return ProofResult(False, f"no hypothesis {var} = {b}")
        else:
            outside = _outside_expr(slb)
            others = {s: e for s, e in dom.items() if s != var}
            covered = False
            for h in hyps:
                hv = h.xreplace({var: outside}).xreplace(others)
                if hv is sp.false:
                    covered = True
                    break
                if not isinstance(hv, sp.core.relational.Relational):
                    continue
                ok, _ = _goal(sp.Not(hv), False)
                if ok:
                    covered = True
                    break
            if not covered:
                return ProofResult(False, f"could not confirm slack hint for {var}")
        steps.append((var, _slack_expr(slb, sl.strict)))
    expr = concl
    for var, e in steps:
        expr = expr.xreplace({var: e})
    rest = {s: e for s, e in dom.items() if s not in {v for v, _ in steps}}
    expr = expr.xreplace(rest)
    try:
        ok, why = _goal(expr, claim.log_goal)
    except Exception as err:
        return ProofResult(False, f"sympy failed: {err}")
    subs_txt = ", ".join(f"{v}↦{sp.sstr(e)}" for v, e in steps)
    return ProofResult(ok, (f"[{subs_txt}] " if subs_txt else "") + why)


def prove_rhs12_monotone() -> ProofResult:
    """d/dk log RHS(12) > 0 for real k ≥ 2, E > 0 (claim ``lll.rhs12-monotone``).

    sympy checks: (1) the derivative equals T1/k² + E·T2 with T1 = 2 log k + log 2 − 2 and
    T2 = log(1 − 1/k²) + 2/(k² − 1); (2) T1 is increasing (dT1/dk = 2/k) and T1(2) = 3 log 2 − 2
    > 0 (arb); (3) h(x) = log(1 − x) + x/(1 − x) has h(0) = 0 and h′(x) = x/(1 − x)² ≥ 0 on
    [0, 1), so log(1 − u) ≥ −u/(1 − u); with u = 1/k², T2 ≥ u/(1 − u) > 0.
    """
    from attncert.symbolic.rigorous import decide

    k = sp.Symbol("k", positive=True)
    E = sp.Symbol("E", positive=True)
    x = sp.Symbol("x", positive=True)
    logrhs = -(2 * sp.log(k) + sp.log(2)) / k + E * k * sp.log(1 - 1 / k**2)
    d = sp.diff(logrhs, k)
    T1 = 2 * sp.log(k) + sp.log(2) - 2
    T2 = sp.log(1 - 1 / k**2) + 2 / (k**2 - 1)
    if sp.simplify(d - (T1 / k**2 + E * T2)) != 0:
        return ProofResult(False, "derivative decomposition failed")
    if sp.simplify(sp.diff(T1, k) - 2 / k) != 0 or decide(T1.subs(k, 2) > 0, {}) is not True:
        return ProofResult(False, "T1 > 0 on [2, ∞) not established")
    h = sp.log(1 - x) + x / (1 - x)
    if sp.simplify(sp.diff(h, x) - x / (1 - x) ** 2) != 0 or sp.simplify(h.subs(x, 0)) != 0:
        return ProofResult(False, "log(1−x) ≥ −x/(1−x) not established")
    u = 1 / k**2
    lower = -u / (1 - u) + 2 / (k**2 - 1)
    if sp.simplify(lower - 1 / (k**2 - 1)) != 0:
        return ProofResult(False, "T2 lower bound failed")
    return ProofResult(
        True,
        "d/dk = T1/k² + E·T2; T1 = 2log k + log 2 − 2 ≥ 3log 2 − 2 > 0 (T1′ = 2/k); "
        "T2 ≥ −u/(1−u) + 2u/(1−u) = 1/(k²−1) > 0 via h(x) = log(1−x) + x/(1−x), h(0)=0, "
        "h′ = x/(1−x)² ≥ 0",
    )


def _no_model(formula: sp.Basic) -> bool:
    return sp.satisfiable(sp.Not(formula)) is False


MAX_SCHEMA_K = 7


def prove_de_morgan() -> ProofResult:
    """S1 (21): X = ∩_t Y^t, where X = "no activation t is fixed to its maximizing value" and
    Y^t = "activation t is not". Propositionally ¬(f₁ ∨ … ∨ f_k) ⇔ ¬f₁ ∧ … ∧ ¬f_k; sympy's
    SAT check confirms that the negation has no model for every k ≤ ``MAX_SCHEMA_K`` (the
    schema is De Morgan's law, valid for every k by induction on k)."""
    for kk in range(1, MAX_SCHEMA_K + 1):
        f = sp.symbols(f"f1:{kk + 1}")
        if not _no_model(sp.Equivalent(sp.Not(sp.Or(*f)), sp.And(*(sp.Not(x) for x in f)))):
            return ProofResult(False, f"De Morgan instance k = {kk} not valid")
    return ProofResult(
        True,
        f"De Morgan: ¬(f₁∨…∨f_k) ⇔ ¬f₁∧…∧¬f_k; negation unsatisfiable (sympy) for k ≤ "
        f"{MAX_SCHEMA_K}, all k by induction",
    )


def prove_conjunction_elimination() -> ProofResult:
    """S1 (26): ∩_{t ≤ k} Y^t ⊆ ∩_{t ∈ T} Y^t for T ⊆ [k]: (y₁ ∧ … ∧ y_k) ⇒ ∧_{t∈T} y_t is a
    tautology; sympy's SAT check confirms every instance with k ≤ 5 and every T ⊆ [k]."""
    import itertools

    for kk in range(1, 6):
        y = sp.symbols(f"y1:{kk + 1}")
        for r in range(kk + 1):
            for sub in itertools.combinations(y, r):
                if not _no_model(sp.Implies(sp.And(*y), sp.And(*sub))):
                    return ProofResult(False, f"instance k = {kk}, T = {sub} not valid")
    return ProofResult(
        True,
        "conjunction elimination: (y₁∧…∧y_k) ⇒ ∧_{t∈T} y_t; negation unsatisfiable (sympy) "
        "for every k ≤ 5 and T ⊆ [k], all k by induction",
    )


CUSTOM_PROOFS = {
    "rhs12_monotone": prove_rhs12_monotone,
    "de_morgan": prove_de_morgan,
    "conjunction_elimination": prove_conjunction_elimination,
}
