"""Score profiles of the compiled attention heads as closed forms in n (trusted; issue 23).

Each rule reads one softmax head's exact weights (:class:`~.view.HeadView`),
checks that its scores have the shape of one gadget of Yang et al.'s constructions, and
returns the head's soft-attention error bound as atoms of
:mod:`attncert.kernel.all_lengths.closed_form` — valid at every position of every string of every
length, in the case the rule names. All rules rest on

**Lemma 6 (off-target mass).** If the hard target j* beats every other visible key j by
a score gap g_j ≥ 0 (β(n) included), softmax gives j weight ≤ e^{−g_j}, so
|Σ_j w_j v_j − v_{j*}| ≤ Σ_{j≠j*} e^{−g_j}·|v_j − v_{j*}|.

and on two tail sums: **GEO** Σ_{d≥1} e^{−dΦ} = e^{−Φ}/(1 − e^{−Φ}) (Φ > 0), and
**GAUSS** Σ_{d≥1} e^{−Φd²} ≤ e^{−Φ}/(1 − e^{−3Φ}), Σ_{d≥1} d·e^{−Φd²} ≤
e^{−Φ}/(1 − e^{−3Φ})² (because d² ≥ 3d − 2 for integers d ≥ 1, then Σ_{m≥0} r^m =
1/(1 − r) and Σ_{m≥0} (m+1)r^m = 1/(1 − r)²).

**Lemma 8 (tie-breaking), as used here.** A positional key term w·g(j) with g(j) = j/n
or 1/j orders the visible keys by distance from i: for two visible keys j′ nearer to i
than j, w(g(j′) − g(j)) ≥ |j′ − j|·τ(n) > 0 with τ(n) = |w|/n (g = j/n) or |w|/n²
(g = 1/j, since j·j′ ≤ n²), and |w(g(j) − g(j′))| < |w| for any two positions (both g
take values in (0, 1]). :func:`tie_profile` reads w, g and the direction and returns
(τ, |w|).

β(n) = c·n^p·(log n)^q is the head's temperature (exact c from the float64).
"""

from __future__ import annotations

from dataclasses import dataclass

from flint import fmpq

from attncert.kernel.all_lengths.closed_form import Atom, LogLin, RatFn
from attncert.kernel.all_lengths.view import HeadView, NotSupported, Val
from attncert.model.spec import Mask

X = RatFn.poly([0, 1])  # the variable
ONE = RatFn.const(1)
X_MINUS_1 = RatFn.poly([-1, 1])


@dataclass(frozen=True)
class HeadBound:
    """The error bound of one head in one case: Σ atoms(x) (x = ``var``) bounds
    |soft output − hard value| for the value row that ``what`` names."""

    head: tuple[int, int]
    what: str
    var: str
    atoms: tuple[Atom, ...]


def beta(h: HeadView) -> LogLin:
    """β(n) as A + B·log n."""
    mono = RatFn.x_pow(h.n_power).scale(h.coef)
    return LogLin.of(mono) if h.log_power == 0 else LogLin.of(RatFn.const(0), mono)


def constant_beta(h: HeadView) -> fmpq:
    if h.n_power or h.log_power:
        raise NotSupported(f"{h.name}: the rule needs a constant temperature, not c·N^p·log^q N")
    return h.coef


def require_mask(h: HeadView, *masks: Mask) -> None:
    if h.mask not in masks:
        raise NotSupported(
            f"{h.name}: mask {h.mask.value}, expected " + " or ".join(m.value for m in masks)
        )


def key_weights(h: HeadView, known: dict[int, Val]) -> dict[int, fmpq]:
    """w[b] = Σ_a const(a)·qk[a, b] for a head whose query side reads only constant
    coordinates (its score is then Σ_b w[b]·y_j[b], the same for every query)."""
    w: dict[int, fmpq] = {}
    for (a, b), v in h.qk.items():
        va = known.get(a)
        if va is None or va.const is None or va.level > h.layer:
            raise NotSupported(f"{h.name}: the query reads coordinate {a}, not a known constant")
        w[b] = w.get(b, fmpq(0)) + va.const * v
    return {b: v for b, v in w.items() if v != 0}


def only_keys(h: HeadView, w: dict[int, fmpq], allowed: set[int]) -> None:
    extra = sorted(set(w) - allowed)
    if extra:
        raise NotSupported(f"{h.name}: the scores read key coordinate(s) {extra}")


def tie_profile(h: HeadView, val: Val, weight: fmpq, left: bool) -> tuple[RatFn, fmpq]:
    """(τ(n), |w|) of Lemma 8 for the key term weight·combo (see module docstring);
    ``left``: the nearest key is the largest visible j (masks j < i / j ≤ i)."""
    combo = val.combo if val.pe is not None else None
    if combo is None or len(combo) != 1 or val.level > h.layer:
        raise NotSupported(f"{h.name}: the tie-breaking key is not one positional feature")
    ((feat, a),) = combo.items()
    w = weight * a
    if feat == "i/n":
        increasing, tau = w > 0, RatFn.x_pow(-1).scale(abs(w))
    elif feat == "1/i":
        increasing, tau = w < 0, RatFn.x_pow(-2).scale(abs(w))
    else:
        raise NotSupported(f"{h.name}: tie-breaking feature {feat!r} (expected i/n or 1/i)")
    if increasing != left:
        raise NotSupported(f"{h.name}: the tie-breaking term favours the farthest key")
    return tau, abs(w)


def value_weight(h: HeadView, out: int, src: int) -> None:
    """The head copies coordinate ``src`` into ``out`` with weight 1 and writes nothing else."""
    if h.vo != {(out, src): fmpq(1)}:
        raise NotSupported(
            f"{h.name}: W_O·W_V is {sorted((k, str(v)) for k, v in h.vo.items())}, expected "
            f"coordinate {src} copied to {out}"
        )


# ----- ◁ / ▷ with bounded encodings (Thms 12a, 13c) ---------------------------------------------


def prev_parity(
    h: HeadView, known: dict[int, Val], prev: bool, par: int, tie: int
) -> tuple[int, HeadBound]:
    """Scores β(n)·(w_p·(−1)^j + w·g(j)): the parity term puts j* = i ∓ 1 in the class
    (even/odd j) the head prefers, 2|w_p| above the other class; the tie term (Lemma 8)
    orders the class, and j* is the nearest visible key, so every tie difference to j* is
    ≥ 0. Returns the preferred parity (0 even, 1 odd) and the bound for rows where j* has
    that parity: same class at distance 2k: gap 2k·β·τ (GEO); other class: gap ≥
    2|w_p|·β, at most n − 1 keys."""
    require_mask(h, Mask.FUTURE_STRICT if prev else Mask.PAST_STRICT)
    w = key_weights(h, known)
    only_keys(h, w, {par, tie})
    pv = known.get(par)
    if pv is None or pv.pe is None or set(pv.combo) != {"(-1)^i"} or pv.level > h.layer:
        raise NotSupported(f"{h.name}: the parity key is not a multiple of (−1)^i")
    wp = w.get(par, fmpq(0)) * pv.combo["(-1)^i"]
    if wp == 0:
        raise NotSupported(f"{h.name}: no parity term")
    tau, _ = tie_profile(h, known[tie], w.get(tie, fmpq(0)), left=prev)
    b = beta(h)
    same = b.times(tau.scale(2))
    other = b.times(RatFn.const(2 * abs(wp)))
    parity = 0 if wp > 0 else 1
    name = "even" if parity == 0 else "odd"
    return parity, HeadBound(
        (h.layer, h.index),
        f"rows whose target j = i{'-' if prev else '+'}1 is {name}",
        "n",
        (Atom(ONE, same, same, 1), Atom(X_MINUS_1, other)),
    )


# ----- S / U with bounded encodings (Thms 15a, 16a) ---------------------------------------------


def since_tie(h: HeadView, known: dict[int, Val], since: bool, guard: int, tie: int) -> HeadBound:
    """Scores β(n)·(w_χ·χ_j + w·g(j)): j* is the nearest visible χ-position. Other
    χ-positions at distance d: gap d·β·τ (GEO); non-χ positions: gap ≥ β(w_χ − |w|)
    (Lemma 8's range bound), at most n − 1 keys. Needs w_χ > |w|."""
    require_mask(h, Mask.FUTURE_STRICT if since else Mask.PAST_STRICT)
    w = key_weights(h, known)
    only_keys(h, w, {guard, tie})
    wc = w.get(guard, fmpq(0))
    tau, rho = tie_profile(h, known[tie], w.get(tie, fmpq(0)), left=since)
    if not wc > rho:
        raise NotSupported(f"{h.name}: the guard weight {wc} does not exceed the tie range {rho}")
    b = beta(h)
    same = b.times(tau)
    other = b.times(RatFn.const(wc - rho))
    return HeadBound(
        (h.layer, h.index),
        "rows with a χ-position on the visible side",
        "n",
        (Atom(ONE, same, same, 1), Atom(X_MINUS_1, other)),
    )


# ----- unbounded encodings (Thms 12b, 13d, 15b, 16b) -------------------------------------------


def _poly_scores(
    h: HeadView, known: dict[int, Val], bools: frozenset[int] = frozenset()
) -> dict[tuple[str, str], fmpq]:
    """The score as Σ coef·(query monomial)·(key monomial) for heads whose query and key
    coordinates are constants or single positional features (i, n, i²), or the proved
    Booleans ``bools`` (monomial ``b<coordinate>``)."""

    def mono(c: int, key: bool) -> tuple[str, fmpq]:
        v = known.get(c)
        if v is None or v.level > h.layer:
            raise NotSupported(f"{h.name}: reads coordinate {c}, not known before layer {h.layer}")
        if key and c in bools:
            if v.formula is None:
                raise NotSupported(f"{h.name}: coordinate {c} is not a proved Boolean")
            return f"b{c}", fmpq(1)
        if v.const is not None:
            return "1", v.const
        combo = v.combo
        if v.pe is None or len(combo) != 1:
            raise NotSupported(f"{h.name}: coordinate {c} is not a single positional feature")
        ((f, a),) = combo.items()
        return f, a

    out: dict[tuple[str, str], fmpq] = {}
    for (a, b), v in h.qk.items():
        (ma, ca), (mb, cb) = mono(a, False), mono(b, True)
        out[(ma, mb)] = out.get((ma, mb), fmpq(0)) + v * ca * cb
    return {k: v for k, v in out.items() if v != 0}


def prev_shift(h: HeadView, known: dict[int, Val], prev: bool) -> HeadBound:
    """Scores K·(2t·j − j²) = K(t² − (j − t)²) with t = i ∓ 1 (unbounded encodings i, i²):
    j* = t is the nearest visible key and every other visible key lies on one side of it,
    at distance d ≥ 1 with gap β·K·d² (GAUSS)."""
    require_mask(h, Mask.FUTURE_STRICT if prev else Mask.PAST_STRICT)
    sc = _poly_scores(h, known)
    k2 = sc.get(("i", "i"), fmpq(0)) / 2
    shift = -1 if prev else 1
    want = {("i", "i"): 2 * k2, ("1", "i"): 2 * k2 * shift, ("1", "i^2"): -k2}
    if not k2 > 0 or sc != want:
        raise NotSupported(f"{h.name}: scores {sc} are not K·(2(i{shift:+d})j − j²) with K > 0")
    phi = LogLin.of(RatFn.const(constant_beta(h) * k2))
    return HeadBound(
        (h.layer, h.index),
        f"rows with a key at j = i{shift:+d}",
        "n",
        (Atom(ONE, phi, LogLin.of(phi.a.scale(3)), 1),),
    )


def since_shift(h: HeadView, known: dict[int, Val], since: bool, guard: int) -> HeadBound:
    """Scores W·X·χ_j + T·j with X = i (S) or n (U), the unbounded term outweighing any
    position difference: other χ-positions at distance d: gap β|T|d (GEO); non-χ keys: gap
    ≥ β((W − |T|)·X + 2|T|), at most X − 1 of them (S: j < i; U: j > i, and j* − j ≤
    n − 2). Needs W > |T|, T > 0 for S, T < 0 for U."""
    require_mask(h, Mask.FUTURE_STRICT if since else Mask.PAST_STRICT)
    sc = _poly_scores(h, known, frozenset({guard}))
    big = "i" if since else "n"
    bkey = f"b{guard}"
    wgt = sc.get((big, bkey), fmpq(0))
    t = sc.get(("1", "i"), fmpq(0))
    if sc != {(big, bkey): wgt, ("1", "i"): t} or not wgt > abs(t) or (t > 0) != since or t == 0:
        raise NotSupported(f"{h.name}: scores {sc} are not W·{big}·χ_j ± T·j with W > |T|")
    bc = constant_beta(h)
    same = LogLin.of(RatFn.const(bc * abs(t)))
    other = LogLin.of(RatFn.poly([2 * abs(t) * bc, (wgt - abs(t)) * bc]))
    return HeadBound(
        (h.layer, h.index),
        "rows with a χ-position on the visible side",
        "i" if since else "n",
        (Atom(ONE, same, same, 1), Atom(X_MINUS_1, other)),
    )


# ----- counting (Thms 20, 21): table lookup and sign heads ------------------------------------

LOOKUP_BOUNDED = ("1/i^2", "1/i")
LOOKUP_UNBOUNDED = ("n*i", "n*i^2")


def lookup(h: HeadView, known: dict[int, Val], mean: int, inv: int, bd: int) -> tuple[bool, fmpq]:
    """The table lookup (reconstructed Lemma 7). Query q = (mean + inv + bd, inv + bd),
    keys λ·(−1/j², 2/j) (bounded) or λ·(2n·j, −n·j²) (unbounded). Returns (bounded?, λ).

    With m visible strict keys, S of them with φ and t = S + 1, m* = max(m, 1): the query
    is (t/m*, 1/m*) (for m = 0 the mean and inv are 0 and bd = 1). Bounded scores
    λ(2/j − t/j²)/m* peak at j = t with gap λ(j−t)²/(m*·t·j²) ≥ λ/((n−1)·n·(n+1)²)
    (m* ≤ n − 1 for n ≥ 2, t ≤ n, (j−t)²/j² ≥ 1/(t+1)²); unbounded scores
    λ(n/m*)(t² − (j−t)²) have gap ≥ λd² at distance d (n/m* > 1), ≤ 2 keys per d."""
    feats: dict[int, tuple[str, fmpq]] = {}
    for _, b in h.qk:
        v = known.get(b)
        combo = v.combo if v is not None and v.pe is not None and v.level == 0 else {}
        if len(combo) != 1:
            raise NotSupported(f"{h.name}: key coordinate {b} is not one positional feature")
        ((f, a),) = combo.items()
        feats[b] = (f, a)
    m2: dict[tuple[int, str], fmpq] = {}
    for (a, b), v in h.qk.items():
        f, alpha = feats[b]
        m2[(a, f)] = m2.get((a, f), fmpq(0)) + v * alpha
    m2 = {k: v for k, v in m2.items() if v != 0}
    for bounded, (f1, f2) in ((True, LOOKUP_BOUNDED), (False, LOOKUP_UNBOUNDED)):
        if bounded:
            lam = -m2.get((inv, f1), fmpq(0))
            want = {
                (mean, f1): -lam,
                (inv, f1): -lam,
                (bd, f1): -lam,
                (inv, f2): 2 * lam,
                (bd, f2): 2 * lam,
            }
        else:
            lam = -m2.get((inv, f2), fmpq(0))
            want = {
                (mean, f1): 2 * lam,
                (inv, f1): 2 * lam,
                (bd, f1): 2 * lam,
                (inv, f2): -lam,
                (bd, f2): -lam,
            }
        if lam > 0 and m2 == want:
            return bounded, lam
    raise NotSupported(f"{h.name}: the scores are not a table lookup of the count")


def lookup_bound(h: HeadView, bounded: bool, lam: fmpq, value_row: bool) -> HeadBound:
    """Lemma 6 on :func:`lookup`'s gaps. Bounded: every value spread ≤ 1 ((j−1)/n ∈ [0, 1)
    or a 0/1 predicate), at most n − 1 competitors: (n − 1)·e^{−β·λ/((n−1)n(n+1)²)}.
    Unbounded (β constant): predicate rows 2·GAUSS(βλ); the count row j − 1 has spread
    d at distance d: 2·Σ d·e^{−βλd²} (GAUSS, k = 2)."""
    who = (h.layer, h.index)
    what = "count value row" if value_row else "predicate rows"
    if bounded:
        gap = RatFn.const(lam) / (X_MINUS_1 * X * RatFn.poly([1, 1]) * RatFn.poly([1, 1]))
        return HeadBound(who, what, "n", (Atom(X_MINUS_1, beta(h).times(gap)),))
    phi = LogLin.of(RatFn.const(constant_beta(h) * lam))
    psi = LogLin.of(phi.a.scale(3))
    return HeadBound(who, what, "n", (Atom(RatFn.const(2), phi, psi, 2 if value_row else 1),))


def sign_query(h: HeadView, known: dict[int, Val], first: int, one: int) -> dict[int, fmpq]:
    """A sign head's query form x: scores x_i·(2[j=1] − 1), i.e. W_Qᵀ W_K = x ⊗ (2e_first −
    e_one) with ``first`` holding [j=1] and ``one`` the constant 1."""
    fv, ov = known.get(first), known.get(one)
    if fv is None or fv.combo != {"[i=1]": 1} or ov is None or ov.const != 1:
        raise NotSupported(f"{h.name}: the keys are not [j=1] and the constant 1")
    x: dict[int, fmpq] = {}
    for (a, b), v in h.qk.items():
        if b not in (first, one):
            raise NotSupported(f"{h.name}: the scores read key coordinate {b}")
        if b == first:
            x[a] = v / 2
    for (a, b), v in h.qk.items():
        if b == one and v != -x.get(a, fmpq(0)):
            raise NotSupported(f"{h.name}: the key is not 2[j=1] − 1 for query coordinate {a}")
    for a in x:
        if h.qk.get((a, one), fmpq(0)) != -x[a]:
            raise NotSupported(f"{h.name}: the key is not 2[j=1] − 1 for query coordinate {a}")
    return x


def sign_bound(h: HeadView, delta0: fmpq) -> HeadBound:
    """|x| ≥ δ(n) = δ₀/n: the hard target (j = 1 if x > 0, else the uniform average over
    j ≥ 2, value 0) beats every other key by 2β|x| ≥ 2βδ: error ≤ (n − 1)·e^{−2β(n)δ₀/n}
    (for x < 0 the weight on j = 1 is ≤ e^{−2β|x|}/(m − 1) ≤ that)."""
    phi = beta(h).times(RatFn.x_pow(-1).scale(2 * delta0))
    return HeadBound(
        (h.layer, h.index), "rows with at least two visible keys", "n", (Atom(X_MINUS_1, phi),)
    )
