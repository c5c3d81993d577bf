"""The terms a report page uses, each defined once at the foot of the page (``#term-…``),
and the verdict words with what each means. The summary and the sections link a term to
its definition (:func:`term`), so no word of the theory appears without one."""

from __future__ import annotations

from attncert.report.text import Span, link

#: anchor → (term, definition)
TERMS: dict[str, tuple[str, str]] = {
    "logit": (
        "logit",
        "the model's accept score z on a string: it accepts iff z > 0. Logit units are the "
        "units of z.",
    ),
    "constant": (
        "constant model",
        "a model that decides every string of a length the same way; every restriction, "
        "sensitivity bound and pair statement is then vacuous (true of any constant "
        "function).",
    ),
    "hardened": (
        "hardened model",
        "the model with each softmax head replaced by argmax (hard) attention over the same "
        "scores, ties to the leftmost position; Hahn's Theorem 1 is about hard attention.",
    ),
    "restriction": (
        "restriction",
        "some input positions fixed to symbols, the others free. Hahn's Theorem 1 (with its "
        "Depth Reduction Lemma) finds one fixing few positions under which a hard-attention "
        "model's decision depends on only a few free ones.",
    ),
    "theorem1": (
        "Theorem 1 (Hahn 2020)",
        "a hard-attention transformer's decision, under some restriction, depends on a "
        "bounded number of inputs; so it cannot compute PARITY or 2-Dyck at large n. Here: a "
        "certificate at each n, re-checked by the trusted kernel.",
    ),
    "depth-reduction": (
        "Depth Reduction Lemma",
        "Hahn's Lemma 4 (S1 Corollary 24): each layer keeps at least a fraction "
        "(1 − 2η)(1 − (1 + δ)q) of the free positions; where a layer keeps fewer, the checked "
        "facts still hold but the theorem's statement is not instantiated (OUTSIDE-THEOREM).",
    ),
    "pair": (
        "misclassified pair",
        "two strings compatible with the restriction that agree on every position the "
        "decision depends on, so the model decides them alike, but differ in membership: "
        "the model is wrong on one of them. Marked positions are where they differ; the full "
        "strings are in the certificate.",
    ),
    "lemma5": (
        "Lemma 5 (Hahn 2020)",
        "in a softmax transformer with bounded parameters, changing one input symbol moves the "
        "output by O(1/n).",
    ),
    "bn": (
        "B(n)",
        "a certified bound on how much changing one input symbol can move the logit, over "
        "every string of length n (logit units).",
    ),
    "cap": (
        "range cap",
        "the width of the logit's certified range over all strings of length n: a bound on "
        "any change, so a B(n) that is only the cap says nothing about one symbol's effect.",
    ),
    "uniform": (
        "uniform bound K/n",
        "a certified K with B(n) ≤ K/n for every n ≥ N₀ at once (Lemma 5 uniformly in n); it "
        "says something only from the n where K/n falls below the logit's range Z.",
    ),
    "theorem6": (
        "Theorem 6 (Hahn 2020)",
        "from B(n): on PARITY the cross-entropy of σ(logit) is at least log(1 + e^(−B(n)/2)) "
        "nats, which tends to log 2 (a coin) as B(n) → 0; a similar floor holds for 2-Dyck. "
        "It is about PARITY and 2-Dyck only.",
    ),
    "soft-restriction": (
        "soft restriction",
        "Theorem 1's conclusion for the softmax model itself at one n: positions fixed so "
        "that the decision is certified the same on every completion, with two completions "
        "of different membership (one of them is misclassified).",
    ),
    "verify": (
        "certified accuracy",
        "the share of all |Σ|ⁿ strings of length n the model decides correctly, bounded "
        "below and above by a partition of the strings into cubes, each re-derived by the "
        "kernel; an exact count when no string is left undecided.",
    ),
    "horizon": (
        "length horizon",
        "the lengths of a range at which the model is proved right on every string of every "
        "length, and the least length at which it is wrong on some string (a witness decided "
        "in arb), from one certificate that covers the whole range without enumerating "
        "lengths (attncert verify --lengths A:B), re-derived by the kernel.",
    ),
    "arb": (
        "decided in arb",
        "the logit's sign computed with rigorous interval arithmetic (python-flint's arb), "
        "not floating point: a proof, not a measurement.",
    ),
    "measured": (
        "measured",
        "computed in floating point on all strings (exact counts) or on sampled ones (with a "
        "95 % Wilson interval): evidence, not proof.",
    ),
    "budget": (
        "time budget",
        "each cell's time limit (--cell-time-limit, cell_time_limit= in Python); an analysis "
        "gets a share of it for its own search, the rest is for the kernel's check. A cell "
        "that ran out says so, with the flag that raises it.",
    ),
}

#: verdict word → what it means on this page
VERDICTS: dict[str, str] = {
    "CERTIFIED": "checked by the trusted kernel, and the theorem's statement holds for this "
    "model at this n",
    "CERTIFIED-TRIVIAL": "checked, but vacuous: e.g. no free position, no pair of different "
    "membership, a bound that is only the logit's range, a model that may be constant",
    "OUTSIDE-THEOREM": "the checked facts hold, but a hypothesis of the theorem fails for "
    "this model (reasons in the section), so its statement is not instantiated",
    "REFUTED": "proved false: the model is wrong on a string (decided in arb), or a claim "
    "was rejected by the kernel",
    "UNDECIDED": "nothing was proved either way (a search that found nothing, or a budget "
    "that ran out)",
    "MEASURED": "a measurement, not a proof: no verdict",
    "INFO": "a description, no claim",
    "NOT APPLICABLE": "the analysis does not apply to this model or language (the reason is given)",
    "TIMEOUT": "the cell ran out of its time budget",
    "FAILED": "the cell raised an error (the reason is given)",
    "LOST": "the process running the cell died",
}


def term(key: str, text: str | None = None) -> Span:
    """``text`` (default: the term's name) linked to its definition."""
    return link(text or TERMS[key][0], f"term-{key}")


__all__ = ["TERMS", "VERDICTS", "term"]
