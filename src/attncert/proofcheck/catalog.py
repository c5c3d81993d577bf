"""The repository's ``proofs/`` tree as data: which artifacts exist, of which kind, for which
model/formula and parameters, and which numbered result each exhibits.

:func:`attncert.proofcheck.regenerate` turns each :class:`ArtifactSpec` into a directory
``proofs/<path>/`` with its files and ``manifest.json``. Kinds of other subpackages (Lemma 5
measurements, z3 agreement proofs) add entries here once their kind module exists; an entry
whose kind is not registered is skipped by regeneration (and reported).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from attncert.proofcheck.manifest import Exhibits

__all__ = ["CATALOG", "ArtifactSpec"]


@dataclass(frozen=True)
class ArtifactSpec:
    """One artifact: ``path`` under the proofs root, its ``kind``, what it ``exhibits``, the
    ``model`` (``zoo:NAME`` or ``{"random": {...random_model kwargs}}``, written as
    ``model.json``) or ``formula``, and the ``parameters`` of its generation."""

    path: str
    kind: str
    exhibits: Exhibits
    parameters: Mapping[str, Any] = field(default_factory=dict)
    model: Any = None
    formula: str | None = None


_T1 = ("Theorem 1", "Corollary 2")
#: (ab)⁺ in LTL (Yang et al. Corollary 17): ends in b, no two neighbours equal (▷), the first
#: position (¬◁⊤) holds a and is followed by a b after a's only (U).
ALTERNATING_AB = "Q_b & !(true S ((Q_a & next Q_a) | (Q_b & next Q_b))) & (true S (!prev true & Q_a & (Q_a U Q_b)))"
_HAHN = "Hahn 2020"
_NGRAM = "prev prev Q_a & prev Q_b & Q_c"
_FLIP_FLOP = (
    "!(true S ((Q_x & !((Q_x | Q_y) S Q_0)) | (Q_y & !((Q_x | Q_y) S Q_1)))"
    " | (Q_x & !((Q_x | Q_y) S Q_0)) | (Q_y & !((Q_x | Q_y) S Q_1)))"
)
_PARITY_NOPRED = "!(#<[prev Q_1] = #>[Q_1] | true S (#<[prev Q_1] = #>[Q_1]))"
_DYCK1 = "!(true S (#<[Q_)] > #<[Q_(]) | #<[Q_)] > #<[Q_(]) & #<[Q_(] = #<[Q_)]"
#: (result, name, description, formula, alphabet, regime) of the all-length artifacts (issue
#: 23): every result of Yang et al. §4 in every regime the compiler offers for it.
_ALL_LENGTHS = (
    ("Proposition 11", "first", "Proposition 11(a), 'first',", "first", "ab", "proposition11"),
    ("Proposition 11", "last", "Proposition 11(b), 'last',", "last", "ab", "proposition11"),
    *(
        ("Theorem 12", "prev-next", "◁Q_1 ∧ ▷Q_0 (TL[◁,▷])", "prev Q_1 & next Q_0", "01", r)
        for r in ("temperature", "unbounded")
    ),
    *(
        ("Theorem 13", "trigram", "the trigram detector ◁◁Q_a ∧ ◁Q_b ∧ Q_c", _NGRAM, "abc", r)
        for r in ("future-masked", "future-masked-unbounded")
    ),
    *(
        (
            "Theorem 15",
            "since-until",
            "Q_a S Q_b ∨ Q_b U Q_c (TL[S,U])",
            "Q_a S Q_b | Q_b U Q_c",
            "abc",
            r,
        )
        for r in ("temperature", "unbounded")
    ),
    *(
        ("Theorem 16", "since", "Q_a S Q_b", "Q_a S Q_b", "abc", r)
        for r in ("future-masked", "future-masked-unbounded")
    ),
    *(
        ("Corollary 17", "alternating-ab", "(ab)⁺ in LTL", ALTERNATING_AB, "ab", r)
        for r in ("temperature", "unbounded")
    ),
    *(
        ("Corollary 18", "flip-flop", "the flip-flop language (past LTL)", _FLIP_FLOP, "01xy", r)
        for r in ("future-masked", "future-masked-unbounded")
    ),
    *(
        ("Theorem 20", "parity", "PARITY as ODD(#←[Q_1])", "ODD(#<[Q_1])", "01", r)
        for r in ("temperature", "unbounded")
    ),
    (
        "Theorem 21",
        "majority",
        "MAJORITY #←[Q_1] > #←[Q_0]",
        "#<[Q_1] > #<[Q_0]",
        "01",
        "future-masked",
    ),
    *(
        (
            "Corollary 22",
            "parity-nopred",
            "PARITY without numerical predicates (§4.5)",
            _PARITY_NOPRED,
            "01",
            r,
        )
        for r in ("temperature", "unbounded")
    ),
    ("Corollary 23", "dyck1", "Dyck-1 via Appendix E's counts", _DYCK1, "()", "future-masked"),
)
_YANG = "Yang 2024"

CATALOG: tuple[ArtifactSpec, ...] = (
    ArtifactSpec(
        "hahn2020/theorem1/parity-random-L2-H2-d16-n256",
        "hard_certificate",
        Exhibits(
            _HAHN,
            _T1,
            "Under a restriction leaving most inputs free, the decision of the bundled random "
            "2-layer 2-head unique-hard model at n = 256 depends on a bounded set of inputs, so "
            "it errs on PARITY (accuracy exactly 1/2 on the compatible strings).",
        ),
        {"n": 256, "language": "parity", "method": "maxsat", "seed": 0},
        model="zoo:random-L2-H2-d16",
    ),
    ArtifactSpec(
        "hahn2020/theorem1/dyck1-random-L2-H2-d16-n256",
        "hard_certificate",
        Exhibits(
            _HAHN,
            _T1,
            "Corollary 2 for Dyck-1: with the first and last 0.2n positions fixed to '(' and "
            "')', a random 2-layer model over '()' at n = 256 gives the same answer to a "
            "balanced and an unbalanced completion.",
        ),
        {"n": 256, "language": "dyck1", "method": "maxsat", "seed": 0},
        model={
            "random": {
                "layers": 2,
                "heads": 2,
                "d": 16,
                "alphabet": "()",
                "seed": 0,
                "name": "random-L2-H2-d16-dyck1-s0",
            }
        },
    ),
    ArtifactSpec(
        "hahn2020/theorem1/ones_star-n64",
        "hard_certificate",
        Exhibits(
            _HAHN,
            ("Theorem 1",),
            "Theorem 1 applies to every hard-attention model, including one that recognizes 1*: "
            "the certificate exists and no separating pair does — the model is right on every "
            "compatible string.",
        ),
        {"n": 64, "language": "ones_star", "method": "maxsat", "seed": 0},
        model="zoo:ones_star",
    ),
    ArtifactSpec(
        "hahn2020/theorem1/anbn-n64",
        "hard_certificate",
        Exhibits(
            _HAHN,
            ("Theorem 1",),
            "Theorem 1 on the two-layer aⁿbⁿ model: a certificate with no separating pair, "
            "consistent with the model recognizing aⁿbⁿ.",
        ),
        {"n": 64, "language": "anbn", "method": "maxsat", "seed": 0},
        model="zoo:anbn",
    ),
    ArtifactSpec(
        "hahn2020/lemma4-lll/c1-H2-C1-Cp1_2",
        "lll_report",
        Exhibits(
            _HAHN,
            (
                "Lemma 4",
                "eq. (6)",
                "eq. (8)",
                "eq. (9)",
                "eq. (10)",
                "eq. (11)",
                "eq. (12)",
                "S1 Definition 5",
                "S1 Lemma 17",
                "S1 Lemma 21",
                "S1 Lemma 22",
                "S1 Lemma 23",
                "S1 Corollary 24",
            ),
            "Every displayed step of the Depth Reduction Lemma's proof — main text (4)–(12), "
            "supplement S1 (1)–(33) — as a claim checked at c = 1, H = 2, C = 1, C′ = 1/2 "
            "(Definition 5's default η, q, δ) and in general, with the smallest k for (12) and "
            "N for (11); the steps that fail as printed are reported with verified "
            "counterexamples.",
        ),
        {"c": 1, "H": 2, "C": "1", "C_prime": "1/2"},
    ),
    ArtifactSpec(
        "hahn2020/lemma4-lll/constants-L2-H2-C9_10",
        "constants_report",
        Exhibits(
            _HAHN,
            ("Theorem 1", "Lemma 4"),
            "The constants of Theorem 1's proof for a 2-layer, 2-head model with final free "
            "fraction 9/10: k, N and c per layer, and the input length from which the argument "
            "applies.",
        ),
        {"layers": 2, "heads": 2, "C": "9/10", "schedule": "geometric", "version": "supplement"},
    ),
    ArtifactSpec(
        "hahn2020/lemma5/soft_parity",
        "lemma5",
        Exhibits(
            _HAHN,
            ("Lemma 5", "S2 eq. (35)"),
            "On the exact soft PARITY transformer, changing one input symbol changes the "
            "readout logit by at most the corrected Lemma 5 bound (computed from the weights), "
            "which decays like 1/n; the measured change decays like 1/n².",
        ),
        {"exhaustive_n": [4, 6, 8, 10], "search_n": [64, 256, 1024], "seed": 0},
        model="zoo:soft_parity",
    ),
    ArtifactSpec(
        "hahn2020/lemma5/soft_parity-uniform",
        "uniform_sensitivity",
        Exhibits(
            _HAHN,
            ("Lemma 5", "Theorem 6"),
            "On the exact soft PARITY transformer, for every n ≥ 64 at once: changing one input "
            "symbol moves the accept logit by at most K/n with K ≈ 4.09 (Lemma 5's published "
            "constant for the same weights is ≈ 9.4·10⁷), so its expected PARITY cross-entropy "
            "is at least log(1 + e^{−K/(2n)}) at every n ≥ 64 and tends to log 2 (Theorem 6).",
        ),
        {"n0": 64, "floor_at": [64, 256, 1024, 4096]},
        model="zoo:soft_parity",
    ),
    ArtifactSpec(
        "hahn2020/lemma5/soft_parity_lm-uniform",
        "uniform_sensitivity",
        Exhibits(
            _HAHN,
            ("Lemma 5", "Theorem 6"),
            "On the soft PARITY language-model transformer, for every n ≥ 64: B(n) ≤ K/n with "
            "K ≈ 3·10¹⁶ (published constant ≈ 2·10⁷⁴⁶) — the O(1/n) of Lemma 5 with its "
            "constant, which is below the logit's range only from n ≈ 1.8·10¹⁴ on; until then "
            "Theorem 6's floor is the range cap's.",
        ),
        {"n0": 64, "floor_at": [64, 1024]},
        model="zoo:soft_parity_lm",
    ),
    ArtifactSpec(
        "hahn2020/lemma5/soft_dyck2_lm-uniform",
        "uniform_sensitivity",
        Exhibits(
            _HAHN,
            ("Lemma 5",),
            "On the soft 2-Dyck language-model transformer, for every n ≥ 64: one changed "
            "bracket moves the accept logit by at most K/n with K ≈ 2.5·10⁵ (published "
            "constant ≈ 6·10¹⁷⁰); K/n is below the logit's range over every length from "
            "n = 405 on.",
        ),
        {"n0": 64},
        model="zoo:soft_dyck2_lm",
    ),
    ArtifactSpec(
        "hahn2020/theorem6/soft_parity_lm-n256",
        "soft_certificate",
        Exhibits(
            _HAHN,
            ("Lemma 5", "Theorem 6"),
            "On the soft PARITY language-model transformer at n = 256: a certified bound B(n) "
            "on how far one changed input moves the accept logit, over all 2^256 strings and "
            "every position (here the logit's certified range over all strings is below the "
            "one-position propagation, so B(n) is that range: a cap, not a 1/n rate), and "
            "Theorem 6's consequence for this model — a certified floor on "
            "its expected PARITY cross-entropy; with a restriction whose decision is certified "
            "constant on every completion and two completions of different parity.",
        ),
        {"n": 256, "restriction": True, "time_limit": 30, "seed": 0},
        model="zoo:soft_parity_lm",
    ),
    ArtifactSpec(
        "yang2024/theorem12/previous-symbol-temperature",
        "z3_agreement",
        Exhibits(
            _YANG,
            ("Theorem 12", "Lemma 9"),
            "prev Q_1 (TL[◁]) compiled with bounded positional encodings and temperature "
            "scaling computes the formula at every position of every string of length ≤ 12.",
        ),
        {"regime": "temperature", "alphabet": "01", "max_len": 12, "cross_check": 8},
        formula="prev Q_1",
    ),
    ArtifactSpec(
        "yang2024/theorem15/since-temperature",
        "z3_agreement",
        Exhibits(
            _YANG,
            ("Theorem 15", "Corollary 17"),
            "Q_a S Q_b (TL[S]) compiled with temperature scaling agrees with the formula at "
            "every position of every string over abc of length ≤ 10.",
        ),
        {"regime": "temperature", "alphabet": "abc", "max_len": 10, "cross_check": 5},
        formula="Q_a S Q_b",
    ),
    ArtifactSpec(
        "yang2024/theorem20/parity-counting-temperature",
        "z3_agreement",
        Exhibits(
            _YANG,
            ("Theorem 20", "Corollary 22"),
            "PARITY as ODD(#<[Q_1]) (counting with a numerical predicate) compiled with "
            "temperature scaling agrees with the formula on every string of length ≤ 12.",
        ),
        {"regime": "temperature", "alphabet": "01", "max_len": 12, "cross_check": 8},
        formula="ODD(#<[Q_1])",
    ),
    ArtifactSpec(
        "yang2024/proposition11/first-future-masked",
        "z3_agreement",
        Exhibits(
            _YANG,
            ("Proposition 11",),
            "Proposition 11(a): uniform future-masked softmax attention on the positional "
            "encoding (−1)^i, rounded by a ReLU FFN, marks exactly the first position of every "
            "string over ab of length ≤ 12.",
        ),
        {"construction": "proposition11", "alphabet": "ab", "max_len": 12, "cross_check": 6},
        formula="first",
    ),
    ArtifactSpec(
        "yang2024/proposition11/last-past-masked",
        "z3_agreement",
        Exhibits(
            _YANG,
            ("Proposition 11",),
            "Proposition 11(b): uniform past-masked attention on (−1)^i marks exactly the last "
            "position of every string over ab of length ≤ 12.",
        ),
        {"construction": "proposition11", "alphabet": "ab", "max_len": 12, "cross_check": 6},
        formula="last",
    ),
    ArtifactSpec(
        "yang2024/corollary17/alternating-ab-temperature",
        "z3_agreement",
        Exhibits(
            _YANG,
            ("Corollary 17",),
            "The star-free language (ab)⁺, written in LTL with ◁, ▷, S and U, compiled with "
            "temperature scaling: the soft transformer computes the formula at every position "
            "of every string over ab of length ≤ 10.",
        ),
        {"regime": "temperature", "alphabet": "ab", "max_len": 10, "cross_check": 6},
        formula=ALTERNATING_AB,
    ),
    ArtifactSpec(
        "yang2024/theorem26/dyck2-program",
        "tieless_simulation",
        Exhibits(
            _YANG,
            ("Theorem 26",),
            "The softmax transformer with β(N) = 20.59375·log N (N = n + 1 tokens with BOS) "
            "decides Dyck-2 exactly on all inputs of length n ≤ 4, because the Appendix-E "
            "average-hard program is uniform–tieless with gap 1 and the certified error stays "
            "below the margin.",
        ),
        {"language": "dyck2", "max_len": 4, "soft_model": "zoo:dyck2_program_soft"},
        model="zoo:dyck2_program",
    ),
    ArtifactSpec(
        "yang2024/theorem26/dyck2-program-all-lengths",
        "tieless_simulation",
        Exhibits(
            _YANG,
            ("Theorem 26", "Lemma 25"),
            "The softmax transformer with β(N) = 20.59375·log N (N = n + 1 tokens with BOS) "
            "keeps the Appendix-E program's decision at every length: exactly on all inputs "
            "of length n ≤ 4, and for every N ≥ N0 tokens the kernel's layer-by-layer error "
            "majorants C·N^a stay below the margin — given the program's hypotheses (gap ≥ 1, "
            "activations ≤ N³, margin ½), which are checked exactly only for n ≤ 4 and rest "
            "on the construction's proof beyond.",
        ),
        {
            "language": "dyck2",
            "max_len": 4,
            "soft_model": "zoo:dyck2_program_soft",
            "all_lengths": True,
        },
        model="zoo:dyck2_program",
    ),
    *(
        ArtifactSpec(
            f"yang2024/{result.lower().replace(' ', '')}/{name}"
            + ("" if regime == "proposition11" else f"-{regime}")
            + "-all-lengths",
            "all_lengths",
            Exhibits(
                _YANG,
                (result,),
                f"{text} compiled "
                + (f"in the {regime} regime" if regime != "proposition11" else "as in the proof")
                + " computes the formula at every position of every string of every length "
                "n ≥ 1: closed-form error bounds checked by the kernel for all n ≥ N0, z3 below.",
            ),
            {"alphabet": alphabet, "cross_check": 4}
            | (
                {"construction": "proposition11"}
                if regime == "proposition11"
                else {"regime": regime}
            ),
            formula=formula,
        )
        for result, name, text, formula, alphabet, regime in _ALL_LENGTHS
    ),
)
