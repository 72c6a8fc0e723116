"""``engine.init`` picks an honest device: a hardware GPU for "gpu", never a software Vulkan device
in its place, names the device it runs on, and refuses float64 where the device has none.

The drivers' answers are faked where a test needs a device this machine lacks (a real GPU, one
without float64); the rest runs against this machine's own Vulkan loader (Mesa's lavapipe in CI).
"""

from __future__ import annotations

import copy
import os
import pickle
import warnings

import numpy as np
import pytest
from _support import require_or_fail

import engine
from engine.runtime import backend, devices
from engine.runtime import state as runtime_state
from engine.runtime.devices import VulkanDevice

LAVAPIPE = VulkanDevice(0, "llvmpipe (LLVM 15.0.6, 256 bits)", 4, True)
DISCRETE = VulkanDevice(1, "Some Discrete GPU", 2, True)
NO_F64 = VulkanDevice(1, "Some Mobile GPU", 1, False)


@pytest.fixture(autouse=True)
def _cpu_afterwards():
    """init sets TI_VISIBLE_DEVICE to the Vulkan device it picks: a faked one must not outlive its test."""
    visible = os.environ.pop("TI_VISIBLE_DEVICE", None)
    yield
    os.environ.pop("TI_VISIBLE_DEVICE", None)
    if visible is not None:
        os.environ["TI_VISIBLE_DEVICE"] = visible
    engine.init(backend="cpu")


def _fake_drivers(monkeypatch, vulkan=(), cuda=""):
    monkeypatch.setattr(devices, "vulkan_devices", lambda: None if vulkan is None else tuple(vulkan))
    monkeypatch.setattr(devices, "cuda_device_name", lambda: cuda)


def _init(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chosen = engine.init(**kwargs)
    return chosen, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_gpu_skips_a_software_vulkan_device_with_one_line(monkeypatch):
    _fake_drivers(monkeypatch, vulkan=[LAVAPIPE])
    chosen, notes = _init(backend="gpu")
    assert chosen == "cpu" and chosen.device == devices.cpu_name() and not chosen.software
    assert len(notes) == 1 and "\n" not in notes[0], notes
    assert LAVAPIPE.name in notes[0] and "software" in notes[0] and "CPU" in notes[0]


def test_gpu_tries_a_hardware_vulkan_device_first(monkeypatch):
    _fake_drivers(monkeypatch, vulkan=[LAVAPIPE, DISCRETE])
    tried = []
    monkeypatch.setattr(backend, "_try_arch",
                        lambda arch, **kw: tried.append((arch, os.environ.get("TI_VISIBLE_DEVICE"))) or False)
    chosen, notes = _init(backend="gpu")
    # no CUDA driver: Vulkan, told to run on the hardware device (loader index 1), not on lavapipe
    assert tried == [(engine.runtime.backend.ti.vulkan, str(DISCRETE.index))]
    assert chosen == "cpu" and notes == ["init: backend 'gpu' did not start; running on the CPU"]


def test_a_software_device_pinned_by_ti_visible_device_is_still_skipped(monkeypatch):
    _fake_drivers(monkeypatch, vulkan=[LAVAPIPE, DISCRETE])
    monkeypatch.setenv("TI_VISIBLE_DEVICE", "0")  # the user's pin: taichi would run on lavapipe
    candidates, notes = backend._candidates("gpu", "32")
    assert candidates == [] and LAVAPIPE.name in notes[0]
    candidates, _ = backend._candidates("vulkan", "32")
    assert candidates == [(engine.runtime.backend.ti.vulkan, LAVAPIPE)]


def test_cuda_failing_falls_back_to_vulkan_for_gpu(monkeypatch):
    _fake_drivers(monkeypatch, vulkan=[DISCRETE], cuda="Some CUDA GPU")
    candidates, _ = backend._candidates("gpu", "32")
    assert [arch for arch, _ in candidates] == [engine.runtime.backend.ti.cuda, engine.runtime.backend.ti.vulkan]
    _fake_drivers(monkeypatch, vulkan=[NO_F64], cuda="Some CUDA GPU")  # float64: CUDA, else the CPU
    candidates, _ = backend._candidates("gpu", "64")
    assert [arch for arch, _ in candidates] == [engine.runtime.backend.ti.cuda]


def test_an_unanswering_vulkan_loader_leaves_taichi_to_try(monkeypatch):
    _fake_drivers(monkeypatch, vulkan=None)
    candidates, notes = backend._candidates("gpu", "32")
    assert candidates == [(engine.runtime.backend.ti.vulkan, None)] and notes == []


def test_cuda_comes_before_vulkan_for_gpu(monkeypatch):
    _fake_drivers(monkeypatch, vulkan=[DISCRETE], cuda="Some CUDA GPU")
    candidates, notes = backend._candidates("gpu", "32")
    assert candidates[0][0] == engine.runtime.backend.ti.cuda and notes == []
    assert candidates[0][1].name == "Some CUDA GPU"


def test_best_vulkan_device_follows_taichi_order(monkeypatch):
    monkeypatch.delenv("TI_VISIBLE_DEVICE", raising=False)
    assert devices.best_vulkan_device([LAVAPIPE, NO_F64, DISCRETE]) == DISCRETE
    assert devices.best_vulkan_device([LAVAPIPE, NO_F64]) == NO_F64
    assert devices.best_vulkan_device([]) is None
    monkeypatch.setenv("TI_VISIBLE_DEVICE", "0")
    assert devices.best_vulkan_device([LAVAPIPE, DISCRETE]) == LAVAPIPE
    monkeypatch.setenv("TI_VISIBLE_DEVICE", "1")  # by loader index, not by position in the list
    assert devices.best_vulkan_device([DISCRETE]) == DISCRETE and devices.best_vulkan_device([LAVAPIPE]) is None
    assert LAVAPIPE.software and not DISCRETE.software
    assert VulkanDevice(0, "SwiftShader Device (Subzero)", 3, True).software  # by name, whatever its type


@pytest.mark.parametrize("requested", ["vulkan", "gpu"])
def test_float64_on_a_device_without_it_is_refused_before_any_reset(monkeypatch, requested):
    engine.init(backend="cpu")
    before = (runtime_state.STATE.generation, runtime_state.STATE.arch, runtime_state.STATE.precision)
    _fake_drivers(monkeypatch, vulkan=[NO_F64])
    with pytest.raises(ValueError, match=r"^precision\b") as info:
        engine.init(backend=requested, precision="64")
    assert NO_F64.name in str(info.value)
    assert (runtime_state.STATE.generation, runtime_state.STATE.arch, runtime_state.STATE.precision) == before


def test_the_returned_backend_reads_as_its_arch():
    chosen = engine.init(backend="cpu")
    assert chosen == "cpu" and str(chosen) == "cpu" and isinstance(chosen, str)
    assert chosen.device == devices.cpu_name() and chosen.device
    assert backend.current() == chosen and backend.current().device == chosen.device
    assert chosen.describe() == f"cpu: {chosen.device}" and chosen.timing_note() == ""
    assert "device=" in repr(chosen)
    for clone in (copy.copy(chosen), pickle.loads(pickle.dumps(chosen))):
        assert clone == "cpu" and clone.device == chosen.device and clone.software == chosen.software


def test_this_machine_gpu_choice_is_honest():
    """No mocks: on a machine whose only Vulkan device is software (CI), "gpu" runs on the CPU and
    names the device it skipped; on a machine with a GPU it runs there."""
    found = devices.vulkan_devices()
    chosen, notes = _init(backend="gpu")
    if devices.cuda_device_name() or devices.hardware_vulkan_devices(found):
        assert chosen in ("cuda", "vulkan") and not chosen.software and notes == []
    else:
        assert chosen == "cpu" and len(notes) == 1
        for device in found:
            assert device.name in notes[0]


def test_vulkan_forced_runs_on_whatever_vulkan_device_there_is():
    found = devices.vulkan_devices()
    require_or_fail(found, "no Vulkan device (install Debian's mesa-vulkan-drivers for lavapipe)")
    chosen, notes = _init(backend="vulkan")
    assert chosen == "vulkan" and notes == []
    named = [d for d in found if d.name == chosen.device]
    assert len(named) == 1 and chosen.software == named[0].software
    assert os.environ["TI_VISIBLE_DEVICE"] == str(named[0].index)  # taichi was told to use that one
    if chosen.software:
        assert "not GPU speed" in chosen.timing_note()
    scene = engine.Scene()  # and it computes
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=2)
    assert np.isfinite(robot.get_links_pos()).all()


def test_lavapipe_is_found_as_a_cpu_device():
    """The loader query itself (a real driver): Mesa's device reports type CPU and float64."""
    found = devices.vulkan_devices()
    require_or_fail(found, "no Vulkan device (install Debian's mesa-vulkan-drivers for lavapipe)")
    for d in found:
        assert d.name and d.kind in devices.DEVICE_TYPES.values()
    mesa = [d for d in found if "llvmpipe" in d.name]
    if mesa:
        assert mesa[0].device_type == 4 and mesa[0].software and mesa[0].float64


def test_bad_types_are_refused_by_name():
    with pytest.raises(TypeError, match=r"^seed\b"):
        engine.init(backend="cpu", seed="7")
    with pytest.raises(TypeError, match=r"^debug\b"):
        engine.init(backend="cpu", debug="no")


def test_device_arrays_alive_across_a_reset_free_nothing_of_the_next_program():
    """A device array still held when taichi is reset (``destroy``, or an ``init`` that does not keep
    the runtime) must not, when it dies later, free the new program's array that now sits at its
    old address (taichi's own __del__ would)."""
    require_or_fail(devices.vulkan_devices(), "no Vulkan device (install Debian's mesa-vulkan-drivers for lavapipe)")
    from engine.runtime import memory

    engine.init(backend="vulkan")
    old = [memory.scratch((16,), np.float32) for _ in range(8)]
    engine.destroy()
    engine.init(backend="vulkan")
    assert all(type(a) is memory._Orphaned for a in old)
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=4)
    del old  # dies in the new program: frees nothing of it
    res = robot.inverse_kinematics(link="hand", pos=[0.4, 0.0, 0.3], seed=0, kernel="generic", return_info=True)
    assert res.success.all() and np.isfinite(robot.get_jacobian("hand")).all()


def test_cpu_kernels_compile_without_taichis_cfg_optimisation():
    """The CPU's compile setting (docs/backends.md: 3.5-4.5x faster cold compiles, same speed) is the
    one taichi runs with; a software Vulkan device gets it too, a GPU keeps taichi's default."""
    from taichi.lang import impl

    engine.init(backend="cpu")
    assert impl.current_cfg().cfg_optimization is False
    lavapipe = VulkanDevice(0, "llvmpipe (LLVM 15.0.6, 256 bits)", 4, True)
    gpu = VulkanDevice(0, "NVIDIA GeForce RTX 4090", 2, True)
    assert lavapipe.software and not gpu.software
    assert backend._compile_settings(backend.ti.vulkan, lavapipe) == {"cfg_optimization": False}
    assert backend._compile_settings(backend.ti.vulkan, gpu) == {}
    assert backend._compile_settings(backend.ti.cuda, None) == {}


def test_init_with_the_settings_in_use_keeps_the_compiled_kernels():
    """``init`` again with the backend in use by name, the same precision and debug flag starts the
    engine anew (scenes built before refuse, the seed is the new one) but keeps taichi's runtime:
    the same solve in a new scene compiles and loads nothing, and gives the same answers. Any other
    change, or ``destroy``, resets the runtime."""
    from engine.errors import StateError
    from engine.runtime import launch

    def solve(seed):
        scene = engine.Scene()
        robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
        scene.build(n_envs=8)
        target = robot.forward_kinematics(np.tile(np.linspace(-0.4, 0.4, robot.n_qs), (8, 1)))
        hand = robot.get_link("hand")
        i = hand.idx_local
        return robot, robot.inverse_kinematics(hand, target[0][:, i], target[1][:, i], seed=seed, return_info=True)

    engine.init(backend="cpu", precision="32", seed=1)
    runtime, generation = runtime_state.STATE.runtime, runtime_state.STATE.generation
    old_robot, first = solve(seed=None)
    prepared = launch.kernels_prepared()
    assert engine.init(backend="cpu", precision="32", seed=1) == "cpu"
    assert runtime_state.STATE.runtime == runtime and runtime_state.STATE.generation == generation + 1
    with pytest.raises(StateError):
        old_robot.get_qpos()  # built before this init
    _, again = solve(seed=None)
    assert launch.kernels_prepared() == prepared, "a kept runtime compiled or loaded a kernel again"
    np.testing.assert_array_equal(again.qpos, first.qpos)  # the same seed from init: the same draws
    for change in (dict(precision="64"), dict(debug=True)):
        engine.init(backend="cpu", **change)
        assert runtime_state.STATE.runtime > runtime, change
        runtime = runtime_state.STATE.runtime
    engine.init(backend="cpu")
    runtime = runtime_state.STATE.runtime
    engine.destroy()
    engine.init(backend="cpu")
    assert runtime_state.STATE.runtime > runtime + 1  # destroy reset it, and init started another
