"""The trusted kernel: every check whose verdict attncert prints as CHECKED,
CERTIFIED or PROVED is made here — **the trust boundary**.

What the kernel trusts, and nothing else:

* the model loader and spec (:mod:`attncert.model.spec`, :mod:`attncert.model.serialize`,
  :mod:`attncert.model.positional`), the certificate readers (:mod:`attncert.certificates`:
  values parsed with located errors, no writers), the JSON reader
  (:mod:`attncert.jsonread`) and :mod:`attncert.errors`;
* the arithmetic library (:mod:`attncert.arith`: exact rationals, arb balls with
  escalating precision and structural ties, rigorous float filters, rigorous float64
  enclosures of the model's position-wise maps and rows evaluated on demand), and
  python-flint's ``arb`` enclosure guarantee;
* language membership (:mod:`attncert.languages`) where a claim is about a language.

It imports no solver (python-sat, z3), no search code (:mod:`attncert.hard.search`,
stages, the search's collapse, :mod:`attncert.soft` bound search), no CLI, and nothing
that only writes files or runs after the verdict (:mod:`attncert.io`'s atomic writes, the
certificate writers, :mod:`attncert.hard.s1_instance`); import contracts checked in CI
enforce this. Its modules are written to be read in
one sitting: straight-line, exact or arb, and re-deriving claims instead of re-using
the code path that found them.

One package per checker, each importing the shared core and no other checker (import
contracts in ``pyproject.toml``; the two exceptions and their reasons are in
``docs/trust.md``, which has one row per trusted module):

* :mod:`attncert.kernel.hard` — restriction certificates (Hahn, Theorem 1 / Corollary 2 on
  one model and one n): the checker, the layer collapse, the rigorous decision;
* :mod:`attncert.kernel.soft` — soft certificates (certified sensitivity B(n), Theorem 6's
  floors, soft restrictions, misclassified pairs re-evaluated in arb), with the box
  propagation and the affine-form propagation (:mod:`attncert.kernel.soft.affine`);
* :mod:`attncert.kernel.uniform` — length-uniform certificates (Lemma 5 for every n ≥ N₀:
  B(n) ≤ K/n, and Theorem 6's floor at every such n);
* :mod:`attncert.kernel.verify` — certified accuracy on every string of one length;
* :mod:`attncert.kernel.all_lengths` — all-length certificates (Yang et al. §4: a compiled
  model agrees with its formula at every length n ≥ N₀);
* :mod:`attncert.kernel.tieless` — Theorem 26 at every length;
* :mod:`attncert.kernel.core` — shared: the full rigorous forward pass, outward-rounded
  float64 bounds, rejections, Lemma 5's hypotheses;
* :mod:`attncert.kernel.verdict` — every verdict word, decided from checked facts only.

``attncert trust`` prints what each checker's verdicts rest on.
"""
