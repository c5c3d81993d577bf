"""Input restrictions (Hahn 2020, §5 "Input Restrictions"; supplement Definition 3).

A restriction ρ for length n maps each input position to a symbol of Σ or to
``*`` (free). ρ' refines ρ (ρ' ≽ ρ) when ρ' only fixes more positions. Applying
ρ to an input fixes xᵢ = ρ(i) wherever ρ(i) ≠ *.

Positions here are 0-based input indices (input position i of the paper is
index i − 1); BOS/EOS tokens are not input positions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import product

from attncert.errors import InputError, SpecError

__implements__ = ("Hahn S1 Definition 3",)

FREE = "*"


@dataclass(frozen=True)
class Restriction:
    """ρ: position → symbol or free. ``fixed[i]`` is a symbol or ``None`` (free)."""

    alphabet: tuple[str, ...]
    fixed: tuple[str | None, ...]
    free_symbols: tuple[str, ...] = ()  # what a free position ranges over; () = the alphabet

    def __post_init__(self) -> None:
        object.__setattr__(self, "alphabet", tuple(self.alphabet))
        object.__setattr__(self, "fixed", tuple(self.fixed))
        object.__setattr__(self, "free_symbols", tuple(self.free_symbols))
        if not set(self.free_symbols) <= set(self.alphabet) or len(set(self.free_symbols)) != len(
            self.free_symbols
        ):
            raise SpecError(
                f"free symbols {''.join(self.free_symbols)!r} are not distinct symbols of the alphabet",
                expected="a subset of " + "".join(self.alphabet),
            )
        if FREE in self.alphabet:
            raise SpecError(f"'{FREE}' cannot be a symbol of a restricted alphabet")
        allowed = set(self.alphabet)
        for i, s in enumerate(self.fixed):
            if s is not None and s not in allowed:
                raise SpecError(
                    f"restriction fixes position {i + 1} to unknown symbol {s!r}",
                    expected="a symbol of " + "".join(self.alphabet) + f" or '{FREE}'",
                )

    # ----- construction -------------------------------------------------------
    @classmethod
    def free(
        cls, alphabet: tuple[str, ...] | str, n: int, free_symbols: str | tuple[str, ...] = ()
    ) -> Restriction:
        """The empty restriction (every position free)."""
        return cls(tuple(alphabet), (None,) * n, tuple(free_symbols))

    @classmethod
    def parse(
        cls, alphabet: tuple[str, ...] | str, text: str, free_symbols: str | tuple[str, ...] = ()
    ) -> Restriction:
        """From a string like ``"01**1*"`` (``*`` = free)."""
        return cls(
            tuple(alphabet), tuple(None if c == FREE else c for c in text), tuple(free_symbols)
        )

    @property
    def symbols(self) -> tuple[str, ...]:
        """The symbols a free position ranges over (Σ, or a sub-alphabet such as Dyck-1's
        brackets inside Dyck-2's alphabet)."""
        return self.free_symbols or self.alphabet

    def __str__(self) -> str:
        return "".join(FREE if s is None else s for s in self.fixed)

    # ----- queries --------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.fixed)

    def is_free(self, i: int) -> bool:
        return self.fixed[i] is None

    @property
    def free_positions(self) -> tuple[int, ...]:
        return tuple(i for i, s in enumerate(self.fixed) if s is None)

    @property
    def num_free(self) -> int:
        return sum(s is None for s in self.fixed)

    @property
    def free_fraction(self) -> float:
        return self.num_free / self.n if self.n else 1.0

    def refines(self, other: Restriction) -> bool:
        """ρ' ≽ ρ: every position fixed by ``other`` is fixed to the same symbol here."""
        return (
            self.n == other.n
            and self.alphabet == other.alphabet
            and set(self.symbols) <= set(other.symbols)
            and all(o is None or s == o for s, o in zip(self.fixed, other.fixed, strict=True))
        )

    def compatible(self, string: str | tuple[str, ...]) -> bool:
        """Whether ``string`` agrees with ρ on every fixed position."""
        free = set(self.symbols)
        return len(string) == self.n and all(
            (s in free) if f is None else f == s for f, s in zip(self.fixed, string, strict=True)
        )

    # ----- refinement -----------------------------------------------------------
    def fix(self, assignment: Mapping[int, str]) -> Restriction:
        """Refine by fixing more positions; refuses to change a fixed one."""
        new = list(self.fixed)
        free = set(self.symbols)
        for i, s in assignment.items():
            if new[i] is None and s not in free:
                raise InputError(f"position {i + 1} ranges over {''.join(self.symbols)}, not {s!r}")
            if not 0 <= i < self.n:
                raise InputError(f"position {i + 1} outside 1..{self.n}")
            if new[i] is not None and new[i] != s:
                raise InputError(f"position {i + 1} is already fixed to {new[i]!r}, not {s!r}")
            new[i] = s
        return Restriction(self.alphabet, tuple(new), self.free_symbols)

    def complete(self, values: Mapping[int, str], default: str | None = None) -> str:
        """A compatible string: fixed symbols, ``values`` on free positions, else ``default``."""
        fill = self.symbols[0] if default is None else default
        out = []
        for i, s in enumerate(self.fixed):
            out.append(s if s is not None else values.get(i, fill))
        return "".join(out)

    def completions(self, positions: tuple[int, ...] | None = None) -> Iterator[str]:
        """All compatible strings (over the given free positions; others get the first symbol)."""
        free = self.free_positions if positions is None else positions
        out = list(self.complete({}))
        for combo in product(self.symbols, repeat=len(free)):
            for i, c in zip(free, combo, strict=True):
                out[i] = c
            yield "".join(out)
