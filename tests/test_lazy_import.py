"""tests/lazy_import.py: the stand-in imports its module at the first real use and not
before — pytest's collection probes (``__test__``, ``_pytestfixturefunction``) must not
import it — refuses writes (monkeypatch would undo one by deleting the module's
attribute), and skips at collection only when the package is not installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lazy_import import LazyModule, lazy_importorskip

TESTS = Path(__file__).resolve().parent


def _fresh(code: str) -> str:
    """Run ``code`` in a fresh interpreter with tests/ on the path; its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_probes_do_not_import_and_a_public_name_does():
    out = _fresh(
        """
        import sys
        from _pytest.compat import safe_getattr
        from lazy_import import lazy_importorskip
        print("colorsys" in sys.modules)
        m = lazy_importorskip("colorsys")
        for probe in ("__test__", "_pytestfixturefunction", "_fixture_function_marker"):
            safe_getattr(m, probe, None)
        print("colorsys" in sys.modules)
        print(m.rgb_to_hsv(1.0, 0.0, 0.0)[0])
        print("colorsys" in sys.modules, m.module is sys.modules["colorsys"])
        """
    )
    assert out.split() == ["False", "False", "0.0", "True", "True"]


def test_writes_are_refused_with_the_way_to_patch():
    m = LazyModule("json")
    with pytest.raises(TypeError, match=r"importlib.import_module\('json'\)"):
        m.dumps = print
    import json

    assert json.dumps([2]) == "[2]" and m.module is json


def test_a_module_that_is_not_installed_skips_at_collection_and_a_missing_name_at_use():
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        lazy_importorskip("attncert_no_such_package")
    m = lazy_importorskip("json", require=("no_such_function",), why=" (a newer json)")
    with pytest.raises(pytest.skip.Exception, match=r"json without no_such_function \(a newer"):
        m.dumps([3])
