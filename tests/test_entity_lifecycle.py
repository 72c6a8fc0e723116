"""An entity's state objects live from ``scene.build()`` to ``scene.destroy()``: any call that needs
them, before or after, is one clear StateError saying which, never an AttributeError."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.errors import StateError


def _calls(robot):
    hand = robot.get_link("hand")
    return {
        "get_qpos": lambda: robot.get_qpos(),
        "set_qpos": lambda: robot.set_qpos(np.zeros(robot.n_qs)),
        "forward_kinematics": lambda: robot.forward_kinematics(np.zeros(robot.n_qs)),
        "get_jacobian": lambda: robot.get_jacobian(hand),
        "inverse_kinematics": lambda: robot.inverse_kinematics(link=hand, pos=[0.4, 0, 0.3]),
        "inverse_kinematics_multilink": lambda: robot.inverse_kinematics_multilink(links=[hand], poss=[[0.4, 0, 0.3]]),
        "solve_ik": lambda: robot.solve_ik([engine.tasks.PoseTask(hand, pos=[0.4, 0, 0.3])]),
        "collision_distance": lambda: robot.collision_distance(),
        "in_collision": lambda: robot.in_collision(),
        "get_links_pos": lambda: robot.get_links_pos(),
        "control_dofs_position": lambda: robot.control_dofs_position(np.zeros(robot.n_dofs)),
        "state_nbytes": lambda: robot.state_nbytes(),
        "configuration": lambda: robot.configuration,
    }


@pytest.fixture
def unbuilt():
    engine.init(backend="cpu")
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    return scene, robot


def test_calls_before_build_say_build_first(unbuilt):
    _, robot = unbuilt
    assert robot.get_link("hand").name == "hand"  # structure queries work before build, as in Genesis
    for name, call in _calls(robot).items():
        with pytest.raises(StateError, match=r"not built: call scene.build\(\) first"):
            call()
        assert name


def test_calls_after_destroy_say_destroyed(unbuilt):
    scene, robot = unbuilt
    scene.build(n_envs=2)
    q = robot.get_qpos()
    assert q.shape == (2, robot.n_qs)
    scene.destroy()
    for call in _calls(robot).values():
        with pytest.raises(StateError, match="destroyed"):
            call()


def test_debug_drawings_after_destroy_say_the_visualizer_is_closed(unbuilt):
    """(They returned a handle marked "drawn" that nothing would ever draw.)"""
    scene, robot = unbuilt
    scene.build(n_envs=2)
    kept = scene.draw_debug_sphere([0.0, 0.0, 1.0])
    hand = robot.get_link("hand")
    draws = {
        "draw_debug_frame": lambda: scene.draw_debug_frame(np.eye(4)),
        "draw_debug_sphere": lambda: scene.draw_debug_sphere([0.0, 0.0, 1.0]),
        "draw_debug_spheres": lambda: scene.draw_debug_spheres(np.zeros((3, 3))),
        "draw_debug_line": lambda: scene.draw_debug_line([0, 0, 0], [0, 0, 1]),
        "draw_debug_arrow": lambda: scene.draw_debug_arrow([0, 0, 0]),
        "draw_debug_path": lambda: scene.draw_debug_path(np.zeros((4, robot.n_qs)), robot, hand.idx_local),
    }
    scene.destroy()
    for name, draw in draws.items():
        with pytest.raises(StateError, match=f"{name}: the scene's visualizer is closed"):
            draw()
    scene.clear_debug_object(kept)  # letting go of an old drawing stays harmless
    scene.clear_debug_objects()


def test_calls_after_a_new_init_say_rebuild(unbuilt):
    scene, robot = unbuilt
    scene.build()
    engine.init(backend="cpu")
    with pytest.raises(StateError, match="engine.init"):
        robot.get_qpos()
