"""Counting terms, linear comparisons and numerical predicates on counts
(Yang et al. Theorem 20 and Theorem 21; Corollary 22 and Corollary 23), in three stages.

1. **Mean** (exact): a uniform head (W_Q = W_K = 0) computes a fraction such as
   #←[φ]/i, |{j < i : φ}|/(i−1), #→[φ]/(n−i+1) (Yang & Chiang 2024).
2. **Table lookup** (approximate, reconstructed Lemma 7): with S = |{j < i : φ}| (or
   |{j > i : φ}|) and m' = i−1 (or n−i) strictly visible positions, the query
   (t/m', 1/m') for t = S + 1 ∈ [1, m'+1] attends to the key position j = t:
   bounded keys (1/j, 1/j²) give scores (2/j − t/j²)/m' = (1/t − t(1/j − 1/t)²)/m'
   with gap (j−t)²/(m' t j²) ≥ 1/((N−1)N(N+1)²), so β(N) ∝ N⁴ log N; unbounded
   keys (n·j, n·j²) give κ·n(t² − (j−t)²)/m' with gap ≥ κ d², β = 1. (At m' = 0 the
   query is (1, 1): t = 1.) The lookup returns, from position t, the values
   S/N (bounded) or S (unbounded) and θ(S), θ(S+1) for each numerical predicate θ
   (read from positional-encoding columns), and the FFN adds [φ at i]: the count is
   S + [φ_i], and θ(count) = θ(S + [φ_i]) is selected exactly.
3. **Comparison** Σ a_k t_k ≥ b: unbounded — x = Σ a_k count_k − b + ½ has |x| ≥ ½ − ε
   and an FFN clamps it; bounded — x is the same quantity divided by a length
   (N after lookups; i or n−i+1 when all terms count on one side, computed
   directly from the means), |x| ≥ δ(N), and a *sign head* (score x·(2[j=1] − 1),
   attention to position 1 iff x > 0) with β(N) ∝ N log N turns it into an
   approximate Boolean. With one visible position (n = 1, or i = 1 under future
   masking) the head cannot decide, but then x is exact and the FFN reads the
   sign from x directly.
"""

from __future__ import annotations

from typing import Any, Protocol

from attncert.compile import bounds
from attncert.compile.bounds import temperature_record
from attncert.compile.builder import Builder, HeadSpec
from attncert.compile.regime import Regime
from attncert.errors import UnsupportedError
from attncert.logic import syntax as s
from attncert.logic.numpred import predicate
from attncert.logic.printer import to_text
from attncert.model.spec import Mask, Temperature

__implements__ = (
    "Yang Lemma 7",
    "Yang Theorem 20",
    "Yang Theorem 21",
    "Yang Corollary 22",
    "Yang Corollary 23",
)

TARGET = 0.125


class Host(Protocol):
    """What the counting compiler uses of the formula compiler that owns it
    (:class:`attncert.compile.compiler.FormulaCompiler`): the formula, the regime, the
    model builder and the coordinate bookkeeping. Stated here so that this module does
    not import the compiler, which imports it."""

    formula: s.Formula
    regime: Regime
    b: Builder
    helpers: dict[str, int]

    def lvl(self, *coords: int) -> int: ...

    def pe(self, combo: dict[str, float], label: str | None = None) -> int: ...

    def new(self, label: str, level: int) -> int: ...

    def round_into(self, level: int, z: dict[int, float], zbias: float, coord: int) -> None: ...

    def add_head(self, level: int, head: HeadSpec) -> None: ...

    def node(self, f: s.Formula) -> int: ...

    def unsupported(self, f: s.Formula, why: str) -> UnsupportedError: ...


def _term_text(t: s.CountTerm) -> str:
    return ("#<[" if isinstance(t, s.CountLeft) else "#>[") + to_text(t.arg) + "]"


class CountCompiler:
    """Counting part of one formula compilation (its :class:`Host`)."""

    def __init__(self, comp: Host):
        self.c = comp
        self.preds: dict[s.CountTerm, list[str]] = {}
        self.value_a: dict[s.CountTerm, int] = {}
        for f in comp.formula.subformulas():
            if isinstance(f, s.CountPred):
                lst = self.preds.setdefault(f.term, [])
                if f.pred not in lst:
                    lst.append(f.pred)
            elif isinstance(f, s.Compare):
                terms, _ = f.normalized()
                if terms and self.strategy(terms) == "lookup":
                    a = sum(abs(k) for k, _ in terms)
                    for _, t in terms:
                        self.value_a[t] = max(self.value_a.get(t, 0), a)
        self.lookups: dict[s.CountTerm, dict[str, Any]] = {}
        self.means: dict[tuple[s.CountTerm, bool], int] = {}

    def strategy(self, terms: tuple[tuple[int, s.CountTerm], ...]) -> str:
        r = self.c.regime
        if r.causal:
            return "direct"
        if not r.bounded:
            return "lookup"
        sides = {type(t) for _, t in terms}
        return "direct" if len(sides) == 1 else "lookup"

    # ----- checks ------------------------------------------------------------------------
    def _check(self, f: s.Formula, terms: list[s.CountTerm]) -> None:
        r = self.c.regime
        if r.causal and not r.bounded:
            raise self.c.unsupported(
                f,
                "counting needs temperature scaling under future "
                "masking (Thm 21): use regime 'future-masked'",
            )
        if r.causal and any(isinstance(t, s.CountRight) for t in terms):
            raise self.c.unsupported(f, "#→ counts positions right of i (needs past masking)")

    # ----- helpers: exact fractions by uniform attention ----------------------------------------
    def _uniform(
        self, value: dict[int, float], mask: Mask, label: str, level: int, pattern: str, node: str
    ) -> int:
        out = self.c.new(label, level)
        self.c.add_head(
            level,
            HeadSpec(
                q=[{}],
                k=[{}],
                v=[value],
                out=[out],
                mask=mask,
                temperature=Temperature(1.0),
                record={
                    "node": node,
                    "role": "uniform",
                    "construction": "Thm 20 step 1 (Yang & Chiang)",
                    "pattern": pattern,
                    "uniform": True,
                    "scores": "0",
                    "gap": {
                        "min": None,
                        "profile": [],
                        "derivation": "uniform layer: W_Q = W_K = 0, every visible score is 0, "
                        "so softmax = average-hard exactly (no gap needed)",
                    },
                    "error_bound": {"expr": "0", "target": TARGET},
                    "temperature": {
                        "coef": 1.0,
                        "n_power": 0.0,
                        "log_power": 0.0,
                        "beta": "1",
                        "reason": "irrelevant: all scores are 0",
                    },
                },
            ),
        )
        return out

    def helper(self, name: str) -> int:
        c = self.c
        hit = c.helpers.get(name)
        if hit is not None:
            return hit
        first, last = c.pe({"[i=1]": 1.0}), None
        if name == "inv_left_strict":
            out = self._uniform(
                {first: 1.0},
                Mask.FUTURE_STRICT,
                "1/(i-1)",
                1,
                "uniform over j < i (value [j=1]: gives 1/(i−1))",
                "1/(i-1)",
            )
        elif name == "inv_right_strict":
            last = c.pe({"[i=n]": 1.0})
            out = self._uniform(
                {last: 1.0},
                Mask.PAST_STRICT,
                "1/(n-i)",
                1,
                "uniform over j > i (value [j=n]: gives 1/(n−i))",
                "1/(n-i)",
            )
        elif name == "inv_right":
            last = c.pe({"[i=n]": 1.0})
            out = self._uniform(
                {last: 1.0},
                Mask.PAST,
                "1/(n-i+1)",
                1,
                "uniform over j ≥ i (value [j=n]: gives 1/(n−i+1))",
                "1/(n-i+1)",
            )
        elif name == "n_is_1":
            if c.regime.causal:
                out = first
            else:
                last = c.pe({"[i=n]": 1.0})
                out = c.new("[n=1]", 1)
                u = c.b.hidden(1, {first: 1.0, last: 1.0}, -1.0)
                c.b.ffn_out(1, out, {u: 1.0})
        else:  # pragma: no cover
            raise KeyError(name)
        c.helpers[name] = out
        return out

    def mean(self, t: s.CountTerm, strict: bool) -> int:
        key = (t, strict)
        if key in self.means:
            return self.means[key]
        phi = self.c.node(t.arg)
        left = isinstance(t, s.CountLeft)
        mask = {
            (True, True): Mask.FUTURE_STRICT,
            (True, False): Mask.FUTURE,
            (False, True): Mask.PAST_STRICT,
            (False, False): Mask.PAST,
        }[(left, strict)]
        rel = ("<" if strict else "≤") if left else (">" if strict else "≥")
        denom = ("i-1" if strict else "i") if left else ("n-i" if strict else "n-i+1")
        label = f"mean{'<' if strict else '≤'}:{_term_text(t)}"
        out = self._uniform(
            {phi: 1.0},
            mask,
            label,
            self.c.lvl(phi) + 1,
            f"uniform over j {rel} i (mean of φ: |{{j {rel} i : φ}}|/({denom}))",
            _term_text(t),
        )
        self.means[key] = out
        return out

    # ----- stage 2: table lookup -----------------------------------------------------------
    def lookup(self, t: s.CountTerm) -> dict[str, Any]:
        if t in self.lookups:
            return self.lookups[t]
        c = self.c
        r = c.regime
        left = isinstance(t, s.CountLeft)
        phi = c.node(t.arg)
        a = self.mean(t, strict=True)
        inv = self.helper("inv_left_strict" if left else "inv_right_strict")
        bd = c.pe({"[i=1]": 1.0}) if left else c.pe({"[i=n]": 1.0})
        lv = c.lvl(a, inv, phi) + 1
        text = _term_text(t)
        preds = self.preds.get(t, [])
        need_value = t in self.value_a
        big_a = self.value_a.get(t, 0)
        v_rows: list[dict[int, float]] = []
        outs: list[int] = []
        info: dict[str, Any] = {"level": lv}
        if need_value:
            if r.bounded:
                row = {c.pe({"i/n": 1.0}): 1.0, c.pe({"1/n": 1.0}): -1.0}
            else:
                row = {c.pe({"i": 1.0}): 1.0, c.b.one: -1.0}
            cval = c.new(f"count:{text}{'/N' if r.bounded else ''}", lv)
            v_rows.append(row)
            outs.append(cval)
            info["value"] = cval
        for name in preds:
            theta = predicate(name)
            if r.causal and not theta.n_free:
                raise c.unsupported(s.CountPred(name, t), f"{name} depends on n")
            for shift in (1, 0):
                col = c.pe(dict(theta.columns[shift]), label=f"{name}(i{'-1' if shift else ''})")
                raw = c.new(f"raw:{name}({text}){'S' if shift else 'S+1'}", lv)
                v_rows.append({col: 1.0})
                outs.append(raw)
                info[(name, shift)] = raw
        if r.bounded:
            keys = [{c.pe({"1/i^2": 1.0}): -1.0}, {c.pe({"1/i": 1.0}): 2.0}]
            if need_value:
                target = lambda n, _a=big_a: 1.0 / (8.0 * n * _a)  # noqa: E731
                target_txt = f"1/(8*N*{big_a})"
            else:
                target, target_txt = TARGET, str(TARGET)
            coef = bounds.fit_coef(bounds.lookup_bound, target, 4.0, 1.0)
            temp = Temperature(coef, n_power=4.0, log_power=1.0)
            kappa = None
            gap = {
                "min": "1/((N-1)*N*(N+1)**2)",
                "profile": [
                    {
                        "competitors": "key j ≠ t",
                        "gap": "(j-t)**2/(m*t*j**2)",
                        "count": "≤ N−1",
                        "where": "m = number of strictly visible positions (i−1 or n−i), t = S+1",
                    }
                ],
                "derivation": "scores (2/j − t/j²)/m = (1/t − t(1/j − 1/t)²)/m peak at j = t; "
                "m ≤ N−1, t ≤ N, and (j−t)²/j² ≥ 1/(t+1)² for j ≠ t",
            }
            err = {"expr": "(N-1)*exp(-beta/((N-1)*N*(N+1)**2))", "target": target_txt}
            treason = (
                f"smallest multiple of 1/8 with (N−1)·exp(−β·gap) ≤ {target_txt} for "
                f"2 ≤ N ≤ {bounds.N_CHECK}; bounded PEs make the gap ~N⁻⁴"
            )
        else:
            kappa = 2.0
            while 2 * bounds.gauss_tail(kappa) > TARGET or (
                need_value and 2 * bounds.gauss_tail(kappa, True) > 1 / (8 * big_a)
            ):
                kappa += 0.5
            keys = [{c.pe({"n*i": 1.0}): 2 * kappa}, {c.pe({"n*i^2": 1.0}): -kappa}]
            temp = Temperature(1.0)
            gap = {
                "min": f"{kappa:g}",
                "profile": [
                    {
                        "competitors": "keys at distance d ≥ 1 from t",
                        "gap": f"{kappa:g}*d**2*N/m",
                        "count": "≤ 2 per d",
                    }
                ],
                "derivation": "scores κ·N(t² − (j−t)²)/m peak at j = t with gap κ·N·d²/m ≥ κd² "
                "since m ≤ N−1",
            }
            err = {
                "expr": f"2*Sum(exp(-{kappa:g}*d**2), (d, 1, oo))",
                "value": 2 * bounds.gauss_tail(kappa),
                "value_error": f"2*Sum(d*exp(-{kappa:g}*d**2), (d, 1, oo))",
                "target": TARGET,
            }
            treason = "unbounded keys n·j, n·j² make the gap constant; no temperature scaling"
        mask = Mask.FUTURE if left else Mask.NONE
        thm = "Thm 21" if r.causal else ("Thm 20a" if r.bounded else "Thm 20b")
        c.add_head(
            lv,
            HeadSpec(
                q=[{a: 1.0, inv: 1.0, bd: 1.0}, {inv: 1.0, bd: 1.0}],
                k=keys,
                v=v_rows,
                out=outs,
                mask=mask,
                temperature=temp,
                record={
                    "node": text,
                    "role": "lookup",
                    "construction": thm,
                    "pattern": "table lookup of the count: attend to the position j = S+1, "
                    f"S = |{{j {'<' if left else '>'} i : φ}}|",
                    "scores": "(2/j - t/j**2)/m" if r.bounded else f"{kappa:g}*N*(2*t*j - j**2)/m",
                    "query": "t/m = mean + 1/m, 1/m  (or (1, 1) when m = 0)",
                    "values": ["S/N" if r.bounded else "S"] * need_value
                    + [f"{p}(S{'' if sh else '+1'})" for p in preds for sh in (1, 0)],
                    "gap": gap,
                    "error_bound": err,
                    "temperature": temperature_record(temp, treason),
                },
            ),
        )
        if need_value:
            if r.bounded:
                inv_n = c.pe({"1/n": 1.0})
                u = c.b.hidden(lv, {inv_n: 1.0, phi: 1.0}, -1.0)  # [φ_i]/N
            else:
                u = c.b.hidden(lv, {phi: 1.0}, 0.0)  # [φ_i]
            c.b.ffn_out(lv, info["value"], {u: 1.0})
        info["phi"] = phi
        self.lookups[t] = info
        return info

    # ----- nodes -------------------------------------------------------------------------
    def node(self, f: s.Compare | s.CountPred) -> int:
        c = self.c
        if isinstance(f, s.CountPred):
            self._check(f, [f.term])
            info = self.lookup(f.term)
            lv = info["level"]
            out = c.new(to_text(f), lv)
            th_s, th_s1, phi = info[(f.pred, 1)], info[(f.pred, 0)], info["phi"]
            # θ(S + [φ_i]): R(θ(S) − φ_i) + R(θ(S+1) + φ_i − 1) selects exactly.
            c.round_into(lv, {th_s: 1.0, phi: -1.0}, 0.0, out)
            c.round_into(lv, {th_s1: 1.0, phi: 1.0}, -1.0, out)
            return out
        terms, b = f.normalized()
        self._check(f, [t for _, t in terms])
        if not terms:
            return c.node(s.Top() if f.op.holds(0, b) else s.Bottom())
        neg = tuple((-k, t) for k, t in terms)
        op = f.op
        if op is s.CmpOp.GE:
            return self.threshold(terms, b, f)
        if op is s.CmpOp.GT:
            return self.threshold(terms, b + 1, f)
        if op is s.CmpOp.LE:
            return self.threshold(neg, -b, f)
        if op is s.CmpOp.LT:
            return self.threshold(neg, -b + 1, f)
        ge = self.threshold(terms, b, f)
        le = self.threshold(neg, -b, f)
        lv = c.lvl(ge, le) + 1
        out = c.new(to_text(f), lv)
        u = c.b.hidden(lv, {ge: 1.0, le: 1.0}, -1.0)
        if op is s.CmpOp.EQ:
            c.b.ffn_out(lv, out, {u: 1.0})
        else:
            c.b.ffn_out(lv, out, {u: -1.0}, 1.0)
        return out

    def threshold(self, terms: tuple[tuple[int, s.CountTerm], ...], b: int, f: s.Formula) -> int:
        """Coordinate of [Σ a_k t_k ≥ b]."""
        c = self.c
        r = c.regime
        big_a = sum(abs(k) for k, _ in terms)
        desc = " + ".join(f"{k}*{_term_text(t)}" for k, t in terms) + f" >= {b}"
        strategy = self.strategy(terms)
        if strategy == "lookup":
            infos = [self.lookup(t) for _, t in terms]
            lv = max(info["level"] for info in infos) + 1
            if not r.bounded:
                out = c.new(f"[{desc}]", lv)
                form: dict[int, float] = {}
                for (k, _), info in zip(terms, infos, strict=True):
                    form[info["value"]] = form.get(info["value"], 0.0) + 2.0 * k
                u1 = c.b.hidden(lv, form, 1.5 - 2 * b)
                u2 = c.b.hidden(lv, form, 0.5 - 2 * b)
                c.b.ffn_out(lv, out, {u1: 1.0, u2: -1.0})  # clamp(2x + ½), x = Σa·count − b + ½
                return out
            x: dict[int, float] = {c.pe({"1/n": 1.0}): 0.5 - b}
            for (k, _), info in zip(terms, infos, strict=True):
                x[info["value"]] = x.get(info["value"], 0.0) + float(k)
            return self.sign(
                x,
                lv,
                desc,
                "1/(4*N)",
                lambda n: 1.0 / (4 * n),
                big_a + abs(b) + 1,
                "x = Σ a·count/N − (b − ½)/N; lookup errors ≤ 1/(8N) leave |x| ≥ 3/(8N)",
            )
        # direct: all terms count on the same side; exact means over a common denominator.
        left = isinstance(terms[0][1], s.CountLeft)
        means = [self.mean(t, strict=False) for _, t in terms]
        inv = c.pe({"1/i": 1.0}) if left else self.helper("inv_right")
        lv = c.lvl(*means, inv) + 1
        x = {inv: 0.5 - b}
        for (k, _), m in zip(terms, means, strict=True):
            x[m] = x.get(m, 0.0) + float(k)
        den = "i" if left else "n-i+1"
        return self.sign(
            x,
            lv,
            desc,
            "1/(2*N)",
            lambda n: 1.0 / (2 * n),
            big_a + abs(b) + 1,
            f"x = (Σ a·count − b + ½)/({den}) exactly, so |x| ≥ 1/(2({den})) ≥ 1/(2N)",
        )

    def sign(
        self,
        x: dict[int, float],
        lv: int,
        desc: str,
        delta_txt: str,
        delta,
        bound_x: float,
        why: str,
    ) -> int:
        """Sign head + FFN: coordinate of [x > 0] given |x| ≥ δ(N) and |x| ≤ bound_x."""
        c = self.c
        first = c.pe({"[i=1]": 1.0})
        flag = self.helper("n_is_1")
        lv = max(lv, c.lvl(flag) + 1)
        raw = c.new(f"raw:[{desc}]", lv)
        out = c.new(f"[{desc}]", lv)
        coef = bounds.fit_coef(bounds.sign_bound(delta), TARGET, 1.0, 1.0)
        temp = Temperature(coef, n_power=1.0, log_power=1.0)
        causal = c.regime.causal
        c.add_head(
            lv,
            HeadSpec(
                q=[dict(x)],
                k=[{first: 2.0, c.b.one: -1.0}],
                v=[{first: 1.0}],
                out=[raw],
                mask=Mask.FUTURE if causal else Mask.NONE,
                temperature=temp,
                record={
                    "node": desc,
                    "role": "sign",
                    "construction": "Thm 21" if causal else "Thm 20a",
                    "pattern": "position 1 if x > 0, else uniform over j ≥ 2 (reads [x > 0])",
                    "scores": "x_i*(2*[j=1] - 1)",
                    "x": why,
                    "gap": {
                        "min": f"2*{delta_txt}",
                        "profile": [
                            {
                                "competitors": "j ≥ 2 (all tied)",
                                "gap": f"2*{delta_txt}",
                                "count": "≤ N−1",
                            }
                        ],
                        "derivation": "score x at j = 1, −x elsewhere; |x| ≥ δ(N)",
                        "tieless": False,
                    },
                    "error_bound": {"expr": f"(N-1)*exp(-2*beta*{delta_txt})", "target": TARGET},
                    "temperature": temperature_record(
                        temp,
                        f"smallest multiple of 1/8 with (N−1)·exp(−2βδ) ≤ {TARGET} for "
                        f"2 ≤ N ≤ {bounds.N_CHECK}; δ ~ 1/N so β ~ N log N",
                    ),
                    "single_position": "with one visible position (n = 1, or i = 1 under future "
                    "masking) x is exact with |x| ≥ ½ and the FFN uses it",
                },
            ),
        )
        big = 8.0 * bound_x + 4.0
        c.round_into(lv, {raw: 1.0}, 0.0, out)
        neg = {k: -8.0 * v for k, v in x.items()}
        neg[flag] = neg.get(flag, 0.0) + big
        u1 = c.b.hidden(lv, neg, -1.0 - big)
        u2 = c.b.hidden(lv, neg, -2.0 - big)
        c.b.ffn_out(lv, out, {u1: -1.0, u2: 1.0})  # − [flag]·[x < 0]
        return out


__all__ = ["CountCompiler"]
