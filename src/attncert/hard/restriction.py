"""Input restrictions — moved to :mod:`attncert.restriction` (a concept shared by the
search and the trusted kernel); re-exported here for existing code."""

from attncert.restriction import FREE, Restriction

__all__ = ["FREE", "Restriction"]
