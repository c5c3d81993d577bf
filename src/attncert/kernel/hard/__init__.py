"""The hard-attention checker: restriction certificates (Hahn, Theorem 1 / Corollary 2 on
one model and one n).

* :mod:`~attncert.kernel.hard.checker` — the certificate's claims re-derived, verdict;
* :mod:`~attncert.kernel.hard.layers` — each layer's collapse under the restriction;
* :mod:`~attncert.kernel.hard.decide` — the rigorous decision of a hard-attention model.

Supplement S1's statements on a certified instance, printed after the verdict, are
:mod:`attncert.hard.s1_instance` (untrusted; no verdict depends on them).
"""
