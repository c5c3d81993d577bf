"""The all-lengths checker (Yang et al. §4): a compiled model agrees with its formula at
every length n ≥ N₀.

* :mod:`~attncert.kernel.all_lengths.checker` — the certificate, verdict;
* :mod:`~attncert.kernel.all_lengths.gadgets`, :mod:`~attncert.kernel.all_lengths.counting`
  — the construction's gadgets re-derived from the exact weights;
* :mod:`~attncert.kernel.all_lengths.view` — the model read as layers of heads;
* :mod:`~attncert.kernel.all_lengths.heads` — each head's error as a closed form in n;
* :mod:`~attncert.kernel.all_lengths.closed_form` — the inequalities for all n (exact Sturm
  sequences and arb).
"""
