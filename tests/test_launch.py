"""The fast launch path (engine.runtime.launch) gives what taichi's own launch path gives."""

import numpy as np
import pytest

import engine as ik
from engine.kernels import fk
from engine.runtime import state as runtime_state


@pytest.fixture(scope="module")
def panda():
    ik.init(backend="cpu", precision="64")
    scene = ik.Scene()
    robot = scene.add_entity(ik.morphs.MJCF(file="panda"))
    scene.build(n_envs=4)
    return robot


def test_fast_path_matches_taichi_path_across_shapes(panda):
    rng = np.random.default_rng(0)
    lo, hi = panda.q_limits
    for batch, serial in ((3, True), (5, True), (3, False), (1, True), (700, False), (3, True)):
        # new shapes reuse the cached launch context; the serial (calling-thread) and parallel
        # variants compute the same poses
        q = np.ascontiguousarray(panda.tree.apply_mimic(rng.uniform(lo, hi, (batch, panda.n_qs))))
        fast_pose = np.zeros((batch, panda.configuration.packed.pose_rows, 7))
        slow_pose = np.zeros_like(fast_pose)
        other_pose = np.zeros_like(fast_pose)
        fk.forward_kinematics(q, *panda.configuration.packed.args(), fast_pose, serial, 0)
        fk.forward_kinematics.kernel(q, *panda.configuration.packed.args(), slow_pose, serial, 0)
        fk.forward_kinematics(q, *panda.configuration.packed.args(), other_pose, not serial, 0)
        np.testing.assert_array_equal(fast_pose, slow_pose)
        np.testing.assert_array_equal(fast_pose, other_pose)
        assert np.abs(fast_pose).sum() > 0


def test_small_batches_run_serially_on_the_cpu_only():
    from engine.runtime import dispatch

    assert dispatch.serial(16) and not dispatch.serial(100_000)


def test_fast_path_rejects_non_contiguous(panda):
    q = np.zeros((4, panda.n_qs * 2))[:, ::2]
    pose = np.zeros((4, panda.configuration.packed.pose_rows, 7))
    fk.forward_kinematics(np.zeros((4, panda.n_qs)), *panda.configuration.packed.args(), pose, True, 0)  # compile it
    with pytest.raises(ValueError, match="C-contiguous"):
        fk.forward_kinematics(q, *panda.configuration.packed.args(), pose, True, 0)


def test_reused_and_replaced_arrays_are_bound_right(panda):
    """An array passed again is not re-bound (same object, same memory), a new one always is, even
    when it takes a dead array's place in memory, and in-place changes are seen."""
    rng = np.random.default_rng(1)
    lo, hi = panda.q_limits
    pose = np.zeros((3, panda.configuration.packed.pose_rows, 7))
    want = np.zeros_like(pose)
    q = np.ascontiguousarray(panda.tree.apply_mimic(rng.uniform(lo, hi, (3, panda.n_qs))))
    for step in range(6):
        if step % 2:
            q[:] = panda.tree.apply_mimic(rng.uniform(lo, hi, (3, panda.n_qs)))  # same object, new values
        else:
            q = np.ascontiguousarray(panda.tree.apply_mimic(rng.uniform(lo, hi, (3, panda.n_qs))))  # new object
            pose = np.zeros_like(pose)
        fk.forward_kinematics(q, *panda.configuration.packed.args(), pose, True, 0)
        fk.forward_kinematics.kernel(q.copy(), *panda.configuration.packed.args(), want, True, 0)
        np.testing.assert_array_equal(pose, want)


def test_compiled_kernels_are_bounded_and_dropped_with_their_program():
    """engine.runtime.launch.CompiledCache: one build per key, least recently used dropped beyond its
    size, and every kernel of an earlier engine.init dropped once a later one asks."""
    from engine.runtime.launch import CompiledCache

    cache, built = CompiledCache(max_size=2), []

    def build(name):
        built.append(name)
        return object()

    a = cache.get("a", lambda: build("a"))
    assert cache.get("a", lambda: build("again")) is a and built == ["a"]
    cache.get("b", lambda: build("b"))
    cache.get("a", lambda: build("again"))  # a is now the most recently used
    cache.get("c", lambda: build("c"))  # b goes
    assert len(cache) == 2 and built == ["a", "b", "c"]
    cache.get("b", lambda: build("b2"))
    assert built[-1] == "b2"
    runtime_state.STATE.generation += 1  # what engine.init keeping the runtime does: the kernels stay
    try:
        assert cache.get("b", lambda: build("b4")) is not None and built[-1] == "b2" and len(cache) == 2
    finally:
        runtime_state.STATE.generation -= 1
    runtime_state.STATE.runtime += 1  # what a reset of taichi does: they go
    try:
        assert cache.get("b", lambda: build("b3")) is not None and built[-1] == "b3" and len(cache) == 1
    finally:
        runtime_state.STATE.runtime -= 1


def test_float_arguments_reach_the_kernel_as_given(panda):
    import taichi as ti

    from engine.runtime.launch import fast

    @ti.kernel
    def scaled(x: ti.types.ndarray(), factor: ti.f32, shift: ti.i32, out: ti.types.ndarray()):
        for i in range(x.shape[0]):
            out[i] = x[i] * factor + shift

    kernel = fast(scaled)
    x = np.arange(5, dtype=np.float64)
    for factor, shift in ((0.5, 1), (2.25, -3), (1e30, 0)):  # the first call compiles, the others rebind
        out = np.zeros(5)
        kernel(x, factor, shift, out)
        np.testing.assert_allclose(out, x * np.float32(factor) + shift, rtol=1e-6)


def test_each_first_launch_is_recorded_with_its_kernel_and_thread(panda):
    """Every signature's first launch (a compile, or a load from taichi's cache) is counted and
    recorded with the kernel's name, its time and the thread that ran it; a later launch of the
    same signature is not (the app's window reads these: tests/test_app_frame_gaps.py)."""
    import threading

    import taichi as ti

    from engine.runtime import launch

    @ti.kernel
    def doubled(x: ti.types.ndarray(), out: ti.types.ndarray()):
        for i in range(x.shape[0]):
            out[i] = 2 * x[i]

    kernel = launch.fast(doubled)
    before = launch.kernels_prepared()
    x, out = np.arange(3.0), np.zeros(3)
    worker = threading.Thread(target=kernel, args=(x, out), name="a-worker")
    worker.start()
    worker.join()
    kernel(x, out)  # the same signature again: nothing new
    kernel(np.arange(3, dtype=np.int32), np.zeros(3, np.int32))  # another signature: prepared in this thread
    new = launch.prepared_since(before)
    assert launch.kernels_prepared() == before + 2
    assert [(p.number, p.kernel, p.thread) for p in new] == [
        (before + 1, f"{__name__}.test_each_first_launch_is_recorded_with_its_kernel_and_thread.<locals>.doubled",
         "a-worker"),
        (before + 2, f"{__name__}.test_each_first_launch_is_recorded_with_its_kernel_and_thread.<locals>.doubled",
         threading.current_thread().name)]
    assert all(p.seconds > 0 for p in new)
    assert launch.prepared_since(before + 2) == []
    np.testing.assert_array_equal(out, 2 * x)


def test_a_signature_compiles_under_the_config_its_template_arguments_choose(panda):
    """``compile_config`` as a function of a signature's compile-time arguments: each signature
    compiles under the fields it gives (read here while the kernel is traced), the choice is made
    once per signature, and the config is restored after. The generic solver uses it to compile its
    collision-avoiding form without taichi's IR optimiser on the CPU only."""
    import taichi as ti
    from taichi.lang import impl

    from engine.kernels import generic
    from engine.kernels.tables import COLLIDE
    from engine.runtime.launch import fast

    seen = []

    def config(templates):
        seen.append(dict(templates))
        return {"advanced_optimization": False} if templates["flag"] else {}

    @ti.kernel
    def probe(out: ti.types.ndarray(), flag: ti.template()):
        value = ti.static(int(impl.current_cfg().advanced_optimization))
        out[0] = value

    kernel, out = fast(probe, config), np.zeros(1, np.int32)
    default = impl.current_cfg().advanced_optimization
    assert default  # taichi's default, which the CPU keeps
    for flag, want in ((1, 0), (0, 1), (1, 0)):
        kernel(out, flag)
        assert out[0] == want, flag
    assert seen == [{"flag": 1}, {"flag": 0}]
    assert impl.current_cfg().advanced_optimization == default
    assert generic.solve.compile_config is generic.compile_config
    assert generic.compile_config({"kinds": 1 << COLLIDE}) == {"advanced_optimization": False}
    assert generic.compile_config({"kinds": 0}) == {}
    runtime_state.STATE.arch = "vulkan"
    try:
        assert generic.compile_config({"kinds": 1 << COLLIDE}) == {}
    finally:
        runtime_state.STATE.arch = "cpu"
