"""The trusted base, measured: every module the trusted kernel (:mod:`attncert.kernel`)
imports, directly or not, with its size — what must be right for a CHECKED verdict to
be right.

The import graph is read from the source with :mod:`ast` (imports inside functions
included), starting from the kernel's modules; :mod:`attncert.model.serialize` is added
by hand because it computes every model's content hash (registered into the spec at
import time, so no import statement points at it). Package ``__init__`` files are lazy
and import nothing the kernel uses, so they are not counted.

    attncert trust            # the table
    attncert trust --json
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
KERNEL = (
    "attncert.kernel.hard",
    "attncert.kernel.forward",
    "attncert.kernel.trace",
    "attncert.kernel.s1",
    "attncert.kernel.soft",
    "attncert.kernel.verify",
    "attncert.kernel.soft_uniform",
    "attncert.kernel.all_lengths",
    "attncert.kernel.tieless_all_lengths",
)
EXTRA = {"attncert.model.serialize": "computes the content hash every Model.digest returns"}
# what the issue calls "the hard checker with its evaluator"
CHECKER_AND_EVALUATOR = (
    "attncert.kernel.hard",
    "attncert.kernel.layers",
    "attncert.kernel.failure",
    "attncert.kernel.forward",
    "attncert.arith.field",
    "attncert.arith.filter",
    "attncert.arith.enclose",
    "attncert.arith.rows",
    "attncert.arith.positionwise",
    "attncert.arith.threads",
)


@dataclass(frozen=True)
class Module:
    name: str
    lines: int  # all lines
    code: int  # non-blank lines that are not comments or docstrings
    imports: tuple[str, ...]  # attncert modules it imports
    external: tuple[str, ...]  # third-party top-level packages it imports


@dataclass(frozen=True)
class TrustedBase:
    modules: tuple[Module, ...]

    @property
    def lines(self) -> int:
        return sum(m.lines for m in self.modules)

    @property
    def code(self) -> int:
        return sum(m.code for m in self.modules)

    @property
    def external(self) -> tuple[str, ...]:
        return tuple(sorted({e for m in self.modules for e in m.external}))

    def part(self, names: tuple[str, ...]) -> tuple[int, int]:
        ms = [m for m in self.modules if m.name in names]
        return sum(m.lines for m in ms), sum(m.code for m in ms)

    def closure(self, root: str) -> tuple[int, int]:
        """(lines, code lines) of ``root`` and every module it reaches by imports — what
        one checker trusts, model spec and loader included."""
        by_name = {m.name: m for m in self.modules}
        return self.part(tuple(_reach((root, *EXTRA), by_name.__getitem__)))

    def to_dict(self) -> dict:
        lines, code = self.part(CHECKER_AND_EVALUATOR)
        return {
            "lines": self.lines,
            "code_lines": self.code,
            "per_checker": {
                root: dict(zip(("lines", "code_lines"), self.closure(root), strict=True))
                for root in KERNEL
            },
            "checker_and_evaluator": {
                "modules": list(CHECKER_AND_EVALUATOR),
                "lines": lines,
                "code_lines": code,
            },
            "external": list(self.external),
            "modules": [
                {"name": m.name, "lines": m.lines, "code_lines": m.code, "imports": list(m.imports)}
                for m in self.modules
            ],
        }


def _path(module: str) -> Path | None:
    rel = module.split(".")[1:]
    p = ROOT.joinpath(*rel).with_suffix(".py")
    if p.exists():
        return p
    q = ROOT.joinpath(*rel, "__init__.py")
    return q if q.exists() else None


def _docstring_lines(tree: ast.Module) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            v = body[0].value
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                out.update(range(body[0].lineno, body[0].end_lineno + 1))
    return out


def scan(module: str) -> Module:
    """Size and imports of one attncert module."""
    path = _path(module)
    if path is None:
        raise FileNotFoundError(module)
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    doc = _docstring_lines(tree)
    lines = text.splitlines()
    code = sum(
        1
        for k, line in enumerate(lines, start=1)
        if line.strip() and not line.strip().startswith("#") and k not in doc
    )
    internal, external = set(), set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if name.startswith("attncert."):
                # the longest prefix that is a module of the tree
                parts = name.split(".")
                for k in range(len(parts), 1, -1):
                    cand = ".".join(parts[:k])
                    p = _path(cand)
                    if p is not None and p.name != "__init__.py":
                        internal.add(cand)
                        break
            elif not name.startswith("attncert"):
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names:
                    external.add(top)
    return Module(module, len(lines), code, tuple(sorted(internal)), tuple(sorted(external)))


def trusted_base(roots: tuple[str, ...] = KERNEL) -> TrustedBase:
    """Every attncert module reachable by imports from ``roots`` (plus :data:`EXTRA`)."""
    seen = _reach((*roots, *EXTRA), scan)
    return TrustedBase(tuple(sorted(seen.values(), key=lambda m: m.name)))


def _reach(roots: tuple[str, ...], module: Callable[[str], Module]) -> dict[str, Module]:
    """Every module reachable by imports from ``roots``, each looked up once."""
    seen: dict[str, Module] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen[name] = mod = module(name)
        todo.extend(m for m in mod.imports if m not in seen)
    return seen


def render(base: TrustedBase) -> str:
    lines, code = base.part(CHECKER_AND_EVALUATOR)
    out = [
        f"trusted base: {len(base.modules)} modules, {base.lines} lines ({base.code} code lines)",
        f"  the hard checker with its evaluator (kernel.hard, kernel.layers, kernel.forward, arith): "
        f"{lines} lines ({code} code lines)",
        f"  third-party packages: {', '.join(base.external)}",
        "  what each checker trusts (its import closure, model spec and loader included):",
        *(
            f"    {root:28} {lines:6} lines ({code} code lines)"
            for root in KERNEL
            for lines, code in [base.closure(root)]
        ),
        "",
        f"  {'module':42} {'lines':>6} {'code':>6}",
    ]
    for m in base.modules:
        note = f"  ({EXTRA[m.name]})" if m.name in EXTRA else ""
        out.append(f"  {m.name:42} {m.lines:6} {m.code:6}{note}")
    return "\n".join(out)
