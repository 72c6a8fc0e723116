"""The stages of an avoiding solve (:mod:`engine.ik.avoiding`): restarts solved plain first.

An env whose plain answer reaches its target but is not clear is first solved with the avoidance
task from its warm start alone (where that answer came from it, a little in contact); failing
that, its continuity window's restarts (samples 1 .. 7) are solved plain and checked: the clear
success nearest the start wins; failing that, the lowest clear success of the next restarts.
The reference here solves each restart on its own, through the public API, from the start the
solver draws for it (``tests/_tracking.restart_starts``, the solver's hash written again in
numpy), and applies the rule by hand. Every answer is judged by coal too.
"""

from __future__ import annotations

import numpy as np
import pytest
from _backend import active, init_engine
from _near_targets import WINDOW_SEED, avoiding_digest, clutter_panda, near_hand_targets, window_envs
from _support import in_fresh_process
from _tracking import restart_starts

import engine as gs
from engine.runtime.backend import current

HAND = "panda_hand"
ARM = list(range(7))  # the qpos entries a hand target moves (the fingers keep their start)
WINDOW = 8  # engine.ik.plan.CONTINUITY_WINDOW
BEYOND = 8  # engine.ik.avoiding.BEYOND_SAMPLES
SEED = 5


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


@pytest.fixture(scope="module")
def clutter(f32):
    """The Panda among the clutter, with hand targets of configurations coal finds free and whose
    plain answers (from the default start) often collide."""
    n = window_envs()
    _scene, panda, judge = clutter_panda(n)
    return (panda, judge, *near_hand_targets(panda, judge, n, WINDOW_SEED))


def _restart_answers(panda, pos, quat, q0, samples, margin):
    """Each restart of ``samples`` solved plain on its own from its drawn start: ``(answers (S, n,
    n_qs), success (S, n), clear (S, n))`` (clear: the engine's check, as the solve's)."""
    starts = restart_starts(panda, q0, SEED, max(samples) + 1, ARM)
    out, ok, clear = [], [], []
    for s in samples:
        # two samples, so that the first may give up when it stalls, as a restart among many does;
        # only the first's answer counts (sample 0: the given start)
        r = panda.inverse_kinematics(HAND, pos, quat, init_qpos=starts[s], seed=SEED, max_samples=2,
                                     return_info=True)
        good = r.success & (r.sample == 0)
        out.append(r.qpos)
        ok.append(good)
        clear.append(panda.collision_distance(r.qpos) >= margin + 2e-6)
    return np.array(out), np.array(ok), np.array(clear)


@pytest.mark.parametrize("margin", [0.0, 0.03])
def test_a_colliding_plain_answer_gives_way_to_the_nearest_clear_restart(clutter, margin):
    """With a margin of 3 cm fewer restarts are clear, and some envs find theirs only beyond the
    window."""
    panda, judge, pos, quat = clutter
    q0 = np.asarray(panda.get_qpos(), np.float32)
    plain = panda.inverse_kinematics(HAND, pos, quat, seed=SEED, return_info=True)
    r = panda.inverse_kinematics(HAND, pos, quat, seed=SEED, return_info=True, avoid_collisions=True,
                                 collision_margin=margin)
    assert judge.count(r.qpos, r.success) == 0
    redo = plain.success & (panda.collision_distance(plain.qpos) < margin + 2e-6)
    assert redo.sum() >= 4, redo.sum()  # the clutter is in the way of many plain answers

    answers, ok, clear = _restart_answers(panda, pos, quat, q0, range(1, WINDOW + BEYOND), margin)
    good = ok & clear
    lo, hi = (np.asarray(v, float) for v in panda.configuration.q_limits)
    weights = np.zeros(panda.tree.n_qs)
    weights[ARM] = 1.0 / (hi[ARM] - lo[ARM]) ** 2
    window = good[:WINDOW - 1]
    dist = np.einsum("snq,q->sn", (answers[:WINDOW - 1] - q0[None]) ** 2, weights)
    nearest = np.argmin(np.where(window, dist, np.inf), axis=0) + 1
    lowest = np.argmax(good[WINDOW - 1:], axis=0) + WINDOW
    in_window = redo & window.any(axis=0)
    beyond = redo & ~window.any(axis=0) & good[WINDOW - 1:].any(axis=0)
    warm = redo & (r.sample == 0)  # stage 2: the warm start kept clear by the avoidance task
    assert (r.success & (panda.collision_distance(r.qpos) >= margin))[warm].all()
    print(f"{active()}, margin {margin}: {redo.sum()} plain answers collide; {warm.sum()} kept their warm start, "
          f"{(in_window & ~warm).sum()} answered in the window, {(beyond & ~warm).sum()} beyond it, "
          f"{(redo & ~in_window & ~beyond & ~warm).sum()} left to the avoidance task")
    assert (in_window & ~warm).sum() >= 3, (in_window & ~warm).sum()
    if margin > 0:
        assert (beyond & ~warm).any()
    for e in np.flatnonzero((in_window | beyond) & ~warm):
        want = nearest[e] if in_window[e] else lowest[e]
        assert r.sample[e] == want, (e, r.sample[e], want)
        np.testing.assert_allclose(r.qpos[e], answers[want - 1, e], atol=1e-5)
        assert r.success[e] and not r.warm_start_success[e]
        assert r.step[e] == pytest.approx(np.abs(r.qpos[e, :7] - q0[e, :7]).max(), abs=1e-5)
    # the envs whose plain answer was clear keep it; the others are clear and reach the target
    keep = plain.success & ~redo
    np.testing.assert_array_equal(r.qpos[keep], plain.qpos[keep])
    assert (r.min_distance[r.success] >= margin).all()
    assert (r.pos_error[r.success] <= 5e-4).all()


def test_one_sample_skips_the_plain_restarts(clutter):
    """``max_samples=1``: there are no restarts, so an env whose plain answer collides is solved
    with the avoidance task from its warm start (when that answer is a little in contact) and
    nowhere else."""
    panda, judge, pos, quat = clutter
    r = panda.inverse_kinematics(HAND, pos, quat, seed=SEED, max_samples=1, return_info=True, avoid_collisions=True)
    assert (r.sample[r.success] == 0).all()
    assert judge.count(r.qpos, r.success) == 0


@pytest.mark.parametrize("kernel", ["per_robot", "generic"])
def test_a_warm_start_a_little_in_contact_keeps_its_branch(clutter, kernel):
    """Stage 2 (the tracking case): each env starts at a configuration an arm link of which passes
    5-15 mm from an obstacle, its hand target where the hand already is, and the margin asked is
    2 cm. The plain answer (the start itself) is within the margin, a little in contact; the
    avoidance task from the warm start moves the elbow off while the hand holds, so most answers
    are the warm start's (sample 0), a small step away, and keep the margin (coal agrees).

    Both solvers: the per-robot one once built its avoidance rows with a zero Jacobian (its
    ancestor mask read 0), so it never moved a configuration out of contact and kept 0 of 32."""
    from engine.collision.robot import sample_qpos

    panda, judge, _pos, _quat = clutter
    n = panda.configuration.n_envs
    hand_links = {"panda_hand", "panda_leftfinger", "panda_rightfinger", "panda_link7"}
    kept, k = [], 0
    while len(kept) < n:
        q = sample_qpos(panda.tree, n, seed=700 + k)
        d, pairs = panda.collision_distance(q, return_pair=True)
        for qi, di, pair in zip(q, d, pairs):
            if 0.005 < di < 0.015 and pair is not None and not hand_links & set(pair) and not judge.collides(qi):
                kept.append(qi)
        k += 1
        assert k < 200, len(kept)
    q0 = np.array(kept[:n])
    pose = panda.configuration.fk_poses(np.ascontiguousarray(q0, panda.configuration.dtype))
    hand = panda.get_link(HAND).idx_local
    pos, quat = pose[:, hand, :3].astype(float), pose[:, hand, 3:].astype(float)
    ask = dict(init_qpos=q0, seed=SEED, return_info=True, avoid_collisions=True, collision_margin=0.02, kernel=kernel)
    if kernel == "per_robot" and current().software:  # its avoiding loops pass lavapipe's limit
        with pytest.raises(gs.errors.InvalidValueError, match="kernel: on a software Vulkan device"):
            panda.inverse_kinematics(HAND, pos, quat, **ask)
        return
    r = panda.inverse_kinematics(HAND, pos, quat, **ask)
    warm = r.success & (r.sample == 0)
    assert warm.mean() >= 0.5, warm.mean()
    print(f"{active()} {kernel}: {warm.sum()} of {n} kept their warm start's branch, "
          f"steps up to {r.step[warm].max():.3f} rad")
    assert r.warm_start_success[warm].all()
    # a small step: the branch kept, where a restart lands anywhere in the joint limits
    restart = r.success & (r.sample > 0)
    print(f"median steps: warm start {np.median(r.step[warm]):.3f} rad, restarts "
          f"{np.median(r.step[restart]) if restart.any() else float('nan'):.3f} rad")
    assert np.median(r.step[warm]) < 0.6 and r.step[warm].max() < np.pi / 2
    assert (r.min_distance[r.success] >= 0.02).all()
    assert judge.count(r.qpos, r.success) == 0


def test_same_seed_same_avoiding_answers_in_one_process_and_across_processes(clutter, backend, monkeypatch):
    """Every stage of an avoiding call (plain, warm start, plain restarts, the rest avoiding,
    polish) gives the same bytes when called again and in a new process: nothing in the stages
    depends on the process, the order of launches or what ran before."""
    panda, _judge, pos, quat = clutter
    here = avoiding_digest(panda, pos, quat)
    assert avoiding_digest(panda, pos, quat) == here
    monkeypatch.setenv("IKSTUDIO_TEST_BACKENDS", backend)
    # a fresh process compiles the avoiding solver again unless the disk cache has it
    assert in_fresh_process("_near_targets", "avoiding_digest_in_this_process", timeout=1800) == here
