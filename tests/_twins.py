"""The checks three ways, for the tests of a software Vulkan device's paths: as the backend runs
them, in launches under the loop limit (engine.collision.launches), and in the numpy twins; and
the bounds within which float32 kernels and the float64 twins agree."""

from __future__ import annotations

import numpy as np
from _backend import active

from engine.collision import robot as collision_robot
from engine.collision import world as collision_world
from engine.runtime import dispatch
from engine.runtime import state as runtime_state


def three_ways(calls, monkeypatch) -> list[tuple]:
    """``(as run, in launches, numpy)`` of each of ``calls`` (each returns ``(distances, pairs)``):
    first as the active backend runs it (one launch on the CPU), then as a software device (in
    launches: no numpy twin may be called), then past a loop limit of 0 (the twins, which must be
    called). On the CPU the launches give the one launch's distances and pairs to the bit."""
    as_run = [f() for f in calls]
    twins = []
    for owner, name in ((collision_world, "world_distance_numpy"), (collision_robot.RobotCollision, "distance_numpy")):
        real = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda *a, real=real, name=name: twins.append(name) or real(*a))
    monkeypatch.setattr(runtime_state.STATE, "software", True)
    split = [f() for f in calls]
    assert not twins, twins
    monkeypatch.setattr(dispatch, "SOFTWARE_LOOP_LIMIT", 0)
    numpy = [f() for f in calls]
    assert twins
    if active() == "cpu":
        for (d1, w1), (ds, ws) in zip(as_run, split):
            np.testing.assert_array_equal(ds, d1)
            assert ws == w1
    return list(zip(as_run, split, numpy))


def assert_like_twins(d, pairs, d_twin, pairs_twin) -> None:
    """Kernel distances ``d`` (and what sets them) against the numpy twins'. Near contact GJK bounds
    are each within TOLERANCE where it converged; float32's steps may stall short of that within
    the 32 steps: a lower bound still (never above the float64 bound by more than float32's
    rounding), 0.07 mm short at worst on an Intel machine, 0.11 mm on an AMD EPYC one, and rare."""
    d, d_twin = np.asarray(d, float), np.asarray(d_twin, float)
    assert np.all(d <= d_twin + 5e-5), np.max(d - d_twin)
    assert np.all(d >= d_twin - 5e-4), np.min(d - d_twin)
    assert np.mean(np.abs(d - d_twin) <= 1e-4) >= 0.98, np.sort(np.abs(d - d_twin))[-5:]
    assert np.mean([a == b for a, b in zip(pairs, pairs_twin)]) > 0.95  # float32 ties may pick another pair
