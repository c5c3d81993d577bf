"""Compile a temporal-logic formula into a softmax transformer (Yang et al. §4).

``compile_formula(formula, regime=...)`` follows the constructions of
Theorems 12, 13 (previous/next), 15, 16 (since/until), 20, 21 (counting) and
Corollaries 17, 18, 22, 23 (their unions), by induction on the formula:

* every subformula φ gets a residual coordinate that holds exactly [φ at i] ∈ {0, 1}
  (Boolean connectives are ReLU FFNs on exact Booleans);
* every attention head writes an *approximate* Boolean and the FFN of the same
  layer rounds it with R(z) = 2ReLU(z − ¼) − 2ReLU(z − ¾) (Lemma 9), so each
  layer's outputs are exact 0/1 again as long as the head's error is < ¼;
* each head records in ``model.meta["heads"]`` the hard-attention pattern it
  simulates, its score gap γ(N) (minimum and full profile, sympy-parsable in N,
  d, i), the bound on its off-target attention mass, and the temperature chosen
  with the reason (:mod:`attncert.compile.bounds`).

Positions without a key (i = 1 under j < i) get head output 0, which is the
correct "false" for ◁, S and the strict counts. The model accepts iff the
formula's coordinate exceeds ½ at the last position.

Counting terms are in :mod:`attncert.compile.counting`.

    >>> from attncert.logic import parse
    >>> from attncert.compile import compile_formula
    >>> m = compile_formula(parse("Q_a S Q_b"), regime="temperature", alphabet="abc")
    >>> [h["pattern"] for h in m.meta["heads"]]
    ['rightmost j < i with ψ ∨ ¬φ (φ S ψ holds iff ψ holds there)']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from attncert.compile import bounds
from attncert.compile.bounds import temperature_record
from attncert.compile.builder import Builder, HeadSpec
from attncert.compile.counting import CountCompiler
from attncert.compile.regime import Regime
from attncert.errors import SpecError, UnsupportedError
from attncert.logic import syntax as s
from attncert.logic.numpred import predicate
from attncert.logic.printer import to_text
from attncert.model.spec import Mask, Model, Temperature

__implements__ = (
    "Yang Lemma 8",
    "Yang Lemma 9",
    "Yang Theorem 12",
    "Yang Theorem 13",
    "Yang Theorem 15",
    "Yang Theorem 16",
    "Yang Corollary 17",
    "Yang Corollary 18",
    "Yang Corollary 22",
    "Yang Corollary 23",
)

META_VERSION = 1
# Expressions in the head records are sympy-parsable with these names as Symbols
# (pass them as ``locals``: ``N`` would otherwise be sympy's ``N`` function).
SYMBOLS = {
    "N": "number of tokens (= input length n; compiled models have no BOS/EOS)",
    "i": "query position (1-based)",
    "j": "key position (1-based)",
    "d": "distance of a competing key from the intended key",
    "k": "index of a competing key of the same parity (distance 2k)",
    "m": "number of strictly visible keys of a lookup (i−1 or n−i)",
    "t": "lookup target position S+1",
    "chi_j": "guard ψ ∨ ¬φ at key j (0/1)",
    "x_i": "the sign head's query value",
    "beta": "inverse temperature β(N)",
}
ERROR_TARGET = 0.125  # off-target mass allowed per Boolean head (rounding needs < ¼)


class FormulaCompiler:
    """One compilation: formula → :class:`Model` (see module docstring)."""

    def __init__(self, formula: s.Formula, regime: Regime, alphabet: tuple[str, ...]):
        self.formula = formula
        self.regime = regime
        self.b = Builder(alphabet)
        self.level: dict[int, int] = {self.b.one: 0}
        self.memo: dict[s.Formula, int] = {}
        self.nodes: list[dict[str, Any]] = []
        self.heads: list[dict[str, Any]] = []
        self.helpers: dict[str, int] = {}
        self.kappa = 3.0  # score scale of the unbounded regime's heads (β = 1)
        self.counting = CountCompiler(self)

    # ----- helpers ---------------------------------------------------------------------
    def lvl(self, *coords: int) -> int:
        return max((self.level[c] for c in coords), default=0)

    def pe(self, combo: dict[str, float], label: str | None = None) -> int:
        for name in combo:
            self._check_feature(name)
        c = self.b.pe(combo, label)
        self.level[c] = 0
        return c

    def _check_feature(self, name: str) -> None:
        from attncert.model.positional import PosFeature

        f = PosFeature(name)
        if self.regime.bounded and not f.bounded:
            raise AssertionError(f"bounded regime used unbounded feature {name}")
        if self.regime.causal and name in {
            "n",
            "i/n",
            "(i/n)^2",
            "1/n",
            "[i=n]",
            "(-1)^n",
            "[i>n/2]",
            "n*i",
            "n*i^2",
            "[2i=n]",
            "[2i-2=n]",
            "[i-1>n/2]",
        }:
            raise AssertionError(f"causal regime used n-dependent feature {name}")

    def new(self, label: str, level: int) -> int:
        c = self.b.coord(label)
        self.level[c] = level
        return c

    def round_into(self, level: int, z: dict[int, float], zbias: float, coord: int) -> None:
        """FFN: y[coord] += R(z·y + zbias) with R the Lemma-9 rounding."""
        u1 = self.b.hidden(level, z, zbias - 0.25)
        u2 = self.b.hidden(level, z, zbias - 0.75)
        self.b.ffn_out(level, coord, {u1: 2.0, u2: -2.0})

    def add_head(self, level: int, head: HeadSpec) -> None:
        self.b.add_head(level, head)
        self.heads.append(head.record)

    def unsupported(self, f: s.Formula, why: str) -> UnsupportedError:
        return UnsupportedError(
            f"{to_text(f)!r} cannot be compiled in the {self.regime.value!r} regime: {why}",
            where="formula",
            expected="regime 'temperature' or 'unbounded'" if self.regime.causal else None,
        )

    # ----- main walk -------------------------------------------------------------------
    def node(self, f: s.Formula) -> int:
        """Coordinate holding [f at i] exactly (0/1) from layer ``self.level[c]`` on."""
        hit = self.memo.get(f)
        if hit is not None:
            return hit
        c = self._node(f)
        self.memo[f] = c
        self.nodes.append(
            {"formula": to_text(f), "coord": c, "level": self.level[c], "kind": type(f).__name__}
        )
        return c

    def _node(self, f: s.Formula) -> int:
        r = self.regime
        if isinstance(f, s.Top):
            return self.b.one
        if isinstance(f, s.Bottom):
            return self.new("false", 0)
        if isinstance(f, s.Atom):
            c = self.b.symbol_coord(f.symbol)
            self.level[c] = 0
            return c
        if isinstance(f, s.First):
            return self.pe({"[i=1]": 1.0})
        if isinstance(f, s.Last):
            if r.causal:
                raise self.unsupported(f, "'last' depends on n")
            return self.pe({"[i=n]": 1.0})
        if isinstance(f, s.PosPred):
            theta = predicate(f.pred)
            if r.causal and not theta.n_free:
                raise self.unsupported(f, f"{f.pred} depends on n")
            return self.pe(dict(theta.columns[0]), label=f"{f.pred}(i)")
        if isinstance(f, s.Not):
            a = self.node(f.arg)
            lv = self.lvl(a) + 1
            out = self.new(to_text(f), lv)
            u = self.b.hidden(lv, {a: 1.0}, 0.0)
            self.b.ffn_out(lv, out, {u: -1.0}, 1.0)  # 1 − x
            return out
        if isinstance(f, s.And):
            a, b = self.node(f.left), self.node(f.right)
            lv = self.lvl(a, b) + 1
            out = self.new(to_text(f), lv)
            u = self.b.hidden(lv, _add({a: 1.0}, {b: 1.0}), -1.0)
            self.b.ffn_out(lv, out, {u: 1.0})  # ReLU(x + y − 1)
            return out
        if isinstance(f, s.Or):
            a, b = self.node(f.left), self.node(f.right)
            lv = self.lvl(a, b) + 1
            out = self.new(to_text(f), lv)
            u = self.b.hidden(lv, _add({a: -1.0}, {b: -1.0}), 1.0)
            self.b.ffn_out(lv, out, {u: -1.0}, 1.0)  # 1 − ReLU(1 − x − y)
            return out
        if isinstance(f, (s.Prev, s.Next)):
            if isinstance(f, s.Next) and r.causal:
                raise self.unsupported(f, "▷ looks at position i+1 (needs past masking)")
            return self.prev_next(f)
        if isinstance(f, (s.Since, s.Until)):
            if isinstance(f, s.Until) and r.causal:
                raise self.unsupported(f, "U looks right of i (needs past masking)")
            return self.since_until(f)
        if isinstance(f, (s.Compare, s.CountPred)):
            return self.counting.node(f)
        raise SpecError(f"not a formula: {f!r}")

    # ----- ◁ and ▷ (Theorems 12, 13) ---------------------------------------------------------
    def prev_next(self, f: s.Prev | s.Next) -> int:
        prev = isinstance(f, s.Prev)
        a = self.node(f.arg)
        lv = self.lvl(a) + 1
        out = self.new(to_text(f), lv)
        mask = Mask.FUTURE_STRICT if prev else Mask.PAST_STRICT
        text = to_text(f)
        if not self.regime.bounded:
            # Unbounded PEs: score κ(2(i∓1)j − j²) = κ((i∓1)² − (j − (i∓1))²) peaks at i∓1.
            k = self.kappa
            shift = -1.0 if prev else 1.0
            i_c = self.pe({"i": 1.0})
            j2 = self.pe({"i^2": 1.0})
            scratch = self.new(f"raw:{text}", lv)
            thm = "Thm 13d / Cor 18b" if self.regime.causal else "Thm 12b / Cor 17b"
            self.add_head(
                lv,
                HeadSpec(
                    q=[{i_c: 2 * k, self.b.one: 2 * k * shift}, {self.b.one: -k}],
                    k=[{i_c: 1.0}, {j2: 1.0}],
                    v=[{a: 1.0}],
                    out=[scratch],
                    mask=mask,
                    temperature=Temperature(1.0),
                    record={
                        "node": text,
                        "role": "prev" if prev else "next",
                        "construction": thm,
                        "pattern": "j = i−1 (rightmost j < i)"
                        if prev
                        else "j = i+1 (leftmost j > i)",
                        "scores": f"{k:g}*(2*(i{'-' if prev else '+'}1)*j - j**2)",
                        "gap": {
                            "min": f"{k:g}",
                            "profile": [
                                {
                                    "competitors": "j at distance d ≥ 1 from the target",
                                    "gap": f"{k:g}*d**2",
                                    "count": "1 per d",
                                }
                            ],
                            "derivation": "score = κ(t² − (j − t)²) with t = i∓1, so the gap at "
                            "distance d is κd², independent of N",
                        },
                        "error_bound": {
                            "expr": f"Sum(exp(-{k:g}*d**2), (d, 1, oo))",
                            "value": bounds.gauss_tail(k),
                            "target": ERROR_TARGET,
                        },
                        "temperature": temperature_record(
                            Temperature(1.0),
                            "unbounded positional encodings i, i² make the "
                            "gap constant; no temperature scaling",
                        ),
                        "value": to_text(f.arg),
                    },
                ),
            )
            self.round_into(lv, {scratch: 1.0}, 0.0, out)
            return out
        # Bounded PEs: two heads attend to the nearest even / odd position (Lemma 8 style
        # tie-breaking); the FFN picks the one whose parity matches i∓1.
        sign = 1.0 if prev else -1.0
        par = self.pe({"(-1)^i": 1.0})
        if self.regime.causal:
            tie = self.pe({"1/i": -1.0}, label="-1/i")
            bound_fn, shape, thm = bounds.prev_parity_causal_bound, (2.0, 0.0), "Thm 13c / Cor 18a"
            tie_txt, same_gap, min_gap = "- 1/j", "2*k/N**2", "2/N**2"
        else:
            tie = self.pe({"i/n": sign}, label=f"{'+' if prev else '-'}i/n")
            bound_fn, shape, thm = bounds.prev_parity_bound, (1.0, 0.0), "Thm 12a / Cor 17a"
            tie_txt, same_gap, min_gap = ("+ j/N" if prev else "- j/N"), "2*k/N", "2/N"
        coef = bounds.fit_coef(bound_fn, ERROR_TARGET, *shape)
        temp = Temperature(coef, n_power=shape[0], log_power=shape[1])
        raws = []
        for parity, psign in (("even", 1.0), ("odd", -1.0)):
            raw = self.new(f"raw:{text}:{parity}", lv)
            raws.append(raw)
            side = "rightmost" if prev else "leftmost"
            rel = "<" if prev else ">"
            self.add_head(
                lv,
                HeadSpec(
                    q=[{self.b.one: psign}, {self.b.one: 1.0}],
                    k=[{par: 1.0}, {tie: 1.0}],
                    v=[{a: 1.0}],
                    out=[raw],
                    mask=mask,
                    temperature=temp,
                    record={
                        "node": text,
                        "role": "prev" if prev else "next",
                        "construction": thm,
                        "pattern": f"{side} {parity} j {rel} i",
                        "scores": f"{'' if psign > 0 else '-'}(-1)**j {tie_txt}",
                        "gap": {
                            "min": min_gap,
                            "profile": [
                                {
                                    "competitors": f"{parity} j at distance 2k (k ≥ 1)",
                                    "gap": same_gap,
                                    "count": "1 per k",
                                },
                                {
                                    "competitors": "positions of the other parity",
                                    "gap": "1",
                                    "count": "≤ N",
                                },
                            ],
                            "derivation": "parity term ±(−1)^j separates the classes by 2; the "
                            "tie-breaking term orders one class (Lemma 8)",
                        },
                        "error_bound": {"expr": _doc_expr(bound_fn), "target": ERROR_TARGET},
                        "temperature": temperature_record(
                            temp,
                            f"smallest multiple of 1/8 with the error bound ≤ {ERROR_TARGET} "
                            f"for 2 ≤ N ≤ {bounds.N_CHECK} (bounded PEs: the gap shrinks like "
                            f"{min_gap}, so β must grow)",
                        ),
                        "value": to_text(f.arg),
                    },
                ),
            )
        # i∓1 is even iff i is odd (for both ◁ and ▷): use the even head when i is odd.
        odd_i = self.pe({"1": 0.5, "(-1)^i": -0.5}, label="[i odd]")
        even_i = self.pe({"1": 0.5, "(-1)^i": 0.5}, label="[i even]")
        self.round_into(lv, {raws[0]: 1.0, even_i: -1.0}, 0.0, out)
        self.round_into(lv, {raws[1]: 1.0, odd_i: -1.0}, 0.0, out)
        return out

    # ----- S and U (Theorems 15, 16) ---------------------------------------------------------
    def guard(self, phi: int, psi: int, label: str) -> int:
        """Coordinate of χ = ψ ∨ ¬φ = 1 − ReLU(φ − ψ)."""
        lv = self.lvl(phi, psi) + 1
        out = self.new(label, lv)
        u = self.b.hidden(lv, _add({phi: 1.0}, {psi: -1.0}), 0.0)
        self.b.ffn_out(lv, out, {u: -1.0}, 1.0)
        return out

    def since_until(self, f: s.Since | s.Until) -> int:
        since = isinstance(f, s.Since)
        phi, psi = self.node(f.left), self.node(f.right)
        text = to_text(f)
        chi_text = (
            f"{to_text(f.right)} | !{to_text(f.left)}"
            if not isinstance(f.left, s.Top)
            else to_text(f.right)
        )
        chi = psi if isinstance(f.left, s.Top) else self.guard(phi, psi, f"guard:{text}")
        lv = self.lvl(chi, psi) + 1
        out = self.new(text, lv)
        raw = self.new(f"raw:{text}", lv)
        mask = Mask.FUTURE_STRICT if since else Mask.PAST_STRICT
        side, rel = ("rightmost", "<") if since else ("leftmost", ">")
        pattern = (
            f"{side} j {rel} i with ψ ∨ ¬φ (φ {'S' if since else 'U'} ψ holds iff ψ holds there)"
        )
        common = {
            "node": text,
            "role": "since" if since else "until",
            "pattern": pattern,
            "guard": chi_text,
            "value": to_text(f.right),
        }
        if not self.regime.bounded:
            k = self.kappa
            big = self.pe({"i": 1.0}) if since else self.pe({"n": 1.0})
            pos = self.pe({"i": 1.0})
            thm = "Thm 16b / Cor 18b" if self.regime.causal else "Thm 15b / Cor 17b"
            self.add_head(
                lv,
                HeadSpec(
                    q=[{big: 2 * k}, {self.b.one: k if since else -k}],
                    k=[{chi: 1.0}, {pos: 1.0}],
                    v=[{psi: 1.0}],
                    out=[raw],
                    mask=mask,
                    temperature=Temperature(1.0),
                    record={
                        **common,
                        "construction": thm,
                        "scores": f"{k:g}*(2*{'i' if since else 'N'}*chi_j "
                        f"{'+' if since else '-'} j)",
                        "gap": {
                            "min": f"{k:g}",
                            "profile": [
                                {
                                    "competitors": "other χ-positions at distance d ≥ 1",
                                    "gap": f"{k:g}*d",
                                    "count": "1 per d",
                                },
                                {
                                    "competitors": "non-χ positions",
                                    "gap": f"{k:g}*(i+2)" if since else f"{k:g}*(N+2)",
                                    "count": "≤ N",
                                },
                            ],
                            "derivation": "the unbounded term 2·i·χ_j (2·N·χ_j) outweighs any "
                            "position difference; j itself breaks ties",
                        },
                        "error_bound": {
                            "expr": f"exp(-{k:g})/(1-exp(-{k:g})) + N*exp(-{3 * k:g})",
                            "target": ERROR_TARGET,
                        },
                        "temperature": temperature_record(
                            Temperature(1.0),
                            "unbounded positional encodings give constant "
                            "gaps; no temperature scaling",
                        ),
                    },
                ),
            )
        else:
            if self.regime.causal:
                tie = self.pe({"1/i": -0.5}, label="-1/(2i)")
                bound_fn, shape, thm = bounds.since_causal_bound, (2.0, 0.0), "Thm 16a / Cor 18a"
                tie_txt, same_gap, min_gap = "- 1/(2*j)", "d/(2*N**2)", "1/(2*N**2)"
            else:
                tie = self.pe(
                    {"i/n": 0.5 if since else -0.5}, label="+i/(2n)" if since else "-i/(2n)"
                )
                bound_fn, shape, thm = bounds.since_bound, (1.0, 0.0), "Thm 15a / Cor 17a"
                tie_txt = "+ j/(2*N)" if since else "- j/(2*N)"
                same_gap, min_gap = "d/(2*N)", "1/(2*N)"
            coef = bounds.fit_coef(bound_fn, ERROR_TARGET, *shape)
            temp = Temperature(coef, n_power=shape[0], log_power=shape[1])
            self.add_head(
                lv,
                HeadSpec(
                    q=[{self.b.one: 1.0}, {self.b.one: 1.0}],
                    k=[{chi: 1.0}, {tie: 1.0}],
                    v=[{psi: 1.0}],
                    out=[raw],
                    mask=mask,
                    temperature=temp,
                    record={
                        **common,
                        "construction": thm,
                        "scores": f"chi_j {tie_txt}",
                        "gap": {
                            "min": min_gap,
                            "profile": [
                                {
                                    "competitors": "other χ-positions at distance d ≥ 1",
                                    "gap": same_gap,
                                    "count": "1 per d",
                                },
                                {"competitors": "non-χ positions", "gap": "1/2", "count": "≤ N"},
                            ],
                            "derivation": "χ_j ∈ {0,1} separates the classes by ≥ 1/2 after "
                            "the tie-breaking term (Lemma 8); within χ the "
                            "tie-breaking term favours the nearest position",
                        },
                        "error_bound": {"expr": _doc_expr(bound_fn), "target": ERROR_TARGET},
                        "temperature": temperature_record(
                            temp,
                            f"smallest multiple of 1/8 with the error bound ≤ "
                            f"{ERROR_TARGET} for 2 ≤ N ≤ {bounds.N_CHECK}",
                        ),
                    },
                ),
            )
        # No χ-position: every visible ψ_j is 0, so the output is exactly 0 (= false).
        self.round_into(lv, {raw: 1.0}, 0.0, out)
        return out

    # ----- driver ------------------------------------------------------------------------------
    def compile(self, name: str, language: str | None = None) -> Model:
        root = self.node(self.formula)
        if self.b.layers == []:
            self.b.layer(1)  # a model with no computation still has its embedding
        nodes = sorted(self.nodes, key=lambda r: r["coord"] != root)
        for k, rec in enumerate(nodes):
            rec["output_index"] = k
        features = [f.label for f in self.b.features]
        meta = {
            "compiler": "attncert.compile",
            "version": META_VERSION,
            "formula": to_text(self.formula),
            **({} if language is None else {"language": language}),
            "regime": self.regime.value,
            "alphabet": "".join(self.b.alphabet),
            "positional_encodings": features,
            "bounded_encodings": all(f.bounded for f in self.b.features),
            "coordinates": list(self.b.labels),
            "symbols": SYMBOLS,
            "nodes": nodes,
            "heads": self.heads,
            "layers": [
                {"layer": li, "heads": len(spec.heads), "ffn_hidden": len(spec.hidden)}
                for li, spec in enumerate(self.b.layers)
            ],
            "readout": {
                "coord": root,
                "weight": 1.0,
                "bias": -0.5,
                "position": "last",
                "rule": "accept iff y[coord] − 1/2 > 0 at the last position; every "
                "node's coordinate is an exact Boolean after its level",
            },
        }
        return self.b.build(
            readout_coord=root,
            output_coords=tuple(r["coord"] for r in nodes),
            name=name,
            meta=meta,
        )


def _add(*forms: dict[int, float]) -> dict[int, float]:
    out: dict[int, float] = {}
    for f in forms:
        for c, v in f.items():
            out[c] = out.get(c, 0.0) + v
    return out


def _doc_expr(fn: Any) -> str:
    return {
        bounds.prev_parity_bound: "exp(-2*beta/N)/(1-exp(-2*beta/N)) + N*exp(-beta*(2-1/N))",
        bounds.prev_parity_causal_bound: "exp(-2*beta/N**2)/(1-exp(-2*beta/N**2)) + N*exp(-beta)",
        bounds.since_bound: "exp(-beta/(2*N))/(1-exp(-beta/(2*N))) + N*exp(-beta/2)",
        bounds.since_causal_bound: "exp(-beta/(2*N**2))/(1-exp(-beta/(2*N**2))) + N*exp(-beta/2)",
        bounds.lookup_bound: "(N-1)*exp(-beta/((N-1)*N*(N+1)**2))",
    }[fn]


def _alphabet(formula: s.Formula, alphabet: str | Iterable[str] | None) -> tuple[str, ...]:
    if alphabet is None:
        syms = tuple(sorted(formula.atoms()))
        if not syms:
            raise SpecError(
                "the formula mentions no symbol",
                where="alphabet",
                expected="an explicit alphabet (e.g. alphabet='01')",
            )
        return syms
    syms = tuple(alphabet)
    if not syms or len(set(syms)) != len(syms) or any(len(a) != 1 for a in syms):
        raise SpecError(
            f"alphabet {alphabet!r}", where="alphabet", expected="distinct single characters"
        )
    return syms


def compile_formula(
    formula: s.Formula | str,
    regime: Regime | str = Regime.TEMPERATURE,
    *,
    alphabet: str | Iterable[str] | None = None,
    name: str | None = None,
    language: str | None = None,
) -> Model:
    """Compile ``formula`` (a syntax tree or its text) into a softmax :class:`Model`.

    ``regime``: ``temperature`` | ``unbounded`` | ``future-masked`` |
    ``future-masked-unbounded`` (:class:`Regime`); ``alphabet`` defaults to the symbols
    of the formula's atoms. Raises :class:`UnsupportedError` for a construct the regime
    does not allow (e.g. ▷ under future masking). The model's ``meta`` records the
    formula, every head's pattern, gap and temperature, and every node's output
    coordinate; with ``language`` (a name of :func:`attncert.languages.language` over
    the same alphabet: the language the formula defines, checked against the formula on
    short strings by :func:`attncert.compile.language_check.check_language`) also
    ``meta["language"]``, the default language of ``verify``, ``report`` and ``certify``.
    """
    if isinstance(formula, str):
        from attncert.logic.parser import parse

        formula = parse(formula)
    if not isinstance(formula, s.Formula):
        raise SpecError(f"not a formula: {formula!r}")
    reg = Regime.parse(regime)
    syms = _alphabet(formula, alphabet)
    if language is not None:
        from attncert.compile.language_check import check_language

        language = check_language(language, syms, formula)
    comp = FormulaCompiler(formula, reg, syms)
    return comp.compile(name or f"tl:{to_text(formula)} [{reg.value}]", language)
