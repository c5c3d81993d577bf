"""Certificate formats: what the search writes and the trusted kernel reads.

* :mod:`attncert.certificates.hard` — restriction certificates (Hahn 2020, Theorem 1
  and Corollary 2 on one model and one n).

Formats are plain data with versioned JSON; they import no search and no solver.
"""
