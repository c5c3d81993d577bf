"""The Theorem 26 checker for every length: a uniform–tieless average-hard program
simulated by softmax with β(N) = c·log N.

* :mod:`~attncert.kernel.tieless.checker` — the error majorants C·N^a layer by layer;
* :mod:`~attncert.kernel.tieless.program` — the hypotheses H1–H3 derived from the weights.
"""
