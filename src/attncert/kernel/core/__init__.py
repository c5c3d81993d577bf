"""The kernel's shared core: what more than one checker trusts.

* :mod:`~attncert.kernel.core.trace` — the full rigorous forward pass (arb, exact where the
  model is rational) for every model kind;
* :mod:`~attncert.kernel.core.bounds` — outward-rounded float64 interval arithmetic;
* :mod:`~attncert.kernel.core.failure` — how a checker rejects: a reason and a report.

It imports no checker package (an import contract in ``pyproject.toml``).
"""
