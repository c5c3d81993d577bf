"""What the all-length checker knows about a model, exactly and for every length (trusted).

* :class:`ModelView` — the weights as exact sparse rationals (every float64 is the dyadic
  rational it denotes): per coordinate its embedding (word column, positional row), per
  head W_Qᵀ W_K and W_O W_V as sparse bilinear maps, per FFN its units, and for every
  coordinate the set of *writers* (the embedding, a head, a layer's FFN);
* :class:`Val` — a fact about a coordinate that holds at every position of every string of
  every length from a layer boundary on: an exact Boolean [φ at i], an exact positional
  value Σ c_f·f(i, n), an exact constant, or an exact mean |{j ⋈ i : v_j}|/|{j ⋈ i}|;
* the positional identities the checker relies on (:data:`PREDICATE_COLUMNS`, rule PE):
  a combination of features equals a predicate of (i, n), by the features' definitions
  (:mod:`attncert.model.positional`) — parity columns by a case split on i mod 2 (done
  here), indicator columns because the feature *is* the predicate's indicator;
* :func:`ffn_affine` — the rule FFN-BOX: on a box of inputs on which every ReLU unit's
  pre-activation has one sign, a ReLU FFN is affine, so its exact output on the whole box
  is an exact affine form; the checker requires that form to be the target constant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq

from attncert.logic import syntax as s
from attncert.logic.numpred import PREDICATES
from attncert.model.spec import AttentionKind, Mask, Model

Row = dict[int, fmpq]


def exact(x: float) -> fmpq:
    a, b = float(x).as_integer_ratio()
    return fmpq(a, b)


def _sparse(m: np.ndarray) -> list[Row]:
    return [
        {int(c): exact(r[c]) for c in np.flatnonzero(r)} for r in np.asarray(m, dtype=np.float64)
    ]


class NotSupported(Exception):
    """The model is outside what the checker's rules describe (named in the message)."""


@dataclass(frozen=True)
class HeadView:
    layer: int
    index: int
    qk: dict[tuple[int, int], fmpq]  # score(i, j) = Σ qk[a, b]·y_i[a]·y_j[b], times β(N)
    vo: dict[tuple[int, int], fmpq]  # output[c] = Σ vo[c, b]·attended y[b]
    mask: Mask
    coef: fmpq  # β(N) = coef·N^n_power·(log N)^log_power
    n_power: int
    log_power: int

    @property
    def name(self) -> str:
        return f"layer {self.layer} head {self.index}"

    @property
    def uniform(self) -> bool:
        return not self.qk


@dataclass(frozen=True)
class LayerView:
    heads: tuple[HeadView, ...]
    units: tuple[tuple[Row, fmpq], ...]  # ReLU(row·y + bias)
    w2: dict[int, Row]  # coordinate -> {unit: weight}
    b2: dict[int, fmpq]


class ModelView:
    """Exact sparse weights and writers of a plain model without BOS/EOS (see module
    docstring); :class:`NotSupported` names the first feature outside that class."""

    def __init__(self, model: Model):
        if model.extensions:
            raise NotSupported("the model uses " + ", ".join(model.extensions))
        if model.bos is not None or model.eos is not None:
            raise NotSupported("the model adds BOS/EOS tokens")
        if model.embedding.table is not None:
            raise NotSupported("the model has a learned position table")
        self.model = model
        self.d = model.d
        self.alphabet = tuple(model.alphabet)
        emb = model.embedding
        toks = [model.token_index[a] for a in self.alphabet]
        self.word = [tuple(exact(emb.word[t, c]) for t in toks) for c in range(self.d)]
        labels = [f.label for f in emb.features]
        self.pos: list[dict[str, fmpq]] = []
        for row in _sparse(emb.pos_weight):
            combo: dict[str, fmpq] = {}
            for k, v in row.items():
                combo[labels[k]] = combo.get(labels[k], fmpq(0)) + v
            self.pos.append({f: v for f, v in combo.items() if v != 0})
        self.layers: list[LayerView] = []
        self.writers: dict[int, set[tuple]] = {c: set() for c in range(self.d)}
        for c in range(self.d):
            if any(self.word[c]) or self.pos[c]:
                self.writers[c].add(("embedding",))
        for li, layer in enumerate(model.layers):
            if not layer.residual:
                raise NotSupported(f"layer {li} has no residual connection")
            heads = []
            for hi, h in enumerate(layer.heads):
                if h.kind is not AttentionKind.SOFTMAX:
                    raise NotSupported(f"layer {li} head {hi} is {h.kind.value}, not softmax")
                t = h.temperature
                coef, npw, lpw = (
                    (fmpq(1), 0, 0) if t is None else (exact(t.coef), t.n_power, t.log_power)
                )
                if float(npw) != int(npw) or int(npw) < 0 or lpw not in (0, 1) or coef <= 0:
                    raise NotSupported(
                        f"layer {li} head {hi}: temperature {t} (the checker handles "
                        "c·N^p·(log N)^q with c > 0, integer p ≥ 0, q ∈ {0, 1})"
                    )
                wq, wk = _sparse(h.w_q), _sparse(h.w_k)
                qk: dict[tuple[int, int], fmpq] = {}
                for rq, rk in zip(wq, wk, strict=True):
                    for a, x in rq.items():
                        for b, y in rk.items():
                            qk[(a, b)] = qk.get((a, b), fmpq(0)) + x * y
                wv, wo_t = _sparse(h.w_v), _sparse(np.asarray(h.w_o).T)
                vo: dict[tuple[int, int], fmpq] = {}
                for rv, ro in zip(wv, wo_t, strict=True):
                    for c, x in ro.items():
                        for b, y in rv.items():
                            vo[(c, b)] = vo.get((c, b), fmpq(0)) + x * y
                qk = {k: v for k, v in qk.items() if v != 0}
                vo = {k: v for k, v in vo.items() if v != 0}
                hv = HeadView(li, hi, qk, vo, h.mask, coef, int(npw), int(lpw))
                heads.append(hv)
                for c, _ in vo:
                    self.writers[c].add(("head", li, hi))
            units: list[tuple[Row, fmpq]] = []
            w2: dict[int, Row] = {}
            b2: dict[int, fmpq] = {}
            if layer.ffn is not None:
                f = layer.ffn
                rows = _sparse(f.w1)
                units = [(r, exact(b)) for r, b in zip(rows, f.b1, strict=True)]
                for c, r in enumerate(_sparse(f.w2)):
                    if r:
                        w2[c] = r
                b2 = {c: exact(v) for c, v in enumerate(f.b2) if v != 0}
                for c in set(w2) | set(b2):
                    self.writers[c].add(("ffn", li))
            self.layers.append(LayerView(tuple(heads), tuple(units), w2, b2))

    def level(self, c: int) -> int:
        """0 if only the embedding writes c (or nothing), else 1 + the last writing layer."""
        return max((w[1] + 1 for w in self.writers[c] if w[0] != "embedding"), default=0)

    def head(self, li: int, hi: int) -> HeadView:
        if not (0 <= li < len(self.layers) and 0 <= hi < len(self.layers[li].heads)):
            raise NotSupported(f"no head {hi} in layer {li}")
        return self.layers[li].heads[hi]


# ----- facts about coordinates -------------------------------------------------------------


@dataclass(frozen=True)
class Mean:
    """Exact |{j ⋈ i : v_j}| / |{j ⋈ i}| (0 when no j is visible) for the mask ⋈ of a
    uniform head and a 0/1 value v: a formula, or the position marks [j=1] / [j=n]."""

    mask: Mask
    formula: s.Formula | None = None  # v_j = [φ at j]
    mark: str | None = None  # "[i=1]" or "[i=n]"


@dataclass(frozen=True)
class Count:
    """An approximate count: the coordinate is C/n + e (``per_n``) or C + e, with C the
    value of ``term`` at i and |e| ≤ r/n (``per_n``) or ≤ r, for every n ≥ N₀."""

    term: s.CountTerm
    per_n: bool
    r: fmpq


@dataclass(frozen=True)
class Val:
    """A fact about a coordinate from layer boundary ``level`` on (see module docstring)."""

    level: int
    formula: s.Formula | None = None
    pe: tuple[tuple[str, fmpq], ...] | None = None  # exact Σ coef·feature(i, n)
    const: fmpq | None = None
    mean: Mean | None = None
    count: Count | None = None

    @property
    def combo(self) -> dict[str, fmpq]:
        return dict(self.pe or ())


# rule PE: combinations of positional features that equal θ_n(j − s) at position j
PREDICATE_COLUMNS: dict[tuple[str, int], dict[str, fmpq]] = {
    ("ODD", 0): {"1": fmpq(1, 2), "(-1)^i": fmpq(-1, 2)},
    ("ODD", 1): {"1": fmpq(1, 2), "(-1)^i": fmpq(1, 2)},
    ("EVEN", 0): {"1": fmpq(1, 2), "(-1)^i": fmpq(1, 2)},
    ("EVEN", 1): {"1": fmpq(1, 2), "(-1)^i": fmpq(-1, 2)},
    ("SQUARE", 0): {"[i square]": fmpq(1)},
    ("SQUARE", 1): {"[i-1 square]": fmpq(1)},
    ("HALF", 0): {"[2i=n]": fmpq(1)},
    ("HALF", 1): {"[2i-2=n]": fmpq(1)},
    ("GTHALF", 0): {"[i>n/2]": fmpq(1)},
    ("GTHALF", 1): {"[i-1>n/2]": fmpq(1)},
    ("LEHALF", 0): {"1": fmpq(1), "[i>n/2]": fmpq(-1)},
    ("LEHALF", 1): {"1": fmpq(1), "[i-1>n/2]": fmpq(-1)},
}
"""(θ, s) ↦ the feature combination whose value at position j is θ_n(j − s). ODD/EVEN:
(1 ∓ (−1)^j)/2 is the indicator of j odd/even (case split on j mod 2,
:func:`_parity_identity`); SQUARE, HALF, GTHALF: the feature is defined as the
indicator (``[i square]`` is 1 iff i is a square, ``[2i-2=n]`` iff 2(i−1) = n, …);
LEHALF = 1 − GTHALF. ``tests/test_all_lengths.py`` compares the table with the
registry's columns and evaluates every identity for all j ≤ n ≤ 200."""


def _parity_identity(name: str, shift: int, combo: dict[str, fmpq]) -> bool:
    """ODD/EVEN columns: for j even and j odd, the combination equals [j − s odd/even]."""
    for jpar in (0, 1):
        sign = 1 if jpar == 0 else -1  # (−1)^j
        val = combo.get("1", fmpq(0)) + combo.get("(-1)^i", fmpq(0)) * sign
        k_odd = (jpar - shift) % 2 == 1
        want = k_odd if name == "ODD" else not k_odd
        if val != (1 if want else 0):
            return False
    return True


for (_name, _shift), _combo in PREDICATE_COLUMNS.items():
    if _name in ("ODD", "EVEN"):
        assert _parity_identity(_name, _shift, _combo), (_name, _shift)
    assert _name in PREDICATES


def formula_of_combo(combo: dict[str, fmpq]) -> s.Formula | None:
    """The formula whose indicator the positional combination is (rule PE), if any."""
    if combo == {"[i=1]": 1}:
        return s.First()
    if combo == {"[i=n]": 1}:
        return s.Last()
    if combo == {"1": 1}:
        return s.Top()
    for (name, shift), col in PREDICATE_COLUMNS.items():
        if shift == 0 and col == combo:
            return s.PosPred(name)
    return None


def combo_value(combo: dict[str, fmpq], case: dict[str, Any]) -> fmpq | None:
    """The exact value of a positional combination in a case that fixes i's parity
    (``parity``: 0/1), whether i = 1 (``first``) and whether i = n (``last``); None when a
    feature is not determined by the case."""
    total = fmpq(0)
    for f, c in combo.items():
        if f == "1":
            v = 1
        elif f in ("(-1)^i", "cos(pi*i)"):
            if case.get("parity") is None:
                return None
            v = 1 if case["parity"] == 0 else -1
        elif f == "[i=1]":
            if case.get("first") is None:
                return None
            v = 1 if case["first"] else 0
        elif f == "[i=n]":
            if case.get("last") is None:
                return None
            v = 1 if case["last"] else 0
        else:
            return None
        total += c * v
    return total


def embedding_val(view: ModelView, c: int) -> Val | None:
    """The fact the embedding gives for a coordinate that no layer writes: a constant, a
    positional combination, an atom Q_a (word indicator of a, no positional part), ⊥ (no
    writer at all); None if none of these."""
    if any(w[0] != "embedding" for w in view.writers[c]):
        return None
    word, combo = view.word[c], dict(view.pos[c])
    if not any(word) and not combo:
        return Val(0, formula=s.Bottom(), const=fmpq(0), pe=())
    if len(set(word)) == 1:  # the same for every symbol: a positional value
        w0 = word[0]
        if w0 != 0:
            combo["1"] = combo.get("1", fmpq(0)) + w0
        combo = {f: v for f, v in combo.items() if v != 0}
        f = formula_of_combo(combo)
        const = combo.get("1") if set(combo) <= {"1"} else None
        if set(combo) == set():
            const = fmpq(0)
        return Val(0, formula=f, pe=tuple(sorted(combo.items())), const=const)
    if not combo and all(w in (0, 1) for w in word) and sum(word) == 1:
        return Val(0, formula=s.Atom(view.alphabet[list(word).index(1)]))
    return None


# ----- rule FFN-BOX ---------------------------------------------------------------------------

Interval = tuple[fmpq | None, fmpq | None]  # None: unbounded on that side


def point(x: fmpq | int) -> Interval:
    return (fmpq(x), fmpq(x))


class BoxFailure(Exception):
    pass


def _range(coefs: dict[Any, fmpq], const: fmpq, box: dict[Any, Interval]) -> Interval:
    lo: fmpq | None = const
    hi: fmpq | None = const
    for v, a in coefs.items():
        if a == 0:
            continue
        vlo, vhi = box[v]
        if a < 0:
            vlo, vhi = vhi, vlo
        lo = None if lo is None or vlo is None else lo + a * vlo
        hi = None if hi is None or vhi is None else hi + a * vhi
    return lo, hi


def ffn_affine(
    layer: LayerView,
    coord: int,
    box: dict[Any, Interval],
    forms: dict[str, Row] | None = None,
    base: tuple[dict[Any, fmpq], fmpq] | None = None,
) -> tuple[dict[Any, fmpq], fmpq]:
    """Rule FFN-BOX for the FFN's contribution to ``coord`` plus ``base`` (an affine form
    for the value before the FFN). Variables are coordinates (keys of ``box``) or named
    linear forms (``forms``, whose ranges are in ``box`` under their names). Every unit
    that writes ``coord`` must read only the variables, and its pre-activation must have
    one sign on the box; returns the output as (coefficients, constant)."""
    forms = forms or {}
    coefs: dict[Any, fmpq] = dict(base[0]) if base else {}
    const = base[1] if base else fmpq(0)
    const += layer.b2.get(coord, fmpq(0))
    for u, w in sorted(layer.w2.get(coord, {}).items()):
        row, bias = layer.units[u]
        rest = dict(row)
        pre: dict[Any, fmpq] = {}
        for name, form in forms.items():
            pivot = next(iter(form))
            a = rest.get(pivot, fmpq(0)) / form[pivot]
            if a == 0:
                continue
            for c, x in form.items():
                rest[c] = rest.get(c, fmpq(0)) - a * x
            pre[name] = a
        for c, x in rest.items():
            if x == 0:
                continue
            if c not in box:
                raise BoxFailure(
                    f"FFN unit {u} reads coordinate {c}, which the case does not bound"
                )
            pre[c] = pre.get(c, fmpq(0)) + x
        lo, hi = _range(pre, bias, box)
        if lo is not None and lo >= 0:
            for v, a in pre.items():
                coefs[v] = coefs.get(v, fmpq(0)) + w * a
            const += w * bias
        elif hi is not None and hi <= 0:
            continue
        else:
            raise BoxFailure(
                f"FFN unit {u}: its pre-activation takes both signs on the case "
                f"(range [{lo}, {hi}])"
            )
    return {v: a for v, a in coefs.items() if a != 0}, const


def affine_is(
    out: tuple[dict[Any, fmpq], fmpq], box: dict[Any, Interval], target: fmpq
) -> str | None:
    """None if the affine form is exactly ``target`` on the whole box, else why not."""
    coefs, const = out
    lo, hi = _range(coefs, const, box)
    if lo == target and hi == target:
        return None
    return f"the output ranges over [{lo}, {hi}] instead of being exactly {target}"


def affine_equals(
    out: tuple[dict[Any, fmpq], fmpq], target: tuple[dict[Any, fmpq], fmpq], box: dict
) -> bool:
    """Whether two affine forms agree on the whole box (point variables substituted)."""
    diff = dict(out[0])
    for v, a in target[0].items():
        diff[v] = diff.get(v, fmpq(0)) - a
    const = out[1] - target[1]
    for v, a in diff.items():
        if a == 0:
            continue
        lo, hi = box[v]
        if lo is None or lo != hi:
            return False
        const += a * lo
    return const == 0
