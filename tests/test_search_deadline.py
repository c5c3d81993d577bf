"""The MaxSAT back-end honours its time limit in every phase (issue 19, item 6).

The phases are driven deterministically: the RC2 child and the linear search are replaced
by stand-ins that are slow, late or quick, so what is checked does not depend on how busy
the machine is.
"""

from __future__ import annotations

import time

import pytest

from attncert.errors import SolverTimeout
from attncert.hard.search import backends
from attncert.hard.search.backends import Method, solve_maxsat, solve_sat
from attncert.hard.search.encode import Encoding
from attncert.restriction import Restriction


def _encoding() -> Encoding:
    """Positions 0..5 over {0, 1}; each of the pairs (0,1), (2,3), (4,5) needs one fixed
    position (an option per pair): the optimum fixes 3 positions."""
    enc = Encoding(Restriction.free(("0", "1"), 6))
    for a, b in ((0, 1), (2, 3), (4, 5)):
        enc.hard.append((enc.x(a, 0), enc.x(a, 1), enc.x(b, 0), enc.x(b, 1)))
    for u in range(6):
        enc.hard.append((-enc.x(u, 0), -enc.x(u, 1)))
    return enc


def _silent_rc2(hard, soft, conn):  # never answers (a MaxSAT solve that takes forever)
    time.sleep(60)


def _late_rc2(hard, soft, conn):  # answers at once, but says it finished after the deadline
    from pysat.examples.rc2 import RC2
    from pysat.formula import WCNF

    w = WCNF()
    for cl in hard:
        w.append(list(cl))
    for lit in soft:
        w.append([lit], weight=1)
    with RC2(w) as rc2:
        conn.send((rc2.compute(), rc2.cost, time.monotonic() + 3600))
    conn.close()


def _stalled_improve(self, seconds):  # the linear search makes no progress
    time.sleep(min(seconds, 0.02))
    return None


def test_no_time_left_is_a_timeout_not_a_result():
    with pytest.raises(SolverTimeout) as err:
        solve_maxsat(_encoding(), 0.0)
    assert "time limit" in str(err.value) and "no restriction found yet" in str(err.value)


def test_slow_solvers_give_the_best_model_so_far_marked_not_optimal(monkeypatch):
    monkeypatch.setattr(backends, "_rc2_worker", _silent_rc2)
    monkeypatch.setattr(backends._LinearSearch, "improve", _stalled_improve)
    res = solve_maxsat(_encoding(), 0.3)
    assert res.method is Method.MAXSAT and res.optimal is False
    assert res.detail["timeout"] == 0.3 and "time limit reached" in res.detail["note"]
    names = [p["phase"] for p in res.detail["phases"]]
    assert names == ["first model", "minimise", "search"]
    search = res.detail["phases"][-1]
    assert search["stopped_by_deadline"] and search["budget"] <= 0.3
    # the answer is still a restriction satisfying the hard clauses (minimised: 3 fixed)
    assert res.restriction.n == 6 and 6 - res.restriction.num_free == 3


def test_an_optimum_found_after_the_deadline_is_not_claimed(monkeypatch):
    monkeypatch.setattr(backends, "_rc2_worker", _late_rc2)
    monkeypatch.setattr(backends._LinearSearch, "improve", _stalled_improve)
    res = solve_maxsat(_encoding(), 0.3)
    assert res.optimal is False and res.detail["timeout"] == 0.3


def test_without_a_limit_the_optimum_is_proved():
    res = solve_maxsat(_encoding(), None)
    assert res.optimal is True and res.detail["cost"] == 3
    assert all(p["budget"] is None for p in res.detail["phases"])


def test_sat_back_end_honours_its_limit():
    enc = _encoding()
    assert solve_sat(enc, 3, 10.0).restriction.num_free == 3
    with pytest.raises(SolverTimeout):
        solve_sat(enc, 3, 0.0)
