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
def test_two_scenes_in_two_threads_match_sequential(kernel):
    (_, a), (_, b) = _panda(), _panda()
    req_a, req_b = _requests(a, 0, N_CALLS), _requests(b, 1, N_CALLS)
    expected = [_run(a, req_a, kernel), _run(b, req_b, kernel)]
    got = _in_threads([lambda: _run(a, req_a, kernel), lambda: _run(b, req_b, kernel)])
    _assert_same(got[0], expected[0], f"{kernel}, scene A")
    _assert_same(got[1], expected[1], f"{kernel}, scene B")


@pytest.mark.parametrize("kernel", ["generic", "auto"])
def test_one_entity_from_two_threads_matches_sequential(kernel):
    _, robot = _panda()
    req = [_requests(robot, w, N_CALLS) for w in (2, 3)]
    expected = [_run(robot, r, kernel) for r in req]
    got = _in_threads([lambda: _run(robot, req[0], kernel), lambda: _run(robot, req[1], kernel)])
    _assert_same(got[0], expected[0], f"{kernel}, worker 0")
    _assert_same(got[1], expected[1], f"{kernel}, worker 1")


def test_state_writes_from_two_threads_stay_consistent():
    """set_qpos from two threads: each write is whole (qpos and link poses from one writer)."""
    _, robot = _panda()
    rng = np.random.default_rng(5)
    lo, hi = robot.q_limits
    configs = [rng.uniform(lo, hi, (N_ENVS, robot.n_qs)).astype(np.float32) for _ in range(2)]
    states, poses = [], []  # what each write leaves, written alone (mimic fingers follow their leader)
    for q in configs:
        robot.set_qpos(q)
        states.append(robot.get_qpos())
        poses.append(robot.get_links_pos())

    def writer(i):
        for _ in range(200):
            robot.set_qpos(configs[i])
            q, pos = robot.get_qpos(), robot.get_links_pos()  # the other thread may write between them
            for got, expected in ((q, states), (pos, poses)):
                assert any(np.array_equal(got, e) for e in expected), "a torn write: state from two writers"

    _in_threads([lambda: writer(0), lambda: writer(1)])
