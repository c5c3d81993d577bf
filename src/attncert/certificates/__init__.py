"""Certificate readers: each format's values and its parser, what the trusted kernel reads
(trusted; the writers live with the search, outside the trusted base — issue 41).

* :mod:`attncert.certificates.hard` — restriction certificates (Hahn 2020, Theorem 1
  and Corollary 2 on one model and one n); writer :mod:`attncert.hard.certificate`;
* :mod:`attncert.certificates.verify` — verification trees (certified accuracy at one n);
  writer :mod:`attncert.soft.verify.certificate`;
* :mod:`attncert.certificates.all_lengths` — all-length agreement certificates (Yang et
  al. §4); writer :mod:`attncert.prove.all_lengths_certificate`;
* :mod:`attncert.certificates.soft` — soft certificates (B(n), Theorem 6's floor, soft
  restrictions and pairs); writer :mod:`attncert.soft.certified.certificate`;
* :mod:`attncert.certificates.uniform` — length-uniform sensitivity certificates (Lemma 5
  for every n ≥ N₀); writer :mod:`attncert.soft.certified.uniform`.

Formats are plain data with versioned JSON, read through :mod:`attncert.jsonread`; every
malformed field is a :class:`~attncert.errors.SpecError` naming it. They import no search,
no solver and no writer (import contracts in ``pyproject.toml``).
"""
