"""Layout of the prove/ package (issue 18 item 4): no import circles, files under ~600 lines,
and the public API unchanged by the split of the layer prover."""

from __future__ import annotations

import ast
from pathlib import Path

import attncert.prove as prove

PKG = Path(prove.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every attncert.prove module that ``path`` imports, at module level or inside a function."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "attncert.prove":
                out |= {f"attncert.prove.{a.name}" for a in node.names}
            elif node.module.startswith("attncert.prove."):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("attncert.prove.")}
    return out


def _graph() -> dict[str, set[str]]:
    mods = {f"attncert.prove.{p.stem}": p for p in PKG.glob("*.py") if p.stem != "__init__"}
    return {m: {t for t in _imports(p) if t in mods} for m, p in mods.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                return [*stack[stack.index(t) :], t]
            if t not in state and (c := visit(t)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_prove_package_has_no_import_circle():
    assert _cycle(_graph()) is None, " → ".join(_cycle(_graph()) or [])


def test_the_cycle_finder_finds_a_planted_circle():
    g = _graph()
    g["attncert.prove.enumerate"] = g["attncert.prove.enumerate"] | {"attncert.prove.driver"}
    cyc = _cycle(g)
    assert cyc is not None and cyc[0] == cyc[-1]
    assert {"attncert.prove.driver", "attncert.prove.enumerate"} <= set(cyc)


def test_enumerate_does_not_import_the_driver():
    assert "attncert.prove.driver" not in _imports(PKG / "enumerate.py")
    assert "attncert.prove.driver" not in _imports(PKG / "tieless.py")


def test_prove_files_are_under_600_lines():
    long = {p.name: n for p in PKG.glob("*.py") if (n := len(p.read_text().splitlines())) > 600}
    assert not long, long


def test_public_api_is_stable_after_the_split():
    from attncert.prove.driver import designated_coordinate as via_driver
    from attncert.prove.layer import Failure, HeadStats, LengthProver, PossibleTie, Unsupported

    assert prove.designated_coordinate is via_driver
    assert all(callable(x) for x in (Failure, HeadStats, LengthProver, PossibleTie, Unsupported))
    for name in prove.__all__:
        assert getattr(prove, name) is not None
