"""Genesis' IK + motion planning tutorial flow: the script ``genesis_scripts/ik_plan_grasp.py``
runs to its end (pre-grasp IK, plan, draw, play, reach, grasp, lift), and each answer it leaves is
checked here again; ``draw_debug_path`` and the gains / force calls on their own."""

from __future__ import annotations

import contextlib
import io
import logging
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

import engine as gs
from engine import dof_gains
from engine.errors import IKStudioError

SCRIPT = Path(__file__).resolve().parent / "genesis_scripts" / "ik_plan_grasp.py"


def test_the_tutorial_style_script_runs_and_every_answer_holds(monkeypatch, caplog):
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "60"])
    monkeypatch.setattr(dof_gains, "_warned", type(dof_gains._warned)())  # a fresh "warned once" flag
    out = io.StringIO()
    with contextlib.redirect_stdout(out), caplog.at_level(logging.WARNING, logger="engine"):
        g = runpy.run_path(str(SCRIPT), run_name="__main__")
    assert out.getvalue().strip().splitlines()[-1].startswith("ok: planned 60 waypoints")
    franka, path, goal, start = g["franka"], g["path"], g["goal"], g["start"]
    assert path.shape == (60, 9)
    np.testing.assert_allclose(path[0], start, atol=1e-5)
    np.testing.assert_allclose(path[-1], goal, atol=1e-5)
    dense = (path[:-1, None] + np.linspace(0, 1, 10)[None, :, None] * (path[1:] - path[:-1])[:, None]).reshape(-1, 9)
    assert not any(franka.in_collision(q) for q in dense)  # between waypoints too
    hand = franka.get_link("hand")
    for name, z in (("goal", 0.25), ("q_reach", 0.13), ("q_lift", 0.28)):
        pos, _ = franka.forward_kinematics(g[name])
        assert np.linalg.norm(pos[hand.idx_local] - [0.65, 0.0, z]) < 1e-3, name
    warnings = [r for r in caplog.records if "control_dofs_force" in r.getMessage()]
    assert len(warnings) == 1 and "kinematic" in warnings[0].getMessage()
    franka.control_dofs_force(np.zeros(2), g["fingers"])  # once per process: no second line
    assert len([r for r in caplog.records if "control_dofs_force" in r.getMessage()]) == 1


@pytest.fixture(scope="module")
def batched():
    gs.init(backend="cpu", precision="32", seed=0)
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.build(n_envs=3)
    return scene, robot


def test_draw_debug_path_is_visualizer_only_and_clears(batched):
    scene, robot = batched
    qpos_before, links_before = robot.get_qpos().copy(), scene.entities if hasattr(scene, "entities") else None
    path = np.linspace(robot.tree.default_qpos, robot.tree.default_qpos + 0.3, 12)
    one = scene.draw_debug_path(path, robot, density=0.5, frame_scaling=2.0)  # (T, n_qs): env 0
    every = scene.draw_debug_path(np.repeat(path[:, None], 3, axis=1), robot, link_idx=5)  # (T, n_envs, n_qs)
    assert one.is_drawn and every.is_drawn and one.kind == every.kind == "path"
    assert one.env_idx.tolist() == [0] and every.env_idx.tolist() == [0, 1, 2]
    # the tube follows the link: its first segment starts at the link's FK position
    pose = robot.configuration.fk_poses(path.astype(np.float32))
    tube = [local for key, local in one._parts if key[1] == (1.0, 0.85, 0.1, 0.9)][0]  # noqa: SLF001
    np.testing.assert_allclose(tube[0, :, :3, 3], pose[:-1, -1, :3], atol=1e-5)
    np.testing.assert_allclose(robot.get_qpos(), qpos_before)  # nothing in the state moved
    third = scene.draw_debug_path(path, robot, env_idx=2)  # beyond Genesis: another env's cell
    assert third.env_idx.tolist() == [2]
    with pytest.raises(IKStudioError, match="env_idx"):
        scene.draw_debug_path(path, robot, env_idx=3)
    scene.clear_debug_object(third)
    scene.clear_debug_object(one)
    assert not one.is_drawn and every.is_drawn
    with pytest.raises(IKStudioError, match="qpos"):
        scene.draw_debug_path(np.zeros((5, 4)), robot)
    with pytest.raises(IKStudioError, match="density"):
        scene.draw_debug_path(path, robot, density=0)
    with pytest.raises(IKStudioError, match="link_idx"):
        scene.draw_debug_path(path, robot, link_idx=99)
    scene.clear_debug_objects()
    assert links_before is None or scene.entities == links_before


def test_gains_and_force_ranges_are_checked_and_stored(batched):
    _, robot = batched
    robot.set_dofs_kp(np.arange(9.0))
    robot.set_dofs_kv([5.0, 6.0], dofs_idx_local=[7, 8], envs_idx=[1])
    kv = robot.get_dofs_kv()
    assert kv.shape == (3, 9) and kv[1, 7:].tolist() == [5.0, 6.0] and kv[0, 7:].tolist() == [0.0, 0.0]
    np.testing.assert_array_equal(robot.get_dofs_kp()[2], np.arange(9.0))
    robot.set_dofs_force_range(-np.ones(9), np.ones(9))
    lo, hi = robot.get_dofs_force_range(dofs_idx_local=[0])
    assert lo.shape == (3, 1) and (lo == -1).all() and (hi == 1).all()
    for call, name in ((lambda: robot.set_dofs_kp(-np.ones(9)), "kp"), (lambda: robot.set_dofs_kv(np.ones(4)), "kv"),
                       (lambda: robot.set_dofs_force_range(np.ones(9), -np.ones(9)), "lower, upper"),
                       (lambda: robot.control_dofs_force(np.full(9, np.nan)), "force"),
                       (lambda: robot.set_dofs_kp(np.ones(2), dofs_idx_local=[0, 99]), "dofs_idx_local")):
        with pytest.raises(IKStudioError, match=name):
            call()
    np.testing.assert_array_equal(robot.get_dofs_kp()[2], np.arange(9.0))  # a refused call changed nothing
