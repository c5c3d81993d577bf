"""Soft attention limits on concrete models (Hahn 2020, §6 and supplement S2).

* :mod:`attncert.soft.bounds` — Lemma 5's constants (F, A, L_fact, C, D) computed
  soundly from the weights, and the per-layer induction bounds with the
  supplement's corrected inequality;
* :mod:`attncert.soft.sensitivity` — the measured largest change of the readout
  when one input symbol changes (exhaustive for small n, hill-climbing search for
  large n) and its fitted decay exponent;
* :mod:`attncert.soft.missing_term` — the size of the supplement's extra term
  Σ|â − â′|·‖y′‖ next to the original right-hand side, on real models;
* :mod:`attncert.soft.crossentropy` — Theorem 6: next-symbol cross-entropy on the
  PARITY automaton and 2-Dyck PCFG distributions against chance and optimum;
* :mod:`attncert.soft.parity_rate` — Proposition (PARITY rate): along the
  one-residue-class family the second differences pin a soft PARITY transformer's
  gap at O(1/n²) (rigorous constant for one layer; ``docs/parity-rate.md``);
* :mod:`attncert.soft.models` — an exact soft PARITY transformer (zoo
  ``soft_parity``) and a small trained PARITY next-symbol model (zoo
  ``soft_parity_lm``).
"""
