"""Quadric decimation off the caller's GIL (engine/vis/quadric.py; issue 27: a new robot's meshes
decimated in the app's render thread stalled the GUI thread 0.2-0.3 s per mesh). The worker gives
trimesh's own answer, other threads run while it works, and a worker that cannot start costs
nothing but the offloading."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest
import trimesh

from engine.vis import quadric


@pytest.fixture(scope="module")
def big_mesh():
    mesh = trimesh.creation.icosphere(subdivisions=6)  # 81,920 faces: over IN_PROCESS_FACES
    assert len(mesh.faces) > quadric.IN_PROCESS_FACES
    return mesh


def test_the_worker_gives_trimeshs_own_decimation(big_mesh):
    ours = quadric.simplify(big_mesh, 1000)
    theirs = big_mesh.simplify_quadric_decimation(face_count=1000)
    np.testing.assert_array_equal(ours.faces, theirs.faces)
    np.testing.assert_array_equal(ours.vertices, theirs.vertices)
    assert 900 <= len(ours.faces) <= 1100
    small = trimesh.creation.icosphere(subdivisions=3)  # in the process: the same function
    np.testing.assert_array_equal(quadric.simplify(small, 200).faces,
                                  small.simplify_quadric_decimation(face_count=200).faces)


def test_other_threads_run_while_a_big_mesh_is_decimated(big_mesh):
    """A ticker thread sleeping 1 ms a tick: it ticks through the worker's decimation, and (the
    reason for the worker) hardly at all through trimesh's in-process one, which holds the GIL."""
    quadric.simplify(big_mesh, 1000)  # the worker started
    ticks, stop = [0], threading.Event()

    def tick():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        time.sleep(0.05)
        counts = {}
        from fast_simplification import simplify as fast_simplify

        v, f = np.ascontiguousarray(big_mesh.vertices), np.ascontiguousarray(big_mesh.faces, np.int64)
        for name, call in (("in process", lambda: fast_simplify(points=v, triangles=f, target_count=500)),
                           ("worker", lambda: quadric.simplify(big_mesh, 500))):
            before, t0 = ticks[0], time.perf_counter()
            call()
            counts[name] = (ticks[0] - before, time.perf_counter() - t0)
    finally:
        stop.set()
        ticker.join()
    in_ticks, in_s = counts["in process"]
    worker_ticks, worker_s = counts["worker"]
    # The library's call holds the GIL throughout (the stall the worker removes): the ticker gets a
    # tick in only at the call's edges and at the interpreter's switch interval, a few per 100 ms
    # (CI saw 5 in 106 ms), against about one a millisecond while the worker decimates.
    assert in_ticks <= max(3, 0.2 * in_s / 0.001), counts
    assert worker_ticks >= 10 and worker_ticks >= 0.1 * worker_s / 0.001, counts
    assert worker_ticks / worker_s >= 3 * in_ticks / in_s, counts


def test_a_worker_that_cannot_start_falls_back_to_the_process(big_mesh, monkeypatch):
    worker = quadric._Worker()
    monkeypatch.setattr(quadric, "_WORKER", worker)
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    out = quadric.simplify(big_mesh, 1000)
    assert worker.broken
    np.testing.assert_array_equal(out.faces, big_mesh.simplify_quadric_decimation(face_count=1000).faces)


def test_a_refused_mesh_raises_as_trimesh_does(big_mesh):
    with pytest.raises(ValueError):
        quadric.simplify(big_mesh, -5)
    assert len(quadric.simplify(big_mesh, 1000).faces) <= 1100  # the worker still serves


def test_two_threads_share_the_worker(big_mesh):
    """Two threads decimating at once (the app's render thread and a recording's, say): each gets
    its own mesh's answer (one request on the worker's pipes at a time)."""
    other = trimesh.creation.icosphere(subdivisions=6, radius=2.0)
    expected = {1: big_mesh.simplify_quadric_decimation(face_count=700).vertices,
                2: other.simplify_quadric_decimation(face_count=900).vertices}
    got, errors = {}, []

    def work(key, mesh, count):
        try:
            for _ in range(3):
                got[key] = quadric.simplify(mesh, count).vertices
                np.testing.assert_array_equal(got[key], expected[key])
        except Exception as err:  # noqa: BLE001 (reported below)
            errors.append(err)

    threads = [threading.Thread(target=work, args=(1, big_mesh, 700)),
               threading.Thread(target=work, args=(2, other, 900))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert set(got) == {1, 2}
