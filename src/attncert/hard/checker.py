"""The restriction-certificate checker — moved to the trusted kernel
(:mod:`attncert.kernel.hard.checker`); this module re-exports it for existing code."""

from attncert.kernel.hard.checker import CheckReport, Failure, check

__all__ = ["CheckReport", "Failure", "check"]
