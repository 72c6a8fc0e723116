"""Scene files' ``obstacles:`` and the avoidance settings of ``solver:`` (issue 19, part 6).

Bad obstacles are reported with the key path and the line; good ones build into fixed bodies of
the scene with the file's size, pose and colour (judged against the file's numbers, and by the
collision distance of a robot placed next to them); save() writes them back; the runner passes
the avoidance settings to its IK calls."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh
from _coal import coal_distance, coal_shape, coal_tf, pin_coal

from engine import morphs, scenefile
from engine.collision.world import scene_obstacles, world_tables
from engine.scenefile import SceneFileError
from engine.transforms import quat_from_euler

REPO = Path(__file__).resolve().parent.parent
HEAD = "robot: panda\nobstacles:\n"

CASES = [
    ("unknown kind", HEAD + "  - kind: boxx\n    size: [1, 1, 1]\n",
     "obstacles[0]: unknown kind 'boxx'; did you mean 'box'? (expected one of box, sphere, cylinder, plane, mesh, "
     "capsule) (line 3)"),
    ("no kind", HEAD + "  - size: [1, 1, 1]\n", "obstacles[0]: missing key 'kind' (line 3)"),
    ("box of two extents", HEAD + "  - kind: box\n    size: [1, 1]\n",
     "obstacles[0].size: expected 3 positive lengths (m), got [1, 1] (line 4)"),
    ("box of a zero extent", HEAD + "  - {kind: box, size: [1, 0, 1]}\n",
     "obstacles[0].size: expected 3 positive lengths (m) up to 1e+06, got [1, 0, 1] (line 3)"),
    ("box without size", HEAD + "  - {kind: box, pos: [0, 0, 0]}\n", "obstacles[0].size: missing (required) (line 3)"),
    ("negative radius", HEAD + "  - kind: box\n    size: [1, 1, 1]\n  - kind: sphere\n    size: -0.1\n",
     "obstacles[1].size: expected a positive length (m) up to 1e+06, got -0.1 (line 6)"),
    ("sphere radius as a list", HEAD + "  - kind: sphere\n    size: [0.1]\n",
     "obstacles[0].size: expected a positive length (m), got [0.1] (line 4)"),
    ("cylinder of one number", HEAD + "  - kind: cylinder\n    size: 0.1\n",
     "obstacles[0].size: expected 2 positive lengths (m), got 0.1 (line 4)"),
    ("a plane has no size", HEAD + "  - kind: plane\n    size: 2\n",
     "obstacles[0].size: unknown key (allowed: kind, pos, quat, rpy, color) (line 4)"),
    ("misspelt key", HEAD + "  - kind: sphere\n    size: 0.1\n    colour: [1, 0, 0]\n",
     "obstacles[0].colour: unknown key; did you mean 'color'? (line 5)"),
    ("quat and rpy", HEAD + "  - kind: sphere\n    size: 0.1\n    quat: [1, 0, 0, 0]\n    rpy: [0, 0, 90]\n",
     "obstacles[0].rpy: give quat or rpy, not both (line 6)"),
    ("zero quaternion", HEAD + "  - kind: box\n    size: [1, 1, 1]\n    quat: [0, 0, 0, 0]\n",
     "obstacles[0].quat: expected a non-zero (w, x, y, z) quaternion, got [0.0, 0.0, 0.0, 0.0] (line 5)"),
    ("colour out of range", HEAD + "  - kind: sphere\n    size: 0.1\n    color: [1.5, 0, 0]\n",
     "obstacles[0].color: expected colour components in [0, 1], got [1.5, 0, 0] (line 5)"),
    ("colour of two numbers", HEAD + "  - kind: sphere\n    size: 0.1\n    color: [1, 0]\n",
     "obstacles[0].color: expected [r, g, b] or [r, g, b, a] (numbers in [0, 1]), got [1, 0] (line 5)"),
    ("far away", HEAD + "  - kind: sphere\n    size: 0.1\n    pos: [2000000, 0, 0]\n",
     "obstacles[0].pos: expected 3 coordinates within +-1e+06 m, got [2000000.0, 0.0, 0.0] (line 5)"),
    ("mesh without a file", HEAD + "  - kind: mesh\n    scale: 2\n", "obstacles[0].file: missing (required) (line 3)"),
    ("mesh scale of two", HEAD + "  - kind: mesh\n    file: meshes/axis.obj\n    scale: [1, 2]\n",
     "obstacles[0].scale: expected a scale factor or 3 (x, y, z), got [1, 2] (line 5)"),
    ("missing mesh file", HEAD + "  - kind: sphere\n    size: 0.1\n  - kind: mesh\n    file: nothere.obj\n",
     "obstacles[1].file: no such mesh file: 'nothere.obj' (looked for {dir}/nothere.obj and among the engine's "
     f"meshes in {morphs.DATA_DIR}) (line 6)"),
    ("not a mesh file", HEAD + "  - kind: mesh\n    file: notes.txt\n",
     "obstacles[0].file: '{dir}/notes.txt' is not a mesh file; expected one of .obj, .ply, .stl, .glb, .gltf, .off, "
     ".dae (line 4)"),
    ("unreadable mesh", HEAD + "  - kind: mesh\n    file: empty.obj\n",
     "obstacles[0].file: mesh file {dir}/empty.obj has no triangles (line 4)"),
    ("obstacles as a mapping", "robot: panda\nobstacles: {kind: box}\n",
     "obstacles: expected a list, got {kind: 'box'} (line 2)"),
    ("negative margin", "robot: panda\nsolver:\n  collision_margin: -0.01\n",
     "solver.collision_margin: expected a non-negative number, got -0.01 (line 3)"),
    ("avoidance not a flag", "robot: panda\nsolver:\n  avoid_collisions: 1\n",
     "solver.avoid_collisions: expected true or false, got 1 (line 3)"),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_obstacles_name_the_key_and_the_line(tmp_path, text, expected):
    (tmp_path / "notes.txt").write_text("not a mesh\n")
    (tmp_path / "empty.obj").write_text("# no faces\nv 0 0 0\n")
    path = tmp_path / "scene.yaml"
    path.write_text(text)
    with pytest.raises(SceneFileError) as info:
        scenefile.load(path)
    assert str(info.value) == f"{path}: " + expected.replace("{dir}", str(tmp_path.resolve()))


def test_every_bad_obstacle_is_reported_at_once(tmp_path):
    path = tmp_path / "scene.yaml"
    path.write_text(HEAD + "  - {kind: box, size: [1, 1]}\n  - {kind: ball, size: 1}\n  - {kind: plane, size: 1}\n")
    with pytest.raises(SceneFileError) as info:
        scenefile.load(path)
    assert [(i.path, i.line) for i in info.value.issues] == [("obstacles[0].size", 3), ("obstacles[1]", 4),
                                                             ("obstacles[2].size", 5)]


@pytest.fixture
def mesh_scene(tmp_path):
    """A scene file in ``scenes/`` of ``tmp_path`` with every kind of obstacle; its mesh (a 0.2 m
    cube) in ``meshes/``."""
    (tmp_path / "meshes").mkdir()
    (tmp_path / "scenes").mkdir()
    trimesh.creation.box(extents=(0.2, 0.2, 0.2)).export(tmp_path / "meshes" / "cube.obj")
    path = tmp_path / "scenes" / "s.yaml"
    path.write_text("""robot: panda
envs: {n_envs: 2}
targets:
  - {link: hand, pos: [0.4, 0.0, 0.4], rpy: [180, 0, 0]}
obstacles:
  - {kind: box, size: [0.2, 0.4, 0.6], pos: [1.5, 0.0, 0.3], rpy: [0, 0, 90], color: [0.1, 0.2, 0.3]}
  - {kind: sphere, size: 0.1, pos: [0.0, 1.5, 0.5], color: [0.9, 0.1, 0.1, 0.5]}
  - {kind: cylinder, size: [0.05, 0.8], pos: [-1.5, 0.0, 0.4], quat: [0.9238795, 0.3826834, 0.0, 0.0]}
  - {kind: plane, pos: [0.0, 0.0, -0.1]}
  - {kind: mesh, file: ../meshes/cube.obj, scale: 2, pos: [0.0, -1.5, 0.5]}
  - {kind: mesh, file: meshes/axis.obj, scale: [0.1, 0.1, 0.1], pos: [3.0, 3.0, 0.0]}
solver: {avoid_collisions: true, collision_margin: 0.02}
""")
    return path


def test_obstacles_build_into_fixed_bodies_as_written(mesh_scene):
    spec = scenefile.load(mesh_scene)
    scene, runner = scenefile.build(spec, debug_frames=False)
    bodies = runner.obstacles
    assert [b.morph.kind for b in bodies] == ["box", "sphere", "cylinder", "plane", "mesh", "mesh"]
    assert all(b.morph.fixed and b.n_qs == 0 for b in bodies) and [b.idx for b in bodies] == [1, 2, 3, 4, 5, 6]
    box, ball, post, plane, cube, axis = bodies
    assert np.allclose(box.morph.size, [0.2, 0.4, 0.6]) and ball.morph.radius == 0.1
    assert (post.morph.radius, post.morph.height) == (0.05, 0.8)
    assert cube.morph.file == (mesh_scene.parent.parent / "meshes" / "cube.obj").resolve() and cube.morph.scale == 2.0
    assert axis.morph.file == morphs.DATA_DIR / "meshes" / "axis.obj"
    np.testing.assert_allclose(box.get_pos(), [[1.5, 0.0, 0.3]] * 2)
    np.testing.assert_allclose(box.get_quat(), [[np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)]] * 2, atol=1e-6)
    np.testing.assert_allclose(post.get_quat()[0], [np.cos(np.pi / 8), np.sin(np.pi / 8), 0, 0], atol=1e-6)
    assert box.surface.color == (0.1, 0.2, 0.3) and ball.surface.color == (0.9, 0.1, 0.1, 0.5)
    assert post.surface.color is None  # no colour in the file: the engine's own
    names = [o.name for o in scene_obstacles(scene, runner.robot)]
    assert names[:4] == ["box#1", "sphere#2", "cylinder#3", "plane#4"] and set(names[4:]) == {"mesh#5", "mesh#6"}

    # what the collision kernels read: the file's numbers, half extents, the turned pose, per env
    shapes, poses = world_tables(scene_obstacles(scene, runner.robot), np.arange(2), np.float64)
    np.testing.assert_allclose(shapes[:4], [[0, 0.1, 0.2, 0.3], [1, 0.1, 0.1, 0.1], [2, 0.05, 0.4, 0.05],
                                            [3, 0.0, 0.0, 1.0]])
    np.testing.assert_allclose(poses[:, 0], [[1.5, 0.0, 0.3, np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)]] * 2,
                               atol=1e-6)
    np.testing.assert_allclose(poses[:, 3], [[0.0, 0.0, -0.1, 1, 0, 0, 0]] * 2, atol=1e-6)
    cube_rows = [o for o in scene_obstacles(scene, runner.robot) if o.name == "mesh#5"]
    corners = np.array(np.meshgrid(*[[-0.2, 0.2]] * 3)).reshape(3, -1).T  # the cube scaled by 2, body frame
    centers, radii = np.array([o.center for o in cube_rows]), np.array([o.size[0] for o in cube_rows])
    inside = np.linalg.norm(corners[:, None] - centers[None], axis=-1) <= radii + 1e-9
    assert inside.any(axis=1).all()  # its spheres cover the scaled mesh
    scene.destroy()


def test_runner_moves_obstacles_back_to_the_file(mesh_scene):
    spec = scenefile.load(mesh_scene)
    scene, runner = scenefile.build(spec, debug_frames=False)
    box = runner.obstacles[0]
    box.set_pos([[0.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    spec.obstacles[0].pos = (1.0, 1.0, 1.0)  # an edit of the spec (the app's gizmo)
    spec.obstacles[0].rpy = (0.0, 0.0, 30.0)
    runner.place_obstacles()
    np.testing.assert_allclose(box.get_pos(), [[1.0, 1.0, 1.0]] * 2)
    np.testing.assert_allclose(box.get_quat(), [quat_from_euler([0.0, 0.0, 30.0])] * 2, atol=1e-6)
    scene.destroy()


def test_obstacles_and_avoidance_settings_round_trip(mesh_scene, tmp_path):
    spec = scenefile.load(mesh_scene)
    assert spec.solver.avoid_collisions is True and spec.solver.collision_margin == 0.02
    elsewhere = tmp_path / "other" / "deeper"
    elsewhere.mkdir(parents=True)
    scenefile.save(spec, elsewhere / "copy.yaml")
    again = scenefile.load(elsewhere / "copy.yaml")
    assert again.obstacles == spec.obstacles[:4] + again.obstacles[4:]  # primitives unchanged
    assert again.obstacles[4].file == "../../meshes/cube.obj"  # rebased on the new folder
    assert again.obstacles[5].file == "meshes/axis.obj"  # one of the engine's meshes: kept by name
    assert again.resolve_path(again.obstacles[4].file) == spec.resolve_path(spec.obstacles[4].file)
    assert again.solver == spec.solver
    text = (elsewhere / "copy.yaml").read_text()
    assert "  - kind: box\n    size: [0.2, 0.4, 0.6]\n    pos: [1.5, 0.0, 0.3]\n    rpy: [0.0, 0.0, 90.0]\n" in text
    assert "solver:\n  avoid_collisions: true\n  collision_margin: 0.02\n" in text


def _spy(robot, monkeypatch):
    calls = []
    original = robot.inverse_kinematics_multilink

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(robot, "inverse_kinematics_multilink", spy)
    return calls


def test_the_runner_passes_the_avoidance_settings(monkeypatch):
    text = (REPO / "scenes" / "multilink_panda.yaml").read_text()
    for extra, want in (("", (False, 0.0)), ("  avoid_collisions: true\n  collision_margin: 0.015\n", (True, 0.015))):
        spec = scenefile.loads(text.replace("solver:\n  seed: 0\n", "solver:\n  seed: 0\n" + extra),
                               base_dir=REPO / "scenes")
        scene, runner = scenefile.build(spec, debug_frames=False)
        calls = _spy(runner.robot, monkeypatch)
        frame = runner.step()
        assert (calls[0]["avoid_collisions"], calls[0]["collision_margin"]) == want
        if want[0]:  # a success keeps the margin (whether this hard pose allows it is the solver's tests' matter)
            assert np.all(runner.robot.collision_distance()[frame.success] >= 0.015 - 1e-4)
        else:
            assert frame.success.all()
        scene.destroy()


def test_the_clutter_scene_is_solved_clear_of_its_obstacles():
    """The shipped scene, 3 s of it: with avoidance every answer keeps the arm's collision meshes
    (coal) clear of the obstacles, most reach their targets, and none jumps (smooth tracking holds an
    env short of its target rather than move it into an obstacle); without, the same targets put the
    arm through one."""
    import coal
    import pinocchio as pin

    spec = scenefile.load(REPO / "scenes" / "panda_clutter.yaml")
    assert spec.solver.avoid_collisions and spec.solver.collision_margin == 0.01
    answers = {}
    for avoid in (True, False):
        spec.solver.avoid_collisions = avoid
        scene, runner = scenefile.build(spec, debug_frames=False)
        frames = runner.run(90)
        # smooth tracking (the scene's solver.track) cannot leave for another branch: an env the obstacles
        # block is held clear (not a success) rather than moved into them; most env-frames reach their targets
        assert frames[0].success.all()
        assert np.mean([f.success.mean() for f in frames]) > 0.6
        assert all(f.step.max() <= 0.1 for f in frames[1:]), "a jump under tracking"  # Panda: <= 2.6 rad/s x 1/30 s
        answers[avoid] = np.concatenate([f.qpos for f in frames])
        robot, morphs_ = runner.robot, [b.morph for b in runner.obstacles]
        world = np.array([robot.collision_distance(q, self_collision=False) for q in np.split(answers[avoid], 90)])
        if avoid:
            assert world.min() >= spec.solver.collision_margin - 1e-4, world.min()  # the margin kept, every frame
            both = [robot.collision_distance(q).min() for q in np.split(answers[avoid], 90)]  # self pairs too
            assert min(both) >= spec.solver.collision_margin - 1e-4, min(both)
        else:
            assert np.sum(world.min(axis=1) < 0) >= 5  # the scene asks for avoidance: plain IK collides
        scene.destroy()

    ref, geom = pin_coal(robot.tree)
    data, gdata = ref.model.createData(), pin.GeometryData(geom)
    shapes = [(coal_shape(m), coal_tf(m.pos, m.quat)) for m in morphs_]
    base = robot.tree.link_names().index("panda_link0")
    worst = np.inf
    for q in answers[True][::3]:
        pin.framesForwardKinematics(ref.model, data, ref.pin_q(q))
        pin.updateGeometryPlacements(ref.model, data, geom, gdata)
        for g, obj in enumerate(geom.geometryObjects):
            if ref.model.frames[obj.parentFrame].name == robot.tree.link_names()[base]:
                continue  # the base stands on the table
            tf = coal.Transform3s(gdata.oMg[g].rotation, gdata.oMg[g].translation)
            worst = min(worst, min(coal_distance(obj.geometry, tf, s, stf) for s, stf in shapes))
    assert worst > 0.0, worst  # no answer touches an obstacle at mesh level


def test_a_tracked_frame_reports_the_clearance_of_what_it_shows_after_an_obstacle_moved():
    """Smooth tracking holds an env whose answer would come closer to an obstacle than the margin
    and its last clearance. When an obstacle was moved onto the arm since the last frame, "its last
    clearance" is that of the held configuration with the obstacle where it now stands: every
    frame's ``min_distance`` is the clearance of the configuration the robot then holds, in the world
    as it stands (it reported the clearance from before the move: clear, with the ball in the arm)."""
    from _clutter import BALL, BALL_ON_ARM, BALL_START, SCENE

    spec = scenefile.loads(SCENE.replace("collision_margin: 0.01}", "collision_margin: 0.01, track: true}"),
                           base_dir=REPO / "scenes")
    scene, runner = scenefile.build(spec, debug_frames=False)
    try:
        robot = runner.robot
        frames = runner.run(3)
        assert frames[-1].success.all() and (frames[-1].min_distance >= 0.01 - 1e-4).all()
        q_held = robot.get_qpos().copy()
        runner.spec.obstacles[BALL] = runner.spec.obstacles[BALL].model_copy(update={"pos": BALL_ON_ARM})
        runner.place_obstacles()
        assert (robot.collision_distance(q_held) < 0).all()  # the control: the ball is in the arm now
        for _ in range(3):
            frame = runner.step()
            np.testing.assert_allclose(frame.min_distance, robot.collision_distance(), atol=1e-4)
        # the configuration set between frames (the app's joint sliders; its solver child gets the
        # window's qpos before each frame): the clearance is that of the configuration set
        runner.spec.obstacles[BALL] = runner.spec.obstacles[BALL].model_copy(update={"pos": BALL_START})
        runner.place_obstacles()
        frames = runner.run(3)
        assert (frames[-1].min_distance > 0.01 - 1e-4).all(), frames[-1].min_distance
        bent = q_held.copy()
        bent[:, 1] += 0.9  # the shoulder forward, the arm into the table
        robot.set_qpos(bent)
        assert (robot.collision_distance() < 0).all()  # the control
        frame = runner.step()
        np.testing.assert_allclose(frame.min_distance, robot.collision_distance(), atol=1e-4)
    finally:
        scene.destroy()
