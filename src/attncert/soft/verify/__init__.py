"""Certified accuracy over all |Σ|ⁿ strings by branch-and-bound over cubes (issue 22).

* :mod:`.search` — the branch and bound (untrusted): cubes decided by the affine-form
  bound or evaluated string by string, split where the bound blames most;
* :mod:`.pipeline` — :func:`verify`: refuse what cannot be verified, search, write the
  certificate, have :mod:`attncert.kernel.verify.checker` re-derive it;
* :mod:`.outcome` — the kernel's numbers as accuracy bounds, the verdict and its words.
"""

from attncert.soft.verify.outcome import VerifyOutcome
from attncert.soft.verify.pipeline import refusal, verify

__all__ = ["VerifyOutcome", "refusal", "verify"]
