"""Hahn's Theorem 6 distributions: exact laws cross-checked by brute force, sampling
checked against the exact laws with Hoeffding confidence bounds.

Statistical tests use fixed seeds and a Hoeffding bound |f̂ − p| ≤ sqrt(ln(2T/δ)/(2c))
for c observations, T simultaneous tests and δ = 1e-6 (a correct sampler fails a
test with probability < 1e-6); each is paired with a mutation showing the same
check rejects a wrong law.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from attncert.errors import InputError, ParameterError
from attncert.languages import language
from attncert.languages.distributions import (
    DyckDistribution,
    ParityDistribution,
    entropy,
    theorem6_distribution,
)

__implements__ = ("Hahn Theorem 6",)

P = ParityDistribution("1/4")
DY = DyckDistribution("3/10")
DELTA = 1e-6


def test_parity_next_symbol_laws_follow_the_automaton():
    for x in ["", "0", "1", "11", "101", "0110"]:
        probs = P.next_symbol_probs(x)
        assert sum(probs.values()) == 1
        if x.count("1") % 2 == 0:
            assert probs == {"0": Fraction(3, 8), "1": Fraction(3, 8), "$": Fraction(1, 4)}
        else:
            assert probs == {"0": Fraction(1, 2), "1": Fraction(1, 2), "$": Fraction(0)}


def test_end_possible_exactly_for_members():
    parity, dyck = language("parity"), language("dyck2")
    for n in range(6):
        for x in P.all_strings(n):
            assert ("$" in P.next_symbol_set(x)) == parity.contains(x)
    for x, _ in (xp for n in range(5) for xp in DY.prefixes(n)):
        assert ("$" in DY.next_symbol_set(x)) == dyck.contains(x)


def test_dyck_next_symbol_sets_match_brute_force_prefixes():
    """σ can follow x iff xσ is a prefix of some 2-Dyck word (words up to length 8)."""
    dyck = language("dyck2")
    words = [w for m in range(0, 9, 2) for w in DY.all_strings(m) if dyck.contains(w)]
    prefixes = {w[:k] for w in words for k in range(len(w) + 1)}
    for n in range(4):
        for x in DY.all_strings(n):
            if x not in prefixes:
                assert DY.prefix_probability(x) == 0
                with pytest.raises(InputError):
                    DY.next_symbol_set(x)
                continue
            expected = {s for s in "()[]" if x + s in prefixes}
            if dyck.contains(x):
                expected.add("$")
            assert DY.next_symbol_set(x) == expected, x


@pytest.mark.slow
@pytest.mark.parametrize("dist,lang,m", [(P, "parity", 10), (DY, "dyck2", 6)])
def test_probabilities_over_all_strings_sum_to_one(dist, lang, m):
    """Σ_{|w| ≤ m} P(w) + P(|w| > m) = 1 exactly, with P(|w| > m) both from the DP and
    by brute force over all strings of length m + 1; P(w) > 0 iff w is in the language."""
    member = language(lang)
    total = Fraction(0)
    for k in range(m + 1):
        for w in dist.all_strings(k):
            pw = dist.string_probability(w)
            assert (pw > 0) == member.contains(w), w
            total += pw
    tail_brute = sum((dist.prefix_probability(x) for x in dist.all_strings(m + 1)), Fraction(0))
    assert tail_brute == dist.survival(m + 1)
    assert total + tail_brute == 1


@pytest.mark.parametrize("dist", [P, DY])
def test_marginals_and_optimal_cross_entropy_match_brute_force(dist):
    for n in range(1, 7):
        pairs = list(dist.prefixes(n))
        z = sum((q for _, q in pairs), Fraction(0))
        assert z == dist.survival(n)
        marg = {s: Fraction(0) for s in dist.symbols}
        opt = 0.0
        for x, q in pairs:
            law = dist.next_symbol_probs(x)
            for s, v in law.items():
                marg[s] += q / z * v
            opt += float(q / z) * entropy(law)
        assert marg == dist.marginal_next(n)
        assert dist.optimal_cross_entropy(n) == pytest.approx(opt, abs=1e-12)
        assert dist.unigram_cross_entropy(n) == pytest.approx(entropy(marg), abs=1e-12)
        assert dist.unigram_cross_entropy(n) >= dist.optimal_cross_entropy(n)


def test_parity_prefix_parity_is_balanced_and_unigram_closed_form():
    for n in range(1, 8):
        assert P.parity_law(n) == {0: Fraction(1, 2), 1: Fraction(1, 2)}
    p = 0.25
    assert P.unigram_cross_entropy(5) == pytest.approx(entropy([p / 2, (2 - p) / 4, (2 - p) / 4]))


def test_dyck_closing_unbalanced_probability_brute_force():
    for n in range(1, 8):
        pairs = list(DY.prefixes(n))
        z = sum((q for _, q in pairs), Fraction(0))
        brute = (
            sum(
                (q for x, q in pairs if x[-1] in ")]" and "$" not in DY.next_symbol_set(x)),
                Fraction(0),
            )
            / z
        )
        assert DY.closing_unbalanced_probability(n) == brute
        assert float(brute) == pytest.approx(DY.closing_unbalanced_probability(n, exact=False))
    const = DY.theorem6_gap_constant(500)
    assert 0 < const < float(1 - DY.p) * math.log(2)


def _hoeffding(count: int, tests: int) -> float:
    return math.sqrt(math.log(2 * tests / DELTA) / (2 * count))


def _context_counts(words: list[str], end: str, max_len: int) -> dict[str, Counter]:
    ctx: dict[str, Counter] = {}
    for w in words:
        for k in range(min(len(w), max_len) + 1):
            nxt = w[k] if k < len(w) else end
            ctx.setdefault(w[:k], Counter())[nxt] += 1
    return ctx


def _worst_violation(dist, ctx: dict[str, Counter], law) -> float:
    """max over contexts/symbols of |f̂ − p| minus its Hoeffding radius (> 0 = reject)."""
    usable = {x: c for x, c in ctx.items() if sum(c.values()) >= 300}
    tests = sum(len(dist.symbols) for _ in usable)
    worst = -math.inf
    for x, c in usable.items():
        total = sum(c.values())
        for s, prob in law(x).items():
            worst = max(worst, abs(c[s] / total - float(prob)) - _hoeffding(total, tests))
    return worst


@pytest.mark.slow
@pytest.mark.parametrize("dist,size", [(P, 6000), (DY, 6000)])
def test_sampled_words_match_exact_next_symbol_probabilities(dist, size):
    words = dist.sample(np.random.default_rng(12345), size)
    ctx = _context_counts(words, dist.end, 3)
    assert len([c for c in ctx.values() if sum(c.values()) >= 300]) >= 5
    assert _worst_violation(dist, ctx, dist.next_symbol_probs) <= 0
    # mutation: the same check rejects a distribution with a different p
    other = type(dist)(dist.p + Fraction(1, 10))
    assert _worst_violation(dist, ctx, other.next_symbol_probs) > 0


@pytest.mark.parametrize("dist,n", [(P, 3), (DY, 4)])
def test_sampled_prefixes_follow_the_conditioned_prefix_law(dist, n):
    size = 20000
    xs = dist.sample_prefixes(np.random.default_rng(7), n, size)
    counts = Counter(xs)
    law = {x: q / dist.survival(n) for x, q in dist.prefixes(n)}
    assert set(counts) <= set(law)
    radius = _hoeffding(size, len(law))
    assert max(abs(counts[x] / size - float(q)) for x, q in law.items()) <= radius
    # mutation: the unconditioned-uniform law over the same support is rejected
    uniform = 1 / len(law)
    assert max(abs(counts[x] / size - uniform) for x in law) > radius


def test_parity_conditioned_next_probs_are_the_h_transform():
    """P(next = s | x, length ≥ n) = Σ_y P(prefix xsy) / Σ_{s′,y} P(prefix xs′y), |xsy| = n."""
    n = 5
    for x in ["", "1", "10", "011"]:
        rest = n - len(x) - 1
        mass = {
            s: sum((P.prefix_probability(x + s + y) for y in P.all_strings(rest)), Fraction(0))
            for s in "01"
        }
        z = mass["0"] + mass["1"]
        assert P.conditioned_next_probs(x, n) == {s: mass[s] / z for s in "01"}


def test_bad_parameters_are_refused():
    with pytest.raises(ParameterError, match="0 < p < 1"):
        ParityDistribution(1)
    with pytest.raises(ParameterError, match="finite expected length"):
        DyckDistribution("1/2")
    with pytest.raises(ParameterError, match="not a number"):
        ParityDistribution("abc")
    with pytest.raises(InputError, match="unknown distribution"):
        theorem6_distribution("anbn", "1/4")
    with pytest.raises(InputError, match="symbol"):
        P.prefix_probability("012")
