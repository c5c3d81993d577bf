"""Generate ``docs/traceability.md``: every numbered result of the two papers → code, tests,
notebook sections and proof artifacts — with the gaps listed, not hidden.

``python -m attncert.proofcheck.traceability [--check]`` writes (or, with ``--check``,
compares) the file. The links are *found*, not maintained by hand:

- **code**: module, class and function docstrings under ``src/attncert`` that name the result
  (e.g. "Lemma 4", "(12)"), searched in the subpackages implementing that paper part (so
  Hahn's Lemma 6 and Yang's Lemma 6 are not confused);
- **tests**: test functions (their name, docstring or body) naming it, in the tests of those
  subpackages;
- **notebooks**: markdown cells naming it, reported with the section heading they are in;
- **artifacts**: ``proofs/**/manifest.json`` whose ``exhibits`` name the result.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ITEMS", "Item", "main", "render"]

MAX_LINKS = 4


@dataclass(frozen=True)
class Part:
    key: str  # e.g. "hahn-s5"
    title: str
    paper: str  # as in manifests' exhibits.paper
    packages: tuple[str, ...]  # subpackages of attncert searched for code
    tests: tuple[str, ...]  # test file prefixes
    notebooks: str  # regex on notebook file names


@dataclass(frozen=True)
class Item:
    part: Part
    label: str  # "Theorem 1", "eq. (12)"
    title: str
    pattern: str  # regex naming it in text

    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


_HARD = ("hard", "symbolic")
HAHN5 = Part(
    "hahn-s5",
    "Hahn 2020, §5 Results for hard attention",
    "Hahn 2020",
    _HARD,
    ("test_hard", "test_symbolic"),
    r"hard|lll|certify",
)
HAHN6 = Part(
    "hahn-s6",
    "Hahn 2020, §6 Results for soft attention",
    "Hahn 2020",
    ("soft", "languages"),
    ("test_soft", "test_distributions"),
    r"soft",
)
S1 = Part(
    "hahn-S1",
    "Hahn 2020 supplement, S1 Results for hard attention (formal proof)",
    "Hahn 2020",
    _HARD,
    ("test_hard", "test_symbolic"),
    r"hard|lll|certify",
)
S2 = Part(
    "hahn-S2",
    "Hahn 2020 supplement, S2 Missing detail in the soft attention proof",
    "Hahn 2020",
    ("soft",),
    ("test_soft",),
    r"soft",
)
_YANG_PKG = ("compile", "logic", "prove")
_YANG_TESTS = ("test_compile", "test_logic", "test_prove")
YANG3 = Part(
    "yang-s3",
    "Yang, Strobl, Chiang, Angluin, §3 Preliminaries",
    "Yang 2024",
    _YANG_PKG,
    _YANG_TESTS,
    r"logic|z3|prove",
)
YANG4 = Part(
    "yang-s4",
    "Yang, Strobl, Chiang, Angluin, §4 Soft attention, LTL and counting",
    "Yang 2024",
    _YANG_PKG,
    _YANG_TESTS,
    r"logic|z3|prove",
)
YANG5 = Part(
    "yang-s5",
    "Yang, Strobl, Chiang, Angluin, §5 Uniform–tieless attention",
    "Yang 2024",
    _YANG_PKG,
    _YANG_TESTS,
    r"logic|z3|prove",
)


_ABBREV = {
    "Theorem": "Theorem|Thm\\.?",
    "Lemma": "Lemma|Lem\\.?",
    "Corollary": "Corollary|Cor\\.?",
    "Definition": "Definition|Def\\.?",
    "Proposition": "Proposition|Prop\\.?",
}


def _name(kind: str, num: int) -> str:
    """The result's name, also in the abbreviated forms code uses ("Thm 15a", "Cor. 17")."""
    return rf"\b(?:{_ABBREV.get(kind, kind)})\s*{num}(?![0-9])"


def _eq(num: int) -> str:
    return rf"(?:\(\s*{num}\s*\)(?!\s*[-–]))"


def _s1eq(num: int) -> str:
    return rf"(?:S1|supplement)[^\n]{{0,60}}\({num}\)"


def _items() -> tuple[Item, ...]:
    out: list[Item] = []

    def add(part: Part, label: str, title: str, pattern: str | None = None) -> None:
        if pattern is None:
            kind, num = label.split()
            pattern = _name(kind, int(num))
        out.append(Item(part, label, title, pattern))

    add(HAHN5, "Theorem 1", "main result for hard attention: a restriction with ≤ c dependencies")
    add(HAHN5, "Corollary 2", "hard attention cannot model PARITY or 2DYCK")
    add(HAHN5, "Definition 3", "c-transformer")
    add(HAHN5, "Lemma 4", "Depth Reduction Lemma")
    eqs5 = {
        4: "layer-0 activations of a c-transformer",
        5: "free fraction ≥ Cn before",
        6: "free fraction ≥ C′n after",
        7: "maximum attention score over compatible inputs",
        8: "Chernoff bound on P(X₀)",
        9: "bound on P(X_{i,h}^{(z)})",
        10: "LLL condition for X_{i,h}^{(z)}",
        11: "LLL condition for X₀",
        12: "D ≤ A^{1/k}(1−B)^{1/k}(1−A)^{f/k}",
    }
    for n, t in eqs5.items():
        add(HAHN5, f"eq. ({n})", t, _eq(n))
    add(HAHN6, "Lemma 5", "one symbol changes y_n^{(L)} by O(1/n)")
    add(HAHN6, "Theorem 6", "soft attention cross-entropy on PARITY / 2DYCK")
    s1 = [
        ("Theorem 1", "main result (formal)"),
        ("Definition 2", "c-transformer (formal)"),
        ("Definition 3", "refinement ρ′ ≼ ρ"),
        ("Lemma 4", "Depth Reduction Lemma (formal)"),
        ("Definition 5", "choice of η, q, δ: (1−2η)(1−(1+δ)q) = C′/C"),
        ("Lemma 6", "Stage 1: bounded fan-out"),
        ("Definition 7", "blockers / candidate sets"),
        ("Definition 8", "satisfaction"),
        ("Lemma 9", "satisfaction and dependency"),
        ("Lemma 10", "preservation of satisfaction"),
        ("Definition 11", "(k,ρ)-depending on an input"),
        ("Definition 12", "(k,ρ)-depending on a layer-0 head"),
        ("Lemma 13", "dependence on inputs via layer-0 heads"),
        ("Definition 14", "(k,ρ)-neighbours"),
        ("Lemma 15", "heads with too many depending tuples"),
        ("Definition 16", "sequence of restrictions (Stage 2)"),
        ("Lemma 17", "Stage 2 terminates"),
        ("Corollary 18", "Stage 2"),
        ("Definition 19", "distribution over restrictions (Stage 3)"),
        ("Definition 20", "the events X_{i,h}^{(z)}"),
        ("Lemma 21", "X₀ is unlikely"),
        ("Lemma 22", "X_{i,h}^{(z)} is unlikely"),
        ("Lemma 23", "LLL: all events avoided with positive probability"),
        ("Corollary 24", "free fraction after Stage 3"),
    ]
    for label, t in s1:
        kind, num = label.split()
        # in S1, results are cited as "S1 Lemma 6", "supplement Lemma 17", or plainly
        # (for numbers that §5 does not use)
        plain = _name(kind, int(num))
        pat = rf"(?:S1|[Ss]upplement)[^\n]{{0,12}}{plain}" if int(num) <= 6 else plain
        add(S1, label, t, pat)
    for n in (5, 7, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 23, 24, 25, 26, 29, 30, 32, 33):
        add(S1, f"eq. S1({n})", "equation of the formal proof", _s1eq(n))
    add(S2, "eq. (34)", "Lemma 5's inequality as printed", _eq(34))
    add(
        S2,
        "eq. (35)",
        "the corrected inequality with Σ|â−â′|·‖y′‖",
        rf"{_eq(35)}|missing term|Σ\s*\|â",
    )
    y3 = [
        ("Definition 1", "self-attention"),
        ("Definition 2", "hardmax"),
        ("Definition 3", "temperature-dependent softmax"),
        ("Definition 4", "soft/hard attention transformers"),
        ("Definition 5", "approximation of hard by soft attention"),
        ("Lemma 6", "softmax approximation bound"),
        ("Lemma 7", "approximation bound with gap"),
        ("Lemma 8", "tie-breaking"),
        ("Lemma 9", "approximate Booleans"),
    ]
    y4 = [
        ("Definition 10", "TL[◁, ▷] (previous and next)"),
        ("Proposition 11", "previous/next by attention"),
        ("Theorem 12", "TL[◁, ▷] simulated by soft attention"),
        ("Theorem 13", "TL[◁, ▷] with other masks/encodings"),
        ("Definition 14", "TL[S, U] (since and until)"),
        ("Theorem 15", "since/until simulated"),
        ("Theorem 16", "TL[S, U] simulated by soft attention"),
        ("Corollary 17", "LTL / star-free languages"),
        ("Corollary 18", "future-masked variant"),
        ("Definition 19", "counting logic K_t[#] / numerical predicates"),
        ("Theorem 20", "counting simulated by soft attention"),
        ("Theorem 21", "counting with other encodings"),
        ("Corollary 22", "PARITY and majority-type languages"),
        ("Corollary 23", "Dyck-type languages"),
    ]
    y5 = [
        ("Lemma 24", "uniform attention over ties"),
        ("Lemma 25", "tieless attention"),
        ("Theorem 26", "uniform–tieless average-hard simulated by soft attention"),
    ]
    for part, rows in ((YANG3, y3), (YANG4, y4), (YANG5, y5)):
        for label, t in rows:
            add(part, label, t)
    return tuple(out)


ITEMS = _items()


# ------------------------------------------------------------------------------------------
# Sources


@dataclass(frozen=True)
class Doc:
    where: str  # e.g. "attncert.hard.checker.check"
    text: str
    package: str  # subpackage of attncert, or test file name
    obj: str = ""  # the function or class name ("" for a module, test or notebook)


def _code_docs(src: Path) -> list[Doc]:
    docs: list[Doc] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src.parent).with_suffix("")
        module = ".".join(rel.parts)
        if module.endswith(".__init__"):
            module = module[: -len(".__init__")]
        parts = rel.parts
        package = parts[1] if len(parts) > 2 else ""
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        mdoc = ast.get_docstring(tree) or ""
        if mdoc:
            docs.append(Doc(module, mdoc, package))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                d = ast.get_docstring(node)
                if d and not node.name.startswith("_"):
                    docs.append(Doc(f"{module}.{node.name}", d, package, node.name))
    return docs


def _test_docs(tests: Path) -> list[Doc]:
    docs: list[Doc] = []
    for path in sorted(tests.glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                seg = ast.get_source_segment(text, node) or ""
                docs.append(Doc(f"{path.name}::{node.name}", seg, path.stem))
    return docs


def _notebook_docs(notebooks: Path) -> list[Doc]:
    docs: list[Doc] = []
    for path in sorted(notebooks.glob("*.ipynb")):
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        heading = ""
        for cell in nb.get("cells", []):
            if cell.get("cell_type") != "markdown":
                continue
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else src
            for line in src.splitlines():
                if line.startswith("#"):
                    heading = line.lstrip("#").strip()
                    break
            docs.append(Doc(f"{path.name} › {heading}" if heading else path.name, src, path.stem))
    return docs


def _artifacts(proofs: Path) -> list[tuple[str, str, tuple[str, ...]]]:
    out = []
    for m in sorted(proofs.rglob("manifest.json")):
        try:
            data = json.loads(m.read_text(encoding="utf-8"))
            ex = data["exhibits"]
            out.append(
                (m.parent.relative_to(proofs.parent).as_posix(), ex["paper"], tuple(ex["results"]))
            )
        except (OSError, json.JSONDecodeError, KeyError, TypeError):
            continue
    return out


def _links(item: Item, docs: Iterable[Doc], accept) -> list[str]:
    rx = item.regex()
    found = sorted({d.where for d in docs if accept(d) and rx.search(d.text)})
    return found


def _calling_tests(item: Item, code: Iterable[Doc], tests: Iterable[Doc], part: Part) -> list[str]:
    """Tests (of the part's test files) that call a function or class whose docstring names
    the item."""
    rx = item.regex()
    names = {
        d.obj
        for d in code
        if d.obj and len(d.obj) > 3 and d.package in part.packages and rx.search(d.text)
    }
    if not names:
        return []
    call = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\(")
    return [d.where for d in tests if d.package.startswith(part.tests) and call.search(d.text)]


def _cell(links: list[str], cap: int = MAX_LINKS) -> str:
    if not links:
        return "—"
    shown = [f"`{x}`" for x in links[:cap]]
    if len(links) > cap:
        shown.append(f"+{len(links) - cap} more")
    return "<br>".join(shown)


def render(root: str | Path = ".") -> str:
    """The Markdown of ``docs/traceability.md`` for the repository at ``root``."""
    base = Path(root)
    code = _code_docs(base / "src" / "attncert")
    tests = _test_docs(base / "tests")
    nbs = _notebook_docs(base / "notebooks")
    arts = _artifacts(base / "proofs")
    lines = [
        "# Traceability: the papers' numbered results → code, tests, notebooks, proofs",
        "",
        "Generated by `python -m attncert.proofcheck.traceability` — do not edit by hand "
        "(`tests/test_traceability.py` checks it is up to date). Links are found by searching "
        "docstrings, test functions, notebook markdown and proof manifests for the result's "
        "name, within the subpackages implementing that part of the paper. A dash is a gap: "
        "nothing names the result there. Hahn's supplement S1 equation numbers are those "
        "legible in the extracted text.",
        "",
    ]
    gaps: list[str] = []
    current = None
    for item in ITEMS:
        part = item.part
        if part is not current:
            current = part
            lines += [
                f"## {part.title}",
                "",
                "| result | what | code | tests | notebook | proof artifact |",
                "|---|---|---|---|---|---|",
            ]
        c = _links(item, code, lambda d, p=part: d.package in p.packages)
        t = _links(item, tests, lambda d, p=part: d.package.startswith(p.tests))
        t = sorted(set(t) | set(_calling_tests(item, code, tests, part)))
        nb_rx = re.compile(part.notebooks)
        n = _links(item, nbs, lambda d, rx=nb_rx: bool(rx.search(d.package)))
        label = item.label
        a = sorted(
            path for path, paper, results in arts if paper == part.paper and label in results
        )
        lines.append(
            f"| {item.label} | {item.title} | {_cell(c)} | {_cell(t)} | {_cell(n)} | {_cell(a, cap=100)} |"
        )
        missing = [
            name
            for name, links in (("code", c), ("test", t), ("notebook", n), ("proof artifact", a))
            if not links
        ]
        if missing:
            gaps.append(
                f"- {part.title.split(',')[0]} · {part.key} · **{item.label}**: "
                f"no {', no '.join(missing)}"
            )
        if part is not (ITEMS[ITEMS.index(item) + 1].part if item is not ITEMS[-1] else None):
            lines.append("")
    total = len(ITEMS)
    complete = total - len(gaps)
    lines += [
        "## Gaps",
        "",
        f"{complete} of {total} results have code, a test, a notebook section and a proof "
        f"artifact; the others lack what is listed.",
        "",
        *gaps,
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m attncert.proofcheck.traceability")
    ap.add_argument("--root", default=".", help="repository root (default: .)")
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = ap.parse_args(argv)
    target = Path(args.root) / "docs" / "traceability.md"
    text = render(args.root)
    if args.check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print(
                f"{target} is out of date: run python -m attncert.proofcheck.traceability",
                file=sys.stderr,
            )
            return 1
        return 0
    from attncert.io import write_atomic

    write_atomic(target, text)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
