"""The restriction-certificate checker — moved to the trusted kernel
(:mod:`attncert.kernel.hard`); this module re-exports it for existing code."""

from attncert.kernel.hard import CheckReport, Failure, check

__all__ = ["CheckReport", "Failure", "check"]
