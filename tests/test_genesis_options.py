"""``gs.options``, ``gs.surfaces`` and ``gs.materials``: Genesis' field names and defaults, errors
that name the field, and the options that take effect here (dt, joint limits, the camera, the
world frame, background and ambient light, rendered envs, surface colours, show_FPS)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _support import skip_or_fail

import engine as gs

RES = (320, 240)


@pytest.fixture(scope="module", autouse=True)
def cpu():
    gs.init(backend=gs.cpu, precision="32")


# -- defaults and errors -----------------------------------------------------------------------------
def test_genesis_defaults():
    sim, rigid, viewer, vis = gs.options.SimOptions(), gs.options.RigidOptions(), gs.options.ViewerOptions(), \
        gs.options.VisOptions()
    assert (sim.dt, sim.substeps, sim.gravity, sim.floor_height, sim.requires_grad) == \
        (0.01, 1, (0, 0, -9.81), 0, False)
    assert (rigid.dt, rigid.gravity, rigid.enable_collision, rigid.enable_joint_limit, rigid.enable_self_collision,
            rigid.enable_adjacent_collision, rigid.max_collision_pairs, rigid.IK_max_targets, rigid.constraint_solver,
            rigid.iterations, rigid.tolerance) == (None, None, True, True, True, False, 150, 6, "Newton", 25, None)
    assert (viewer.res, viewer.refresh_rate, viewer.max_FPS, viewer.camera_pos, viewer.camera_lookat, viewer.camera_up,
            viewer.camera_fov) == (None, 60, 60, (3.5, 0.5, 2.5), (0.0, 0.0, 0.5), (0.0, 0.0, 1.0), 40)
    assert (vis.show_world_frame, vis.world_frame_size, vis.show_link_frame, vis.link_frame_size, vis.background_color,
            vis.ambient_light, vis.rendered_envs_idx) == (False, 1.0, False, 0.2, (0.04, 0.08, 0.12), (0.1, 0.1, 0.1),
                                                          None)
    assert gs.surfaces.Rough().roughness == 1.0 and gs.surfaces.Smooth().roughness == 0.1
    assert gs.surfaces.Reflective().ior == 2.0 and gs.surfaces.Metal().metal_type == "iron"
    assert gs.materials.Rigid().rho is None and gs.materials.Rigid().coup_friction == 0.1


def test_vectors_take_lists_tuples_and_arrays():
    viewer = gs.options.ViewerOptions(camera_pos=[0, -2, 1.5], camera_lookat=np.array([0.0, 0.0, 0.5]), res=(64, 48))
    assert viewer.camera_pos == (0.0, -2.0, 1.5) and viewer.camera_lookat == (0.0, 0.0, 0.5) and viewer.res == (64, 48)
    assert viewer.camera_set and not gs.options.ViewerOptions(res=(64, 48)).camera_set


@pytest.mark.parametrize("cls, kwargs, kind, field", [
    (gs.options.ViewerOptions, {"camera_fovy": 40}, TypeError, "camera_fovy"),
    (gs.options.RigidOptions, {"enable_colision": False}, TypeError, "enable_colision"),
    (gs.options.SimOptions, {"dtt": 0.1}, TypeError, "dtt"),
    (gs.options.VisOptions, {"show_worldframe": True}, TypeError, "show_worldframe"),
    (gs.surfaces.Default, {"colour": (1, 0, 0)}, TypeError, "colour"),
    (gs.materials.Rigid, {"density": 1000}, TypeError, "density"),
    (gs.options.ViewerOptions, {"camera_fov": 200}, ValueError, "camera_fov"),
    (gs.options.ViewerOptions, {"camera_fov": "wide"}, TypeError, "camera_fov"),
    (gs.options.ViewerOptions, {"camera_pos": (1, 2)}, TypeError, "camera_pos"),
    (gs.options.ViewerOptions, {"res": (0, 480)}, ValueError, "res"),
    (gs.options.ViewerOptions, {"camera_pos": (0, 0, 0.5)}, ValueError, "camera_lookat"),
    (gs.options.SimOptions, {"dt": -0.01}, ValueError, "dt"),
    (gs.options.SimOptions, {"dt": float("nan")}, ValueError, "dt"),
    (gs.options.SimOptions, {"substeps": 1.5}, TypeError, "substeps"),
    (gs.options.SimOptions, {"requires_grad": True}, ValueError, "requires_grad"),
    (gs.options.RigidOptions, {"enable_joint_limit": "no"}, TypeError, "enable_joint_limit"),
    (gs.options.RigidOptions, {"constraint_solver": "PGS"}, ValueError, "constraint_solver"),
    (gs.options.VisOptions, {"background_color": (1.5, 0, 0)}, ValueError, "background_color"),
    (gs.options.VisOptions, {"rendered_envs_idx": [0, 0]}, ValueError, "rendered_envs_idx"),
    (gs.surfaces.Default, {"color": (1, 0, 0, 2)}, ValueError, "color"),
    (gs.surfaces.Default, {"opacity": 1.5}, ValueError, "opacity"),
    (gs.surfaces.Plastic, {"vis_mode": "ghost"}, ValueError, "vis_mode"),
    (gs.materials.Rigid, {"friction": 50.0}, ValueError, "friction"),
])
def test_an_unknown_field_or_a_bad_value_names_the_field(cls, kwargs, kind, field):
    with pytest.raises(kind, match=field):
        cls(**kwargs)


def test_assignment_is_checked_too():
    options = gs.options.RigidOptions()
    options.enable_joint_limit = False
    assert options.enable_joint_limit is False
    with pytest.raises(TypeError, match="enable_joint_limit"):
        options.enable_joint_limit = "off"
    with pytest.raises(TypeError, match="unknown field 'enable_joint_limits'"):
        options.enable_joint_limits = False
    with pytest.raises(ValueError, match="camera_fov"):
        gs.options.ViewerOptions().camera_fov = 0


def test_the_scene_checks_and_keeps_its_options():
    with pytest.raises(TypeError, match="viewer_options"):
        gs.Scene(viewer_options=gs.options.VisOptions())
    with pytest.raises(TypeError, match="show_viewer"):
        gs.Scene(show_viewer="yes")
    with pytest.raises(ValueError, match="dt"):
        gs.Scene(dt=0.1, sim_options=gs.options.SimOptions())
    mine = gs.options.SimOptions(dt=0.05)
    scene = gs.Scene(sim_options=mine)
    mine.dt = 0.5  # the scene kept a copy
    assert scene.dt == 0.05 and scene.sim_options.dt == 0.05
    assert gs.Scene(rigid_options=gs.options.RigidOptions(dt=0.002), sim_options=mine).dt == 0.002
    assert gs.Scene(dt=0.03).dt == 0.03


# -- options that take effect ------------------------------------------------------------------------
def _panda_scene(**kwargs):
    scene = gs.Scene(**kwargs)
    robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
    return scene, robot


def test_dt_is_the_step_of_scene_step():
    for options, dt in ((gs.options.SimOptions(dt=0.05), 0.05), (gs.options.SimOptions(), 0.01)):
        scene, robot = _panda_scene(sim_options=options)
        scene.build()
        q0 = robot.get_dofs_position()
        robot.control_dofs_position(q0[:7] + 1.0, dofs_idx_local=list(range(7)))
        scene.step()
        moved = robot.get_dofs_position()[0] - q0[0]
        limit = robot.tree.velocity_limits()[0]
        assert moved == pytest.approx(limit * dt, rel=1e-5)


def test_enable_joint_limit_keeps_controlled_joints_within_their_limits():
    upper = None
    ends = {}
    for enabled in (True, False):
        scene, robot = _panda_scene(rigid_options=gs.options.RigidOptions(enable_joint_limit=enabled))
        scene.build()
        lo, hi = robot.q_limits
        upper = hi[3]  # joint4: upper limit -0.0698 rad
        target = robot.get_dofs_position()
        target[3] = upper + 1.0
        robot.control_dofs_position(target)
        for _ in range(200):
            scene.step()
        ends[enabled] = robot.get_dofs_position()[3]
    assert ends[True] == pytest.approx(upper, abs=1e-6)
    assert ends[False] > upper + 0.5


def test_build_with_zero_envs_is_genesis_unbatched():
    scene, robot = _panda_scene()
    scene.build(n_envs=0)
    assert not scene.is_batched and robot.get_qpos().shape == (robot.n_qs,)


def test_show_fps_logs_at_the_info_level(caplog):
    gs.init(backend=gs.cpu, precision="32", logging_level="info")
    try:
        scene, _ = _panda_scene()
        quiet, _ = _panda_scene(show_FPS=False)
        scene.build()
        quiet.build()
        scene._fps._t0 -= 2.0  # as if the first step came two seconds after the tracker started
        quiet_log = len(caplog.records)
        with caplog.at_level(logging.INFO, logger="engine"):
            scene.step()
            quiet.step()
        lines = [r.getMessage() for r in caplog.records[quiet_log:]]
        assert len(lines) == 1 and lines[0].startswith("Running at") and "FPS" in lines[0]
    finally:
        gs.init(backend=gs.cpu, precision="32")


# -- rendering options -------------------------------------------------------------------------------
def _render(scene):
    try:
        return scene.visualizer.render()
    except RuntimeError as err:
        skip_or_fail(f"no offscreen GL here: {err}")


def test_viewer_options_set_the_camera_of_renders():
    viewer = gs.options.ViewerOptions(camera_pos=(0.0, -2.0, 1.5), camera_lookat=(0.0, 0.0, 0.5), camera_fov=30,
                                      res=RES)
    scene, _ = _panda_scene(viewer_options=viewer)
    scene.build()
    camera = scene.visualizer.camera
    assert np.allclose(camera.pos, (0, -2, 1.5)) and np.allclose(camera.lookat, (0, 0, 0.5))
    assert camera.fov == 30 and camera.res == RES
    framed, _ = _panda_scene(viewer_options=gs.options.ViewerOptions(res=RES))  # no camera field: frame every env
    framed.build(n_envs=4)
    assert not np.allclose(framed.visualizer.camera.pos, (3.5, 0.5, 2.5)) and framed.visualizer.camera.res == RES
    scene.destroy()
    framed.destroy()


def _camera_on_origin(**vis):
    viewer = gs.options.ViewerOptions(camera_pos=(2.0, -2.0, 1.5), camera_lookat=(0.0, 0.0, 0.3), res=RES)
    return gs.Scene(viewer_options=viewer, vis_options=gs.options.VisOptions(**vis))


def test_background_world_frame_and_ambient_light_come_from_vis_options():
    plain = _camera_on_origin(show_world_frame=False, background_color=(0.2, 0.4, 0.6))
    framed = _camera_on_origin(show_world_frame=True, world_frame_size=0.5, background_color=(0.2, 0.4, 0.6))
    for scene in (plain, framed):
        scene.build()
    a, b = _render(plain), _render(framed)
    assert np.allclose(a[0, 0], np.array([0.2, 0.4, 0.6]) * 255, atol=2)  # the top-left corner is sky
    camera = framed.visualizer.camera
    tip = camera.project(np.array([0.35, 0.0, 0.0]))  # along the world frame's x axis: red
    x, y = int(tip[0]), int(tip[1])
    assert b[y, x, 0] > 150 and b[y, x, 1] < 90 and b[y, x, 2] < 90, b[y, x]
    assert not np.array_equal(a[y - 2:y + 3, x - 2:x + 3], b[y - 2:y + 3, x - 2:x + 3])
    dim = _camera_on_origin(show_world_frame=False, ambient_light=(0.0, 0.0, 0.0))
    bright = _camera_on_origin(show_world_frame=False, ambient_light=(0.6, 0.6, 0.6))
    for scene in (dim, bright):
        scene.add_entity(gs.morphs.Box(size=(0.3, 0.3, 0.3), pos=(0, 0, 0.3), fixed=True))
        scene.build()
    centre = dim.visualizer.camera.project(np.array([0.0, 0.0, 0.3])).astype(int)
    assert _render(bright)[centre[1], centre[0]].sum() > _render(dim)[centre[1], centre[0]].sum() + 60
    for scene in (plain, framed, dim, bright):
        scene.destroy()


def test_a_surface_colour_and_opacity_reach_the_renderer():
    viewer = gs.options.ViewerOptions(camera_pos=(1.5, 0.0, 0.5), camera_lookat=(0.0, 0.0, 0.2), res=RES)
    scene = gs.Scene(viewer_options=viewer, vis_options=gs.options.VisOptions(show_world_frame=False,
                                                                              ambient_light=(0.5, 0.5, 0.5)))
    red = scene.add_entity(gs.morphs.Box(size=(0.2, 0.2, 0.2), pos=(0, -0.3, 0.2)),
                           surface=gs.surfaces.Default(color=(1.0, 0.0, 0.0)))
    clear = scene.add_entity(gs.morphs.Box(size=(0.2, 0.2, 0.2), pos=(0, 0.3, 0.2)),
                             surface=gs.surfaces.Plastic(color=(0.0, 0.0, 1.0), opacity=0.0))
    scene.build()
    assert red.tree.links[0].visuals[0].rgba.tolist() == [1.0, 0.0, 0.0, 1.0] and red.surface.vis_mode == "visual"
    assert clear.tree.links[0].visuals[0].rgba.tolist() == [0.0, 0.0, 1.0, 0.0]
    img = _render(scene)
    camera = scene.visualizer.camera
    px_red, px_clear = (camera.project(np.array(p)).astype(int) for p in ((0.1, -0.3, 0.2), (0.1, 0.3, 0.2)))
    r = img[px_red[1], px_red[0]].astype(int)
    assert r[0] > 120 and r[1] < 40 and r[2] < 40, r
    c = img[px_clear[1], px_clear[0]].astype(int)
    assert c[2] < c[0] + 30, c  # fully transparent: the ground behind it, not blue
    with pytest.raises(TypeError, match="surface"):
        scene2 = gs.Scene()
        scene2.add_entity(gs.morphs.Box(size=(1, 1, 1)), surface=(1, 0, 0))
    with pytest.raises(ValueError, match="vis_mode"):
        gs.Scene().add_entity(gs.morphs.Box(size=(1, 1, 1)), vis_mode="particle")
    with pytest.raises(TypeError, match="material"):
        gs.Scene().add_entity(gs.morphs.Box(size=(1, 1, 1)), material=gs.surfaces.Default())
    scene.destroy()


def test_rendered_envs_idx_draws_only_those_envs():
    def scene_for(envs):
        scene = gs.Scene(viewer_options=gs.options.ViewerOptions(camera_pos=(0.0, -0.01, 4.0),
                                                                 camera_lookat=(0.0, 0.0, 0.0), res=RES),
                         vis_options=gs.options.VisOptions(show_world_frame=False, rendered_envs_idx=envs))
        scene.add_entity(gs.morphs.Box(size=(0.3, 0.3, 0.3), pos=(0, 0, 0.15)),
                         surface=gs.surfaces.Default(color=(1.0, 1.0, 0.0)))
        scene.build(n_envs=4, env_spacing=(1.5, 1.5))
        return scene

    every, some = scene_for(None), scene_for([0, 3])
    a, b = _render(every), _render(some)
    offsets = every.envs_offset()
    for env in range(4):
        x, y = every.visualizer.camera.project(offsets[env] + [0, 0, 0.3]).astype(int)
        yellow_a = a[y, x, 0] > 150 and a[y, x, 2] < 80
        yellow_b = b[y, x, 0] > 150 and b[y, x, 2] < 80
        assert yellow_a and yellow_b == (env in (0, 3)), (env, a[y, x], b[y, x])
    every.destroy()
    some.destroy()
