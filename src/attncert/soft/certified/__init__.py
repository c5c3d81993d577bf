"""Certified soft attention (Hahn 2020, §6, for *this* model at *this* n).

Sound statements about every input of length n, computed by outward-rounded bound
propagation (issue 15):

* :mod:`.rigorous` — float64 interval arithmetic with documented error bounds; exp, erf
  and tanh from arb-enclosed tables;
* :mod:`.pointwise` — ReLU / GELU / tanh-GELU ranges and slope bounds;
* :mod:`.layernorm` — the certified variance lower bound, LayerNorm boxes and Lipschitz
  constants;
* :mod:`.attention` — score intervals, one key's weight e^Δ/(e^Δ + n − 1), output ranges
  (hull ∩ weight-box LP) and the one-position-change bound of a head;
* :mod:`.fractional` — the first layer's exact fractional program (Dinkelbach, certified
  by F(λ⁺) ≤ 0), keys grouped by equal option rows;
* :mod:`.propagate` — the layer-by-layer driver: activation ranges and change bounds;
* :mod:`.sensitivity` — the certified B(n) (the propagated bound, capped by the logit's
  range), per readout symbol;
* :mod:`.floor` — Theorem 6 for this model: E[CE] ≥ log(1 + e^{−B/2}) on PARITY, and the
  2-Dyck bracket-type sub-task;
* :mod:`.restriction` — soft restrictions: untrusted greedy search, certified constant
  decisions, the misclassified pair;
* :mod:`.certificate` — the versioned JSON certificate; the independent checker is
  :mod:`attncert.kernel.soft.checker`;
* :mod:`.uniform` — Lemma 5 uniformly in n: K with B(n) ≤ K/n for every n ≥ N₀ and
  Theorem 6 at every such n (issue 23), checked by :mod:`attncert.kernel.uniform.checker`.
"""
