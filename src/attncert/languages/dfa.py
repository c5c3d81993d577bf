"""Deterministic finite automata: any regular language, as a frozen value.

A :class:`DFA` has states ``0 … Q−1`` (with display names ``states[q]``), an
alphabet Σ of single characters, a *total* transition table, a start state and
a set of accepting states. The transition table is a tuple of tuples::

    dfa.delta[q][a]      # the state after reading symbol number a in state q

where ``a = dfa.symbol_index[symbol]`` (the position of the symbol in
``dfa.alphabet``). Lookups are plain tuple indexing, so a product construction
(e.g. a hard-attention model × a DFA, Hahn Corollary 2) can step the automaton
in its inner loop without any dictionary lookup.

JSON format (``format: "attncert-dfa"``, ``version: 1``), states named::

    {"format": "attncert-dfa", "version": 1, "name": "parity",
     "alphabet": ["0", "1"], "states": ["even", "odd"], "start": "even",
     "accepting": ["even"],
     "transitions": {"even": {"0": "even", "1": "odd"},
                     "odd":  {"0": "odd",  "1": "even"}}}

Example::

    >>> from attncert.languages import Parity
    >>> d = Parity().as_dfa()
    >>> d.accepts("0110"), d.run("011"), d.delta[0][d.symbol_index["1"]]
    (True, 0, 1)
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from attncert.errors import InputError, SpecError
from attncert.jsonread import check_header, read_json
from attncert.languages.base import Language, Word, check_alphabet

FORMAT = "attncert-dfa"
VERSION = 1


@dataclass(frozen=True)
class DFA(Language):
    """A total DFA (states 0…Q−1; ``delta[q][a]`` = next state; see module docstring)."""

    states: tuple[str, ...]
    alphabet: tuple[str, ...]
    delta: tuple[tuple[int, ...], ...]
    start: int = 0
    accepting: frozenset[int] = field(default_factory=frozenset)
    name: str = "dfa"

    def __post_init__(self) -> None:
        object.__setattr__(self, "alphabet", check_alphabet(self.alphabet, "DFA.alphabet"))
        states = _check_states(self.states, "DFA.states")
        object.__setattr__(self, "states", states)
        nq, ns = len(states), len(self.alphabet)
        rows = _as_tuple(self.delta, "DFA.delta", f"{nq} rows (one per state)")
        if len(rows) != nq:
            raise SpecError(
                f"{len(rows)} rows for {nq} states",
                where="DFA.delta",
                expected=f"{nq} rows (one per state)",
            )
        table = []
        for q, row in enumerate(rows):
            row = _as_tuple(row, f"DFA.delta[{q}]", f"{ns} entries (one per symbol)")
            if len(row) != ns:
                raise SpecError(
                    f"{len(row)} entries for {ns} symbols",
                    where=f"DFA.delta[{q}]",
                    expected=f"{ns} entries (one per symbol of {''.join(self.alphabet)!r})",
                )
            for a, t in enumerate(row):
                _check_state(t, nq, f"DFA.delta[{q}][{a}]")
            table.append(tuple(int(t) for t in row))
        object.__setattr__(self, "delta", tuple(table))
        _check_state(self.start, nq, "DFA.start")
        object.__setattr__(self, "start", int(self.start))
        acc = _as_tuple(self.accepting, "DFA.accepting", "a set of state indices")
        for k, t in enumerate(sorted(acc, key=repr)):
            _check_state(t, nq, f"DFA.accepting[{k}]")
        object.__setattr__(self, "accepting", frozenset(int(t) for t in acc))
        if not isinstance(self.name, str):
            raise SpecError(f"name {self.name!r}", where="DFA.name", expected="a string")

    # ----- construction from names -------------------------------------------
    @classmethod
    def from_transitions(
        cls,
        *,
        states: Sequence[str],
        alphabet: Sequence[str],
        transitions: Mapping[str, Mapping[str, str]],
        start: str,
        accepting: Iterable[str],
        name: str = "dfa",
        where: str = "DFA.",
    ) -> DFA:
        """Build from state *names*: ``transitions[state][symbol] = next state``.

        ``where`` prefixes the field names in error messages (a file name plus ``": "``).
        """
        states = _check_states(states, f"{where}states")
        sigma = check_alphabet(alphabet, f"{where}alphabet")
        index = {s: k for k, s in enumerate(states)}

        def lookup(s: Any, path: str) -> int:
            if not isinstance(s, str) or s not in index:
                raise SpecError(
                    f"unknown state {s!r}",
                    where=path,
                    expected="one of " + ", ".join(map(str, states)),
                )
            return index[s]

        if not isinstance(transitions, Mapping):
            raise SpecError(
                "not an object", where=f"{where}transitions", expected="{state: {symbol: state}}"
            )
        extra = [s for s in transitions if s not in index]
        if extra:
            raise SpecError(
                f"transitions for unknown state {extra[0]!r}",
                where=f"{where}transitions",
                expected="one of " + ", ".join(map(str, states)),
            )
        delta = []
        for s in states:
            row = transitions.get(s)
            path = f"{where}transitions.{s}"
            if not isinstance(row, Mapping):
                raise SpecError(
                    "missing or not an object",
                    where=path,
                    expected="{symbol: next state} for every symbol",
                )
            bad = [a for a in row if a not in sigma]
            if bad:
                raise SpecError(
                    f"unknown symbol {bad[0]!r}",
                    where=path,
                    expected="symbols of " + "".join(sigma),
                )
            missing = [a for a in sigma if a not in row]
            if missing:
                raise SpecError(
                    f"no transition on symbol {missing[0]!r}",
                    where=path,
                    expected="a total transition function",
                )
            delta.append(tuple(lookup(row[a], f"{path}.{a}") for a in sigma))
        if isinstance(accepting, str):
            raise SpecError("a string", where=f"{where}accepting", expected="a list of state names")
        acc = [lookup(s, f"{where}accepting") for s in accepting]
        return cls(
            states=states,
            alphabet=sigma,
            delta=tuple(delta),
            start=lookup(start, f"{where}start"),
            accepting=frozenset(acc),
            name=name,
        )

    # ----- running ------------------------------------------------------------
    @cached_property
    def symbol_index(self) -> dict[str, int]:
        """Symbol → column of :attr:`delta`."""
        return {a: k for k, a in enumerate(self.alphabet)}

    @property
    def num_states(self) -> int:
        return len(self.states)

    def step(self, state: int, symbol: str) -> int:
        """δ(state, symbol)."""
        try:
            return self.delta[state][self.symbol_index[symbol]]
        except KeyError:
            raise InputError(
                f"unknown symbol {symbol!r} for DFA {self.name}",
                expected="symbols of the alphabet " + "".join(self.alphabet),
            ) from None

    def run(self, s: Word, state: int | None = None) -> int:
        """The state reached from ``state`` (default: the start state) after reading ``s``."""
        self.check(s)
        return self._run(s, self.start if state is None else state)

    def _run(self, s: Word, q: int) -> int:
        delta, idx = self.delta, self.symbol_index
        for sym in s:
            q = delta[q][idx[sym]]
        return q

    def accepts(self, s: Word) -> bool:
        """Whether the DFA accepts ``s`` (InputError on a symbol outside Σ)."""
        return self.contains(s)

    def _member(self, s: Word) -> bool:
        return self._run(s, self.start) in self.accepting

    @property
    def is_regular(self) -> bool:
        return True

    def as_dfa(self) -> DFA:
        return self

    # ----- algorithms ---------------------------------------------------------
    def reachable(self) -> tuple[int, ...]:
        """States reachable from the start, in breadth-first order (alphabet order)."""
        seen = {self.start}
        order = [self.start]
        queue = deque(order)
        while queue:
            q = queue.popleft()
            for t in self.delta[q]:
                if t not in seen:
                    seen.add(t)
                    order.append(t)
                    queue.append(t)
        return tuple(order)

    def minimize(self) -> DFA:
        """The minimal DFA of the same language (Moore's partition refinement).

        Unreachable states are dropped; states are numbered in breadth-first
        order from the start, so two DFAs recognize the same language iff their
        minimizations have equal ``delta``, ``start`` and ``accepting``. Each new
        state is named after the first original state of its class.
        """
        order = self.reachable()
        block = {q: int(q in self.accepting) for q in order}
        while True:
            sig = {q: (block[q], *(block[t] for t in self.delta[q])) for q in order}
            ids: dict[tuple[int, ...], int] = {}
            new = {q: ids.setdefault(sig[q], len(ids)) for q in order}
            if len(ids) == len(set(block.values())):
                break
            block = new
        # renumber classes in BFS order from the start
        number: dict[int, int] = {}
        rep: list[int] = []
        for q in order:
            if block[q] not in number:
                number[block[q]] = len(rep)
                rep.append(q)
        delta = tuple(tuple(number[block[t]] for t in self.delta[r]) for r in rep)
        return DFA(
            states=tuple(self.states[r] for r in rep),
            alphabet=self.alphabet,
            delta=delta,
            start=0,
            accepting=frozenset(number[block[r]] for r in rep if r in self.accepting),
            name=self.name,
        )

    def complement(self, name: str | None = None) -> DFA:
        """The DFA of Σ* \\ L."""
        return DFA(
            self.states,
            self.alphabet,
            self.delta,
            self.start,
            frozenset(range(self.num_states)) - self.accepting,
            name or f"not-{self.name}",
        )

    def distinguishing_string(self, other: DFA) -> str | None:
        """A shortest string on which ``self`` and ``other`` disagree, or None if equivalent."""
        if self.alphabet != other.alphabet:
            raise InputError(
                f"alphabets differ: {''.join(self.alphabet)!r} vs {''.join(other.alphabet)!r}"
            )
        start = (self.start, other.start)
        parent: dict[tuple[int, int], tuple[tuple[int, int], str] | None] = {start: None}
        queue = deque([start])
        while queue:
            p = queue.popleft()
            if (p[0] in self.accepting) != (p[1] in other.accepting):
                word = []
                while parent[p] is not None:
                    p, a = parent[p]  # type: ignore[misc]
                    word.append(a)
                return "".join(reversed(word))
            for k, a in enumerate(self.alphabet):
                t = (self.delta[p[0]][k], other.delta[p[1]][k])
                if t not in parent:
                    parent[t] = (p, a)
                    queue.append(t)
        return None

    def is_equivalent(self, other: DFA) -> bool:
        return self.distinguishing_string(other) is None

    # ----- files ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "alphabet": list(self.alphabet),
            "states": list(self.states),
            "start": self.states[self.start],
            "accepting": [self.states[q] for q in sorted(self.accepting)],
            "transitions": {
                s: {a: self.states[t] for a, t in zip(self.alphabet, self.delta[q], strict=True)}
                for q, s in enumerate(self.states)
            },
        }

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "") -> DFA:
        """Inverse of :meth:`to_dict`; errors name the file and field."""
        where = source or "DFA"
        check_header(dict(data) if isinstance(data, Mapping) else data, where, FORMAT, VERSION)
        for key in ("alphabet", "states", "start", "accepting", "transitions"):
            if key not in data:
                raise SpecError(f"missing field {key!r}", where=where)
        name = data.get("name", "dfa")
        try:
            return cls.from_transitions(
                states=data["states"],
                alphabet=data["alphabet"],
                transitions=data["transitions"],
                start=data["start"],
                accepting=data["accepting"],
                name=name if isinstance(name, str) else str(name),
                where=f"{source}: " if source else "DFA.",
            )
        except SpecError as err:
            if source and err.where and not err.where.startswith(source):
                raise SpecError(
                    err.message, where=f"{source}: {err.where}", expected=err.expected
                ) from None
            raise


def load_dfa(path: str | os.PathLike[str]) -> DFA:
    """Read a DFA JSON file (errors name the file, line/column or field)."""
    return DFA.from_dict(read_json(path), source=str(path))


def _as_tuple(value: Any, where: str, expected: str) -> tuple:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise SpecError(f"{type(value).__name__} {value!r}", where=where, expected=expected)
    return tuple(value)


def _check_states(value: Any, where: str) -> tuple[str, ...]:
    states = _as_tuple(value, where, "a list of state names")
    if not states:
        raise SpecError("no states", where=where, expected="at least one state")
    for k, s in enumerate(states):
        if not isinstance(s, str) or not s:
            raise SpecError(
                f"state name {s!r}", where=f"{where}[{k}]", expected="a non-empty string"
            )
    if len(set(states)) != len(states):
        dup = next(s for s in states if states.count(s) > 1)
        raise SpecError(f"repeated state name {dup!r}", where=where, expected="distinct names")
    return states


def _check_state(t: Any, nq: int, where: str) -> None:
    if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < nq:
        raise SpecError(f"state {t!r}", where=where, expected=f"a state index in 0..{nq - 1}")
