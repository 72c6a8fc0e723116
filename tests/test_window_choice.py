"""The choice among restarts of stage 3 (engine.ik.window), checked best first: the same pick as
checking every success, with fewer checks."""

from __future__ import annotations

import numpy as np
import pytest

from engine.ik import window


@pytest.mark.parametrize("seed", range(20))
def test_best_first_checks_pick_what_checking_every_success_picks(seed):
    rng = np.random.default_rng(seed)
    S, n, n_qs = 7, 40, 5
    q = rng.normal(size=(S, n, n_qs))
    start = rng.normal(size=(n, n_qs))
    weights = rng.uniform(0.1, 1.0, n_qs)
    reached = rng.random((S, n)) < 0.6
    truth = rng.random((S, n)) < 0.5  # whether each answer is clear, as the check would say
    asked = []

    def check(flat):
        asked.append(flat.copy())
        assert reached.reshape(-1)[flat].all(), "an answer that missed its targets was checked"
        return truth.reshape(-1)[flat]

    dist = window.from_start(q, start, weights)
    good = reached & window.check_best_first(dist, reached, check)
    np.testing.assert_array_equal(window.nearest_clear(q, good, start, weights),
                                  window.nearest_clear(q, reached & truth, start, weights))
    flat = np.concatenate(asked)
    assert len(np.unique(flat)) == len(flat), "an answer was checked twice"
    assert len(asked) <= 2 and len(flat) < reached.sum()

    asked.clear()
    order = np.broadcast_to(np.arange(S)[:, None], (S, n))
    good = reached & window.check_best_first(order, reached, check)
    np.testing.assert_array_equal(window.first_clear(good), window.first_clear(reached & truth))


def test_nothing_reached_checks_nothing():
    reached = np.zeros((3, 4), bool)
    clear = window.check_best_first(np.zeros((3, 4)), reached, lambda flat: pytest.fail("checked"))
    assert not clear.any()
