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
    """Stands for module ``name``: the first attribute read imports it (or skips). Writes
    are refused: patch ``.module``, the real one."""

    def __init__(self, name: str, require: tuple[str, ...] = (), why: str = "") -> None:
        object.__setattr__(self, "_lazy_spec", (name, require, why))
        object.__setattr__(self, "_lazy_module", None)

    def _lazy_load(self) -> ModuleType:
        if self._lazy_module is None:
            name, require, why = self._lazy_spec
            module = pytest.importorskip(name)
            missing = [a for a in require if not hasattr(module, a)]
            if missing:
                pytest.skip(f"{name} without {', '.join(missing)}{why}")
            object.__setattr__(self, "_lazy_module", module)
        return self._lazy_module

    def __getattr__(self, attr: str):
        if attr.startswith("_") and self._lazy_module is None:
            # pytest's collection probes every module global for markers and fixtures
            # (``__test__``, ``_pytestfixturefunction``, …): a probe must not import. A
            # private name of the module itself: use ``.module``
            raise AttributeError(attr)
        return getattr(self._lazy_load(), attr)

    def __setattr__(self, attr: str, value) -> None:
        # monkeypatch would record the stand-in's (empty) __dict__ and undo by deleting
        raise TypeError(f"patch the module itself: importlib.import_module({self._lazy_spec[0]!r})")

    @property
    def module(self) -> ModuleType:
        """The real module (imported now if not yet)."""
        return self._lazy_load()


def lazy_importorskip(name: str, *, require: tuple[str, ...] = (), why: str = "") -> LazyModule:
    """Skip the calling module now if ``name`` is not installed; else a lazy stand-in."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"could not import {name!r}: not installed", allow_module_level=True)
    return LazyModule(name, require, why)
