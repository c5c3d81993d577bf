"""Dyck-k by the Appendix-E program (Yang et al. §6 "DYCK-k membership"; the program of
Strobl et al. 2024, after Yao et al. 2021), as a uniform–tieless average-hard
transformer and its Theorem-26 softmax simulation.

The program, for each prefix x₁…xᵢ (:func:`appendix_e_program` runs it directly):

* Lᵢ, Rᵢ — left and right brackets (of any type) among x₁…xᵢ;
* err1ᵢ = Rᵢ > Lᵢ;
* dᵢ = Lᵢ − Rᵢ + [xᵢ right] — the depth after a left / before a right bracket, so a
  bracket and its partner have the same d;
* mᵢ — the nearest j < i with d_j = dᵢ (none if there is none);
* err2ᵢ = xᵢ is a right bracket and x_{mᵢ} is not the left bracket of its type;
* okᵢ = no err1/err2 at any j ≤ i; outᵢ = okᵢ ∧ Lᵢ = Rᵢ (the prefix is in Dyck-k).

Dyck-k for k ≥ 2 is not a formula of K_t[#] (the paper conjectures it is not definable
there: "nearest position with the same depth" compares two counts across positions), so
it is built here as an average-hard program rather than compiled from a formula.
:func:`dyck_program_model` is that transformer, with a BOS token (position 1, depth 0)
and unbounded positional encodings (i, i², n, n·i, n·i²); every head is uniform or has a
unique maximum with an *integer* gap ≥ 1 for every input (the proof is in each head's
``meta`` record, and :func:`attncert.compile.tieless.check_uniform_tieless` re-checks it
exactly on all short inputs):

1. uniform heads: |{j < i : left}|/(i−1), |{j < i : right}|/(i−1) and 1/(i−1);
2. table lookups (Theorem 20b's, :mod:`attncert.compile.counting`): the integers Lᵢ, Rᵢ;
3. depth lookup: scores 2dᵢ(j−1) − (j−1)² peak at j = dᵢ + 1 (≤ i thanks to BOS) and
   read N·dᵢ and N·dᵢ² from the encodings n·i, n·i², n (dᵢ < 0 reads 0); FFN: err1ᵢ
   and [Lᵢ = Rᵢ];
4. nearest same depth, j < i: scores N(dᵢ² − (dᵢ − d_j)²) + j — a multiple of N plus
   j < N, so equal depth wins and the rightmost of those is unique (gap ≥ 1); it reads
   which left bracket sits at j; FFN: err2ᵢ;
5. first error at j ≤ i: scores N(err1_j + err2_j) − j, reading err1 + err2 there;
   FFN: okᵢ and outᵢ = ReLU([Lᵢ = Rᵢ] − errors seen).

:func:`dyck_soft_model` applies Theorem 26: β(N) ≈ 20.6·log N fitted to the exact gaps
and activation bounds of every input up to a short length, then certified length by
length up to ``certify_to`` (default 1024) from the construction's facts — gap ≥ 1,
activations ≤ N³, margin ½ (:func:`analytic_report`, :func:`certify_lengths`). Zoo:
``dyck2_program`` (average-hard), ``dyck2_program_soft`` (softmax).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from flint import arb

from attncert.compile.bounds import temperature_record
from attncert.compile.builder import HeadSpec
from attncert.compile.compiler import FormulaCompiler
from attncert.compile.regime import Regime
from attncert.compile.tieless import (
    LengthReport,
    SoftSimulation,
    error_bound,
    layer_norms,
    soft_simulation,
    to_average_hard,
    uniform_heads,
)
from attncert.compile.tieless_all_lengths import facts_record
from attncert.errors import InputError, ParameterError
from attncert.languages.dyck import DEFAULT_BRACKETS, Dyck
from attncert.logic import syntax as s
from attncert.model.spec import Mask, Model, Temperature
from attncert.model.zoo import register

__implements__ = ("Yang Theorem 26",)

BOS = "^"
PROGRAM_VERSION = 1


@dataclass(frozen=True)
class ProgramTrace:
    """Every variable of the Appendix-E program at positions 1…n (tuples indexed i−1)."""

    string: str
    left: tuple[int, ...]  # Lᵢ
    right: tuple[int, ...]  # Rᵢ
    err1: tuple[bool, ...]
    depth: tuple[int, ...]  # dᵢ
    nearest: tuple[int | None, ...]  # mᵢ (1-based) or None
    err2: tuple[bool, ...]
    ok: tuple[bool, ...]
    out: tuple[bool, ...]  # the prefix x₁…xᵢ is in Dyck-k


def _pairs(k: int | None, pairs: tuple[str, ...] | None) -> tuple[str, ...]:
    return Dyck(k, pairs).pairs


def appendix_e_program(
    string: str, k: int | None = None, *, pairs: tuple[str, ...] | None = None
) -> ProgramTrace:
    """Run the Appendix-E program on ``string`` (reference semantics, no transformer)."""
    pr = _pairs(k, pairs)
    lefts = {p[0]: t for t, p in enumerate(pr)}
    rights = {p[1]: t for t, p in enumerate(pr)}
    for pos, a in enumerate(string):
        if a not in lefts and a not in rights:
            raise InputError(
                f"unknown symbol {a!r} at position {pos + 1} of {string!r}",
                expected="brackets " + "".join(pr),
            )
    big_l: list[int] = []
    big_r: list[int] = []
    err1, depth, nearest, err2, ok, out = [], [], [], [], [], []
    nl = nr = 0
    clean = True
    for i, a in enumerate(string):
        nl += a in lefts
        nr += a in rights
        big_l.append(nl)
        big_r.append(nr)
        err1.append(nr > nl)
        d = nl - nr + (a in rights)
        depth.append(d)
        m = next((j for j in range(i - 1, -1, -1) if depth[j] == d), None)
        nearest.append(None if m is None else m + 1)
        e2 = a in rights and (m is None or lefts.get(string[m]) != rights[a])
        err2.append(e2)
        clean = clean and not err1[-1] and not e2
        ok.append(clean)
        out.append(clean and nl == nr)
    return ProgramTrace(
        string,
        tuple(big_l),
        tuple(big_r),
        tuple(err1),
        tuple(depth),
        tuple(nearest),
        tuple(err2),
        tuple(ok),
        tuple(out),
    )


# ----- the average-hard transformer ------------------------------------------------------


def _record(node: str, role: str, pattern: str, scores: str, gap: str, why: str) -> dict:
    return {
        "node": node,
        "role": role,
        "construction": "Appendix E program (average-hard, §5)",
        "pattern": pattern,
        "scores": scores,
        "gap": {"min": gap, "profile": [], "derivation": why},
        "error_bound": {"expr": "0 (average-hard: exact)", "target": 0.125},
        "temperature": temperature_record(
            Temperature(1.0), "average-hard program; Theorem 26 sets β(N) for softmax"
        ),
    }


def dyck_program_model(
    k: int | None = 2, *, pairs: tuple[str, ...] | None = None, name: str | None = None
) -> Model:
    """The Appendix-E program for Dyck-k as a uniform–tieless average-hard transformer
    (module docstring). Reads BOS + the input; accepts iff the input is in Dyck-k; the
    output coordinates are (outᵢ, okᵢ) at every position."""
    pr = _pairs(k, pairs)
    if BOS in "".join(pr):
        raise InputError(f"bracket symbol {BOS!r} is reserved for BOS", where="pairs")
    alphabet = (BOS, *"".join(pr))
    phi_l = _any_of([p[0] for p in pr])
    phi_r = _any_of([p[1] for p in pr])
    comp = FormulaCompiler(s.And(phi_l, phi_r), Regime.UNBOUNDED, alphabet)
    b = comp.b
    left, right = comp.new("left", 0), comp.new("right", 0)
    for p in pr:
        b.word.append((p[0], left, 1.0))
        b.word.append((p[1], right, 1.0))
    comp.memo[phi_l], comp.memo[phi_r] = left, right
    # 1–2: the integers L_i, R_i (uniform means, then Theorem 20b's table lookup)
    counts = []
    for phi in (phi_l, phi_r):
        term = s.CountLeft(phi)
        comp.counting.value_a[term] = 1
        counts.append(comp.counting.lookup(term))
    big_l, big_r = counts[0]["value"], counts[1]["value"]
    lv = max(info["level"] for info in counts) + 1
    one = b.one
    pos, pos2, big_n = comp.pe({"i": 1.0}), comp.pe({"i^2": 1.0}), comp.pe({"n": 1.0})
    n_pos, n_pos2 = comp.pe({"n*i": 1.0}), comp.pe({"n*i^2": 1.0})
    depth = {big_l: 1.0, big_r: -1.0, right: 1.0}  # d_i as a linear form
    # 3: depth lookup -> N·d⁺, N·(d⁺)²; FFN: err1, [L = R]
    nd, nd2 = comp.new("N*d", lv), comp.new("N*d^2", lv)
    comp.add_head(
        lv,
        HeadSpec(
            q=[dict(depth), {one: 1.0}],
            k=[{pos: 2.0, one: -2.0}, {pos2: -1.0, pos: 2.0, one: -1.0}],
            v=[{n_pos: 1.0, big_n: -1.0}, {n_pos2: 1.0, n_pos: -2.0, big_n: 1.0}],
            out=[nd, nd2],
            mask=Mask.FUTURE,
            temperature=Temperature(1.0),
            record=_record(
                "d = L - R + [right]",
                "depth lookup",
                "attend to j = d+1 (j = 1 if d < 0); read N(j−1), N(j−1)²",
                "2*d*(j-1) - (j-1)**2",
                "1",
                "integer scores d² − (j−1−d)²; 0 ≤ d ≤ L ≤ i−1 (BOS at 1) puts the peak at a "
                "visible j, unique, every other j lower by (j−1−d)² ≥ 1",
            ),
        ),
    )
    err1, bal = comp.new("err1", lv), comp.new("[L=R]", lv)
    diff = {big_r: 1.0, big_l: -1.0}
    u1, u2 = b.hidden(lv, diff, 0.0), b.hidden(lv, diff, -1.0)
    b.ffn_out(lv, err1, {u1: 1.0, u2: -1.0})  # clamp(R − L) ∈ {0, 1}
    u3 = b.hidden(lv, diff, 1.0)
    b.ffn_out(lv, bal, {u3: 1.0, u1: -2.0, u2: 1.0})  # hat(R − L) = [L = R]
    # 4: nearest j < i with the same depth; FFN: err2
    lv += 1
    seen = [comp.new(f"x_m={p[0]}", lv) for p in pr]
    comp.add_head(
        lv,
        HeadSpec(
            q=[dict(depth), {one: 1.0}],
            k=[{nd: 2.0}, {nd2: -1.0, pos: 1.0}],
            v=[{b.symbol_coord(p[0]): 1.0} for p in pr],
            out=seen,
            mask=Mask.FUTURE_STRICT,
            temperature=Temperature(1.0),
            record=_record(
                "m = nearest j < i with d_j = d_i",
                "nearest same depth",
                "the rightmost j < i with d_j = d_i (BOS has depth 0); read its left bracket",
                "2*N*d_i*d_j - N*d_j**2 + j",
                "1",
                "scores + N·d_i² = N(d_i² − (d_i − d_j)²) + j: a multiple of N plus j ∈ [1, N), "
                "so no two keys tie and the same depth wins; integers, so the gap is ≥ 1",
            ),
        ),
    )
    err2 = comp.new("err2", lv)
    units = {}
    for p, c in zip(pr, seen, strict=True):
        units[b.hidden(lv, {c: 1.0, b.symbol_coord(p[1]): 1.0}, -1.0)] = -1.0
    units[b.hidden(lv, {right: 1.0}, 0.0)] = 1.0
    b.ffn_out(lv, err2, units)  # [right] − Σ_t [x_m = left_t ∧ x_i = right_t]
    # 5: any error at j ≤ i (the leftmost one); FFN: ok, out
    lv += 1
    errs = comp.new("errors seen", lv)
    comp.add_head(
        lv,
        HeadSpec(
            q=[{big_n: 1.0}, {one: 1.0}],
            k=[{err1: 1.0, err2: 1.0}, {pos: -1.0}],
            v=[{err1: 1.0, err2: 1.0}],
            out=[errs],
            mask=Mask.FUTURE,
            temperature=Temperature(1.0),
            record=_record(
                "ok = no error at j ≤ i",
                "first error",
                "the leftmost j ≤ i with an error (j = 1 if none); read err1 + err2 there",
                "N*(err1_j + err2_j) - j",
                "1",
                "N·e − j with e ∈ {0,1,2} and 1 ≤ j < N: distinct integers for distinct j",
            ),
        ),
    )
    ok, out = comp.new("ok", lv), comp.new("out", lv)
    b.ffn_out(lv, ok, {b.hidden(lv, {errs: -1.0}, 1.0): 1.0})
    b.ffn_out(lv, out, {b.hidden(lv, {bal: 1.0, errs: -1.0}, 0.0): 1.0})
    text = "Dyck-" + str(len(pr)) + " " + "".join(pr)
    meta: dict[str, Any] = {
        "compiler": "attncert.compile.dyck",
        "version": PROGRAM_VERSION,
        "program": f"Appendix E program for {text}",
        "description": f"Appendix-E program for {text} (uniform–tieless, gap 1)",
        "language": f"dyck{len(pr)}" if pr == DEFAULT_BRACKETS[: len(pr)] else text,
        "pairs": list(pr),
        "alphabet": "".join(a for a in alphabet if a != BOS),
        "bos": BOS,
        "positional_encodings": [f.label for f in b.features],
        "bounded_encodings": all(f.bounded for f in b.features),
        "coordinates": list(b.labels),
        "heads": comp.heads,
        "outputs": [
            {"name": "out", "coord": out, "meaning": "prefix x₁…xᵢ is in " + text},
            {"name": "ok", "coord": ok, "meaning": "no err1/err2 at any j ≤ i"},
        ],
        "readout": {"coord": out, "weight": 1.0, "bias": -0.5, "position": "last"},
    }
    model = b.build(
        readout_coord=out, output_coords=(out, ok), name=name or f"{text} [program]", meta=meta
    )
    hard = to_average_hard(model, name=model.name)
    return dataclasses.replace(hard, alphabet=tuple(a for a in hard.alphabet if a != BOS), bos=BOS)


def _any_of(symbols: list[str]) -> s.Formula:
    f: s.Formula = s.Atom(symbols[0])
    for a in symbols[1:]:
        f = s.Or(f, s.Atom(a))
    return f


def analytic_report(model: Model, n: int) -> LengthReport:
    """Theorem 26's per-length inputs for :func:`dyck_program_model` at length ``n``, from
    the construction instead of enumeration: every non-uniform head has gap ≥ 1 (integer
    scores, unique maximum — the head records prove it), every hard activation is at most
    N³ in absolute value (the largest entries are the encodings n·i² and the looked-up
    N·d² with d ≤ N − 1; every coordinate is written once), and the margin is exactly ½
    (outᵢ ∈ {0, 1}, logit = out − ½). ``tests/test_compile_dyck.py`` checks these facts
    against the exact reports of :func:`check_uniform_tieless` on all short inputs."""
    uni = set(uniform_heads(model))
    gaps = {
        (li, hi): None if (li, hi) in uni else Fraction(1)
        for li, layer in enumerate(model.layers)
        for hi in range(len(layer.heads))
    }
    big_n = model.n_tokens(n)
    return LengthReport(n, 0, gaps, Fraction(big_n**3), Fraction(1, 2))


def program_facts(model: Model) -> dict:
    """Theorem 26's hypotheses H1–H3 for :func:`dyck_program_model` at *every* length, as
    the all-length certificate records them (:mod:`attncert.compile.tieless_all_lengths`):
    gap ≥ 1, activations ≤ N³, margin ½ — the facts :func:`analytic_report` states, with
    the proofs in each head record. Not machine-checked beyond the enumerated lengths."""
    if model.meta.get("compiler") != "attncert.compile.dyck":
        raise InputError(
            f"model {model.name!r} is not an Appendix-E program (no compile.dyck record)",
            expected="a model from dyck_program_model / zoo:dyck2_program",
        )
    return facts_record(
        Fraction(1),
        Fraction(1),
        3,
        Fraction(1, 2),
        "Appendix-E construction (attncert.compile.dyck): every non-uniform head has integer "
        "scores with a unique maximum (each head record's derivation), the largest hard "
        "activations are n·i² and N·d² ≤ N³, and out ∈ {0, 1} with logit out − ½",
    )


def certify_lengths(hard: Model, temperature: Temperature, lengths: range) -> float:
    """Theorem 26 at each length of ``lengths`` without enumerating inputs: the arb error
    bound (:func:`attncert.compile.tieless.error_bound`) at β = temperature(N), with
    :func:`analytic_report`'s gap/activation/margin facts, must stay below the margin ½
    (so every softmax decision equals the program's). Returns the largest bound (upper
    endpoint); raises :class:`ParameterError` naming the first length that fails."""
    worst = arb(0)
    norms = layer_norms(hard)
    limit = arb(1) / 2  # margin / ‖readout‖₁
    for n in lengths:
        err = error_bound(hard, analytic_report(hard, n), temperature(hard.n_tokens(n)), norms)
        if err is None or not err < limit:
            raise ParameterError(
                f"β(N) = {temperature} does not certify length {n} "
                f"(error bound {'reaches a gap' if err is None else err.upper()} ≥ margin ½)",
                where="temperature",
                expected=f"lengths < {n}, or a larger β(N)",
            )
        worst = max(worst, err.upper())
    return float(worst)


def dyck_soft_model(
    k: int | None = 2,
    *,
    pairs: tuple[str, ...] | None = None,
    max_len: int = 4,
    certify_to: int = 1024,
    name: str | None = None,
) -> SoftSimulation:
    """Theorem 26 on :func:`dyck_program_model`: softmax heads with β(N) fitted to the
    exact gaps and activation bounds of every input of length ≤ ``max_len``; then, for
    every length max_len < n ≤ ``certify_to``, the certified error bound (arb) at that
    β(N) with the construction's gap/activation/margin facts (:func:`analytic_report`)
    must stay below the margin, else :class:`ParameterError`. ``meta['tieless']`` records
    both ranges and what each rests on."""
    hard = dyck_program_model(k, pairs=pairs, name=name)
    sim = soft_simulation(hard, max_len)
    worst = certify_lengths(hard, sim.temperature, range(max_len + 1, certify_to + 1))
    meta = dict(sim.model.meta)
    tl = dict(meta["tieless"])
    if certify_to > max_len:
        tl["valid_for"] = (
            f"input lengths 1..{certify_to}: 1..{max_len} checked exactly on every string; "
            f"{max_len + 1}..{certify_to} from the construction's proven facts (gap ≥ 1, "
            "activations ≤ N³, margin ½) with the arb error bound at each length"
        )
        tl["analytic"] = {
            "lengths": [max_len + 1, certify_to],
            "facts": "gap ≥ 1, activation bound N^3, margin 1/2 (attncert.compile.dyck)",
            "max_error_bound": worst,
        }
    meta["tieless"] = tl
    return dataclasses.replace(sim, model=dataclasses.replace(sim.model, meta=meta))


#: Library programs (``attncert compile NAME --library``): Dyck-k for k = 2, 3, 4.
PROGRAMS: dict[str, int] = {f"dyck{k}": k for k in range(2, len(DEFAULT_BRACKETS) + 1)}


def program_model(name: str, *, soft: bool = True, max_len: int = 4) -> Model:
    """The library program ``name`` (``dyck2`` …): Theorem 26's softmax model, or with
    ``soft=False`` the average-hard program itself."""
    if name not in PROGRAMS:
        raise InputError(f"no library program {name!r}", expected="one of " + ", ".join(PROGRAMS))
    if not soft:
        return dyck_program_model(PROGRAMS[name], name=f"{name} [program]")
    return dyck_soft_model(PROGRAMS[name], max_len=max_len, name=f"{name} [program]").model


register(
    "dyck2_program",
    lambda: dyck_program_model(2, name="dyck2_program"),
    "Appendix-E program for Dyck-2 ()[]: uniform–tieless average-hard transformer "
    "(integer gaps ≥ 1, BOS, unbounded encodings)",
)
register(
    "dyck2_program_soft",
    lambda: dyck_soft_model(2, name="dyck2_program").model,
    "Theorem 26's softmax simulation of the Dyck-2 program (β(N) ∝ log N, certified "
    "length by length up to 1024)",
)

__all__ = [
    "PROGRAMS",
    "ProgramTrace",
    "analytic_report",
    "appendix_e_program",
    "certify_lengths",
    "dyck_program_model",
    "dyck_soft_model",
    "program_facts",
    "program_model",
]
