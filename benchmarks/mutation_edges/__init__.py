"""Exhaustive neighbour-operator mutation of the kernel's accept/reject comparisons
(issue 41 item 5), and sampled general mutants of the modules measured by sampling.

Every comparison in a function body of the trusted modules gets all its neighbour mutants
(:mod:`.mutants`: each operator replaced by the five others, ±1 on integer and length
bounds, the certificate's tolerance as slack on either side); ``--sample N`` draws N
mutmut-like mutants per module instead (:mod:`.general`). Each mutant runs, in a child
forked from one process that has collected the tests once (:mod:`.runner`), the tests
that executed its line in a coverage run of the default suite (:mod:`.testmap`), those
that killed its function's other mutants first, then the fastest; the first failure kills
it. Results are cached by a hash of the mutated function's source (:mod:`.results`).
State lives in ``.mutation-edges/`` (git-ignored). Not part of the test suite; the tool's
own tests are ``tests/test_mutation_edges_tool.py``.

Usage (from the repository root, ``pip install -e ".[mutation]"`` for coverage)::

    python -m benchmarks.mutation_edges list arith/filter          # the mutants, no run
    python -m benchmarks.mutation_edges map                        # (re)collect the test map
    python -m benchmarks.mutation_edges run arith/filter kernel/all_lengths/closed_form
    python -m benchmarks.mutation_edges run                        # every trusted module
    python -m benchmarks.mutation_edges run --sample 50            # the sampled modules
    python -m benchmarks.mutation_edges report arith/filter --markdown out.md --json out.json

Survivors that no input can tell from the original (or that are sound but looser) are
listed with the reason in ``benchmarks/mutation_edges_equivalent.toml``.
"""
