"""The trusted base, measured: every module the trusted kernel (:mod:`attncert.kernel`)
imports, directly or not, with its size — what must be right for a CHECKED verdict to
be right.

The import graph is read from the source with :mod:`ast` (imports inside functions
included), starting from the kernel's modules — each checker's entry points and
:mod:`attncert.kernel.verdict`, where every verdict word is decided;
:mod:`attncert.model.serialize` is added by hand because it computes every model's content
hash (registered into the spec at import time, so no import statement points at it).
Package ``__init__`` files are lazy and import nothing the kernel uses, so they are not
counted; a name imported from such a package (``from attncert.languages import language``)
is counted as the module its ``_LAZY`` table names.

    attncert trust            # the table
    attncert trust --json
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Checker:
    """One checker of the kernel: its package, the modules its verdicts are computed in
    (``roots``), and what it decides."""

    name: str
    roots: tuple[str, ...]
    decides: str

    @property
    def package(self) -> str:
        return f"attncert.kernel.{self.name}"


CHECKERS = (
    Checker(
        "hard",
        ("attncert.kernel.hard.checker", "attncert.kernel.hard.decide"),
        "restriction certificates (Hahn, Theorem 1 / Corollary 2): certify, check",
    ),
    Checker(
        "soft",
        ("attncert.kernel.soft.checker",),
        "B(n) (Hahn, Lemma 5), cross-entropy floors (Theorem 6), soft restrictions and "
        "pairs: sensitivity --certify, soft-certify, soft-check",
    ),
    Checker(
        "uniform",
        ("attncert.kernel.uniform.checker",),
        "B(n) ≤ K/n for every n ≥ N0 (Lemma 5 for every length): sensitivity --uniform",
    ),
    Checker(
        "verify",
        ("attncert.kernel.verify.checker",),
        "certified accuracy on every string of one length: verify, verify-check",
    ),
    Checker(
        "all_lengths",
        ("attncert.kernel.all_lengths.checker",),
        "a compiled formula at every length (Yang et al. §4): prove --all-lengths",
    ),
    Checker(
        "tieless",
        ("attncert.kernel.tieless.checker",),
        "Theorem 26 at every length (Yang et al., Lemma 24): prove dyck2 --all-lengths",
    ),
    Checker(
        "horizon",
        ("attncert.kernel.horizon.checker",),
        "certified accuracy at every length of an interval, without enumerating lengths "
        "(issue 40): verify --lengths",
    ),
    Checker(
        "core",
        ("attncert.kernel.core.trace",),
        "the rigorous forward pass every rigorous evaluation uses (soft pairs, eval)",
    ),
    # not a checker: the one module that turns checked facts into verdict words (issue 41)
    Checker(
        "verdict",
        ("attncert.kernel.verdict",),
        "every verdict word (CERTIFIED … REFUTED) from the checkers' reports and checked "
        "fields: every command, the report and check print what it returns",
    ),
)
KERNEL = tuple(root for c in CHECKERS for root in c.roots)
EXTRA = {"attncert.model.serialize": "computes the content hash every Model.digest returns"}
# what the issue calls "the hard checker with its evaluator"
CHECKER_AND_EVALUATOR = (
    "attncert.kernel.hard.checker",
    "attncert.kernel.hard.layers",
    "attncert.kernel.core.failure",
    "attncert.kernel.hard.decide",
    "attncert.arith.field",
    "attncert.arith.filter",
    "attncert.arith.enclose",
    "attncert.arith.rows",
    "attncert.arith.positionwise",
)


def owner(module: str) -> str:
    """The package a trusted module belongs to, without ``attncert.``: ``kernel.hard``,
    ``kernel.soft.affine``, ``arith``, … (``attncert`` for a top-level module)."""
    return module.rsplit(".", 1)[0].removeprefix("attncert.")


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

    def checker_closure(self, checker: Checker) -> tuple[str, ...]:
        """The modules one checker's verdicts rest on: its roots and everything they
        import (model spec and loader included), sorted."""
        by_name = {m.name: m for m in self.modules}
        return tuple(sorted(_reach((*checker.roots, *EXTRA), by_name.__getitem__)))

    def users(self) -> dict[str, tuple[str, ...]]:
        """For each module, the checkers whose closure holds it."""
        out: dict[str, list[str]] = {m.name: [] for m in self.modules}
        for c in CHECKERS:
            for name in self.checker_closure(c):
                out[name].append(c.name)
        return {k: tuple(v) for k, v in out.items()}

    def to_dict(self) -> dict:
        lines, code = self.part(CHECKER_AND_EVALUATOR)
        users = self.users()
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
            "checkers": [
                {
                    "name": c.name,
                    "package": c.package,
                    "roots": list(c.roots),
                    "decides": c.decides,
                    "lines": self.part(closure)[0],
                    "code_lines": self.part(closure)[1],
                    "modules": list(closure),
                }
                for c in CHECKERS
                for closure in [self.checker_closure(c)]
            ],
            "external": list(self.external),
            "modules": [
                {
                    "name": m.name,
                    "package": owner(m.name),
                    "trusted_by": list(users[m.name]),
                    "lines": m.lines,
                    "code_lines": m.code,
                    "imports": list(m.imports),
                }
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


@cache
def _lazy_names(package: str) -> dict[str, str]:
    """A lazy package's ``_LAZY`` table (name → module), read from its ``__init__``."""
    p = _path(package)
    if p is None or p.name != "__init__.py":
        return {}
    for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            return {
                k.value: v.value
                for k, v in zip(node.value.keys, node.value.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
            }
    return {}


def _resolve(name: str) -> str | None:
    """The attncert module an imported dotted name stands for: the longest prefix that is a
    module of the tree, or, for a name a lazy package re-exports, the module it names."""
    parts = name.split(".")
    for k in range(len(parts), 1, -1):
        cand = ".".join(parts[:k])
        p = _path(cand)
        if p is not None and p.name != "__init__.py":
            return cand
        if p is not None and k < len(parts):  # a package: one of its lazy names?
            target = _lazy_names(cand).get(parts[k])
            if target is not None:
                return _resolve(target) if _path(target) is None else target
    return None


def scan(module: str) -> Module:
    """Size and imports of one attncert module."""
    path = _path(module)
    if path is None:
        raise FileNotFoundError(module)
    return _measure(module, path.read_text(encoding="utf-8"))


# a module's size and imports are a function of its name and text: the tests, `attncert
# trust` and the budget checks measure the same tree several times in a process
@cache
def _measure(module: str, text: str) -> Module:
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
                target = _resolve(name)
                if target is not None:
                    internal.add(target)
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


def _short(module: str) -> str:
    return module.removeprefix("attncert.")


def render(base: TrustedBase) -> str:
    lines, code = base.part(CHECKER_AND_EVALUATOR)
    out = [
        f"trusted base: {len(base.modules)} modules, {base.lines} lines ({base.code} code lines)",
        "  the hard checker with its evaluator (kernel.hard.checker, .layers, .decide, "
        f"kernel.core.failure, arith): {lines} lines ({code} code lines)",
        f"  third-party packages: {', '.join(base.external)}",
        "",
        "by checker: what it decides, and the closure its verdicts rest on (its modules and",
        "everything they import, model spec and loader included):",
    ]
    for c in CHECKERS:
        closure = base.checker_closure(c)
        c_lines, c_code = base.part(closure)
        out += [
            "",
            f"  {c.package}: {c.decides}",
            f"    {len(closure)} modules, {c_lines} lines ({c_code} code lines):",
        ]
        groups: dict[str, list[str]] = {}
        for name in closure:
            groups.setdefault(owner(name), []).append(name.rsplit(".", 1)[1])
        out += [f"      {pkg}: {', '.join(mods)}" for pkg, mods in groups.items()]
    users = base.users()
    out += ["", f"  {'module':42} {'lines':>6} {'code':>6}  trusted by"]
    for m in base.modules:
        note = f"  ({EXTRA[m.name]})" if m.name in EXTRA else ""
        out.append(
            f"  {_short(m.name):42} {m.lines:6} {m.code:6}  {', '.join(users[m.name])}{note}"
        )
    return "\n".join(out)


def doc_rows(base: TrustedBase) -> list[dict[str, str]]:
    """The measured columns of ``docs/trust.md``, one row per trusted module: its name
    (without ``attncert.``), the checkers that trust it, its lines, and the attncert
    modules it imports (a test compares the document with these)."""
    users = base.users()
    return [
        {
            "module": _short(m.name),
            "trusted_by": ", ".join(users[m.name]),
            "lines": str(m.lines),
            "imports": ", ".join(_short(i) for i in m.imports) or "—",
        }
        for m in base.modules
    ]
