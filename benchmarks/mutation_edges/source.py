"""A module's source text, its functions, and exact positions for text edits.

``ast`` reports columns as UTF-8 byte offsets and ``tokenize`` as character offsets; the
mutants are edits of the source *text* (so that every other line, and every line number,
stays as it is), so both are turned into absolute character offsets here.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import io
import tokenize
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "attncert"


def module_name(path: Path) -> str:
    """``src/attncert/arith/filter.py`` → ``arith/filter`` (the name used in ids and docs)."""
    return path.resolve().relative_to(SRC).with_suffix("").as_posix()


def module_path(name: str) -> Path:
    return SRC / f"{name}.py"


def dotted(name: str) -> str:
    """``arith/filter`` → ``attncert.arith.filter`` (``x/__init__`` → ``attncert.x``)."""
    parts = ["attncert", *name.split("/")]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Function:
    """A ``def`` of the module: ``qualname`` as Python names its code object
    (``Cls.meth``, ``outer.<locals>.inner``), ``name`` without ``<locals>`` (for ids),
    ``unit`` the qualname of the outermost ``def`` holding it (the code that is swapped)."""

    qualname: str
    name: str
    unit: str
    first: int  # first line of the def (its first decorator's, as co_firstlineno)
    body: tuple[int, int]  # first and last line of the body
    text: str  # the def's source, decorators included
    node: ast.AST = field(compare=False, repr=False)

    @property
    def hash(self) -> str:
        return sha(self.text)


@dataclass
class Source:
    """One module: text, tree, tokens, and its functions."""

    name: str  # arith/filter
    path: Path
    text: str

    @staticmethod
    def read(path: Path, name: str | None = None) -> Source:
        return Source(name or module_name(path), path, path.read_text())

    @cached_property
    def tree(self) -> ast.Module:
        tree = ast.parse(self.text)
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                child.parent = parent  # type: ignore[attr-defined]
        return tree

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines(keepends=True)

    @cached_property
    def _line_start(self) -> list[int]:
        out, pos = [0], 0
        for line in self.lines:
            pos += len(line)
            out.append(pos)
        return out

    def offset(self, lineno: int, byte_col: int) -> int:
        """Absolute character offset of an ``ast`` position (1-based line, byte column)."""
        line = self.lines[lineno - 1] if lineno <= len(self.lines) else ""
        return self._line_start[lineno - 1] + len(line.encode()[:byte_col].decode())

    def char_offset(self, lineno: int, char_col: int) -> int:
        """Absolute character offset of a ``tokenize`` position."""
        return self._line_start[lineno - 1] + char_col

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        return self.text[self.start(node) : self.end(node)]

    def position(self, offset: int) -> tuple[int, int]:
        """(1-based line, 1-based character column) of an absolute offset."""
        line = bisect.bisect_right(self._line_start, offset)
        return line, offset - self._line_start[line - 1] + 1

    @cached_property
    def tokens(self) -> list[tuple[int, int, str]]:
        """(start, end, string) of every OP and NAME token, in order."""
        out = []
        for tok in tokenize.generate_tokens(io.StringIO(self.text).readline):
            if tok.type in (tokenize.OP, tokenize.NAME):
                a = self.char_offset(*tok.start)
                b = self.char_offset(*tok.end)
                out.append((a, b, tok.string))
        return out

    def token_between(self, lo: int, hi: int, strings: set[str]) -> tuple[int, int, str]:
        """The one token in [lo, hi) whose text is in ``strings`` (an operator between
        two operands: only parentheses can sit beside it)."""
        i = bisect.bisect_left(self.tokens, (lo, -1, ""))
        found = []
        while i < len(self.tokens) and self.tokens[i][0] < hi:
            if self.tokens[i][2] in strings and self.tokens[i][1] <= hi:
                found.append(self.tokens[i])
            i += 1
        if len(found) != 1:
            raise ValueError(f"{self.name}: expected one of {sorted(strings)} in {lo}..{hi}")
        return found[0]

    @cached_property
    def functions(self) -> list[Function]:
        out: list[Function] = []

        def visit(node: ast.AST, prefix: str, named: str, unit: str | None) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    qual = prefix + child.name
                    name = named + child.name
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    a = self.offset(first, 0)
                    b = self.end(child)
                    body = (child.body[0].lineno, child.end_lineno)
                    out.append(
                        Function(qual, name, unit or qual, first, body, self.text[a:b], child)
                    )
                    visit(child, qual + ".<locals>.", name + ".", unit or qual)
                elif isinstance(child, ast.ClassDef):
                    if unit is not None:
                        continue  # a class inside a def: its methods are not swapped alone
                    visit(child, prefix + child.name + ".", named + child.name + ".", None)
                elif not isinstance(child, ast.Lambda):
                    visit(child, prefix, named, unit)

        visit(self.tree, "", "", None)
        return out

    def innermost(self, node: ast.AST) -> Function | None:
        """The innermost def whose *body* holds ``node`` (not its defaults, decorators or
        annotations, nor an f-string), or None."""
        chain = []
        cur = node
        while hasattr(cur, "parent"):
            parent = cur.parent  # type: ignore[attr-defined]
            if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
                if not any(cur is s for s in parent.body):
                    return None  # a default value, a decorator, an annotation
                chain.append(parent)
                break
            if isinstance(parent, ast.Lambda) and cur is not parent.body:
                return None
            if isinstance(parent, ast.JoinedStr):
                return None  # inside an f-string: a message (and one token to tokenize)
            cur = parent
        if not chain:
            return None
        for f in self.functions:
            if f.node is chain[0]:
                return f
        return None

    def unit(self, fn: Function) -> Function:
        return next(f for f in self.functions if f.qualname == fn.unit)

    def statement(self, node: ast.AST) -> ast.stmt:
        cur = node
        while not isinstance(cur, ast.stmt):
            cur = cur.parent  # type: ignore[attr-defined]
        return cur
