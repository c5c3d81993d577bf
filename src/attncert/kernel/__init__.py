"""The trusted kernel: every check whose verdict attncert prints as CHECKED,
CERTIFIED or PROVED is made here — **the trust boundary**.

What the kernel trusts, and nothing else:

* the model loader and spec (:mod:`attncert.model.spec`, :mod:`attncert.model.serialize`,
  :mod:`attncert.model.positional`), the file helpers (:mod:`attncert.io`,
  :mod:`attncert.errors`);
* the arithmetic library (:mod:`attncert.arith`: exact rationals, arb balls with
  escalating precision and structural ties, rigorous float filters, rigorous float64
  enclosures of the model's position-wise maps and rows evaluated on demand), and
  python-flint's ``arb`` enclosure guarantee;
* language membership (:mod:`attncert.languages`) where a claim is about a language.

It imports no solver (python-sat, z3), no search code (:mod:`attncert.hard.search`,
stages, the search's collapse, :mod:`attncert.soft` bound search) and no CLI; an
import contract checked in CI enforces this. Its modules are written to be read in
one sitting: straight-line, exact or arb, and re-deriving claims instead of re-using
the code path that found them.

* :mod:`attncert.kernel.hard.decide` — the rigorous decision of a hard-attention model
  (float enclosures, the field on demand);
* :mod:`attncert.kernel.core.trace` — the full rigorous forward pass for every model kind;
* :mod:`attncert.kernel.hard.checker` (with :mod:`attncert.kernel.hard.layers`) — restriction
  certificates (Hahn, Theorem 1 / Corollary 2 on one model and one n).
* :mod:`attncert.kernel.soft.checker` — soft certificates (certified sensitivity B(n),
  cross-entropy floors, soft restrictions, misclassified pairs re-evaluated in arb);
  its bound propagation is :mod:`attncert.kernel.soft.propagate` (heads in
  ``soft_heads``, the readout in ``soft_readout``), its outward-rounded float64
  arithmetic :mod:`attncert.kernel.core.bounds`.
* :mod:`attncert.kernel.uniform.checker` — length-uniform certificates (Lemma 5 for every
  n ≥ N₀: B(n) ≤ K/n, and Theorem 6's floor at every such n); its position classes and
  their exact feature ranges are :mod:`attncert.kernel.uniform.classes`, its propagation
  :mod:`attncert.kernel.uniform.propagate`, its big numbers :mod:`attncert.kernel.uniform.dyadic`.
* :mod:`attncert.kernel.all_lengths.checker` — all-length certificates (Yang et al. §4: a compiled
  model agrees with its formula at every length n ≥ N₀): the construction's gadgets from
  the exact weights (:mod:`~attncert.kernel.all_lengths.gadgets`,
  :mod:`~attncert.kernel.all_lengths.counting`, :mod:`~attncert.kernel.all_lengths.view`),
  each head's error as a closed form in n (:mod:`~attncert.kernel.all_lengths.heads`), and
  the inequalities for all n by exact Sturm sequences and arb
  (:mod:`attncert.kernel.all_lengths.closed_form`).
"""
