"""The restriction-certificate checker on the search side: the trusted kernel's
:func:`attncert.kernel.hard.checker.check`, with a large layer's heads bounded in threads
when BLAS runs one thread per call (:func:`attncert.hard.threads.head_workers`; the count is
the caller's choice and cannot change the report).
"""

from attncert.certificates.hard import Certificate
from attncert.hard.threads import head_workers
from attncert.kernel.hard.checker import CheckReport, Failure
from attncert.kernel.hard.checker import check as kernel_check
from attncert.model.spec import Model

__all__ = ["CheckReport", "Failure", "check"]


def check(cert: Certificate, model: Model) -> CheckReport:
    """:func:`attncert.kernel.hard.checker.check` with :func:`head_workers` threads."""
    return kernel_check(cert, model, workers=head_workers)
