"""The trust boundary: independent checkers of attncert's certificates.

Everything printed as "checked" is decided here. A kernel module re-derives every claim
of a certificate from the model file and the certificate alone; it imports only numpy,
python-flint, :mod:`attncert.errors`, :mod:`attncert.io` and the model loader
(:mod:`attncert.model.spec`, ``serialize``, ``positional``) — no search code, no solver,
nothing from the modules that produced the certificate (tests enforce this).

* :mod:`attncert.kernel.soft` — soft certificates (certified sensitivity B(n),
  cross-entropy floors, soft restrictions, misclassified pairs re-evaluated in arb);
  its bound propagation is :mod:`attncert.kernel.soft_propagate`, its outward-rounded
  arithmetic :mod:`attncert.kernel.soft_bounds`.
"""
