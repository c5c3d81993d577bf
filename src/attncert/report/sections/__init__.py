"""A report's sections, one family per module: :mod:`.model`, :mod:`.hard` (hardening
agreement, Theorem 1), :mod:`.verify`, :mod:`.lemma5`, :mod:`.soft`; what they share in
:mod:`.common`."""
