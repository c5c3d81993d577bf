"""The construction of a compiled model as the all-length checker's gadgets (untrusted;
issue 23): read from the compiler's record (``model.meta``: nodes, heads, coordinate labels)
and the weights (which FFN writes which coordinate), for
:mod:`attncert.prove.all_lengths`. The kernel verifies every gadget against the weights;
what cannot be read is refused (:class:`~attncert.errors.UnsupportedError`).
"""

from __future__ import annotations

from typing import Any

from flint import fmpq

from attncert.errors import UnsupportedError
from attncert.kernel.all_lengths.closed_form import q_str
from attncert.kernel.all_lengths.view import ModelView, NotSupported, embedding_val
from attncert.logic import syntax as s
from attncert.logic.parser import parse
from attncert.logic.printer import to_text
from attncert.model.spec import Model
from attncert.prove.all_lengths_certificate import formula_to_json, term_to_json

BUDGET = fmpq(1, 4)  # Lemma 9's rounding tolerates any error ≤ 1/4

# ----- the construction from the compiler's record ------------------------------------------------


def refuse(what: str) -> UnsupportedError:
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
        raise refuse(f"coordinate {c} is written by {len(ls)} feed-forward layers")
    return ls[0]


def _unit_inputs(view: ModelView, layer: int, c: int) -> list[int]:
    lv = view.layers[layer]
    return sorted({x for u in lv.w2.get(c, {}) for x in lv.units[u][0]})


def _pe_key(view: ModelView, coords: list[int], feature: str) -> int:
    for c in coords:
        v = embedding_val(view, c)
        if v is not None and v.pe is not None and set(v.combo) == {feature}:
            return c
    raise refuse(f"no key coordinate with positional feature {feature!r} among {coords}")


class _Builder:
    """Gadgets of one compiled model, in an order the checker can follow."""

    def __init__(self, model: Model):
        self.model = model
        try:
            self.view = ModelView(model)
        except NotSupported as err:
            raise refuse(str(err)) from None
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
            raise refuse(f"no all-length rule for {type(f).__name__} nodes ({text})")
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
            raise refuse(f"{text}: {len(hs)} lookup heads recorded")
        h = hs[0]
        q = h["reads"]["query"]
        inv = next((c for c in q if self.meta["coordinates"][c] in ("1/(i-1)", "1/(n-i)")), None)
        bd = next((c for c in q if c != inv and embedding_val(self.view, c) is not None), None)
        mean = next((c for c in q if c not in (inv, bd)), None)
        src = next(
            (u for u in self.heads if u.get("role") == "uniform" and u["writes"] == [mean]), None
        )
        if None in (inv, bd, mean) or src is None:
            raise refuse(f"{text}: the lookup's query is not (mean, 1/m, mark)")
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
        from attncert.kernel.all_lengths.gadgets import ge_formula

        terms, b = f.normalized()
        if not terms:
            raise refuse(f"{to_text(f)} compares constants (compiled to ⊤/⊥)")
        if f.op in (s.CmpOp.EQ, s.CmpOp.NE):
            neg = tuple((-k, t) for k, t in terms)
            cs = [self.threshold(ge_formula(terms, b)), self.threshold(ge_formula(neg, -b))]
            self.bool_gadget(c, f, inputs=cs)
        else:
            self.threshold(f, c)

    def threshold(self, f: s.Compare, c: int | None = None) -> int:
        from attncert.kernel.all_lengths.gadgets import ge_form

        terms, b = ge_form(f)
        desc = " + ".join(f"{k}*{_term_text(t)}" for k, t in terms) + f" >= {b}"
        out = self.label(f"[{desc}]") if c is None else c
        if out is None:
            raise refuse(f"no coordinate for the threshold {desc}")
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
            raise refuse(f"cannot locate the coordinates of the threshold {desc}")
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
            raise refuse(f"{text}: {len(hs)} heads recorded")

    def since_until(self, f: s.Since | s.Until, c: int, text: str) -> None:
        hs = self.heads_of(text, {"since", "until"})
        if len(hs) != 1:
            raise refuse(f"{text}: {len(hs)} heads recorded")
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
            raise refuse(f"{text}: cannot tell the guard from the position key among {keys}")
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
        raise refuse(
            "it is an Appendix-E program for Theorem 26 (uniform–tieless average-hard "
            "attention); its tielessness is established one length at a time, so there is no "
            "all-length proof of it here (docs/all-lengths.md); its softmax simulation is "
            "certified per length (proofs/yang2024/theorem26)"
        )
    if meta.get("compiler") != "attncert.compile":
        raise refuse("it has no compiler record (model.meta['compiler'])")
    return "compiled", _Builder(model).gadgets()
