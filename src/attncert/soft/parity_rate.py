"""Why a soft PARITY transformer's gap is O(1/n²): the one-residue-class family.

**Proposition (PARITY rate, attncert).**  Let T be a fixed softmax transformer
(unmasked heads, ReLU FFNs, no layer norm, parameters independent of n) whose
positional encoding at token i of N is a fixed function of (i/N, (−1)^i) that is
smooth or piecewise linear in i/N, plus constants such as 1/N.  If sign(logit)
decides PARITY on every string, the margin g_n = min_x |logit(x)| over length-n
strings is O(1/n²).

**Status** (:data:`STATUS`): *proved for one layer*, with an explicit constant computed
from the weights (:func:`one_layer_mass_bound`; one softmax head, ReLU FFN, features
polynomial in i/N along the family); *a conjecture for two or more layers*: the
regularity argument of ``docs/parity-rate.md`` fails at Lemma A4 (averages with flips),
whose diagonal-sum step is not implied by its hypotheses — an explicit family satisfies
(H1) and (H2) with bounded constants while the average's second-difference mass grows like
1/√N instead of 1/N (:func:`attncert.soft.parity_rate_checks.lemma_a4_counterexample`).
Every other inequality of the argument is checked mechanically
(:mod:`attncert.soft.parity_rate_checks`: sympy identities and implications, exhaustive
exact checks on small sequences).

The argument restricts T to the *one-residue-class family* x^{(0)}, …, x^{(K)}:
x^{(k)} has 1s exactly at the first k positions r, r+2, …, r+2(k−1) of one parity
class (:func:`residue_family`).  If sign(O(k)) follows PARITY with |O(k)| ≥ g, the
second differences alternate in sign with |Δ²O(k)| = |O(k+2)| + 2|O(k+1)| + |O(k)|
≥ 4g, hence

    g ≤ Σ_k |Δ²O(k)| / (4(K − 1))                                   (†)

for *any* real sequence — a certified inequality (:func:`family_profile` checks it
in exact rational arithmetic).  The upper half is analytic: along the family the
second-difference *mass* Σ_k |Δ²O(k)| is O(1/n) (proved for one layer), so g = O(1/n²).
Hahn's Lemma 5 (every single-symbol change moves the logit by O(1/n), the engine of
Theorem 6) gives only |ΔO(k)| = O(1/n), i.e. g = O(1/n); the family's *second*
differences are what pin the rate at 1/n².

* :func:`one_layer_mass_bound` (:mod:`.parity_rate_bound`): an explicit C with
  Σ_k |Δ²O(k)| ≤ C/N ≤ C/n for every n, from the exact weights in interval arithmetic.
* :func:`family_profile` / :func:`rate_table` (:mod:`.parity_rate_family`) measure O(k)
  along the family — in exact rational arithmetic when every head has an all-zero score
  matrix (then softmax is exactly the uniform average, e.g. ``soft_parity``) or every head
  is hard, in float64 otherwise (``exact`` records which).
* :func:`accepted_parity`: which parity the model accepts (its ``meta``), or says that it
  does not declare one.

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.soft.parity_rate import family_profile
    >>> p = family_profile(zoo_model("soft_parity"), 16)
    >>> p.exact, p.sign_correct, p.margin, p.second_difference_mass
    (True, True, Fraction(1, 324), Fraction(7, 81))
"""

from __future__ import annotations

from attncert.model.spec import Model
from attncert.soft.parity_rate_bound import ChannelBound, OneLayerMassBound, one_layer_mass_bound
from attncert.soft.parity_rate_family import (
    FamilyProfile,
    RateRow,
    RateTable,
    crossing_mass,
    evaluation_mode,
    family_logits,
    family_positions,
    family_profile,
    format_rate_table,
    max_step,
    plot_family_profiles,
    rate_table,
    residue_family,
    second_difference_mass,
)

__all__ = [
    "STATUS",
    "ChannelBound",
    "FamilyProfile",
    "OneLayerMassBound",
    "RateRow",
    "RateTable",
    "accepted_parity",
    "crossing_mass",
    "evaluation_mode",
    "family_logits",
    "family_positions",
    "family_profile",
    "format_rate_table",
    "max_step",
    "one_layer_mass_bound",
    "plot_family_profiles",
    "rate_table",
    "residue_family",
    "second_difference_mass",
    "status_for",
]


#: What is known about the Proposition, by depth (printed by ``sensitivity --parity-rate``).
STATUS = {
    "one layer": "proved, with an explicit constant from the weights (one_layer_mass_bound)",
    "two or more layers": "conjecture: the regularity argument's Lemma A4 fails as stated "
    "(docs/parity-rate.md, 'Several layers'); soft_parity's measured rate agrees with 1/n²",
}


def status_for(model: Model) -> str:
    """The Proposition's status for this model's depth (see :data:`STATUS`)."""
    if model.num_layers <= 1:
        return "proved for one layer (" + STATUS["one layer"] + ")"
    return f"{model.num_layers} layers: " + STATUS["two or more layers"]


def accepted_parity(model: Model) -> tuple[bool | None, str]:
    """Whether the model is meant to accept strings with an *even* number of 1s.

    Read from ``model.meta``: ``accepts`` ("even"/"odd"), else ``language`` naming parity
    with "even"/"odd" in it (e.g. "parity (even number of 1s)"). Returns (True/False, where it
    was read) or (None, why not) when the model does not say.
    """
    meta = dict(model.meta)
    acc = meta.get("accepts")
    if isinstance(acc, str) and acc.strip().lower() in ("even", "odd"):
        return acc.strip().lower() == "even", f"meta.accepts = {acc!r}"
    lang = meta.get("language")
    if isinstance(lang, str) and "parity" in lang.lower():
        low = lang.lower()
        has_even, has_odd = "even" in low, "odd" in low
        if has_even != has_odd:
            return has_even, f"meta.language = {lang!r}"
    return None, "the model's meta declares no accepted parity ('accepts' or 'language')"
