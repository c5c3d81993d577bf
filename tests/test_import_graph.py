"""No import cycles anywhere in the package (issue 18, item 4).

The module import graph is built from the source with :mod:`ast`, counting *every*
import: at module level, inside functions (a function-level import that only hides a
cycle is still a cycle) and under ``if TYPE_CHECKING:``. ``from attncert.x import y``
is an edge to the module ``attncert.x.y`` when that is a module, else to ``attncert.x``
(for a package, its ``__init__``); the parent packages Python imports implicitly on the
way are not edges. Every strongly connected component with more than
one module is a cycle; the test lists each with one concrete loop.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

import pytest

import attncert

PACKAGE = Path(attncert.__file__).parent

# Cycles that other engineers are removing right now (issue 18). The lead empties this
# allow-list after merging their branches; a cycle listed here is reported, not failed.
KNOWN_CYCLES_BEING_FIXED: tuple[frozenset[str], ...] = ()  # every circle is broken


def module_files(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name → file, for every ``.py`` file of the package."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_package(name: str, files: dict[str, Path]) -> bool:
    return files[name].name == "__init__.py"


def imports_of(name: str, files: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports (anywhere in its source)."""
    tree = ast.parse(files[name].read_text(encoding="utf-8"), filename=str(files[name]))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                anchor = name.split(".") if _is_package(name, files) else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                # a submodule, or else a name defined in (re-exported by) module ``base``;
                # the implicit import of the parent packages is not an edge
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in files else base)
    edges = set()
    for target in found:
        # the longest prefix that is a module of the package (import a.b.c imports a.b.c)
        parts = target.split(".")
        while parts and ".".join(parts) not in files:
            parts.pop()
        if parts:
            mod = ".".join(parts)
            if mod != name:
                edges.add(mod)
    return edges


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    files = module_files(root)
    return {name: imports_of(name, files) for name in files}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on deep graphs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    comps.append(sorted(comp))
    return comps


def one_loop(graph: dict[str, set[str]], comp: Iterable[str]) -> list[str]:
    """A concrete cycle through the first module of a strongly connected component."""
    members = set(comp)
    start = min(members)
    # breadth-first search back to start, inside the component
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{sorted(members)} is not a cycle")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop per import cycle (strongly connected component of size > 1)."""
    return [one_loop(graph, c) for c in strongly_connected(graph) if len(c) > 1]


@functools.cache
def package_graph() -> dict[str, set[str]]:
    return import_graph()


def test_no_import_cycles():
    graph = package_graph()
    assert len(graph) > 50  # the whole package was read
    found = cycles(graph)
    known = [c for c in found if frozenset(c) in KNOWN_CYCLES_BEING_FIXED]
    unexpected = [c for c in found if frozenset(c) not in KNOWN_CYCLES_BEING_FIXED]
    assert not unexpected, "import cycles:\n" + "\n".join(" → ".join(c) for c in unexpected)
    if known:
        pytest.xfail(
            "known cycles being fixed on other branches (KNOWN_CYCLES_BEING_FIXED): "
            + "; ".join(" → ".join(c) for c in known)
        )


def test_the_three_circles_of_this_branch_are_gone():
    """compile compiler↔counting, languages base↔dfa, logic printer↔syntax (issue 18)."""
    graph = package_graph()
    assert "attncert.compile.compiler" not in graph["attncert.compile.counting"]
    assert "attncert.languages.dfa" not in graph["attncert.languages.base"]
    assert "attncert.logic.printer" not in graph["attncert.logic.syntax"]


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_planted_cycle_is_found_whatever_hides_it(tmp_path):
    """Function-level, TYPE_CHECKING, relative and package-level imports all count; the
    loop is reported in order."""
    pkg = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def f():\n    from pkg import b\n",
            "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import X\n",
            "pkg/c.py": "import pkg.a\n",
            "pkg/d.py": "from pkg.a import f\n",  # points into the cycle, not part of it
            "pkg/sub/__init__.py": "from pkg.sub.e import g\n",
            "pkg/sub/e.py": "from pkg.sub import h\n",  # a module importing its own package
        },
    )
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.c"}
    found = sorted(cycles(graph))
    assert found == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"], ["pkg.sub", "pkg.sub.e", "pkg.sub"]]


def test_an_acyclic_package_has_no_cycle(tmp_path):
    pkg = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import f\n",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "import os\n",
        },
    )
    graph = import_graph(pkg)
    assert cycles(graph) == []
