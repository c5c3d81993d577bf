"""The soft-attention checker: certified sensitivity B(n) (Hahn, Lemma 5), cross-entropy
floors (Theorem 6), soft restrictions and misclassified pairs re-evaluated in arb.

* :mod:`~attncert.kernel.soft.checker` — soft certificates, verdicts;
* :mod:`~attncert.kernel.soft.propagate` — box propagation of feature ranges (heads in
  :mod:`~attncert.kernel.soft.heads`, the readout in :mod:`~attncert.kernel.soft.readout`);
* :mod:`~attncert.kernel.soft.affine` — affine-form propagation (tighter, where it applies);
* :mod:`~attncert.kernel.soft.batch` — logit bounds for many restrictions at once.
"""
