"""The length-uniform checker: Lemma 5 for every n ≥ N₀ (B(n) ≤ K/n) and Theorem 6's floor
at every such n.

* :mod:`~attncert.kernel.uniform.checker` — the certificate's claims, verdict;
* :mod:`~attncert.kernel.uniform.classes` — position classes and their exact feature ranges;
* :mod:`~attncert.kernel.uniform.propagate` — the propagation with n symbolic;
* :mod:`~attncert.kernel.uniform.dyadic` — exact dyadic big numbers.

It re-uses the box propagation's norm, feed-forward and head rules
(:mod:`attncert.kernel.soft.propagate`, :mod:`attncert.kernel.soft.heads`) rather than a
second copy of them; ``docs/trust.md`` says why, and the import contract allows exactly that.
"""
