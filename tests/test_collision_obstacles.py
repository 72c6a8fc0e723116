"""World obstacles that move, differ per env, or are meshes (issue 19, part 3), judged by coal.

* A free ball (its own sphere model is the exact ball) among fixed primitives: after the obstacles
  move (``set_pos`` / ``set_quat``, per env), the distances equal coal's exact ones for the poses
  the test itself set, env by env, and no collide kernel is compiled again.
* A fixed Mesh is an obstacle through spheres fitted to it: a lower bound of coal's mesh distance
  (the mesh's triangles in a BVH), and not a loose one; the Panda's collision meshes against a
  mesh obstacle moved per env, the same.
* ``scene.reset()`` / ``reset(state)`` restore obstacle poses; bad input names the argument and
  changes nothing.
"""

from __future__ import annotations

import coal
import numpy as np
import pytest
import trimesh
from _backend import init_engine
from _coal import coal_distance, coal_mesh, coal_shape, coal_tf, pin_coal

import engine as gs
from engine.collision.gjk import TOLERANCE
from engine.collision.robot import sample_qpos
from engine.collision.world import (
    MESH_SPHERES,
    obstacle_spheres,
    scene_obstacles,
    world_distance_numpy,
    world_links,
    world_tables,
)
from engine.kernels import avoid
from engine.transforms import quat_from_euler, quat_mul, quat_to_matrix

N_ENVS = 48
BALL = 0.05  # m, the free ball's radius


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


@pytest.fixture(scope="module")
def torus_file(tmp_path_factory):
    """A non-convex mesh file: a torus (major radius 0.2 m, tube 0.05 m) in its xy plane."""
    path = tmp_path_factory.mktemp("meshes") / "torus.obj"
    trimesh.creation.torus(major_radius=0.2, minor_radius=0.05).export(path)
    return path


def _random_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _ball_scene(shapes, n_envs=N_ENVS):
    scene = gs.Scene(show_FPS=False)
    ball = scene.add_entity(gs.morphs.Sphere(radius=BALL))
    bodies = [scene.add_entity(m) for m in shapes]
    scene.build(n_envs=n_envs)
    return scene, ball, bodies


def _ball_qpos(centers):
    q = np.zeros((len(centers), 7))
    q[:, :3], q[:, 3] = centers, 1.0
    return q


def _compiled() -> int:
    return len(avoid.answer_distance_kernel._primal.compiled_kernels)


PRIMITIVES = [gs.morphs.Box(pos=(0.6, 0.0, 0.3), size=(0.2, 0.3, 0.4), fixed=True),
              gs.morphs.Sphere(pos=(0.0, 0.6, 0.3), radius=0.1, fixed=True),
              gs.morphs.Cylinder(pos=(-0.6, 0.0, 0.3), radius=0.08, height=0.5, euler=(30, 0, 0), fixed=True),
              gs.morphs.Plane(pos=(0.0, 0.0, -0.2))]


def test_primitives_moved_per_env_match_coal_without_a_recompile():
    scene, ball, bodies = _ball_scene(PRIMITIVES)
    rng = np.random.default_rng(0)
    centers = rng.uniform(-0.8, 0.8, (N_ENVS, 3)) * [1, 1, 0.5] + [0, 0, 0.3]
    q = _ball_qpos(centers)
    coal_ball = coal.Sphere(BALL)
    shapes = [coal_shape(m) for m in PRIMITIVES]

    def judge(pos, quat):  # pos (N_ENVS, O, 3), quat (N_ENVS, O, 4): the poses the test set
        d = np.array([min(coal_distance(coal_ball, coal_tf(centers[e], [1, 0, 0, 0]), s, coal_tf(pos[e, o], quat[e, o]))
                          for o, s in enumerate(shapes)) for e in range(N_ENVS)])
        ours = ball.collision_distance(q)
        clear = d > 1e-3
        assert clear.sum() > N_ENVS // 2
        np.testing.assert_allclose(ours[clear], d[clear], atol=2e-4)
        print(f"{clear.sum()} of {N_ENVS} clear")
        np.testing.assert_array_equal(ball.in_collision(q)[clear], False)
        assert np.all(ours[~clear] < 2e-3)
        return ours

    built_pos = np.broadcast_to([m.pos for m in PRIMITIVES], (N_ENVS, len(PRIMITIVES), 3))
    built_quat = np.broadcast_to([m.quat for m in PRIMITIVES], (N_ENVS, len(PRIMITIVES), 4))
    first = judge(built_pos, built_quat)
    ball.collision_distance(q)
    compiled = _compiled()

    pos = np.array(built_pos) + rng.uniform(-0.25, 0.25, (N_ENVS, len(PRIMITIVES), 3))
    quat = np.stack([_random_quats(rng, N_ENVS) for _ in PRIMITIVES[:-1]]
                    + [quat_from_euler(rng.uniform(-20, 20, (N_ENVS, 3)))], axis=1)  # the Plane tilts a little
    for k, body in enumerate(bodies):
        body.set_pos(pos[:, k])
        body.set_quat(quat[:, k])
        np.testing.assert_allclose(body.get_pos(), pos[:, k], atol=1e-6)
        np.testing.assert_allclose(np.abs(np.sum(body.get_quat() * quat[:, k], axis=1)), 1.0, atol=1e-6)
    moved = judge(pos, quat)
    assert np.mean(np.abs(moved - first) > 1e-3) > 0.5  # the moves changed most distances
    assert _compiled() == compiled  # nothing compiled for obstacles that moved

    # envs_idx moves env 1 only; relative=True (Genesis 1.4.5's default) still sets the pose itself
    pos[1, 0] += (0.05, 0.0, 0.0)
    bodies[0].set_pos(pos[1, 0], envs_idx=[1], relative=True)
    turn = quat_from_euler([0.0, 0.0, 20.0])
    quat[3, 2] = quat_mul(turn, quat[3, 2])
    bodies[2].set_quat(quat[3, 2], envs_idx=[3], relative=False)
    judge(pos, quat)
    assert _compiled() == compiled
    scene.destroy()


def test_obstacle_poses_survive_set_qpos_step_and_fk():
    scene, ball, (box, *_rest) = _ball_scene(PRIMITIVES, n_envs=2)
    target = np.array([[0.1, 0.2, 0.3], [-0.4, 0.5, 0.6]])
    turn = quat_from_euler([10.0, 20.0, 30.0])
    box.set_pos(target)
    box.set_quat(turn, envs_idx=[1])
    ball.set_qpos(_ball_qpos(np.zeros((2, 3))))
    ball.control_dofs_position(np.ones((2, 6)) * 0.1)
    box.set_qpos(np.zeros((2, 0)))  # a fixed body's (empty) qpos: the pose stays
    scene.step()
    for pos, quat in (box.forward_kinematics(np.zeros((2, 0))), (box.get_links_pos(), box.get_links_quat())):
        np.testing.assert_allclose(pos[:, 0], target, atol=1e-6)
        np.testing.assert_allclose(quat[:, 0], [PRIMITIVES[0].quat, turn], atol=1e-6)
    np.testing.assert_allclose(box.links[0].get_pos(), target, atol=1e-6)
    scene.destroy()


def test_reset_restores_obstacle_poses():
    scene, ball, bodies = _ball_scene(PRIMITIVES[:2], n_envs=3)
    q = _ball_qpos(np.tile([0.3, 0.0, 0.3], (3, 1)))
    start = ball.collision_distance(q)
    box = bodies[0]
    x = np.array([0.45, 0.5, 0.55])
    box.set_pos(np.stack([x, np.zeros(3), np.full(3, 0.3)], axis=1))  # its -x face at x - 0.1
    np.testing.assert_allclose(ball.collision_distance(q), x - 0.1 - 0.3 - BALL, atol=1e-5)
    saved = scene.get_state()
    scene.reset(envs_idx=[1])
    np.testing.assert_allclose(box.get_pos(), [[0.45, 0, 0.3], PRIMITIVES[0].pos, [0.55, 0, 0.3]], atol=1e-6)
    scene.reset()
    np.testing.assert_allclose(box.get_pos(), np.tile(PRIMITIVES[0].pos, (3, 1)), atol=1e-6)
    np.testing.assert_allclose(ball.collision_distance(q), start, atol=1e-6)
    scene.reset(state=saved)  # a saved state is the new initial one, as in Genesis
    np.testing.assert_allclose(box.get_pos()[:, 0], [0.45, 0.5, 0.55], atol=1e-6)
    box.set_pos([0, 0, 0])
    scene.reset()
    np.testing.assert_allclose(box.get_pos()[:, 0], [0.45, 0.5, 0.55], atol=1e-6)
    scene.destroy()


def test_bad_moves_name_the_argument_and_change_nothing():
    scene = gs.Scene(show_FPS=False)
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    box = scene.add_entity(gs.morphs.Box(pos=(0.5, 0, 0.2), size=(0.1, 0.1, 0.1), fixed=True))
    scene.build(n_envs=2)
    before = box.get_pos().copy(), box.get_quat().copy()
    with pytest.raises(ValueError, match=r"pos: expected shape \(3,\) or \(2, 3\), got \(3, 3\)"):
        box.set_pos(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="quat: expected a non-zero"):
        box.set_quat([[1, 0, 0, 0], [0, 0, 0, 0]])
    with pytest.raises(ValueError, match="pos: expected finite"):
        box.set_pos([np.nan, 0, 0])
    with pytest.raises(ValueError, match="pos: expected coordinates within"):
        box.set_pos([1e9, 0, 0])
    with pytest.raises(TypeError, match="relative: expected True or False, got 'yes'"):
        box.set_pos([0, 0, 0], relative="yes")
    with pytest.raises(IndexError, match="envs_idx"):
        box.set_pos([0, 0, 0], envs_idx=[5])
    assert np.array_equal(box.get_pos(), before[0]) and np.array_equal(box.get_quat(), before[1])
    with pytest.raises(RuntimeError, match="set_pos: 'panda' is a fixed robot"):
        panda.set_pos([0, 0, 1])
    with pytest.raises(TypeError, match="entity: expected a fixed, colliding Mesh entity.*Box"):
        obstacle_spheres(box)
    scene.destroy()


# -- meshes ---------------------------------------------------------------------------------------------
def test_a_mesh_is_spheres_that_bound_coal_from_below(torus_file):
    mesh = gs.morphs.Mesh(file=torus_file, pos=(0.0, 0.0, 0.4), euler=(60, 0, 0), scale=1.5, fixed=True)
    scene, ball, (torus,) = _ball_scene([mesh])
    obstacles = scene_obstacles(scene, ball)
    spheres = obstacle_spheres(torus)
    assert len(obstacles) == spheres.n_spheres == MESH_SPHERES
    assert {o.name for o in obstacles} == {"mesh#1"} and {o.kind for o in obstacles} == {"sphere"}
    vertices = trimesh.load(torus_file, force="mesh").vertices * 1.5  # the body frame
    gap = np.linalg.norm(vertices[:, None] - spheres.centers[None], axis=-1) - spheres.radii
    assert np.all(gap.min(axis=1) <= 1e-9)  # every vertex inside a sphere

    rng = np.random.default_rng(1)
    bvh, coal_ball = coal_mesh(torus_file, 1.5), coal.Sphere(BALL)
    pos = mesh.pos + rng.uniform(-0.2, 0.2, (N_ENVS, 3))
    quat = _random_quats(rng, N_ENVS)
    torus.set_pos(pos)
    torus.set_quat(quat)
    centers = pos + rng.normal(size=(N_ENVS, 3)) * 0.35
    q = _ball_qpos(centers)
    ours, pair = ball.collision_distance(q, return_pair=True)
    theirs = np.array([coal_distance(coal_ball, coal_tf(centers[e], [1, 0, 0, 0]), bvh, coal_tf(pos[e], quat[e]))
                       for e in range(N_ENVS)])
    assert {p[1] for p in pair} == {"mesh#1"}
    assert np.all(ours <= theirs + 1e-5), np.max(ours - theirs)
    assert np.all(theirs[~ball.in_collision(q)] > 0)
    # each sphere holds a point of the surface, so none reaches beyond twice its radius from it
    assert np.all(theirs - ours <= 2 * spheres.radii.max() + 1e-5), np.max(theirs - ours)
    print(f"mesh obstacle: coal - spheres {np.mean(theirs - ours):.3f} m on average, {np.max(theirs - ours):.3f} at "
          f"most; {np.sum(theirs > 0)} of {N_ENVS} clear by coal, {np.sum(ours > 0)} by the spheres")

    more = obstacle_spheres(torus, spheres_per_link=48)  # a finer model is a tighter bound
    assert more.n_spheres == 48 and len(scene_obstacles(scene, ball)) == 48
    finer = ball.collision_distance(q)
    assert np.all(finer <= theirs + 1e-5) and np.mean(theirs - finer) < np.mean(theirs - ours)
    with pytest.raises(ValueError, match="spheres_per_link: expected an int in 1..64, got 0"):
        obstacle_spheres(torus, spheres_per_link=0)
    scene.destroy()


def test_a_hidden_mesh_is_still_an_obstacle_and_a_free_one_none(torus_file):
    shapes = [gs.morphs.Mesh(file=torus_file, visualization=False, fixed=True),
              gs.morphs.Mesh(file=torus_file, pos=(1.0, 0, 0)),  # free: driven by qpos, not an obstacle
              gs.morphs.Mesh(file=torus_file, pos=(2.0, 0, 0), collision=False, fixed=True)]
    scene, ball, bodies = _ball_scene(shapes, n_envs=1)
    assert {o.name for o in scene_obstacles(scene, ball)} == {"mesh#1"}
    assert not bodies[0].tree.links[0].visuals
    scene.destroy()


@pytest.fixture(scope="module")
def panda_scene(f32, torus_file):
    scene = gs.Scene(show_FPS=False)
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    torus = scene.add_entity(gs.morphs.Mesh(file=torus_file, pos=(0.45, 0.0, 0.45), euler=(90, 0, 0), fixed=True))
    box = scene.add_entity(gs.morphs.Box(pos=(0.0, 0.5, 0.3), size=(0.2, 0.2, 0.6), fixed=True))
    scene.build(n_envs=N_ENVS)
    rng = np.random.default_rng(2)
    poses = {"torus": ([0.45, 0.0, 0.45] + rng.uniform(-0.15, 0.15, (N_ENVS, 3)), _random_quats(rng, N_ENVS)),
             "box": ([0.0, 0.5, 0.3] + rng.uniform(-0.2, 0.2, (N_ENVS, 3)), np.tile([1.0, 0, 0, 0], (N_ENVS, 1)))}
    torus.set_pos(poses["torus"][0])  # a pose per env
    torus.set_quat(poses["torus"][1])
    box.set_pos(poses["box"][0])
    yield scene, panda, torus, box, poses
    scene.destroy()


def test_panda_against_a_mesh_moved_per_env_bounds_coal(panda_scene, torus_file):
    import pinocchio as pin

    scene, panda, torus, box, poses = panda_scene
    ref, geom = pin_coal(panda.tree)
    keep = world_links(panda.tree, fixed_base=True)
    names = panda.tree.link_names()
    qpos = sample_qpos(panda.tree, N_ENVS, seed=4)
    ours = panda.collision_distance(qpos, self_collision=False)
    bvh, coal_box = coal_mesh(torus_file, 1.0), coal.Box(*box.morph.size)
    data, gdata = ref.model.createData(), pin.GeometryData(geom)
    mesh = np.empty(N_ENVS)
    for e, q in enumerate(qpos):
        pin.framesForwardKinematics(ref.model, data, ref.pin_q(q))
        pin.updateGeometryPlacements(ref.model, data, geom, gdata)
        obstacles = [(bvh, coal_tf(poses["torus"][0][e], poses["torus"][1][e])),
                     (coal_box, coal_tf(poses["box"][0][e], poses["box"][1][e]))]
        mesh[e] = min(coal_distance(obj.geometry, coal.Transform3s(gdata.oMg[g].rotation, gdata.oMg[g].translation),
                                shape, tf) for g, obj in enumerate(geom.geometryObjects)
                      if keep[names.index(ref.model.frames[obj.parentFrame].name)] for shape, tf in obstacles)
    assert np.all(ours <= np.maximum(mesh, 0.0) + 1e-5), np.max(ours - mesh)
    free = ~panda.in_collision(qpos, self_collision=False)
    assert free.sum() > N_ENVS // 5 and np.all(mesh[free] > 0)
    assert (~free).sum() > N_ENVS // 10  # the obstacles are in the way often enough to test something
    print(f"{free.sum()} of {N_ENVS} clear of the obstacles by the spheres; by the meshes {np.sum(mesh > 0)}")


def test_kernel_tables_and_numpy_twin_agree_with_mesh_obstacles(panda_scene):
    scene, panda, torus, box, poses = panda_scene
    model = panda.collision_model()
    qpos = sample_qpos(panda.tree, N_ENVS, seed=8)
    pose = panda.configuration.fk_poses(qpos)
    envs = np.arange(N_ENVS)
    obstacles = scene_obstacles(scene, panda)
    assert len(obstacles) == MESH_SPHERES + 1
    shapes, shape_pose = world_tables(obstacles, envs, np.float32)
    assert shapes.shape == (MESH_SPHERES + 1, 4) and shape_pose.shape == (N_ENVS, MESH_SPHERES + 1, 7)
    spheres = obstacle_spheres(torus)
    pos, quat = poses["torus"]
    want = pos[:, None] + np.einsum("eij,sj->esi", quat_to_matrix(quat), spheres.centers)
    np.testing.assert_allclose(shape_pose[:, :MESH_SPHERES, :3], want, atol=1e-5)
    np.testing.assert_allclose(np.abs(np.sum(shape_pose[:, :MESH_SPHERES, 3:] * quat[:, None], -1)), 1.0, atol=1e-6)
    np.testing.assert_allclose(shapes[:MESH_SPHERES, 1], spheres.radii, rtol=1e-6)
    np.testing.assert_array_equal(shapes[:, 0], [1] * MESH_SPHERES + [0])  # KINDS: sphere rows, then the box
    np.testing.assert_allclose(shape_pose[:, -1, :3], poses["box"][0], atol=1e-6)
    d_kernel, w_kernel = panda.collision_distance(qpos, envs_idx=envs, return_pair=True, self_collision=False)
    d_numpy, w_numpy = world_distance_numpy(model, panda, pose, envs)
    # near contact both take the hulls' GJK bound, each tight to its TOLERANCE (float32 and float64
    # steps may stop an iteration apart)
    np.testing.assert_allclose(d_kernel, d_numpy, atol=TOLERANCE)
    assert np.mean([a == b for a, b in zip(w_kernel, w_numpy)]) > 0.95  # float32 ties may pick another sphere
    assert {w[1] for w in w_kernel} == {"mesh#1", "box#2"}


def test_the_visualizer_draws_each_envs_obstacle_pose():
    from conftest import skip_or_fail

    viewer = gs.options.ViewerOptions(camera_pos=(3.0, 0.0, 1.0), camera_lookat=(0.0, 0.0, 0.4), res=(320, 240))
    scene = gs.Scene(viewer_options=viewer, vis_options=gs.options.VisOptions(show_world_frame=False), show_FPS=False)
    box = scene.add_entity(gs.morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.0, 0.0, 0.1), fixed=True),
                           surface=gs.surfaces.Default(color=(0.0, 0.9, 0.0)))
    scene.build(n_envs=2, env_spacing=(1.2, 1.2))
    box.set_pos([0.0, 0.0, 0.7], envs_idx=[1])  # env 1's box lifted, env 0's where it was built
    offsets = scene.envs_offset()
    try:
        image = scene.visualizer.render()
    except RuntimeError as err:
        skip_or_fail(f"no offscreen GL here: {err}")

    def green(point):
        x, y = scene.visualizer.camera.project(np.asarray(point)).astype(int)
        r, g, b = image[y, x, :3].astype(int)
        return g > 50 and g > 2 * r and g > 2 * b  # the (shaded) green box, not the ground or the sky

    assert green(offsets[0] + [0, 0, 0.1]) and not green(offsets[0] + [0, 0, 0.7])
    assert green(offsets[1] + [0, 0, 0.7]) and not green(offsets[1] + [0, 0, 0.1])
    scene.destroy()
