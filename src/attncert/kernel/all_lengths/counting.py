"""Gadget rules for counting (trusted; issue 23): Yang et al. Theorem 20 (temperature /
unbounded encodings), Theorem 21 (future masking) and Corollaries 22, 23, in three stages.

* ``mean`` — a uniform head (W_Qᵀ W_K = 0 exactly, so softmax weights are exactly uniform
  for any temperature) averages a 0/1 value: the coordinate is exactly
  |{j ⋈ i : ψ_j}| / |{j ⋈ i}| (0 when no key is visible). With ψ = [j = 1] under j < i this
  is 1/(i − 1); with ψ = [j = n] under j > i (j ≥ i), 1/(n − i) (1/(n − i + 1)).
* ``lookup`` — the table lookup of S = |{j ⋈ i strictly : φ}| (reconstructed Lemma 7,
  :func:`attncert.kernel.all_lengths.heads.lookup`): its hard value at j = t = S + 1 reads
  θ(t − 1) = θ(S) and θ(t) = θ(S + 1) from positional columns (rule PE), and (j − 1)/n =
  S/n (bounded) or j − 1 = S (unbounded); its FFN adds [φ_i]/n (or [φ_i]), so the count
  coordinate is C/n (or C) within the stored value budget, C = S + [φ_i] = #[φ] at i.
* ``countpred`` — θ(C) = θ(S + [φ_i]) = R(θ(S) − φ_i) + R(θ(S+1) + φ_i − 1), exact when each
  looked-up θ is within its budget (FFN-BOX on all eight cases).
* ``threshold-sign`` (bounded) — x = (Σ a_k C_k − b + ½)/den exactly (``direct``: means
  over the same side, den = i or n − i + 1 ≤ n) or within Σ|a_k|·r_k/n of
  (Σ a_k C_k − b + ½)/n (``lookup``), so |x| ≥ δ₀/n and sign(x) = [Σ a_k C_k ≥ b]; the
  sign head (:func:`~attncert.kernel.all_lengths.heads.sign_bound`) reads [x > 0] and the
  FFN rounds it; with one visible key (i = 1 under future masking) x is exact with
  |x| ≥ ½ and the FFN reads the sign from x itself.
* ``threshold-clamp`` (unbounded) — y = Σ a_k·count_k is within Σ|a_k|·r_k of the integer
  Σ a_k C_k, and the FFN clamp(2(y − b) + 3/2) is exactly [Σ a_k C_k ≥ b].
"""

from __future__ import annotations

import itertools
from typing import Any

from flint import fmpq

from attncert.certificates.all_lengths import term_from_json
from attncert.errors import SpecError
from attncert.kernel.all_lengths import heads as H
from attncert.kernel.all_lengths.closed_form import q_of, q_str
from attncert.kernel.all_lengths.gadgets import (
    Derived,
    Reject,
    State,
    bool_at,
    canon,
    claim,
    ffn_point,
    ge_form,
    get_budget,
    get_formula,
    get_int,
    require_writers,
)
from attncert.kernel.all_lengths.view import (
    PREDICATE_COLUMNS,
    BoxFailure,
    Count,
    Mean,
    Val,
    affine_equals,
    ffn_affine,
    point,
)
from attncert.logic import syntax as s
from attncert.model.spec import Mask

__implements__ = (
    "Yang Lemma 7",
    "Yang Theorem 20",
    "Yang Theorem 21",
    "Yang Corollary 22",
    "Yang Corollary 23",
)

X = H.X


def _term(g: dict) -> s.CountTerm:
    try:
        return term_from_json(g.get("term"), "term")
    except SpecError as err:
        raise Reject("term", err.message) from None


def _combo_of_row(st: State, h: H.HeadView, out: int) -> dict[str, fmpq]:
    """Σ_b vo[out, b]·combo(b): the positional value a head copies into ``out``."""
    total: dict[str, fmpq] = {}
    for (c, b), v in h.vo.items():
        if c != out:
            continue
        val = st.known.get(b)
        if val is None or val.pe is None or val.level != 0:
            raise Reject(f"{h.name}", f"the value row into {out} reads {b}, not a positional value")
        for f, a in val.combo.items():
            total[f] = total.get(f, fmpq(0)) + v * a
    return {f: v for f, v in total.items() if v != 0}


def _g_mean(st: State, k: int, g: dict) -> None:
    """A uniform head averaging a proved 0/1 value (module docstring)."""
    layer, out, hi, val = (
        get_int(g, "layer"),
        get_int(g, "coord"),
        get_int(g, "head"),
        get_int(g, "value"),
    )
    h = st.view.head(layer, hi)
    if not h.uniform:
        raise Reject("head", f"{h.name} is not uniform (W_Qᵀ W_K ≠ 0)")
    psi = bool_at(st, val, layer)
    H.value_weight(h, out, val)
    claim(st, out)
    require_writers(st, out, {("head", layer, hi)})
    st.known[out] = Val(layer + 1, mean=Mean(h.mask, formula=psi))


def _mean_is(st: State, c: int, layer: int, mask: Mask, formula: s.Formula, what: str) -> None:
    v = st.known.get(c)
    if v is None or v.mean is None or v.level > layer:
        raise Reject(what, f"coordinate {c} does not hold a proved mean")
    if v.mean.mask is not mask or canon(v.mean.formula) != canon(formula):
        raise Reject(
            what,
            f"coordinate {c} holds the mean of {v.mean.formula} over "
            f"{v.mean.mask.value}, not of {formula} over {mask.value}",
        )


def _g_lookup(st: State, k: int, g: dict) -> None:
    """The count lookup (module docstring)."""
    layer, hi = get_int(g, "layer"), get_int(g, "head")
    term = _term(g)
    left = isinstance(term, s.CountLeft)
    strict = Mask.FUTURE_STRICT if left else Mask.PAST_STRICT
    mark = s.First() if left else s.Last()
    phi = get_int(g, "phi")
    bool_at(st, phi, layer, term.arg, "phi")
    mean, inv, bd = get_int(g, "mean"), get_int(g, "inv"), get_int(g, "boundary")
    _mean_is(st, mean, layer, strict, term.arg, "mean")
    _mean_is(st, inv, layer, strict, mark, "inv")
    bv = st.known.get(bd)
    if bv is None or bv.pe is None or bv.formula != mark:
        raise Reject("boundary", f"coordinate {bd} is not the positional mark {mark}")
    h = st.view.head(layer, hi)
    want_mask = Mask.FUTURE if left else Mask.NONE
    if h.mask is not want_mask:
        raise Reject("head", f"{h.name} has mask {h.mask.value}, expected {want_mask.value}")
    bounded, lam = H.lookup(h, st.known, mean, inv, bd)
    outs: set[int] = set()
    preds: dict[str, tuple[int, int]] = {}
    b = get_budget(g)
    for entry in g.get("preds") or []:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
            raise Reject("preds", f"{entry!r} is not [name, raw θ(S), raw θ(S+1)]")
        name, raw_s, raw_s1 = entry
        for raw, shift in ((raw_s, 1), (raw_s1, 0)):
            want = PREDICATE_COLUMNS.get((name, shift))
            if want is None or _combo_of_row(st, h, raw) != want:
                raise Reject("preds", f"coordinate {raw} does not receive {name}(j − {shift})")
            claim(st, raw)
            require_writers(st, raw, {("head", layer, hi)})
            outs.add(raw)
        preds[name] = (raw_s, raw_s1)
    if preds:
        st.derived.append(Derived(k, H.lookup_bound(h, bounded, lam, False), b))
    val = g.get("value")
    if val is not None:
        if not isinstance(val, int):
            raise Reject("value", f"{val!r} is not a coordinate")
        want = {"i/n": fmpq(1), "1/n": fmpq(-1)} if bounded else {"i": fmpq(1), "1": fmpq(-1)}
        if _combo_of_row(st, h, val) != want:
            raise Reject(
                "value",
                f"coordinate {val} does not receive " + ("(j − 1)/n" if bounded else "j − 1"),
            )
        try:
            r = q_of(g.get("value_budget"), "value_budget")
        except Exception as err:
            raise Reject("value_budget", str(err)) from None
        if not r > 0:
            raise Reject("value_budget", f"{q_str(r)} is not positive")
        claim(st, val)
        require_writers(st, val, {("head", layer, hi), ("ffn", layer)})
        outs.add(val)
        hb = H.lookup_bound(h, bounded, lam, True)
        if bounded:  # E(n) ≤ r/n  ⇔  n·E(n) ≤ r
            hb = H.HeadBound(hb.head, hb.what, hb.var, tuple(a.scaled(X) for a in hb.atoms))
        st.derived.append(Derived(k, hb, r))
        # the FFN adds exactly [φ_i]/n (bounded: ReLU(1/n + φ − 1)) or [φ_i]
        inv_n = next(
            (c for c, v in st.known.items() if v.pe is not None and v.combo == {"1/n": 1}), None
        )
        lv = st.view.layers[layer]
        for ph in (0, 1):
            box: dict[Any, Any] = {phi: point(ph)}
            if bounded:
                if inv_n is None:
                    raise Reject("value", "no coordinate holds 1/n")
                box[inv_n] = (fmpq(0), fmpq(1, 2))  # n ≥ 2
            try:
                coefs, const = ffn_affine(lv, val, box)
            except BoxFailure as err:
                raise Reject(f"FFN of layer {layer} → count {val}", str(err)) from None
            want = ({inv_n: fmpq(ph)}, fmpq(0)) if bounded else ({}, fmpq(ph))
            if not affine_equals((coefs, const), want, box):
                raise Reject(
                    f"FFN of layer {layer} → count {val}",
                    f"does not add [φ_i]{'/n' if bounded else ''} (case φ_i = {ph})",
                )
        st.known[val] = Val(layer + 1, count=Count(term, bounded, r))
    extra = {c for c, _ in h.vo} - outs
    if extra:
        raise Reject("head", f"{h.name} also writes {sorted(extra)}")
    st.lookups[term] = {"layer": layer, "preds": preds, "budget": b, "phi": phi}


def _g_countpred(st: State, k: int, g: dict) -> None:
    """θ(#[φ]) from the looked-up θ(S), θ(S+1) and φ_i (module docstring)."""
    f, layer, out = get_formula(g), get_int(g, "layer"), get_int(g, "coord")
    if not isinstance(f, s.CountPred):
        raise Reject("formula", f"{f} is not θ(#[φ])")
    lk = st.lookups.get(f.term)
    if lk is None or lk["layer"] != layer or f.pred not in lk["preds"]:
        raise Reject("formula", f"no lookup of {f.pred} for this count in layer {layer}")
    raw_s, raw_s1 = lk["preds"][f.pred]
    b, phi = lk["budget"], lk["phi"]
    claim(st, out)
    require_writers(st, out, {("ffn", layer)})
    for ph, ts, ts1 in itertools.product((0, 1), repeat=3):
        box = {
            phi: point(ph),
            raw_s: (fmpq(ts) - b, fmpq(ts) + b),
            raw_s1: (fmpq(ts1) - b, fmpq(ts1) + b),
        }
        want = ts1 if ph else ts
        ffn_point(
            st,
            layer,
            out,
            box,
            fmpq(want),
            f"φ_i = {ph}, θ(S) = {ts}, θ(S+1) = {ts1} ± the lookup's budget {q_str(b)}",
        )
    st.known[out] = Val(layer + 1, formula=f)


def _threshold_terms(st: State, g: dict, layer: int):
    f = get_formula(g)
    ge = ge_form(f) if isinstance(f, s.Compare) else None
    if ge is None:
        raise Reject("formula", f"{f} is not a comparison by ≥, >, ≤ or <")
    terms, b = ge
    counts = g.get("counts")
    if not isinstance(counts, list) or len(counts) != len(terms):
        raise Reject("counts", f"expected one coordinate per term of {f}")
    vals = []
    for c, (_, t) in zip(counts, terms, strict=True):
        v = st.known.get(c) if isinstance(c, int) else None
        if v is None or v.level > layer or (v.count is None and v.mean is None):
            raise Reject("counts", f"coordinate {c} does not hold a proved count of {t}")
        if v.count is not None and v.count.term != t:
            raise Reject("counts", f"coordinate {c} counts {v.count.term}, not {t}")
        if v.mean is not None:
            side = Mask.FUTURE if isinstance(t, s.CountLeft) else Mask.PAST
            if v.mean.mask is not side or canon(v.mean.formula) != canon(t.arg):
                raise Reject(
                    "counts", f"coordinate {c} is not the mean of {t.arg} over {side.value}"
                )
        vals.append(v)
    return f, terms, b, counts, vals


def _g_threshold_sign(st: State, k: int, g: dict) -> None:
    """[Σ a_k t_k ≥ b] by a sign head (module docstring)."""
    layer, out, hi, raw = (get_int(g, x) for x in ("layer", "coord", "head", "raw"))
    f, terms, b, counts, vals = _threshold_terms(st, g, layer)
    offset, flag = get_int(g, "offset"), get_int(g, "flag")
    bs = get_budget(g)
    ov = st.known.get(offset)
    if all(v.count is not None for v in vals):
        if any(not v.count.per_n for v in vals) or ov is None or ov.combo != {"1/n": 1}:
            raise Reject("offset", "the lookup strategy needs counts C/n and the offset 1/n")
        delta0 = fmpq(1, 2) - sum(
            (abs(a) * v.count.r for (a, _), v in zip(terms, vals, strict=True)), fmpq(0)
        )
        den_masks = None
    elif all(v.mean is not None for v in vals):
        masks = {v.mean.mask for v in vals}
        if masks == {Mask.FUTURE}:
            ok = ov is not None and ov.pe is not None and ov.combo == {"1/i": 1}
        elif masks == {Mask.PAST}:
            ok = ov is not None and ov.mean == Mean(Mask.PAST, formula=s.Last())
        else:
            ok = False
        if not ok:
            raise Reject("offset", f"coordinate {offset} is not 1/den for the means' side")
        delta0, den_masks = fmpq(1, 2), masks
    else:
        raise Reject("counts", "mixes looked-up counts and exact means")
    if not delta0 > 0:
        raise Reject(
            "counts",
            f"the counts' value_budget errors leave |x| ≥ {q_str(delta0)}/n, not positive",
        )
    h = st.view.head(layer, hi)
    first = next(
        (
            c
            for c, v in st.known.items()
            if v.pe is not None and v.combo == {"[i=1]": 1} and v.level == 0
        ),
        None,
    )
    one = next((c for c, v in st.known.items() if v.const == 1 and v.level == 0), None)
    if first is None or one is None:
        raise Reject("head", "no coordinates hold [i=1] and the constant 1")
    x = H.sign_query(h, st.known, first, one)
    want = {c: fmpq(a) for (a, _), c in zip(terms, counts, strict=True)}
    want[offset] = want.get(offset, fmpq(0)) + fmpq(1, 2) - b
    if x != {c: v for c, v in want.items() if v != 0}:
        raise Reject("head", f"{h.name}: the query is not Σ a_k·count_k + (½ − b)·offset for {f}")
    H.value_weight(h, raw, first)
    causal = h.mask is Mask.FUTURE
    if h.mask not in (Mask.NONE, Mask.FUTURE) or (causal and den_masks != {Mask.FUTURE}):
        raise Reject("head", f"{h.name}: mask {h.mask.value} (none, or future for left means)")
    fv = bool_at(st, flag, layer)
    want_flag = s.First() if causal else s.And(s.First(), s.Last())
    if fv not in (want_flag, s.And(s.Last(), s.First())) or (causal and fv != s.First()):
        raise Reject("flag", f"coordinate {flag} holds {fv}, not '{want_flag}' (one visible key)")
    st.derived.append(Derived(k, H.sign_bound(h, delta0), bs))
    claim(st, raw)
    require_writers(st, raw, {("head", layer, hi)})
    claim(st, out)
    require_writers(st, out, {("ffn", layer)})
    # more than one visible key: |raw − [x > 0]| ≤ budget; every count/offset in its range
    box: dict[Any, Any] = {flag: point(0)}
    for c, v in zip(counts, vals, strict=True):
        box[c] = (-v.count.r / 2, 1 + v.count.r / 2) if v.count is not None else (0, 1)
    box[offset] = (fmpq(0), fmpq(1, 2) if ov.combo == {"1/n": 1} else fmpq(1))
    box = {c: (fmpq(lo), fmpq(hi)) for c, (lo, hi) in box.items()}
    for v in (0, 1):
        ffn_point(
            st,
            layer,
            out,
            {**box, raw: (v - bs, v + bs)},
            fmpq(v),
            f"two or more visible keys, [x > 0] = {v} ± budget {q_str(bs)}",
        )
    if causal:  # i = 1: one visible key, raw = 1, x = Σ a·C − b + ½ exactly, |x| ≥ ½
        for v in (0, 1):
            xr = (fmpq(1, 2), None) if v else (None, fmpq(-1, 2))
            ffn_point(
                st,
                layer,
                out,
                {flag: point(1), raw: point(1), "x": xr},
                fmpq(v),
                f"one visible key, [x > 0] = {v}",
                forms={"x": x},
            )
    st.known[out] = Val(layer + 1, formula=f)


def _g_threshold_clamp(st: State, k: int, g: dict) -> None:
    """[Σ a_k t_k ≥ b] by an FFN clamp on unbounded counts (module docstring)."""
    layer, out = get_int(g, "layer"), get_int(g, "coord")
    f, terms, b, counts, vals = _threshold_terms(st, g, layer)
    if any(v.count is None or v.count.per_n for v in vals):
        raise Reject("counts", "the clamp needs unscaled looked-up counts")
    err = sum((abs(a) * v.count.r for (a, _), v in zip(terms, vals, strict=True)), fmpq(0))
    y = {c: fmpq(a) for (a, _), c in zip(terms, counts, strict=True)}
    claim(st, out)
    require_writers(st, out, {("ffn", layer)})
    ffn_point(st, layer, out, {"y": (b - err, None)}, fmpq(1), "Σ a·C ≥ b", forms={"y": y})
    ffn_point(st, layer, out, {"y": (None, b - 1 + err)}, fmpq(0), "Σ a·C < b", forms={"y": y})
    st.known[out] = Val(layer + 1, formula=f)


COUNTING_GADGETS = {
    "mean": _g_mean,
    "lookup": _g_lookup,
    "countpred": _g_countpred,
    "threshold-sign": _g_threshold_sign,
    "threshold-clamp": _g_threshold_clamp,
}
