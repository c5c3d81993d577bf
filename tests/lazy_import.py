"""``pytest.importorskip`` at first use instead of at collection.

Every pytest-xdist worker collects every test file, so a module-level
``importorskip("transformers")`` costs each worker the 2–4 s import even when another
worker runs that file's tests. ``lazy_importorskip`` skips the module at collection only
when the package is not installed at all (``find_spec``, which imports nothing), and
imports it when a test first touches an attribute; an import that then fails skips that
test with the reason, as ``importorskip`` would have skipped the module."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest


class LazyModule:
    """Stands for module ``name``: the first attribute read imports it (or skips)."""

    def __init__(self, name: str, require: tuple[str, ...] = (), why: str = "") -> None:
        self._name, self._require, self._why = name, require, why
        self._module: ModuleType | None = None

    def _load(self) -> ModuleType:
        if self._module is None:
            module = pytest.importorskip(self._name)
            missing = [a for a in self._require if not hasattr(module, a)]
            if missing:
                pytest.skip(f"{self._name} without {', '.join(missing)}{self._why}")
            self._module = module
        return self._module

    def __getattr__(self, attr: str):
        return getattr(self._load(), attr)


def lazy_importorskip(name: str, *, require: tuple[str, ...] = (), why: str = "") -> LazyModule:
    """Skip the calling module now if ``name`` is not installed; else a lazy stand-in."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"could not import {name!r}: not installed", allow_module_level=True)
    return LazyModule(name, require, why)
