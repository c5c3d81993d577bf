"""Errors that attncert reports to people.

Every error a user can cause (a malformed file, a wrong shape, a NaN weight,
an unknown symbol, impossible parameters, a solver time-out) is an
:class:`AttncertError`. It names *where* the problem is (file, field) and
*what was expected*, so the CLI can print one clear line and exit with
status 2 instead of a traceback.
"""

from __future__ import annotations


class AttncertError(Exception):
    """Base class of all user-facing errors.

    ``where`` names the file and/or field (e.g. ``"model.json: layers[0].heads[1].w_q"``);
    ``expected`` says what would have been accepted.
    """

    def __init__(self, message: str, *, where: str | None = None, expected: str | None = None):
        self.message = message
        self.where = where
        self.expected = expected
        super().__init__(self.__str__())

    def __str__(self) -> str:
        parts = []
        if self.where:
            parts.append(f"{self.where}: ")
        parts.append(self.message)
        if self.expected:
            parts.append(f" (expected {self.expected})")
        return "".join(parts)


class SpecError(AttncertError):
    """A model, certificate or formula specification is malformed."""


class InputError(AttncertError):
    """An input string or parameter is invalid (e.g. unknown symbol)."""


class UnsupportedError(AttncertError):
    """The requested combination is not supported (e.g. exact softmax)."""


class SolverTimeout(AttncertError):
    """A solver hit its time limit before reaching a verdict."""


class ParameterError(AttncertError):
    """Parameters violate a hypothesis of the lemma being applied."""


def abbreviate(text: str, limit: int = 60, unit: str = "characters") -> str:
    """``text`` itself when short, else its first ``limit`` characters, '…' and the
    total length in ``unit`` (error messages quote a prefix, never a 60 KB string)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} {unit})"
