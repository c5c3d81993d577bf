"""The verify checker: certified accuracy of a model on every string of one length
(a branch-and-bound tree whose leaves are decided exactly or bounded).

* :mod:`~attncert.kernel.verify.checker` — trees, counts, witnesses.

Its bounded leaves use the soft checker's propagation (:mod:`attncert.kernel.soft`);
``docs/trust.md`` says why, and the import contract allows exactly that.
"""
