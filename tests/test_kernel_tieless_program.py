"""Theorem 26's hypotheses H1–H3 derived from the weights for every length
(:mod:`attncert.kernel.tieless.program`).

The symbolic run is checked against the exact rational forward pass: on every input of
length ≤ 4 (≤ 6 in the slow run) and on random longer ones, every coordinate's polynomial,
evaluated with the atoms read off the exact trace (positions, symbols, the argmax each head
chose, the FFN increments), equals the exact activation at every position and layer; every
FFN increment lies in its derived range; the derived gap, activation bound and logit values
hold on every input of length ≤ 5 (≤ 7 slow). Edited weights that break a rule are refused with the
head or reason named."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest
from flint import fmpq

from attncert.compile.dyck import dyck_program_model
from attncert.compile.tieless import check_uniform_tieless
from attncert.kernel.tieless.program import NotDerived, derive, symbolic_run
from attncert.model import model_from_dict, model_to_dict
from attncert.model.exact import forward_exact
from attncert.model.spec import Mask
from attncert.model.zoo import zoo_model

__implements__ = ("Yang Theorem 26", "Yang Lemma 24")


# function-scoped on purpose: a module-scoped symbolic run would be attributed, under
# mutation analysis (benchmarks/mutation_score.py), to the first test that builds it only
@pytest.fixture
def hard():
    return zoo_model("dyck2_program")


@pytest.fixture
def sym(hard):
    return symbolic_run(hard)[0]


def _position(path: tuple[str, ...], i: int, trace) -> int:
    """0-based position a path (i, L3H0, …) names in an exact trace."""
    pos = i
    for name in path[1:]:
        layer, head = int(name[1 : name.index("H")]), int(name[name.index("H") + 1 :])
        chosen = trace.layers[layer].chosen[head][pos]
        pos = chosen[0] if chosen else 0  # no key (strict mask at i = 1): guarded by 1 − B
    return pos


def _value(atom, i: int, trace, tokens: list[str]) -> Fraction:
    n_tok = len(tokens)
    if atom[0] == "N":
        return Fraction(n_tok)
    pos = _position(atom[-1], i, trace)
    kind = atom[0]
    if kind == "I":
        return Fraction(pos + 1)
    if kind == "B":
        return Fraction(int(pos == 0))
    if kind == "U":
        return Fraction(1, pos) if pos else Fraction(0)
    if kind == "S":
        return Fraction(int(tokens[pos] == atom[1]))
    name = atom[1]
    if name.startswith("#"):
        return Fraction(sum(t == name[1:-1] for t in tokens[:pos]))
    layer, coord = int(name[1 : name.index("F")]), int(name[name.index("F") + 1 :])
    lt = trace.layers[layer]
    return _fr(lt.output[pos, coord]) - _fr(lt.after_attention[pos, coord])


def _fr(x: fmpq) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def _evaluate(poly, i: int, trace, tokens) -> Fraction:
    total = Fraction(0)
    for mono, c in poly.items():
        term = _fr(c)
        for atom, e in mono:
            term *= _value(atom, i, trace, tokens) ** e
        total += term
    return total


def _strings(hard, max_len: int):
    for n in range(1, max_len + 1):
        yield from ("".join(p) for p in itertools.product(hard.alphabet, repeat=n))


def _check_string(hard, sym, s: str) -> None:
    trace = forward_exact(hard, s)
    tokens = [hard.bos, *s]
    stages = [trace.layers[0].inputs] + [lt.output for lt in trace.layers]
    for li, (polys, exact) in enumerate(zip(sym.layers, stages, strict=True)):
        for i in range(len(tokens)):
            for c, poly in enumerate(polys):
                got = _evaluate(poly, i, trace, tokens)
                assert got == _fr(exact[i, c]), (s, li, i, c)
    for name, (mag, values) in sym.ranges.items():
        if name.startswith("L"):
            layer, coord = int(name[1 : name.index("F")]), int(name[name.index("F") + 1 :])
            lt = trace.layers[layer]
            for i in range(len(tokens)):
                delta = _fr(lt.output[i, coord]) - _fr(lt.after_attention[i, coord])
                if values is not None:
                    assert delta in {_fr(v) for v in values}, (s, name, delta)
                bound = sum(_fr(v) * len(tokens) ** k for k, v in mag.items())
                assert abs(delta) <= bound


@pytest.mark.parametrize(
    "max_len", [4, pytest.param(6, marks=pytest.mark.slow)], ids=["n<=4", "n<=6"]
)
def test_symbolic_run_equals_the_exact_forward_pass_on_every_short_input(
    hard, sym, max_len
) -> None:
    for s in _strings(hard, max_len):
        _check_string(hard, sym, s)


@pytest.mark.slow
def test_symbolic_run_equals_the_exact_forward_pass_on_longer_random_inputs(hard, sym) -> None:
    rng = random.Random(7)
    for n in (9, 16, 23):
        for _ in range(3):
            _check_string(hard, sym, "".join(rng.choice("()[]") for _ in range(n)))
    _check_string(hard, sym, "([[]()])" * 3)


@pytest.mark.parametrize(
    "max_len", [4, pytest.param(7, marks=pytest.mark.slow)], ids=["n<=4", "n<=7"]
)
def test_derived_hypotheses_hold_on_every_short_input(hard, max_len) -> None:
    der = derive(hard)
    assert der.gap == 1 and der.margin == fmpq(1, 2)
    assert der.logits == (fmpq(-1, 2), fmpq(1, 2))
    assert dict(der.activation) == {3: 1, 2: 2, 1: 2, 0: 2}
    report = check_uniform_tieless(hard, max_len)
    assert report.first_tie is None
    for rep in report.lengths:
        big_n = hard.n_tokens(rep.n)
        assert rep.min_gap >= Fraction(1)
        assert rep.activation_bound <= sum(int(c) * big_n**k for k, c in der.activation)
        assert rep.margin >= Fraction(1, 2)


def test_every_head_gets_its_rule(hard) -> None:
    heads = derive(hard).heads
    assert heads[:3] == ("L0H0: MEAN", "L0H1: MEAN", "L0H2: MEAN")
    assert "L1H0: ARG-B (gap ≥ 3)" in heads  # Theorem 20b's lookup: K = 3N/(i − 1)
    assert "L2H0: ARG-B (gap ≥ 1)" in heads  # depth lookup
    assert "L3H0: ARG-A (gap ≥ 1)" in heads and "L4H0: ARG-A (gap ≥ 1)" in heads


@pytest.mark.parametrize("k", [3, 4])
def test_dyck_k_programs_are_derived_too(k) -> None:
    der = derive(dyck_program_model(k))
    assert der.gap == 1 and der.margin == fmpq(1, 2)


# ----- edited weights ----------------------------------------------------------------------


def _edit(hard, edit):
    d = model_to_dict(hard)
    edit(d, hard.meta["coordinates"])
    return model_from_dict(d)


def _refused(model) -> str:
    with pytest.raises(NotDerived) as err:
        derive(model)
    return str(err.value)


def test_dropping_the_nearest_heads_tie_break_is_refused(hard) -> None:
    def edit(d, labels):
        w_k = d["layers"][3]["heads"][0]["w_k"]
        for row in w_k:
            row[labels.index("pe:1*[i]")] = 0.0

    assert _refused(_edit(hard, edit)) == "L3H0: its scores fit neither ARG-A nor ARG-B"


def test_an_odd_vertex_in_the_depth_lookup_is_refused(hard) -> None:
    """Key weight 2·(j − 1) → 3·(j − 1): the vertex 3d/2 may be a half-integer (a tie)."""

    def edit(d, labels):
        w_k = d["layers"][2]["heads"][0]["w_k"]
        w_k[0][labels.index("pe:1*[i]")] = 3.0
        w_k[0][labels.index("one")] = -3.0

    assert _refused(_edit(hard, edit)).startswith("L2H0: ")


def test_a_readout_that_can_reach_zero_is_refused(hard) -> None:
    """out = ReLU([L=R] − errors + ½): out ∈ {0, ½, 1, 3/2}, so the logit out − ½ can be 0."""

    def edit(d, labels):
        d["layers"][4]["ffn"]["b1"][1] = 0.5

    assert _refused(_edit(hard, edit)) == "the logit can be exactly 0 (H3 needs a margin)"


def test_models_outside_the_rules_are_refused() -> None:
    assert "positional feature" in _refused(zoo_model("soft_parity"))
    assert "LayerNorm" in _refused(zoo_model("trained_first_last"))


@pytest.mark.slow
def test_symbolic_run_equals_the_exact_forward_pass_for_dyck3() -> None:
    hard = dyck_program_model(3)
    sym = symbolic_run(hard)[0]
    for s in _strings(hard, 3):
        _check_string(hard, sym, s)
    _check_string(hard, sym, "([{}])(){[]}")


def test_a_non_residual_ffn_replaces_the_coordinates_it_does_not_write(hard) -> None:
    """Without the residual, a layer's output is its FFN's alone: the symbolic run must set
    every coordinate the FFN does not write to 0 (checked against the exact pass)."""
    d = model_to_dict(hard)
    d["layers"][4]["residual"] = False
    model = model_from_dict(d)
    sym = symbolic_run(model)[0]
    for s in ("()", "[(])", "(()"):
        _check_string(model, sym, s)


def test_an_argmax_term_without_the_factor_n_is_refused(hard) -> None:
    """ARG-A needs every key-dependent term other than ±j to be a multiple of N: a key term
    [x_j left] added to the nearest-same-depth head's scores can tie with the tie-break."""

    def edit(d, labels):
        w_q = d["layers"][3]["heads"][0]["w_q"]
        w_k = d["layers"][3]["heads"][0]["w_k"]
        row = next(r for r, q in enumerate(w_q) if q[labels.index("one")] != 0)
        w_k[row][labels.index("left")] = 1.0

    assert _refused(_edit(hard, edit)) == "L3H0: its scores fit neither ARG-A nor ARG-B"


@pytest.mark.slow
def test_a_lookup_whose_gap_shrinks_with_i_is_refused(hard) -> None:
    """Theorem 20b's lookup with keys i, i² instead of n·i, n·i²: the scores are
    (3/(i − 1))·(2(C + 1)j − j²), a gap 3/(i − 1) < 1 for i > 4 — ARG-B must refuse (its
    K has U without N), and the exact gaps confirm the claim would be false."""

    def edit(d, labels):
        for h in d["layers"][1]["heads"]:
            for row in h["w_k"]:
                for frm, to in (("pe:1*[n*i]", "pe:1*[i]"), ("pe:1*[n*i^2]", "pe:1*[i^2]")):
                    row[labels.index(to)], row[labels.index(frm)] = row[labels.index(frm)], 0.0

    model = _edit(hard, edit)
    assert _refused(model) == "L1H0: its scores fit neither ARG-A nor ARG-B"
    gaps = check_uniform_tieless(model, 4).lengths[-1].gaps
    assert gaps[(1, 0)] is not None and gaps[(1, 0)] < 1


def test_a_pooled_readout_is_refused(hard) -> None:
    d = model_to_dict(hard)
    d["readout"]["position"] = "mean"
    assert _refused(model_from_dict(d)) == "the model has mean readout"


def test_a_logit_that_reads_a_symbol_is_enumerated_over_the_vocabulary(hard) -> None:
    """logit = out − ½ + ¼·[x left]: the values are {−½, −¼, ½, ¾}, margin ¼ — the symbols
    at the readout position are enumerated with the output coordinate."""
    d = model_to_dict(hard)
    d["readout"]["weight"][hard.meta["coordinates"].index("left")] = 0.25
    der = derive(model_from_dict(d))
    assert der.logits == (fmpq(-1, 2), fmpq(-1, 4), fmpq(1, 2), fmpq(3, 4))
    assert der.margin == fmpq(1, 4)


def test_nmax_is_the_coefficientwise_maximum() -> None:
    from attncert.kernel.tieless.polynomial import nmax

    assert nmax({}, {0: fmpq(1, 2)}) == {0: fmpq(1, 2)}
    assert nmax({2: fmpq(3)}, {0: fmpq(1, 3), 2: fmpq(1)}) == {2: fmpq(3), 0: fmpq(1, 3)}


def test_piecewise_needs_one_common_integer_form() -> None:
    """Rule FFN: units whose free parts are not multiples of one z (z + w beside 2z) have
    no piecewise-linear form in one integer; the rule must give up (None), not merge them."""
    from attncert.kernel.tieless.program import _piecewise, add, atom, const, scale

    z = atom(("I", ("i",)))
    w = atom(("N",))
    assert _piecewise([(add(z, w), fmpq(1)), (scale(z, 2), fmpq(1))], fmpq(0)) is None
    # ReLU(z + w) − ReLU(z): flat at both ends, yet no function of one integer form
    assert _piecewise([(add(z, w), fmpq(1)), (z, fmpq(-1))], fmpq(0)) is None
    # ReLU(z) − ReLU(z − 1) over the integers is {0, 1}; with the free part ignored it would
    # be the single value ReLU(0) − ReLU(−1) = 0
    vals = _piecewise([(z, fmpq(1)), (add(z, const(-1)), fmpq(-1))], fmpq(0))
    assert vals == {fmpq(0), fmpq(1)}


def test_an_unbounded_integer_ffn_output_keeps_a_magnitude_bound(hard) -> None:
    """ReLU(i) has no finite range (end slope 1): rule FFN falls back on the magnitude bound
    N and keeps that it is an integer."""
    from attncert.kernel.tieless.program import _Run, atom

    run = _Run(hard)
    mag, values, integer = run.ffn_range([(0, fmpq(1))], [atom(("I", ("i",)))], fmpq(0))
    assert mag == {1: fmpq(1), 0: fmpq(0)} and values is None and integer is True
    mag, values, integer = run.ffn_range([(0, fmpq(1, 2))], [atom(("I", ("i",)))], fmpq(0))
    assert values is None and integer is False


@pytest.mark.parametrize(
    ("formula", "alphabet", "regime"),
    [
        ("Q_1", "01", "unbounded"),
        ("prev Q_1", "01", "unbounded"),
        ("prev Q_1", "01", "future-masked-unbounded"),
        ("first", "ab", "temperature"),
    ],
)
def test_derived_facts_of_other_compiled_models_hold_on_every_short_input(
    formula, alphabet, regime
) -> None:
    """Soundness on models the rules were not written for: compiled constructions made
    average-hard. Whatever derive proves (gap, activation bound, logit values) must hold on
    every input of length ≤ 6, exactly."""
    from attncert.compile import compile_formula
    from attncert.compile.tieless import to_average_hard

    model = to_average_hard(compile_formula(formula, regime=regime, alphabet=alphabet))
    der = derive(model)
    report = check_uniform_tieless(model, 6)
    assert report.first_tie is None
    for rep in report.lengths:
        big_n = model.n_tokens(rep.n)
        assert rep.min_gap is None or rep.min_gap >= _fr(der.gap)
        assert rep.activation_bound <= sum(_fr(c) * big_n**k for k, c in der.activation)
    logits = {_fr(v) for v in der.logits}
    for s in _strings(model, 6):
        assert forward_exact(model, s).logit_fraction() in logits, s


@pytest.mark.parametrize(
    ("formula", "alphabet", "regime", "reason"),
    [
        ("Q_a S Q_b", "ab", "unbounded", "L1H0: its scores fit neither ARG-A nor ARG-B"),
        ("ODD(#<[Q_1])", "01", "unbounded", "positional feature '(-1)^i' has no rule (EMB)"),
    ],
)
def test_compiled_models_outside_the_rules_are_refused(formula, alphabet, regime, reason):
    from attncert.compile import compile_formula
    from attncert.compile.tieless import to_average_hard

    model = to_average_hard(compile_formula(formula, regime=regime, alphabet=alphabet))
    assert _refused(model) == reason


def test_mean_of_a_constant_value_is_that_constant(hard) -> None:
    """Rule MEAN on a value with a constant term c: the average over j < i is c for i ≥ 2
    (c·U·(I − 1) with U = 1/(I − 1)) and 0 at i = 1 (no key, U = 0)."""
    from attncert.kernel.tieless.program import _Run, const, subst

    (poly,) = _Run(hard).mean("L0H9", Mask.FUTURE_STRICT, [const(3)])
    for big_i, u, want in ((5, fmpq(1, 4), 3), (2, fmpq(1), 3), (1, fmpq(0), 0)):
        env = {("I", ("i",)): const(big_i), ("U", ("i",)): const(u)}
        assert subst(poly, env.get) == const(want)
