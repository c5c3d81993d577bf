"""The displayed equations and quoted steps of the proofs the symbolic checker follows.

Hahn (2020) main text, Lemma 4 (the Depth Reduction Lemma): equations (4)–(12) of §5/§5.1,
the unnumbered displays after (12) and the quantitative sentences of Stages 1–3; the
formal supplement S1: equations (1)–(33) (Lemmas 6, 9, 15, 17, Corollary 18, Lemmas 21–23,
Corollary 24) and the unnumbered displays of Lemma 23 and Corollary 24.

Each :class:`Display` is transcribed *as printed* (S1's extracted text is OCR-garbled; where
a symbol had to be reconstructed, ``note`` says so) with its ``role``:

- ``claim``: it asserts something; at least one :class:`~attncert.symbolic.claim_types.Claim`
  of :data:`attncert.symbolic.claims.CLAIMS` checks it (``tests/test_symbolic_displays.py``);
- ``definition``: it defines a quantity or an event (nothing to prove; instantiated on a
  concrete model by :mod:`attncert.hard.s1_claims`);
- ``hypothesis``: an assumption of the lemma being proved.
"""

from __future__ import annotations

from dataclasses import dataclass

__implements__ = (
    "Hahn eq. (4)",
    "Hahn eq. (5)",
    "Hahn eq. (6)",
    "Hahn eq. (7)",
    "Hahn eq. (8)",
    "Hahn eq. (9)",
    "Hahn eq. (10)",
    "Hahn eq. (11)",
    "Hahn eq. (12)",
    "Hahn S1 eq. (1)",
    "Hahn S1 eq. (2)",
    "Hahn S1 eq. (3)",
    "Hahn S1 eq. (4)",
    "Hahn S1 eq. (5)",
    "Hahn S1 eq. (6)",
    "Hahn S1 eq. (7)",
    "Hahn S1 eq. (8)",
    "Hahn S1 eq. (9)",
    "Hahn S1 eq. (10)",
    "Hahn S1 eq. (11)",
    "Hahn S1 eq. (12)",
    "Hahn S1 eq. (13)",
    "Hahn S1 eq. (14)",
    "Hahn S1 eq. (15)",
    "Hahn S1 eq. (16)",
    "Hahn S1 eq. (17)",
    "Hahn S1 eq. (18)",
    "Hahn S1 eq. (19)",
    "Hahn S1 eq. (20)",
    "Hahn S1 eq. (21)",
    "Hahn S1 eq. (22)",
    "Hahn S1 eq. (23)",
    "Hahn S1 eq. (24)",
    "Hahn S1 eq. (25)",
    "Hahn S1 eq. (26)",
    "Hahn S1 eq. (27)",
    "Hahn S1 eq. (28)",
    "Hahn S1 eq. (29)",
    "Hahn S1 eq. (30)",
    "Hahn S1 eq. (31)",
    "Hahn S1 eq. (32)",
    "Hahn S1 eq. (33)",
)

__all__ = ["DISPLAYS", "Display", "display"]

MAIN = "Hahn 2020 §5/§5.1"
SUPP = "Hahn 2020 supplement S1"


@dataclass(frozen=True)
class Display:
    """One displayed equation (or quoted quantitative sentence) of a printed proof."""

    label: str  # "(9)", "S1 (27)", "§5.1 Stage 2: choice of k", …
    document: str
    locus: str  # "Lemma 22", "Stage 2", …
    role: str  # "claim" | "definition" | "hypothesis"
    printed: str
    note: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "label": self.label,
            "document": self.document,
            "locus": self.locus,
            "role": self.role,
            "printed": self.printed,
            "note": self.note,
        }


def _d(label: str, doc: str, locus: str, role: str, printed: str, note: str = "") -> Display:
    return Display(label, doc, locus, role, printed, note)


_S = "claim"
_DEF = "definition"
_HYP = "hypothesis"

DISPLAYS: tuple[Display, ...] = (
    # ---------------------------------------------------------------- main text §5, §5.1
    _d(
        "(4)",
        MAIN,
        "Definition 3",
        _DEF,
        "y_j^(0) = f^inp_{n,j}((v_{i_1^{j,n}}, p_{i_1^{j,n}}), …, (v_{i_c^{j,n}}, p_{i_c^{j,n}}))",
    ),
    _d("(5)", MAIN, "Lemma 4", _HYP, "|{i ≤ n : ρ_n(i) = *}| ≥ Cn"),
    _d("(6)", MAIN, "Lemma 4", _S, "|{i ≤ n : ρ′_n(i) = *}| ≥ C′n"),
    _d(
        "§5.1 Stage 1",
        MAIN,
        "Stage 1",
        _S,
        "the number of pairs of input bits and depending layer-0 activations is > ηCn · (1/η)c/C = nc … So the number of input bits with > (1/η)c/C depending layer-0 heads is ≤ ηCn … still has at least (1 − η)Cn elements",
    ),
    _d(
        "§5.1 Stage 2: values",
        MAIN,
        "Stage 2",
        _S,
        "As y_i^(0) depends on ≤ c input bits, it can take on at most ≤ 2^c possible values",
    ),
    _d("(7)", MAIN, "Stage 2", _DEF, "max_{x_1…x_n : y_i^(0) = z} f^att_{1,h}(z, y_j^(0))"),
    _d(
        "§5.1 Stage 2: subsequence",
        MAIN,
        "Stage 2",
        _S,
        "we select a sequence 1 ≤ i_1 < … < i_k ≤ n such that (1) for each i_s there is at least one input x_q that only feeds into the activation at position j_{i_s} and no j_{i_s′} (s ≠ s′) … Such a subsequence exists unless n ≤ ck",
    ),
    _d(
        "§5.1 Stage 2: satisfied head",
        MAIN,
        "Stage 2",
        _S,
        "a satisfied head can only depend on c · (2^c k + 1) many input bits",
    ),
    _d(
        "§5.1 Stage 2: k-depends",
        MAIN,
        "Stage 2",
        _S,
        "a layer-1 head k-depends only on ≤ 2^c ck input variables",
    ),
    _d(
        "§5.1 Stage 2: pigeonhole",
        MAIN,
        "Stage 2",
        _S,
        "some layer-0 head has more than 2^c kH many k-depending unsatisfied layer-1 heads. By fixing ≤ c input bits and appealing to the Pigeonhole principle, we can fix this head to a value that achieves the maximum attention value for at least > kH many",
    ),
    _d(
        "§5.1 Stage 2: one step",
        MAIN,
        "Stage 2",
        _S,
        "{i ≤ n : ρ_n^(2)(i) = *} still has at least (1 − η)Cn − c elements",
    ),
    _d(
        "§5.1 Stage 2: iterations",
        MAIN,
        "Stage 2",
        _S,
        "This procedure can be iterated at most until each layer-1 head is satisfied, that is, at most 2^c Hn/(kH) = 2^c n/k times",
    ),
    _d(
        "§5.1 Stage 2: free bits",
        MAIN,
        "Stage 2",
        _S,
        "(1 − η)Cn − cU ≥ ((1 − η)C − 2^c c/k)n elements",
    ),
    _d(
        "§5.1 Stage 2: choice of k",
        MAIN,
        "Stage 2",
        _S,
        "By choosing k so large that 2^c c/k ≤ η, we find that {i ≤ n : ρ_n^(2)(i) = *} still has at least (1 − 2η)Cn many elements",
    ),
    _d(
        "§5.1 Stage 2: per bit",
        MAIN,
        "Stage 2",
        _S,
        "each input bit now has at most ≤ (2^c/η) kcH/C many k-depending unsatisfied layer-1 heads",
    ),
    _d(
        "§5.1 Stage 2: f",
        MAIN,
        "Stage 2",
        _S,
        "every unsatisfied layer-1 head has at most f ≤ (2^{2c}/η) c²k²H/C many unsatisfied k-neighbors",
    ),
    _d("(8)", MAIN, "Stage 3", _S, "P(X_0) ≤ exp(−δ²q(1 − 2η)Cn/3)"),
    _d("§5.1 Stage 3: P(Y)", MAIN, "Stage 3", _S, "We have P(Y_{i,h}^s) ≤ 1 − (q/2)^c ∈ (0, 1)"),
    _d(
        "§5.1 Stage 3: dependencies",
        MAIN,
        "Stage 3",
        _S,
        "Any Y_{i,h}^s can be statistically dependent on at most c · (1/η)c/C = (1/η)c²/C other events Y_{i,h}^{s′}, because each input bit has at most (1/η)c/C depending layer-0 heads",
    ),
    _d(
        "§5.1 Stage 3: independent events",
        MAIN,
        "Stage 3",
        _S,
        "Therefore, there is a set of ≥ k/((1/η)c²/C) independent events among these",
    ),
    _d(
        "§5.1 Stage 3: X ⊆ ∩Y",
        MAIN,
        "Stage 3",
        _S,
        "Note that X_{i,h}^(z) = ∩_t Y_{i,h}^t … Then X_{i,h}^(z) ⊆ ∩_{s=1}^{k/((1/η)c²/C)} Y_{i,h}^{t_s}",
    ),
    _d(
        "(9)",
        MAIN,
        "Stage 3",
        _S,
        "P(X_{i,h}^(z)) ≤ Π_{s=1}^{k/((1/η)c²/C)} P(Y_{i,h}^{t_s}) ≤ (1 − (q/2)^c)^{k/((1/η)c²/C)}",
    ),
    _d(
        "§5.1 Stage 3: independence",
        MAIN,
        "Stage 3",
        _S,
        "Each event X_{i,h}^(z) is statistically independent of the set {X_{(j,h′)}^(z′) : heads (j, h′) and (i, h) are not k-neighbors}. The complement of this set has cardinality ≤ f = (2^{2c}/η)c²k²H/C",
    ),
    _d("(10)", MAIN, "Stage 3", _S, "P(X_{i,h}^(z)) ≤ A(1 − B)(1 − A)^f"),
    _d("(11)", MAIN, "Stage 3", _S, "P(X_0) ≤ B(1 − A)^{2^c Hn}"),
    _d(
        "(12)",
        MAIN,
        "Stage 3",
        _S,
        "D ≤ A^{1/k}(1 − B)^{1/k}(1 − A)^{f/k}, where D = (1 − (q/2)^c)^{1/((1/η)c²/C)} ∈ (0, 1)",
    ),
    _d(
        "§5.1 [lim A]",
        MAIN,
        "Stage 3, after (12)",
        _S,
        "lim_{k→∞} A^{1/k} = lim_{k→∞} exp(−log(k²)/k) = 1",
    ),
    _d(
        "§5.1 [lim (1−A)]",
        MAIN,
        "Stage 3, after (12)",
        _S,
        "lim_{k→∞} (1 − A)^{f/k} equals lim_{k→∞} (1 − 1/k²)^{(2^{2c}/η)c²kH/C} = lim_{k→∞} (1 − E²/k²)^k = 1 for E := (2^{2c}/η)c²H/C",
    ),
    _d(
        "§5.1 [(11) per n]",
        MAIN,
        "Stage 3, after (12)",
        _S,
        "In order to also satisfy (11), we need exp(−δ²q(1 − 2η)C/3) ≤ B^{1/n}(1 − A)^{2^c H}, which holds for n, k large enough",
    ),
    _d(
        "§5.1 [Stage 3 free]",
        MAIN,
        "Stage 3",
        _S,
        "|{i ≤ n : ρ_n^(3)(i) = *}| ≥ (1 − 2η) · (1 − (1 + δ)q)Cn",
    ),
    _d(
        "§5.1 Stage 3: choice",
        MAIN,
        "Stage 3",
        _S,
        "choose η ∈ (0, ½) small, q ∈ (0, 1), and δ > 0 (such that (1 + δ)q ∈ (0, 1)) in such a way as to achieve (1 − 2η) · (1 − (1 + δ)q) = C′/C",
    ),
    _d(
        "§5.1 Stage 3: width",
        MAIN,
        "end of §5.1",
        _S,
        "each layer-1 activation y_j^(1) only depends on ≤ c · (2^c kH + 1) input bits: There are ≤ H · c · 2^c · k input bits that the H different attention heads k-depend on, plus a skip-connection from y_j^(0), which itself depends on ≤ c input bits",
    ),
    # ---------------------------------------------------------------- supplement S1
    _d(
        "S1 (1)",
        SUPP,
        "Definition 2",
        _DEF,
        "y_j^(0) = f^inp_{n,j}((v_{i_1}, p_{i_1}), …, (v_{i_c}, p_{i_c}))",
    ),
    _d("S1 (2)", SUPP, "Lemma 4", _HYP, "|{i ≤ n : ρ_n(i) = *}| ≥ Cn"),
    _d("S1 (3)", SUPP, "Lemma 4", _S, "|{i ≤ n : ρ′_n(i) = *}| ≥ C′n"),
    _d(
        "S1 (4)",
        SUPP,
        "Definition 5",
        _DEF,
        "(1 − 2η) · (1 − (1 + δ)q) = C′/C",
        "equation number reconstructed (OCR '©)')",
    ),
    _d(
        "S1 Definition 5: choice",
        SUPP,
        "Definition 5",
        _S,
        "A possible choice to satisfy this is (1 + δ)q = ½, 2η = 1 − 2C′/C",
    ),
    _d(
        "S1 Lemma 6 proof",
        SUPP,
        "Lemma 6",
        _S,
        "the number of pairs of input bits and depending layer-0 activations is > ηCn · (1/η)c/C = nc … So the number of input bits with > (1/η)c/C depending layer-0 heads is < ηCn",
    ),
    _d("S1 (5)", SUPP, "Lemma 6", _S, "For n > N, #{i ≤ n : ρ_n^(1)(i) = *} ≥ (1 − η)Cn"),
    _d("S1 (6)", SUPP, "before Definition 7", _S, "|V_ρ(i)| ≤ 2^c", "OCR '|Vo)l <2° (©6)'"),
    _d(
        "S1 (7)",
        SUPP,
        "Definition 7",
        _DEF,
        "A_{((h,i),z),j,ρ} = max_{x_1…x_n ∈ ρΣ*, y_i^(0) = z} f^att_{1,h}(z, y_j^(0))",
    ),
    _d(
        "S1 (8)",
        SUPP,
        "Definition 7",
        _DEF,
        "the positions ranked downwards by A: (j_1^{(h,i,z,ρ)}, …, j_n^{(h,i,z,ρ)})",
    ),
    _d(
        "S1 (9)",
        SUPP,
        "Definition 7",
        _DEF,
        "1 ≤ i_1^{(h,i,z,ρ)} < i_2 < … < i_L ≤ n: the indices j with a ρ-free input feeding j and no j′ < j",
    ),
    _d(
        "S1 (10)",
        SUPP,
        "Lemma 9",
        _S,
        "If ((h,i),z) is (k,ρ)-unsatisfied, then the sequence (i_s, s = 1, …, L) has length L at least ≥ k",
    ),
    _d(
        "S1 (11)",
        SUPP,
        "Lemma 15",
        _S,
        "There are > 2^c kH such tuples, but only 2^c possible values q′. So one value must occur > kH times … f^att_{1,h}(z, q) = A_{((h,i),z),j,ρ} for at least ≥ kH many of these tuples",
    ),
    _d(
        "S1 Lemma 15 proof",
        SUPP,
        "Lemma 15",
        _S,
        "j now blocks attention on any lower-ranked elements of the ranking. The higher-ranked elements of the ranking can only depend on a total of ≤ ck input bits",
    ),
    _d("S1 (12)", SUPP, "Lemma 17", _S, "#{i ≤ n : ρ′_n(i) = *} ≥ (1 − 2η)Cn"),
    _d("S1 (13)", SUPP, "Lemma 17", _S, "at most 2^c Hn/(kH) = 2^c n/k times"),
    _d(
        "S1 (14)",
        SUPP,
        "Lemma 17",
        _S,
        "#{i ≤ n : (σ_U)_n(i) = *} ≥ (1 − η)Cn − cU_n ≥ ((1 − η)C − 2^c c/k)n",
    ),
    _d(
        "S1 (15)",
        SUPP,
        "Lemma 17",
        _S,
        "By choosing k so large that 2^c c/k ≤ ηC, we find that #{i ≤ n : (σ_U)_n(i) = *} ≥ (1 − 2η)Cn",
        "'2^c c/k ≤ ηC' reconstructed from OCR '% <nC'",
    ),
    _d(
        "S1 Corollary 18 proof",
        SUPP,
        "Corollary 18",
        _S,
        "each input bit has at most ≤ kcH(2^c/η)/C many depending unsatisfied tuples … a tuple can depend on ≤ kc inputs by Lemma 13. Multiplying these two bounds gives ≤ (2^c/η)k²c²H/C",
        "f's constant reconstructed from OCR '2Tzcczsz/C'",
    ),
    _d(
        "S1 (16)",
        SUPP,
        "Definition 20",
        _S,
        "By Lemma 9, the sequence (y_{j_{i_s}}^(0) : s = 1, …, L) has length at least ≥ k",
    ),
    _d("S1 (17)", SUPP, "Definition 20", _DEF, "argmax_{q ∈ V_ρ(j)} f^att_{1,h}(z, q)"),
    _d("S1 (18)", SUPP, "Lemma 21", _S, "P(X_{0,k}) ≤ exp(−δ²q(1 − 2η)Cn/3)"),
    _d("S1 (19)", SUPP, "Lemma 22", _S, "P(X_{i,h,k}^(z)) ≤ (1 − (q/2)^c)^{k/((1/η)c²/C)}"),
    _d(
        "S1 (20)",
        SUPP,
        "Lemma 22",
        _DEF,
        "Y_{i,h,k}^t: the layer-0 activation y_{j_{i_t}}^(0) is not fixed by ρ^(3,k) to argmax_{q} f^att_{1,h}(z, q)",
    ),
    _d("S1 (21)", SUPP, "Lemma 22", _S, "X_{i,h,k}^(z) = ∩_{t=1}^k Y_{i,h,k}^t"),
    _d("S1 (22)", SUPP, "Lemma 22", _S, "P(Y_{i,h,k}^t) ≤ 1 − (q/2)^c ∈ (0, 1)"),
    _d("S1 (23)", SUPP, "Lemma 22", _S, "c · (1/η)c/C = (1/η)c²/C"),
    _d(
        "S1 (24)",
        SUPP,
        "Lemma 22",
        _S,
        "each ρ^(2,k)-free input bit serves as an input to at most (1/η)c/C layer-0 heads (Lemma 6)",
    ),
    _d(
        "S1 (25)",
        SUPP,
        "Lemma 22",
        _S,
        "Therefore, there is a set of ≥ k/((1/η)c²/C) independent events among these",
    ),
    _d("S1 (26)", SUPP, "Lemma 22", _S, "X_{i,h,k}^(z) ⊆ ∩_{s=1}^{k/((1/η)c²/C)} Y^{t_s}"),
    _d(
        "S1 (27)",
        SUPP,
        "Lemma 22",
        _S,
        "P(X_{i,h,k}^(z)) ≤ Π_{s=1}^{k/((1/η)c²/C)} P(Y^{t_s}) ≤ (1 − (q/2)^c)^{k/((1/η)c²/C)}",
    ),
    _d(
        "S1 (28)",
        SUPP,
        "Lemma 23",
        _DEF,
        "{X_{0,k}} ∪ {X_{i,h,k}^(z) : ((h,i),z) is (k,ρ^(2,k))-unsatisfied}",
    ),
    _d(
        "S1 (29)",
        SUPP,
        "Lemma 23",
        _S,
        "Each event X_{i,h,k}^(z) is statistically independent of the set {X_{j,h′,k}^(z′) : (k,ρ^(2,k))-unsatisfied tuples (j,h′,z′) and (i,h,z) are not (k,ρ^(2,k))-neighbors}",
    ),
    _d(
        "S1 (30)",
        SUPP,
        "Lemma 23",
        _S,
        "The complement of this set has cardinality ≤ f = (2^c/η)c²k²H/C, as concluded in Corollary 18",
        "f's constant reconstructed from OCR '2nc2k2H/C'",
    ),
    _d(
        "S1 Lemma 23: event count",
        SUPP,
        "Lemma 23",
        _S,
        "The number of events X_{i,h,k}^(z) is bounded by 2^c Hn",
    ),
    _d("S1 (31)", SUPP, "Lemma 23", _S, "P(X_{i,h,k}^(z)) ≤ A(1 − B)(1 − A)^f"),
    _d("S1 (32)", SUPP, "Lemma 23", _S, "P(X_{0,k}) ≤ B(1 − A)^{2^c Hn}"),
    _d(
        "S1 (33)",
        SUPP,
        "Lemma 23",
        _S,
        "D ≤ A^{1/k}(1 − B)^{1/k}(1 − A)^{f/k}, where D = (1 − (q/2)^c)^{1/((1/η)c²/C)} ∈ (0, 1)",
    ),
    _d("S1 [lim A]", SUPP, "Lemma 23", _S, "lim_{k→∞} A^{1/k} = lim_{k→∞} exp(−log(k²)/k) = 1"),
    _d(
        "S1 [lim (1−A)]",
        SUPP,
        "Lemma 23",
        _S,
        "lim_{k→∞} (1 − A)^{f/k} = lim_{k→∞} (1 − 1/k²)^{(2^c/η)c²kH/C} = lim_{k→∞} (1 − E²/k²)^k = 1 for E := (2^c/η)c²H/C",
        "E's constant reconstructed from OCR",
    ),
    _d(
        "S1 [(32) per n]",
        SUPP,
        "Lemma 23",
        _S,
        "In order to also satisfy (32), we need exp(−δ²q(1 − 2η)C/3) ≤ B^{1/n}(1 − A)^{2^c H}, which holds for n, k large enough",
    ),
    _d(
        "S1 Corollary 24 [free]",
        SUPP,
        "Corollary 24",
        _S,
        "#{i ≤ n : ρ_n^(3,k)(i) = *} ≥ (1 − 2η) · (1 − (1 + δ)q)Cn for all sufficiently large n. The claim follows from the choices in Definition 5",
    ),
    _d(
        "S1 proof of Lemma 4",
        SUPP,
        "proof of Lemma 4",
        _S,
        "each layer-1 activation y_j^(1) only depends on ≤ c · (2^c kH + 1) input bits",
    ),
)


def display(label: str) -> Display:
    """The display with this label (KeyError if unknown)."""
    for d in DISPLAYS:
        if d.label == label:
            return d
    raise KeyError(label)
