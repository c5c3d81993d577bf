"""The top-level API: every name the README's Python examples use exists (issue 19, item 6).

``import attncert`` re-exports the public functions lazily (``attncert.__getattr__``);
a name the README suggests — in code or in a comment such as
``# or model_from_arrays({...})`` — must be reachable as ``attncert.NAME``.
"""

from __future__ import annotations

import builtins
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import attncert

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def _local_names(code: str) -> set[str]:
    """Names a block defines or imports itself (``from x import a``, ``a = …``, ``def a``)."""
    names = set()
    for m in re.finditer(r"^\s*from\s+\S+\s+import\s+(.+)$", code, flags=re.M):
        names.update(n.strip().split(" as ")[-1] for n in m.group(1).split(","))
    names.update(re.findall(r"^\s*(?:def|class)\s+(\w+)", code, flags=re.M))
    for m in re.finditer(r"^\s*(\w+(?:\s*,\s*\w+)*)\s*=(?!=)", code, flags=re.M):
        names.update(n.strip() for n in m.group(1).split(","))  # a = …, and a, b = …
    return names


def _submodule(name: str) -> bool:
    """``attncert.NAME`` is a module of the package (reached by ``import``, not re-exported)."""
    return importlib.util.find_spec(f"attncert.{name}") is not None


def readme_names() -> tuple[set[str], set[str]]:
    """(names used as ``attncert.NAME``, bare names called in code or comments)."""
    attrs, calls = set(), set()
    for code in _blocks():
        attrs.update(re.findall(r"\battncert\.(\w+)", code))
        local = _local_names(code)
        for name in re.findall(r"(?<![\w.])([a-z_][a-z0-9_]*)\(", code):
            if name not in local and not hasattr(builtins, name):
                calls.add(name)
    return attrs, calls


def test_every_name_the_readme_uses_exists_at_the_top_level():
    attrs, calls = readme_names()
    assert {"certify", "check", "random_model"} <= attrs  # the scan found the examples
    assert {"model_from_arrays", "model_from_torch"} <= calls  # … and the comments
    missing = sorted(n for n in attrs | calls if not hasattr(attncert, n) and not _submodule(n))
    assert not missing, f"README uses attncert.{missing} but the package does not export them"


@pytest.mark.parametrize("name", sorted(n for n in dir(attncert) if not n.startswith("_")))
def test_every_listed_name_resolves(name):
    assert getattr(attncert, name) is not None


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = attncert.no_such_name


def test_import_stays_cheap():
    """Importing attncert loads no solver and no torch (the exports are lazy)."""
    code = (
        "import sys, attncert; attncert.model_from_arrays; "
        "print(sorted(m for m in ('z3', 'pysat', 'torch', 'sympy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_every_zoo_entry_has_a_description(capsys):
    """``attncert zoo list`` describes every built-in model (issue 19), without changing
    any model's content hash (descriptions live beside the zoo, not in the model)."""
    from attncert.cli.main import main
    from attncert.model import zoo_description, zoo_names

    names = zoo_names()
    assert {"random-L2-H2-d16", "soft_dyck2_lm", "soft_parity_lm"} <= set(names)
    for name in names:
        text = zoo_description(name)
        assert isinstance(text, str) and len(text.strip()) >= 20, (name, text)
    assert main(["zoo", "list", "--json"]) == 0
    rows = __import__("json").loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == names and all(r["description"] for r in rows)


def test_zoo_descriptions_do_not_change_model_hashes():
    """The bundled model's hash is the one certificates and proofs/ refer to."""
    from attncert.model import zoo_model

    assert zoo_model("random-L2-H2-d16").digest.startswith("a4f54da2c320")
    assert "description" not in zoo_model("random-L2-H2-d16").meta
