"""The serial / parallel choice of CPU launches (``engine.runtime.threads``).

The choice is driven by recorded launch times; these tests feed it chosen times (nothing here is
timed) and check that it tries both modes, runs the faster, keeps checking the slower, follows a
change, and that the FK answers the same in both modes.
"""

import numpy as np

import engine
from engine import morphs
from engine.runtime import state as runtime_state
from engine.runtime import threads
from engine.runtime.threads import ThreadChoice


def drive(choice: ThreadChoice, key, serial_s: float, parallel_s: float, launches: int) -> list[bool]:
    """Modes chosen over ``launches`` launches whose times are the given ones."""
    modes = []
    for _ in range(launches):
        serial = choice.serial(key)
        choice.record(key, serial, serial_s if serial else parallel_s)
        modes.append(serial)
    return modes


def test_tries_both_modes_then_runs_the_faster_and_keeps_checking():
    choice = ThreadChoice(explore_every=8, window=5)
    modes = drive(choice, "k", serial_s=1.0, parallel_s=2.0, launches=64)
    # parallel first, then serial, three times each (the first of each is not counted)
    assert modes[:6] == [False] * 3 + [True] * 3
    assert choice.preferred("k") is True
    later = modes[6:]
    assert later.count(False) == sum(1 for i in range(7, 65) if i % 8 == 0)  # the slower one, every 8th
    assert all(m for i, m in enumerate(later, start=7) if i % 8)


def test_first_launch_of_each_mode_is_not_counted():
    choice = ThreadChoice()
    for serial, seconds in ((False, 1.0), (False, 0.1), (False, 0.1), (True, 5.0), (True, 0.2), (True, 0.2)):
        assert choice.serial("k") is serial
        choice.record("k", serial, seconds)  # 1.0 and 5.0: compiling
    assert choice.preferred("k") is False


def test_follows_the_machine_when_the_faster_mode_changes():
    choice = ThreadChoice(explore_every=4, window=3)
    drive(choice, "k", serial_s=1.0, parallel_s=2.0, launches=40)
    assert choice.preferred("k") is True
    modes = drive(choice, "k", serial_s=3.0, parallel_s=2.0, launches=40)  # serial got slower
    assert choice.preferred("k") is False
    assert modes[-8:].count(True) == 2  # serial only on every 4th launch now


def test_keys_are_independent():
    choice = ThreadChoice()
    drive(choice, "a", serial_s=1.0, parallel_s=2.0, launches=10)
    drive(choice, "b", serial_s=2.0, parallel_s=1.0, launches=10)
    assert choice.preferred("a") is True and choice.preferred("b") is False
    assert choice.preferred("never launched") is None


def test_keeps_a_bounded_number_of_keys():
    choice = ThreadChoice()
    for key in range(threads.MAX_KEYS + 10):
        drive(choice, key, serial_s=1.0, parallel_s=2.0, launches=3)
    assert len(choice._times) == len(choice._launches) == threads.MAX_KEYS
    assert 0 not in choice._times and threads.MAX_KEYS + 9 in choice._times
    assert len(choice._uncounted) <= 2 * threads.MAX_KEYS


def test_small_batches_run_serially_and_gpus_in_parallel_untimed(monkeypatch):
    monkeypatch.setattr(runtime_state.STATE, "arch", "cpu")
    choice = ThreadChoice()
    seen = []
    choice.launch("k", rows=16, run=seen.append, max_rows=256)
    assert seen == [True] and not choice._times
    monkeypatch.setattr(runtime_state.STATE, "arch", "cuda")
    choice.launch("k", rows=100_000, run=seen.append)
    assert seen == [True, False] and not choice._times


class FixedMode:
    """Stands in for ``threads.CHOICE``: every launch in one mode."""

    def __init__(self, serial: bool):
        self.mode = serial
        self.kernels = set()

    def launch(self, key, rows, run, max_rows=None):
        self.kernels.add(key[0])
        run(self.mode)


def test_fk_and_jacobian_answer_the_same_in_both_modes(monkeypatch):
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    n = 1500  # lane FK, with a partial block of lanes at the end
    scene.build(n_envs=n)
    q = np.random.default_rng(3).uniform(*robot.q_limits, (n, robot.n_qs))
    answers = []
    for serial in (True, False):
        fixed = FixedMode(serial)
        monkeypatch.setattr(threads, "CHOICE", fixed)
        lane_pos, lane_quat = robot.forward_kinematics(q)  # per-robot lane FK
        robot.set_qpos(q)  # generic FK into the state
        answers.append([lane_pos.copy(), lane_quat.copy(), robot.get_links_pos(), robot.get_links_quat(),
                        robot.get_jacobian(robot.get_link("hand"))])
        assert fixed.kernels == {"lane_fk", "fk", "jacobian"}
    for in_thread, on_pool in zip(*answers):
        np.testing.assert_array_equal(in_thread, on_pool)
    # and the engine's own choice times both modes for a large batch
    monkeypatch.setattr(threads, "CHOICE", ThreadChoice())
    for _ in range(2 * (threads.MIN_SAMPLES + 1)):  # + 1: the first launch of a mode is not counted
        robot.forward_kinematics(q)
    assert threads.CHOICE.preferred(threads.size_class(("lane_fk", id(robot.configuration.spec)), n)) is not None
    scene.destroy()
