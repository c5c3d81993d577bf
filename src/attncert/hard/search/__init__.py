"""Untrusted search for restrictions (Stage 3 of the Depth Reduction Lemma, by
SAT/MaxSAT instead of the probabilistic method). Nothing here is trusted: every
restriction it proposes is re-checked by :mod:`attncert.hard.checker`."""
