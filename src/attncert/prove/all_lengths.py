"""``prove_all_lengths``: the compiled model agrees with its formula at every position of
every string of every length n ≥ 1 (issue 23; Yang et al. Proposition 11, Theorems 12–21,
Corollaries 17, 18, 22, 23 on the concrete model).

This module is the untrusted *finder*; :mod:`attncert.kernel.all_lengths` is the checker.

1. **construction** — the model's gadgets are read from the compiler's record
   (``model.meta``: nodes and heads) and the weights (which FFN writes which coordinate);
   anything else is refused (:class:`~attncert.errors.UnsupportedError`, exit 2);
2. **closed forms** — the kernel derives, per head, the error bound E(n) from the weights
   (:func:`attncert.kernel.all_lengths.expected_inequalities`); the finder only proves
   E(n) ≤ budget: it locates the largest real root of every polynomial the tail rules
   need (flint's certified complex roots), picks x₁ beyond them and a rational
   ℓ ≤ log x₁, and evaluates the bound in arb at every integer below x₁ (so N₀ is the
   first length from which every bound holds, at least 2);
3. **bounded part** — every n < N₀ by :func:`attncert.prove.prove_agreement` (z3 + interval
   arithmetic, as before);
4. **check** — the certificate goes through the kernel; only an accepted certificate with
   a proved bounded part gives the verdict "for all n ≥ 1".

When a bound fails (a lowered temperature, a perturbed weight) the result names the
inequality and the first length where it breaks; the bounded prover is then run at that
length: a counterexample there is confirmed by interval evaluation, otherwise the output
says the bound is insufficient, not that the model is wrong.

Python::

    >>> from attncert.prove.all_lengths import prove_all_lengths
    >>> r = prove_all_lengths("prev Q_1", regime="temperature", alphabet="01")
    >>> r.verdict, r.statement
    ('proved', 'for all n ≥ 1')

Command line::

    attncert prove "prev Q_1" --alphabet 01 --all-lengths -o prev.all.json
    attncert check prev.all.json
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from flint import arb, ctx, fmpq, fmpq_poly

from attncert.certificates.all_lengths import (
    AllLengthsCertificate,
    formula_from_json,
    formula_to_json,
    term_to_json,
)
from attncert.errors import UnsupportedError
from attncert.kernel import all_lengths as K
from attncert.kernel.all_lengths_view import ModelView, NotSupported, embedding_val
from attncert.kernel.closed_form import (
    Inequality,
    ProofFailure,
    RatFn,
    TailProof,
    check_condition,
    holds_at,
    q_str,
    tail_conditions,
    value_at,
)
from attncert.logic import syntax as s
from attncert.logic.parser import parse
from attncert.logic.printer import to_text
from attncert.model.spec import Model

BUDGET = fmpq(1, 4)  # Lemma 9's rounding tolerates any error ≤ 1/4
SCAN_LIMIT = 20_000  # lengths scanned pointwise when looking for a failure
MAX_N0 = 64  # the bounded prover covers n < N0; beyond this the finder gives up


# ----- the construction from the compiler's record ------------------------------------------------


def _refuse(what: str) -> UnsupportedError:
    return UnsupportedError(
        f"the all-length prover does not support this model: {what}. It proves models "
        "compiled by attncert.compile (regimes temperature, unbounded, future-masked, "
        "future-masked-unbounded) and Proposition 11's construction; other models can "
        "still get a bounded proof (attncert prove … --max-len N)",
        where="model",
        expected="a model from compile_formula / attncert compile",
    )


def _ffn_layer(view: ModelView, c: int) -> int:
    ls = sorted(w[1] for w in view.writers[c] if w[0] == "ffn")
    if len(ls) != 1:
        raise _refuse(f"coordinate {c} is written by {len(ls)} feed-forward layers")
    return ls[0]


def _unit_inputs(view: ModelView, layer: int, c: int) -> list[int]:
    lv = view.layers[layer]
    return sorted({x for u in lv.w2.get(c, {}) for x in lv.units[u][0]})


def _pe_key(view: ModelView, coords: list[int], feature: str) -> int:
    for c in coords:
        v = embedding_val(view, c)
        if v is not None and v.pe is not None and set(v.combo) == {feature}:
            return c
    raise _refuse(f"no key coordinate with positional feature {feature!r} among {coords}")


class _Builder:
    """Gadgets of one compiled model, in an order the checker can follow."""

    def __init__(self, model: Model):
        self.model = model
        try:
            self.view = ModelView(model)
        except NotSupported as err:
            raise _refuse(str(err)) from None
        meta = model.meta or {}
        self.meta = meta
        self.heads = list(meta.get("heads", []))
        self.out: list[tuple[int, int, dict[str, Any]]] = []  # (layer, seq, gadget)
        self.done: set[int] = set()
        self.seen: set[tuple] = set()

    def add(self, layer: int, g: dict[str, Any]) -> None:
        self.out.append((layer, len(self.out), g))

    def heads_of(self, node: str, roles: set[str]) -> list[dict[str, Any]]:
        return [h for h in self.heads if h.get("node") == node and h.get("role") in roles]

    def bool_gadget(self, c: int, f: s.Formula, inputs: list[int] | None = None) -> None:
        if c in self.done:
            return
        layer = _ffn_layer(self.view, c)
        ins = inputs or _unit_inputs(self.view, layer, c)
        self.add(
            layer,
            {
                "kind": "bool",
                "coord": c,
                "formula": formula_to_json(f),
                "layer": layer,
                "inputs": ins,
            },
        )
        self.done.add(c)

    def node(self, rec: dict[str, Any]) -> None:
        f = parse(rec["formula"])
        c = int(rec["coord"])
        if rec["level"] == 0 or c in self.done:
            return
        text = to_text(f)
        if isinstance(f, (s.Not, s.And, s.Or)):
            self.bool_gadget(c, f)
        elif isinstance(f, (s.Prev, s.Next)):
            self.prev_next(f, c, text)
        elif isinstance(f, (s.Since, s.Until)):
            self.since_until(f, c, text)
        elif isinstance(f, s.CountPred):
            self.lookup(f.term)
            self.add(
                _ffn_layer(self.view, c),
                {
                    "kind": "countpred",
                    "coord": c,
                    "formula": formula_to_json(f),
                    "layer": _ffn_layer(self.view, c),
                },
            )
        elif isinstance(f, s.Compare):
            self.compare(f, c)
        else:
            raise _refuse(f"no all-length rule for {type(f).__name__} nodes ({text})")
        self.done.add(c)

    # ----- counting -----
    def label(self, text: str) -> int | None:
        labels = self.meta.get("coordinates", [])
        return labels.index(text) if text in labels else None

    def means(self) -> None:
        for h in self.heads:
            if h.get("role") == "uniform" and ("mean", h["writes"][0]) not in self.seen:
                self.seen.add(("mean", h["writes"][0]))
                self.add(
                    h["layer"],
                    {
                        "kind": "mean",
                        "coord": h["writes"][0],
                        "layer": h["layer"],
                        "head": h["head"],
                        "value": h["reads"]["value"][0],
                    },
                )
        c = self.label("[n=1]")
        if c is not None:
            self.bool_gadget(c, s.And(s.First(), s.Last()))

    def strategy(self, terms) -> str:
        reg = self.meta.get("regime", "")
        if reg.startswith("future-masked"):
            return "direct"
        if reg == "unbounded":
            return "lookup"
        sides = {type(t) for _, t in terms}
        return "direct" if len(sides) == 1 else "lookup"

    def value_budget(self, term: s.CountTerm) -> fmpq:
        big = 0
        root = parse(self.meta["formula"])
        for f in root.subformulas():
            if isinstance(f, s.Compare):
                terms, _ = f.normalized()
                if terms and self.strategy(terms) == "lookup" and any(t == term for _, t in terms):
                    big = max(big, sum(abs(k) for k, _ in terms))
        return fmpq(1, 8 * max(big, 1))

    def lookup(self, term: s.CountTerm) -> None:
        text = _term_text(term)
        if ("lookup", text) in self.seen:
            return
        self.seen.add(("lookup", text))
        hs = self.heads_of(text, {"lookup"})
        if len(hs) != 1:
            raise _refuse(f"{text}: {len(hs)} lookup heads recorded")
        h = hs[0]
        q = h["reads"]["query"]
        inv = next((c for c in q if self.meta["coordinates"][c] in ("1/(i-1)", "1/(n-i)")), None)
        bd = next((c for c in q if c != inv and embedding_val(self.view, c) is not None), None)
        mean = next((c for c in q if c not in (inv, bd)), None)
        src = next(
            (u for u in self.heads if u.get("role") == "uniform" and u["writes"] == [mean]), None
        )
        if None in (inv, bd, mean) or src is None:
            raise _refuse(f"{text}: the lookup's query is not (mean, 1/m, mark)")
        g: dict[str, Any] = {
            "kind": "lookup",
            "layer": h["layer"],
            "head": h["head"],
            "term": term_to_json(term),
            "phi": src["reads"]["value"][0],
            "mean": mean,
            "inv": inv,
            "boundary": bd,
            "value": None,
            "preds": [],
            "budget": q_str(BUDGET),
            "value_budget": None,
        }
        pairs: dict[str, list[int]] = {}
        for lab, c in zip(h["values"], h["writes"], strict=True):
            if lab in ("S/N", "S"):
                g["value"] = c
                g["value_budget"] = q_str(self.value_budget(term))
            else:
                name, arg = lab.split("(", 1)
                pairs.setdefault(name, [0, 0])[0 if arg == "S)" else 1] = c
        g["preds"] = [[name, a, b] for name, (a, b) in pairs.items()]
        self.add(h["layer"], g)

    def compare(self, f: s.Compare, c: int) -> None:
        from attncert.kernel.all_lengths_gadgets import ge_formula

        terms, b = f.normalized()
        if not terms:
            raise _refuse(f"{to_text(f)} compares constants (compiled to ⊤/⊥)")
        if f.op in (s.CmpOp.EQ, s.CmpOp.NE):
            neg = tuple((-k, t) for k, t in terms)
            cs = [self.threshold(ge_formula(terms, b)), self.threshold(ge_formula(neg, -b))]
            self.bool_gadget(c, f, inputs=cs)
        else:
            self.threshold(f, c)

    def threshold(self, f: s.Compare, c: int | None = None) -> int:
        from attncert.kernel.all_lengths_gadgets import ge_form

        terms, b = ge_form(f)
        desc = " + ".join(f"{k}*{_term_text(t)}" for k, t in terms) + f" >= {b}"
        out = self.label(f"[{desc}]") if c is None else c
        if out is None:
            raise _refuse(f"no coordinate for the threshold {desc}")
        if ("threshold", out) in self.seen:
            return out
        self.seen.add(("threshold", out))
        layer = _ffn_layer(self.view, out)
        strategy = self.strategy(terms)
        for _, t in terms:
            if strategy == "lookup":
                self.lookup(t)
        sign = self.heads_of(desc, {"sign"})
        g: dict[str, Any] = {"coord": out, "formula": formula_to_json(f), "layer": layer}
        if sign:
            h = sign[0]
            if strategy == "lookup":
                counts = [self.label(f"count:{_term_text(t)}/N") for _, t in terms]
                offset = self.label("pe:1*[1/n]")
            else:
                counts = [self.label(f"mean≤:{_term_text(t)}") for _, t in terms]
                left = isinstance(terms[0][1], s.CountLeft)
                offset = self.label("pe:1*[1/i]") if left else self.label("1/(n-i+1)")
            flag = self.label("[n=1]")
            if flag is None:
                flag = self.label("pe:1*[[i=1]]")
            g.update(
                {
                    "kind": "threshold-sign",
                    "head": h["head"],
                    "raw": h["writes"][0],
                    "flag": flag,
                    "counts": counts,
                    "offset": offset,
                    "budget": q_str(BUDGET),
                }
            )
        else:
            g.update(
                {
                    "kind": "threshold-clamp",
                    "counts": [self.label(f"count:{_term_text(t)}") for _, t in terms],
                }
            )
        if None in g.get("counts", []) or g.get("offset", 0) is None or g.get("flag", 0) is None:
            raise _refuse(f"cannot locate the coordinates of the threshold {desc}")
        self.add(layer, g)
        return out

    def prev_next(self, f: s.Prev | s.Next, c: int, text: str) -> None:
        hs = self.heads_of(text, {"prev", "next"})
        layer = _ffn_layer(self.view, c)
        if len(hs) == 2:
            keys = hs[0]["reads"]["key"]
            self.add(
                layer,
                {
                    "kind": "prev-parity",
                    "coord": c,
                    "formula": formula_to_json(f),
                    "layer": layer,
                    "heads": [hs[0]["head"], hs[1]["head"]],
                    "raws": [hs[0]["writes"][0], hs[1]["writes"][0]],
                    "value": hs[0]["reads"]["value"][0],
                    "parity": _pe_key(self.view, keys, "(-1)^i"),
                    "tie": next(k for k in keys if k != _pe_key(self.view, keys, "(-1)^i")),
                    "budget": q_str(BUDGET),
                },
            )
        elif len(hs) == 1:
            self.add(
                layer,
                {
                    "kind": "prev-shift",
                    "coord": c,
                    "formula": formula_to_json(f),
                    "layer": layer,
                    "head": hs[0]["head"],
                    "raw": hs[0]["writes"][0],
                    "value": hs[0]["reads"]["value"][0],
                    "budget": q_str(BUDGET),
                },
            )
        else:
            raise _refuse(f"{text}: {len(hs)} heads recorded")

    def since_until(self, f: s.Since | s.Until, c: int, text: str) -> None:
        hs = self.heads_of(text, {"since", "until"})
        if len(hs) != 1:
            raise _refuse(f"{text}: {len(hs)} heads recorded")
        h = hs[0]
        layer = _ffn_layer(self.view, c)
        keys = h["reads"]["key"]
        val = h["reads"]["value"][0]
        pos = {}
        for k in keys:
            v = embedding_val(self.view, k)
            if v is not None and v.pe is not None and len(v.combo) == 1:
                ((feat, _),) = v.combo.items()
                if feat in ("i/n", "1/i", "i"):
                    pos[feat] = k
        if len(pos) != 1 or len(keys) != 2:
            raise _refuse(f"{text}: cannot tell the guard from the position key among {keys}")
        ((feat, tie),) = pos.items()
        guard = next(k for k in keys if k != tie)
        if guard != val and embedding_val(self.view, guard) is None:
            self.bool_gadget(guard, s.Or(f.right, s.Not(f.left)))
        g: dict[str, Any] = {
            "coord": c,
            "formula": formula_to_json(f),
            "layer": layer,
            "head": h["head"],
            "raw": h["writes"][0],
            "guard": guard,
            "value": val,
            "budget": q_str(BUDGET),
        }
        if feat == "i":
            g["kind"] = "since-shift"
        else:
            g["kind"] = "since-tie"
            g["tie"] = tie
        self.add(layer, g)

    def gadgets(self) -> list[dict[str, Any]]:
        self.means()
        nodes = sorted(self.meta.get("nodes", []), key=lambda r: (r["level"], r["coord"]))
        for rec in nodes:
            self.node(rec)
        return [g for _, _, g in sorted(self.out, key=lambda t: (t[0], t[1]))]


def _term_text(t: s.CountTerm) -> str:
    return ("#<[" if isinstance(t, s.CountLeft) else "#>[") + to_text(t.arg) + "]"


def construction(model: Model) -> tuple[str, list[dict[str, Any]]]:
    """(construction name, gadgets) of a supported model; UnsupportedError otherwise."""
    meta = model.meta or {}
    if meta.get("construction") == "Yang et al. Proposition 11":
        from attncert.compile.first_last import MARK_COORD, MEAN_COORD, SIGN_COORD

        which = "first" if model.name.endswith("first") else "last"
        return "proposition11", [
            {
                "kind": "proposition11",
                "coord": MARK_COORD,
                "formula": [which],
                "layer": 0,
                "head": 0,
                "mean": MEAN_COORD,
                "sign": SIGN_COORD,
            }
        ]
    if meta.get("compiler") == "attncert.compile.dyck" or "program" in meta:
        raise _refuse(
            "it is an Appendix-E program for Theorem 26 (uniform–tieless average-hard "
            "attention); its tielessness is established one length at a time, so there is no "
            "all-length proof of it here (docs/all-lengths.md); its softmax simulation is "
            "certified per length (proofs/yang2024/theorem26)"
        )
    if meta.get("compiler") != "attncert.compile":
        raise _refuse("it has no compiler record (model.meta['compiler'])")
    return "compiled", _Builder(model).gadgets()


# ----- proofs of the inequalities -------------------------------------------------------------------


def _largest_real_root(r: RatFn) -> float:
    best = -math.inf
    for poly in (r.p, r.q):
        if poly.degree() <= 0:
            continue
        for z, _ in fmpq_poly(poly).complex_roots():
            if abs(float(z.imag.mid())) < 1e-9 * (1 + abs(float(z.real.mid()))):
                best = max(best, float(z.real.mid()))
    return best


def _ell(x1: int) -> fmpq:
    """A short rational ≤ log x₁."""
    with ctx.workprec(64):
        lo = arb(x1).log().lower()
    v = math.floor(float(lo) * 2**20) / 2**20
    return fmpq(int(v * 2**20), 2**20) if v > 0 else fmpq(0)


@dataclass(frozen=True)
class TailSearch:
    proof: TailProof | None
    reason: str = ""


def find_tail(ineq: Inequality, x_from: int) -> TailSearch:
    """x₁ ≥ x_from with every tail condition checked by the kernel's own rule (R2/R3)."""
    x1 = max(x_from, ineq.start, 1)
    for _ in range(40):
        ell = _ell(x1)
        conds = tail_conditions(ineq)
        bad = None
        for c in conds:
            try:
                check_condition(c, fmpq(x1), ell)
            except ProofFailure as err:
                bad = (c, err)
                break
        if bad is None:
            return TailSearch(TailProof(x1, ell, tuple(conds)))
        c, err = bad
        roots = [
            _largest_real_root(c.u),
            _largest_real_root(c.v),
            _largest_real_root(c.u + c.v.scale(ell)),
        ]
        r = max(roots)
        if r == -math.inf or r < x1:
            return TailSearch(None, f"{c.what}: {err.reason} (it fails as x → ∞)")
        x1 = max(x1 + 1, math.floor(r) + 1)
        if x1 > 10**7:
            break
    return TailSearch(None, "no point x₁ found for the tail rules")


@dataclass(frozen=True)
class BoundFailure:
    """An inequality that does not hold for every length: the first failing value of its
    variable (None if only the tail could not be proved) and why."""

    id: str
    what: str
    var: str
    first: int | None
    value: float | None
    bound: str
    reason: str

    def line(self) -> str:
        at = (
            f" first fails at {self.var} = {self.first} (bound {self.value:.4g} > {self.bound})"
            if self.first is not None
            else ""
        )
        return f"{self.id} ({self.what}):{at} {self.reason}".strip()


def _holds(ineq: Inequality, x: int) -> bool:
    try:
        return holds_at(ineq, x)
    except (ProofFailure, ZeroDivisionError):
        return False


def _first_failure(ineq: Inequality, lo: int, hi: int) -> int | None:
    return next((x for x in range(lo, hi + 1) if not _holds(ineq, x)), None)


FAR = 2**40


def _first_holding(ineq: Inequality, x1: int) -> int | None:
    """The least x > x1 where the bound holds, by bisection — valid because every atom is
    non-increasing from x1 on (the tail rules hold there), so once it holds it keeps
    holding; None if it still fails at :data:`FAR`."""
    if not _holds(ineq, FAR):
        return None
    lo, hi = x1, FAR  # fails at lo, holds at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _holds(ineq, mid):
            hi = mid
        else:
            lo = mid
    return hi


def _scan_far(ineq: Inequality, lo: int) -> int | None:
    """A failing point beyond ``lo`` when the tail cannot be proved (doubling)."""
    x = max(lo, 2)
    while x < 10**12:
        if not _holds(ineq, x):
            return x
        x *= 2
    return None


# ----- the result -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AllLengthsResult:
    """Outcome of :func:`prove_all_lengths`.

    ``verdict``: ``proved`` (every n ≥ 1), ``partial`` (proved for n ≤ ``proved_to`` only;
    ``failures`` say which bound breaks where), ``counterexample`` (a string the model gets
    wrong, confirmed by interval evaluation), ``rejected`` (the kernel refused the
    certificate — a bug or a tampered file)."""

    formula: str
    model: str
    digest: str
    verdict: str
    statement: str
    n0: int | None
    proved_to: int | None
    certificate: AllLengthsCertificate | None
    kernel: Any = None
    bounded: Any = None
    failures: tuple[BoundFailure, ...] = ()
    counterexample: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "formula": self.formula,
            "model": self.model,
            "digest": self.digest,
            "outcome": self.verdict,
            "statement": self.statement,
            "N0": self.n0,
            "proved_to": self.proved_to,
            "inequalities": len(self.certificate.inequalities) if self.certificate else 0,
            "kernel": None
            if self.kernel is None
            else {
                "accepted": self.kernel.accepted,
                "failures": [f.line() for f in self.kernel.failures],
                "seconds": round(self.kernel.seconds, 4),
            },
            "bounded": None
            if self.bounded is None
            else {
                "max_len": self.bounded.max_len,
                "verdict": self.bounded.verdict,
            },
            "failures": [f.__dict__ for f in self.failures],
            "counterexample": self.counterexample,
            "notes": list(self.notes),
            "seconds": round(self.seconds, 4),
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
        }


def _skeleton(
    model: Model,
    formula: s.Formula,
    construction_name: str,
    gadgets,
    n0: int,
    regime: str | None,
    inequalities=(),
    bounded=None,
    trace=None,
):
    from attncert.prove.coordinate import designated_coordinate

    return AllLengthsCertificate(
        formula=formula_to_json(formula),
        construction=construction_name,
        regime=regime,
        model_sha256=model.digest,
        model_name=model.name,
        coordinate=designated_coordinate(model),
        n0=n0,
        gadgets=tuple(gadgets),
        inequalities=tuple(inequalities),
        bounded=bounded,
        trace=trace or {},
    )


def _entry(item: dict[str, Any], proof: TailProof) -> dict[str, Any]:
    ineq: Inequality = item["inequality"]
    return {
        "id": item["id"],
        "gadget": item["gadget"],
        "head": item["head"],
        "what": item["what"],
        "var": ineq.var,
        "start": ineq.start,
        "bound": q_str(ineq.bound),
        "atoms": [a.to_json() for a in ineq.atoms],
        "text": ineq.text(),
        "proof": proof.to_json(),
    }


def prove_all_lengths(
    formula: s.Formula | str,
    model: Model | None = None,
    *,
    regime: str = "temperature",
    alphabet: str | None = None,
    jobs: int = 1,
    timeout: float = 60.0,
    model_source: dict[str, Any] | None = None,
    progress: bool = False,
    smt2_dir: str | None = None,
) -> AllLengthsResult:
    """Prove that ``model`` (default: ``formula`` compiled in ``regime``) computes
    ``formula`` at every position of every string of every length (module docstring)."""
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    f = parse(formula) if isinstance(formula, str) else formula
    if model is None:
        from attncert.compile import compile_formula

        model = compile_formula(f, regime=regime, alphabet=alphabet)
    reg = (model.meta or {}).get("regime")
    meta = model.meta or {}
    if meta.get("compiler") == "attncert.compile" and "formula" in meta:
        compiled = parse(meta["formula"])
        if compiled != f:
            raise UnsupportedError(
                f"the model computes {to_text(compiled)!r}, not {to_text(f)!r}",
                where="formula",
                expected="the formula the model was compiled from",
            )
        try:
            name, gadgets = construction(model)
        except UnsupportedError as err:
            # a compiled model whose weights no longer match its record (an edited weight)
            why = BoundFailure(
                "construction",
                "model",
                "n",
                None,
                None,
                "-",
                f"{err.message} — the all-length argument does not apply at any length",
            )
            return _partial(f, model, [why], t0, timings, jobs, timeout, progress)
    else:
        name, gadgets = construction(model)
        compiled = formula_from_json(gadgets[0]["formula"])
        if compiled != f:
            raise UnsupportedError(
                f"the model computes {to_text(compiled)!r}, not {to_text(f)!r}",
                where="formula",
                expected="the formula the model was compiled from",
            )
    # 1. the inequalities, as the kernel derives them (start = 2 for now)
    t = time.perf_counter()
    sk = _skeleton(model, f, name, gadgets, 2, reg)
    try:
        items = K.expected_inequalities(sk, model)
    except K.Reject as err:
        # a compiled model whose weights no longer fit the construction (an edited weight,
        # a changed mask): no length-uniform argument; say why, then prove what z3 can
        why = BoundFailure(
            "construction",
            err.where,
            "n",
            None,
            None,
            "-",
            f"{err.reason} — the all-length argument does not apply at any length",
        )
        return _partial(f, model, [why], t0, timings, jobs, timeout, progress)
    # 2. N0: every n-bound holds from N0 on; i-bounds must hold for every i ≥ 1
    failures: list[BoundFailure] = []
    n0 = 2
    first_bad: int | None = None
    for it in items:
        ineq: Inequality = it["inequality"]
        lo = ineq.start
        ts = find_tail(ineq, lo)
        if ts.proof is None:
            bad = _first_failure(ineq, lo, lo + SCAN_LIMIT) or _scan_far(ineq, lo + SCAN_LIMIT)
            failures.append(_failure(it, ineq, bad, ts.reason))
            continue
        bad = [x for x in range(lo, ts.proof.x1 + 1) if not _holds(ineq, x)]
        if bad and bad[-1] == ts.proof.x1:  # non-increasing from x1 on: where does it dip?
            dip = _first_holding(ineq, ts.proof.x1)
            if dip is None:
                failures.append(
                    _failure(
                        it,
                        ineq,
                        bad[0],
                        f"the bound is non-increasing from "
                        f"{ineq.var} = {ts.proof.x1} on but still above the "
                        f"budget at {ineq.var} = {FAR}",
                    )
                )
                continue
            bad.append(dip - 1)
        if not bad:
            continue
        if ineq.var != "n":
            failures.append(
                _failure(
                    it,
                    ineq,
                    bad[0],
                    "the bound exceeds the budget at a position that every long enough string has",
                )
            )
            continue
        first_bad = min(first_bad or bad[0], bad[0])
        n0 = max(n0, bad[-1] + 1)
    timings["closed forms"] = time.perf_counter() - t
    if failures or n0 > MAX_N0:
        if n0 > MAX_N0 and not failures:
            for it in items:
                ineq = it["inequality"]
                x = _first_failure(ineq, ineq.start, n0)
                if x is not None:
                    failures.append(
                        _failure(
                            it,
                            ineq,
                            x,
                            f"it holds again only from n = {n0} "
                            f"on, beyond the bounded prover's reach here",
                        )
                    )
        return _partial(f, model, failures, t0, timings, jobs, timeout, progress)
    # 3. the proofs with start = N0
    if n0 != 2:
        sk = _skeleton(model, f, name, gadgets, n0, reg)
        items = K.expected_inequalities(sk, model)
    entries = []
    for it in items:
        ineq = it["inequality"]
        ts = find_tail(ineq, ineq.start)
        assert ts.proof is not None  # found above from a lower start
        entries.append(_entry(it, ts.proof))
    # 4. the bounded part n < N0
    t = time.perf_counter()
    from attncert.prove.driver import prove_agreement

    bres = prove_agreement(
        f, model, max_len=n0 - 1, jobs=jobs, timeout=timeout, smt2_dir=smt2_dir, progress=progress
    )
    timings["bounded"] = time.perf_counter() - t
    bounded = {
        "max_len": n0 - 1,
        "verdict": bres.verdict,
        "method": "attncert.prove.prove_agreement (z3 per length, interval arithmetic)",
        "queries": sum(len(r.queries) for r in bres.lengths),
    }
    trace = {"timings": {k: round(v, 4) for k, v in timings.items()}}
    cert = _skeleton(model, f, name, gadgets, n0, reg, entries, bounded, trace)
    if model_source is None:
        from attncert.model import model_to_dict

        model_source = {"embedded": model_to_dict(model)}
    cert = AllLengthsCertificate(**{**cert.__dict__, "model_source": model_source})
    # 5. the kernel
    t = time.perf_counter()
    rep = K.check(cert, model)
    timings["kernel"] = time.perf_counter() - t
    if bres.verdict != "proved":
        cex = bres.counterexample
        return AllLengthsResult(
            to_text(f),
            model.name,
            model.digest,
            "counterexample" if cex else "partial",
            _proved_upto(bres),
            n0,
            _proved_to(bres),
            cert,
            rep,
            bres,
            (),
            cex,
            (f"the bounded prover says {bres.verdict} below N0 = {n0}",),
            time.perf_counter() - t0,
            timings,
        )
    if not rep.accepted:
        return AllLengthsResult(
            to_text(f),
            model.name,
            model.digest,
            "rejected",
            f"not proved (the kernel rejected the certificate: {rep.failures[0].line()})",
            n0,
            n0 - 1,
            cert,
            rep,
            bres,
            (),
            None,
            (),
            time.perf_counter() - t0,
            timings,
        )
    return AllLengthsResult(
        to_text(f),
        model.name,
        model.digest,
        "proved",
        "for all n ≥ 1",
        n0,
        None,
        cert,
        rep,
        bres,
        (),
        None,
        (
            f"n ≥ {n0}: {len(entries)} closed-form bounds checked by the kernel; n < {n0}: "
            f"bounded z3 proof",
        ),
        time.perf_counter() - t0,
        timings,
    )


def _failure(it: dict[str, Any], ineq: Inequality, x: int | None, reason: str) -> BoundFailure:
    val = None
    if x is not None:
        try:
            val = value_at(ineq, x)
        except (ProofFailure, ZeroDivisionError):
            val = math.nan
    return BoundFailure(it["id"], it["what"], ineq.var, x, val, q_str(ineq.bound), reason)


def _proved_to(bres) -> int:
    k = 0
    for r in bres.lengths:
        if r.verdict != "proved":
            break
        k = r.n
    return k


def _proved_upto(bres) -> str:
    k = _proved_to(bres)
    return f"proved for n ≤ {k}" if k else "not proved for any length"


PARTIAL_MAX = 12  # lengths the bounded prover tries when the all-length part fails


def _partial(f, model, failures, t0, timings, jobs, timeout, progress) -> AllLengthsResult:
    """The all-length part failed: prove what the bounded prover can (n ≤ PARTIAL_MAX), and
    look for a counterexample at the first length where a bound breaks."""
    from attncert.limits import PROVE_MAX_LEN
    from attncert.prove.driver import prove_agreement

    firsts = [b.first for b in failures if b.first is not None and b.var == "n"]
    first = min(firsts) if firsts else None
    notes: list[str] = []
    t = time.perf_counter()
    bres = prove_agreement(
        f, model, max_len=PARTIAL_MAX, jobs=jobs, timeout=timeout, progress=progress
    )
    at = None
    if first is not None and first <= PARTIAL_MAX:
        at = bres.by_n(first)
    elif first is not None and first <= PROVE_MAX_LEN:
        at = prove_agreement(f, model, min_len=first, max_len=first, jobs=1, timeout=timeout)
        at = at.lengths[0]
    if first is not None and at is not None:
        if at.counterexample:
            notes.append(
                f"at n = {first}, where the bound breaks, the model is wrong: "
                f"{at.counterexample['string']!r} (confirmed by interval evaluation)"
            )
        elif at.verdict == "proved":
            notes.append(
                f"at n = {first} the bounded prover proves agreement: the closed-form "
                "bound is insufficient there, which does not mean the model is wrong"
            )
        else:
            notes.append(
                f"at n = {first} the bounded prover finds no counterexample "
                f"({at.verdict}): the bound is insufficient, the model is not shown "
                "wrong"
            )
    elif first is not None:
        notes.append(
            f"n = {first} is beyond the bounded prover's limit ({PROVE_MAX_LEN}): no "
            "string of that length was checked; the bound is insufficient, the model "
            "is not shown wrong"
        )
    timings["bounded"] = time.perf_counter() - t
    cex = (at.counterexample if at is not None else None) or bres.counterexample
    stmt = _proved_upto(bres)
    if cex:
        stmt = (
            f"refuted: the model disagrees with the formula on {cex['string']!r} "
            f"(n = {len(cex['string'])}); {stmt}"
        )
    return AllLengthsResult(
        to_text(f),
        model.name,
        model.digest,
        "counterexample" if cex else "partial",
        stmt,
        None,
        _proved_to(bres),
        None,
        None,
        bres,
        tuple(failures),
        cex,
        tuple(notes),
        time.perf_counter() - t0,
        timings,
    )


def recheck_bounded(
    cert: AllLengthsCertificate, model: Model, *, jobs: int = 1, smt2_dir: str | None = None
):
    """The bounded part of a certificate proved again (z3 per length n < N0)."""
    from attncert.prove.driver import prove_agreement

    return prove_agreement(cert.claim, model, max_len=cert.n0 - 1, jobs=jobs, smt2_dir=smt2_dir)
