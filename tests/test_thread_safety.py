"""Calls from several threads get exactly the answers of the same calls made one after another.

Two threads each make 150 IK calls (plus FK and Jacobian calls) with their own targets and
seeds, on two scenes and then both on one entity, for both IK solvers; every answer is compared
bit for bit with a sequential run of the same calls. Before the launch lock, the generic solver's
shared launch context let one thread's kernel run on the other's arrays (up to 8.7 rad off).
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
from _backend import init_engine

import engine as ik

N_CALLS = 150
# lavapipe (software Vulkan) takes ~0.2-0.4 s per IK + FK + Jacobian round here (per launch, whatever
# the env count): fewer calls there; the launch lock is the same code on every backend, and two
# threads of 6 calls each still overlap through every call
N_CALLS_OFF_CPU = 6
N_ENVS = 8


@pytest.fixture(scope="module", autouse=True)
def _engine(backend):
    init_engine(precision="32")


def _panda(n_envs: int = N_ENVS):
    scene = ik.Scene()
    robot = scene.add_entity(ik.morphs.MJCF(file="panda"))
    scene.build(n_envs=n_envs)
    return scene, robot


def _requests(robot, worker: int, n_calls: int) -> list[tuple]:
    """Per call: reachable hand targets (FK of random configurations), a seed, a qpos for FK."""
    rng = np.random.default_rng(1000 + worker)
    lo, hi = robot.q_limits
    hand = robot.get_link("hand").idx_local
    out = []
    for call in range(n_calls):
        q = rng.uniform(lo, hi, (N_ENVS, robot.n_qs)).astype(np.float32)
        pos, quat = robot.forward_kinematics(q)
        out.append((pos[:, hand].copy(), quat[:, hand].copy(), 7919 * worker + call, q))
    return out


def _run(robot, requests, kernel: str) -> list[tuple]:
    hand = robot.get_link("hand")
    answers = []
    for pos, quat, seed, q in requests:
        res = robot.inverse_kinematics(link=hand, pos=pos, quat=quat, seed=seed, kernel=kernel, return_info=True,
                                       max_samples=4)
        fk_pos, _ = robot.forward_kinematics(q)
        answers.append((res.qpos, res.error, res.success, res.iterations, fk_pos, robot.get_jacobian(hand)))
    return answers


def _in_threads(jobs) -> list:
    """Run each ``job()`` in its own thread, started together; their results in order. Python's
    thread switch interval is cut to 1 us meanwhile (from 5 ms), so that the threads interleave
    between any two bytecodes, as they may on a loaded machine."""
    results = [None] * len(jobs)
    errors = []
    start = threading.Barrier(len(jobs))

    def worker(i):
        try:
            start.wait()
            results[i] = jobs[i]()
        except Exception as err:  # re-raised below, in the test's thread
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(jobs))]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    if errors:
        raise errors[0]
    return results


def _assert_same(got: list, expected: list, label: str) -> None:
    assert len(got) == len(expected)
    for call, (a, b) in enumerate(zip(got, expected)):
        for name, x, y in zip(("qpos", "error", "success", "iterations", "fk", "jacobian"), a, b):
            np.testing.assert_array_equal(x, y, err_msg=f"{label}: call {call}, {name} differs from the sequential run")


@pytest.mark.parametrize("kernel", ["generic", "auto"])
def test_two_scenes_in_two_threads_match_sequential(kernel, backend):
    n_calls = N_CALLS if backend == "cpu" else N_CALLS_OFF_CPU
    (_, a), (_, b) = _panda(), _panda()
    req_a, req_b = _requests(a, 0, n_calls), _requests(b, 1, n_calls)
    expected = [_run(a, req_a, kernel), _run(b, req_b, kernel)]
    got = _in_threads([lambda: _run(a, req_a, kernel), lambda: _run(b, req_b, kernel)])
    _assert_same(got[0], expected[0], f"{kernel}, scene A")
    _assert_same(got[1], expected[1], f"{kernel}, scene B")


@pytest.mark.parametrize("kernel", ["generic", "auto"])
def test_one_entity_from_two_threads_matches_sequential(kernel, backend):
    n_calls = N_CALLS if backend == "cpu" else N_CALLS_OFF_CPU
    _, robot = _panda()
    req = [_requests(robot, w, n_calls) for w in (2, 3)]
    expected = [_run(robot, r, kernel) for r in req]
    got = _in_threads([lambda: _run(robot, req[0], kernel), lambda: _run(robot, req[1], kernel)])
    _assert_same(got[0], expected[0], f"{kernel}, worker 0")
    _assert_same(got[1], expected[1], f"{kernel}, worker 1")


def test_collision_checks_and_avoiding_ik_from_two_threads_match_sequential(backend):
    """Collision-aware IK and collision checks share the entity's collision tables (one set per
    IK plan, one per kind of check): one thread solves with avoidance and checks the whole scene,
    the other checks self pairs only and solves with a margin, on one entity beside an obstacle."""
    scene = ik.Scene()
    robot = scene.add_entity(ik.morphs.MJCF(file="panda"))
    scene.add_entity(ik.morphs.Box(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3), fixed=True))
    scene.build(n_envs=N_ENVS)
    n_calls = 30 if backend == "cpu" else 3
    hand = robot.get_link("hand")

    def run(worker, requests):
        answers = []
        for pos, quat, seed, q in requests:
            res = robot.inverse_kinematics(link=hand, pos=pos, quat=quat, seed=seed, return_info=True, max_samples=4,
                                           avoid_collisions=True, collision_margin=0.01 * worker)
            checks = robot.collision_distance(q, return_pair=True, world=worker == 0, self_collision=True)
            answers.append((res.qpos, res.error, res.success, res.min_distance, checks[0], checks[1]))
        return answers

    req = [_requests(robot, w, n_calls) for w in (4, 5)]
    expected = [run(w, r) for w, r in enumerate(req)]
    got = _in_threads([lambda: run(0, req[0]), lambda: run(1, req[1])])
    for w in (0, 1):
        for call, (a, b) in enumerate(zip(got[w], expected[w])):
            for name, x, y in zip(("qpos", "error", "success", "min_distance", "distance"), a, b):
                np.testing.assert_array_equal(x, y, err_msg=f"worker {w}, call {call}: {name}")
            assert a[5] == b[5], f"worker {w}, call {call}: the pairs differ"
    assert any(pair is not None and pair[1].startswith("box") for ans in expected[0] for pair in ans[5])


def test_state_writes_to_different_envs_from_two_threads_are_never_lost(backend):
    """Each thread writes its own envs with set_qpos(envs_idx=...), over and over: a write is a
    read-modify-write of the whole state, so without the entity's lock one thread's update could be
    dropped by the other's. At the end every env holds what its own thread wrote last."""
    _, robot = _panda()
    halves = (np.arange(0, N_ENVS // 2), np.arange(N_ENVS // 2, N_ENVS))
    rng = np.random.default_rng(5)
    lo, hi = robot.q_limits
    n_writes = 2000 if backend == "cpu" else 200  # without the lock, 2000 lose a write within a second here
    configs = [rng.uniform(lo, hi, (n_writes, len(half), robot.n_qs)).astype(np.float32) for half in halves]

    def writer(i):
        for q in configs[i]:
            robot.set_qpos(q, envs_idx=halves[i])
            assert np.array_equal(robot.get_qpos(envs_idx=halves[i])[:, :7], q[:, :7]), "a write was lost"

    _in_threads([lambda: writer(0), lambda: writer(1)])
    for i, half in enumerate(halves):  # the arm joints (the fingers follow their mimic rule)
        np.testing.assert_array_equal(robot.get_qpos(envs_idx=half)[:, :7], configs[i][-1][:, :7])
    fk_pos, _ = robot.forward_kinematics(robot.get_qpos())
    np.testing.assert_allclose(robot.get_links_pos(), fk_pos, atol=1e-6)  # poses follow the final qpos


def test_a_scene_first_built_in_a_worker_thread_works():
    """Taichi builds its runtime on the first compile after init, which on the CPU must happen in
    the initialising thread: init does it, so a worker thread may build the first scene."""
    import engine

    engine.init(backend="cpu")  # nothing compiled since

    def work():
        _, robot = _panda(4)
        return robot.inverse_kinematics(link="hand", pos=[0.4, 0.0, 0.3], seed=0, return_info=True).success.all()

    assert _in_threads([work]) == [True]


def test_init_while_another_thread_is_in_a_call_is_a_clear_error():
    import engine

    engine.init(backend="cpu")
    _, robot = _panda(4)
    inside, release = threading.Event(), threading.Event()
    original = robot.tree.check_joint_values

    def slow_check(name, qpos):  # holds the other thread inside set_qpos until told
        inside.set()
        release.wait(10)
        return original(name, qpos)

    robot.tree.check_joint_values = slow_check
    worker = threading.Thread(target=lambda: robot.set_qpos(robot.get_qpos()))
    worker.start()
    try:
        assert inside.wait(10)
        with pytest.raises(RuntimeError, match=r"^init: 1 engine call"):
            engine.init(backend="cpu")
    finally:
        release.set()
        worker.join()
        robot.tree.check_joint_values = original
    engine.init(backend="cpu")  # and once the call is over, init works
