"""engine.runtime.garbage: full collections paced by what closed scenes let go."""

import gc

import numpy as np
import pytest

from engine.runtime import garbage


@pytest.fixture
def collections():
    """Full collections run from here on (counted by a gc callback), with nothing pending before."""
    gc.collect()
    garbage.reset()
    seen = []

    def count(phase, info):
        if phase == "stop" and info["generation"] == 2:
            seen.append(1)

    gc.callbacks.append(count)
    yield seen
    gc.callbacks.remove(count)


def test_a_full_collection_every_few_closes(collections):
    done = [garbage.let_go(1000) for _ in range(2 * garbage.GC_AFTER_RELEASES)]
    assert done == ([False] * (garbage.GC_AFTER_RELEASES - 1) + [True]) * 2
    assert len(collections) == 2 and garbage.pending() == (0, 0)


def test_a_large_release_collects_at_once(collections):
    assert not garbage.let_go(garbage.GC_AFTER_BYTES // 2)
    assert garbage.pending() == (garbage.GC_AFTER_BYTES // 2, 1)
    assert garbage.let_go(garbage.GC_AFTER_BYTES // 2)
    assert len(collections) == 1 and garbage.pending() == (0, 0)


def test_the_cycles_of_a_released_mesh_are_freed_by_the_collection_it_triggers(collections):
    import weakref

    import trimesh

    mesh = trimesh.creation.icosphere(subdivisions=3)
    mesh.metadata["owner"] = mesh  # a reference cycle, as trimesh's own caches and visuals make
    gone = weakref.ref(mesh)
    held = garbage.mesh_bytes(mesh)
    assert held == mesh.vertices.nbytes + mesh.faces.nbytes
    gc.disable()  # only the engine's collection may free it
    try:
        del mesh
        assert gone() is not None  # reference counting alone does not free a cycle
        assert garbage.let_go(garbage.GC_AFTER_BYTES)
        assert gone() is None
    finally:
        gc.enable()
    assert garbage.mesh_bytes(None) == 0
    assert garbage.mesh_bytes(np.zeros(3)) == 0  # no vertices, no faces


def test_bytes_alone_do_not_count_a_close(collections):
    assert not garbage.let_go(1000, close=False)
    assert garbage.pending() == (1000, 0)


def test_the_window_hands_freed_memory_back(collections):
    """app.sim.tuning.release_freed_memory (after a robot switch in the window's process): the
    replaced scene's cycles are collected and, on Linux with glibc, malloc's free pages go back to
    the system (in the window, Panda <-> UR5 switches grew the process 533 -> 811 MB over 6
    switches without it, and stayed at 537-630 MB with it)."""
    import sys
    import weakref

    from app.sim.tuning import release_freed_memory

    class Node:
        pass

    node = Node()
    node.me = node  # a cycle
    gone = weakref.ref(node)
    garbage.let_go(1000)
    gc.disable()  # only the call may free it
    try:
        del node
        trimmed = release_freed_memory()
        assert gone() is None and garbage.pending() == (0, 0)
    finally:
        gc.enable()
    glibc = sys.platform.startswith("linux") and "glibc" in " ".join(__import__("platform").libc_ver())
    assert trimmed == glibc


def test_a_new_render_thread_collects_first_once_enough_are_open(collections):
    """(The threads of scenes let go without a close are freed only by a full collection.)"""
    assert not garbage.before_opening(garbage.GC_AT_OPEN - 1) and not collections
    garbage.let_go(1000)
    assert garbage.before_opening(garbage.GC_AT_OPEN)
    assert len(collections) == 1 and garbage.pending() == (0, 0)
