"""The numbered results of the two papers, with a one-line description checked against the
text — the rows of ``docs/traceability.md`` and the names annotations use.

Hahn (2020) main text §5–6 (Theorem 1 … Theorem 6, equations (4)–(12)), supplement S1
(Theorem 1 … Corollary 24, equations (1)–(33)) and S2 (equations (34), (35)); Yang, Strobl,
Chiang, Angluin §3–5 (Definition 1 … Theorem 26). A result's ``name`` is what code, tests and
notebooks write in an annotation (:func:`attncert.paper.implements`): ``"Hahn Theorem 1"``,
``"Hahn eq. (8)"``, ``"Hahn S1 Lemma 15"``, ``"Hahn S1 eq. (27)"``, ``"Hahn S2 eq. (35)"``,
``"Yang Theorem 26"``; its ``label`` is what a proof manifest's ``exhibits.results`` lists
(``"S1 Lemma 23"``, ``"Theorem 26"``) next to ``exhibits.paper`` (``"Hahn 2020"``,
``"Yang 2024"``). A result with no code and test carries a reasoned ``not_applicable``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAPERS", "PARTS", "RESULTS", "Part", "Result", "resolve", "result"]

HAHN, YANG = "Hahn 2020", "Yang 2024"
PAPERS = {"Hahn": HAHN, "Yang": YANG}


@dataclass(frozen=True)
class Part:
    key: str
    title: str
    paper: str


PARTS = (
    Part("hahn-s5", "Hahn 2020, §5 Results for hard attention", HAHN),
    Part("hahn-s6", "Hahn 2020, §6 Results for soft attention", HAHN),
    Part("hahn-S1", "Hahn 2020 supplement, S1 Results for hard attention (formal proof)", HAHN),
    Part("hahn-S2", "Hahn 2020 supplement, S2 Missing detail in the soft attention proof", HAHN),
    Part("yang-s3", "Yang, Strobl, Chiang, Angluin, §3 Preliminaries", YANG),
    Part("yang-s4", "Yang, Strobl, Chiang, Angluin, §4 Soft attention, LTL and counting", YANG),
    Part("yang-s5", "Yang, Strobl, Chiang, Angluin, §5 Uniform–tieless attention", YANG),
)
_PART = {p.key: p for p in PARTS}


@dataclass(frozen=True)
class Result:
    part: Part
    label: str  # as in a manifest: "Theorem 1", "S1 Lemma 15", "eq. (8)", "S2 eq. (35)"
    title: str
    not_applicable: str = ""  # why code + test does not apply (empty: they must exist)

    @property
    def name(self) -> str:
        """The annotation name: "Hahn S1 Lemma 15", "Yang Theorem 26"."""
        return f"{self.part.paper.split()[0]} {self.label}"


def _r(part: str, label: str, title: str, na: str = "") -> Result:
    return Result(_PART[part], label, title, na)


_S1_EQ = {
    1: "Definition 2: a layer-0 activation as a function of ≤ c embeddings",
    2: "Lemma 4's hypothesis: ≥ Cn free inputs",
    3: "Lemma 4's conclusion: ≥ C′n free inputs",
    4: "Definition 5: (1 − 2η)(1 − (1+δ)q) = C′/C",
    5: "Lemma 6: ≥ (1 − η)Cn free after Stage 1",
    6: "|V_ρ(i)| ≤ 2^c values of a layer-0 activation",
    7: "Definition 7: the maximum attention value A_{((h,i),z),j,ρ}",
    8: "Definition 7: positions ranked downwards by A",
    9: "Definition 7: the indices bringing a new free input",
    10: "Lemma 9: an unsatisfied tuple's sequence has length ≥ k",
    11: "Lemma 15: the pigeonhole value q achieves A for ≥ kH tuples",
    12: "Lemma 17.1: ≥ (1 − 2η)Cn free after Stage 2",
    13: "Lemma 17: at most 2^c Hn/(kH) = 2^c n/k iterations",
    14: "Lemma 17: (1 − η)Cn − cU ≥ ((1 − η)C − 2^c c/k)n",
    15: "Lemma 17: 2^c c/k ≤ ηC gives ≥ (1 − 2η)Cn",
    16: "Definition 20: the sequence has length ≥ k (Lemma 9)",
    17: "Definition 20: the value maximizing the attention weight",
    18: "Lemma 21: P(X₀) ≤ exp(−δ²q(1 − 2η)Cn/3)",
    19: "Lemma 22: P(X) ≤ (1 − (q/2)^c)^{k/((1/η)c²/C)}",
    20: "Lemma 22: the event Y^t",
    21: "Lemma 22: X = ∩_t Y^t",
    22: "Lemma 22: P(Y) ≤ 1 − (q/2)^c ∈ (0, 1)",
    23: "Lemma 22: c · (1/η)c/C = (1/η)c²/C dependencies",
    24: "Lemma 22: each free input feeds ≤ (1/η)c/C layer-0 heads",
    25: "Lemma 22: ≥ k/((1/η)c²/C) independent events",
    26: "Lemma 22: X ⊆ ∩_s Y^{t_s}",
    27: "Lemma 22: P(X) ≤ Π P(Y^{t_s}) ≤ (1 − (q/2)^c)^{k/((1/η)c²/C)}",
    28: "Lemma 23: the events to avoid",
    29: "Lemma 23: X is independent of its non-neighbours",
    30: "Lemma 23: ≤ f neighbours (Corollary 18)",
    31: "Lemma 23: LLL condition P(X) ≤ A(1 − B)(1 − A)^f",
    32: "Lemma 23: LLL condition P(X₀) ≤ B(1 − A)^{2^c Hn}",
    33: "Lemma 23: D ≤ A^{1/k}(1 − B)^{1/k}(1 − A)^{f/k}",
}


def _results() -> tuple[Result, ...]:
    out = [
        _r(
            "hahn-s5",
            "Theorem 1",
            "hard attention: a restriction with ≥ Cn free inputs under which the output depends on ≤ c inputs",
        ),
        _r("hahn-s5", "Corollary 2", "hard-attention transformers cannot model PARITY or 2DYCK"),
        _r(
            "hahn-s5",
            "Definition 3",
            "c-transformer: layer-0 activations depend on ≤ c input positions",
        ),
        _r(
            "hahn-s5",
            "Lemma 4",
            "Depth Reduction Lemma: a refinement keeping ≥ C′n free turns a c-transformer with L layers into a c(2^c kH + 1)-transformer with L − 1",
        ),
        _r(
            "hahn-s5",
            "eq. (4)",
            "a layer-0 activation as a function of the embeddings at ≤ c positions",
        ),
        _r("hahn-s5", "eq. (5)", "Lemma 4's hypothesis: ≥ Cn free inputs"),
        _r("hahn-s5", "eq. (6)", "Lemma 4's conclusion: ≥ C′n free inputs"),
        _r("hahn-s5", "eq. (7)", "maximum attention value over inputs compatible with ρ^(1)"),
        _r("hahn-s5", "eq. (8)", "Chernoff bound P(X₀) ≤ exp(−δ²q(1 − 2η)Cn/3)"),
        _r("hahn-s5", "eq. (9)", "P(X_{i,h}^(z)) ≤ (1 − (q/2)^c)^{k/((1/η)c²/C)}"),
        _r("hahn-s5", "eq. (10)", "LLL condition P(X_{i,h}^(z)) ≤ A(1 − B)(1 − A)^f"),
        _r("hahn-s5", "eq. (11)", "LLL condition P(X₀) ≤ B(1 − A)^{2^c Hn}"),
        _r("hahn-s5", "eq. (12)", "D ≤ A^{1/k}(1 − B)^{1/k}(1 − A)^{f/k}, sufficient for (10)"),
        _r(
            "hahn-s6",
            "Lemma 5",
            "soft attention: exchanging one input symbol changes y_n^(L) by O(1/n)",
        ),
        _r(
            "hahn-s6",
            "Theorem 6",
            "soft attention: next-symbol cross-entropy on PARITY tends to chance, on 2DYCK stays ε above optimal",
        ),
        _r(
            "hahn-S1",
            "S1 Theorem 1",
            "main result (formal): ≥ Cn free inputs, output depends on ≤ c inputs",
        ),
        _r("hahn-S1", "S1 Definition 2", "c-transformer (formal)"),
        _r("hahn-S1", "S1 Definition 3", "ρ′ ≽ ρ: ρ′ fixes every input ρ fixes"),
        _r("hahn-S1", "S1 Lemma 4", "Depth Reduction Lemma (formal)"),
        _r("hahn-S1", "S1 Definition 5", "choice of η, q, δ with (1 − 2η)(1 − (1+δ)q) = C′/C"),
        _r(
            "hahn-S1",
            "S1 Lemma 6",
            "Stage 1: free inputs feed ≤ (1/η)c/C layer-0 heads, ≥ (1 − η)Cn stay free",
        ),
        _r(
            "hahn-S1",
            "S1 Definition 7",
            "maximum attention value A, the ranking and the sequence of positions with new inputs",
        ),
        _r(
            "hahn-S1",
            "S1 Definition 8",
            "(k,ρ)-satisfied: the tuple's value depends on ≤ ck inputs",
        ),
        _r("hahn-S1", "S1 Lemma 9", "an unsatisfied tuple's sequence has length ≥ k"),
        _r("hahn-S1", "S1 Lemma 10", "satisfaction survives refinement"),
        _r("hahn-S1", "S1 Definition 11", "(k,ρ)-dependence of an unsatisfied tuple on an input"),
        _r(
            "hahn-S1",
            "S1 Definition 12",
            "(k,ρ)-dependence of an unsatisfied tuple on a layer-0 head",
        ),
        _r("hahn-S1", "S1 Lemma 13", "an unsatisfied tuple (k,ρ)-depends on ≤ ck inputs"),
        _r(
            "hahn-S1",
            "S1 Definition 14",
            "(k,ρ)-neighbours: unsatisfied tuples depending on a common input",
        ),
        _r(
            "hahn-S1",
            "S1 Lemma 15",
            "a layer-0 head with > 2^c kH depending unsatisfied tuples: fixing ≤ c inputs satisfies ≥ kH of them",
        ),
        _r("hahn-S1", "S1 Definition 16", "Stage 2's sequence of restrictions σ₁ ≼ σ₂ ≼ …"),
        _r(
            "hahn-S1",
            "S1 Lemma 17",
            "Stage 2 terminates with ≥ (1 − 2η)Cn free and ≤ 2^c kH depending tuples per head",
        ),
        _r(
            "hahn-S1",
            "S1 Corollary 18",
            "Stage 2: ≥ (1 − 2η)Cn free, ≤ f unsatisfied neighbours per unsatisfied tuple",
        ),
        _r(
            "hahn-S1",
            "S1 Definition 19",
            "Stage 3's random restriction: fix each free input w.p. q, to 0 or 1 w.p. q/2",
        ),
        _r("hahn-S1", "S1 Definition 20", "the events X_{i,h,k}^(z) and X_{0,k}"),
        _r("hahn-S1", "S1 Lemma 21", "X₀ is unlikely (Chernoff)"),
        _r("hahn-S1", "S1 Lemma 22", "X_{i,h,k}^(z) is unlikely"),
        _r(
            "hahn-S1",
            "S1 Lemma 23",
            "Lovász Local Lemma: every event avoided with positive probability",
        ),
        _r("hahn-S1", "S1 Corollary 24", "after Stage 3, ≥ C′n inputs free"),
    ]
    out += [_r("hahn-S1", f"S1 eq. ({i})", t) for i, t in _S1_EQ.items()]
    out += [
        _r("hahn-S2", "S2 eq. (34)", "Lemma 5's step as published: ‖b − b′‖ ≤ Σ_w â_w‖y_w − y′_w‖"),
        _r(
            "hahn-S2",
            "S2 eq. (35)",
            "the corrected step with the missing term Σ_w |â_w − â′_w|‖y′_w‖",
        ),
        _r(
            "yang-s3",
            "Definition 1",
            "self-attention: scores from W_Q, W_K, a weighting function, values from W_V",
        ),
        _r("yang-s3", "Definition 2", "leftmost, rightmost and average hardmax"),
        _r("yang-s3", "Definition 3", "temperature-dependent softmax softmax(β·s)"),
        _r(
            "yang-s3",
            "Definition 4",
            "transformer classes by weighting function (softmax, unique-hard, average-hard)",
        ),
        _r("yang-s3", "Definition 5", "tieless scores and their gap"),
        _r("yang-s3", "Lemma 6", "softmax vs. hardmax under a score gap: the error bound"),
        _r("yang-s3", "Lemma 7", "table lookup by softmax: the error bound"),
        _r("yang-s3", "Lemma 8", "tie-breaking terms make the intended maximum unique"),
        _r("yang-s3", "Lemma 9", "a ReLU FFN rounds approximate Booleans to exact ones"),
        _r("yang-s4", "Definition 10", "TL[◁, ▷]: previous and next"),
        _r(
            "yang-s4",
            "Proposition 11",
            "masked uniform attention marks the first (future-masked) and last (past-masked) position",
        ),
        _r(
            "yang-s4",
            "Theorem 12",
            "TL[◁, ▷] simulated by softmax attention (temperature or unbounded PEs)",
        ),
        _r("yang-s4", "Theorem 13", "TL[◁] simulated with future masking"),
        _r("yang-s4", "Definition 14", "TL[S, U]: since and until"),
        _r("yang-s4", "Theorem 15", "TL[S, U] simulated by softmax attention"),
        _r("yang-s4", "Theorem 16", "TL[S] simulated with future masking, independently of n"),
        _r(
            "yang-s4",
            "Corollary 17",
            "LTL = TL[◁, ▷, S, U] (star-free languages) simulated by softmax attention",
        ),
        _r("yang-s4", "Corollary 18", "the past fragment of LTL simulated with future masking"),
        _r(
            "yang-s4",
            "Definition 19",
            "TL[#]: counting terms, linear comparisons and numerical predicates",
        ),
        _r("yang-s4", "Theorem 20", "TL[#] simulated by softmax attention"),
        _r("yang-s4", "Theorem 21", "TL[#] simulated with future masking"),
        _r("yang-s4", "Corollary 22", "K_t[#] (all of the above) simulated by softmax attention"),
        _r("yang-s4", "Corollary 23", "the past fragment of K_t[#] simulated with future masking"),
        _r(
            "yang-s5",
            "Lemma 24",
            "every uniform–tieless average-hard transformer has a positive gap function",
        ),
        _r(
            "yang-s5",
            "Lemma 25",
            "the error one layer adds when hardmax becomes temperature softmax",
        ),
        _r(
            "yang-s5",
            "Theorem 26",
            "uniform–tieless average-hard transformers simulated by temperature softmax",
        ),
    ]
    return tuple(out)


RESULTS: tuple[Result, ...] = _results()
_BY_NAME = {r.name: r for r in RESULTS}


def result(name: str) -> Result:
    """The result with this annotation name (KeyError if there is none)."""
    return _BY_NAME[name]


def resolve(paper: str, label: str) -> Result | None:
    """The result a manifest means by (``paper``, ``label``), or None if the paper has no such
    result. Hahn labels without "S1 " that exist only in the supplement (e.g. "Definition 5")
    resolve to S1; "S2" alone means the corrected step S2 eq. (35)."""
    short = next((k for k, v in PAPERS.items() if v == paper), None)
    if short is None:
        return None
    hit = _BY_NAME.get(f"{short} {label}")
    if hit is None and short == "Hahn":
        hit = _BY_NAME.get(f"Hahn S1 {label}") or (
            _BY_NAME["Hahn S2 eq. (35)"] if label == "S2" else None
        )
    return hit
