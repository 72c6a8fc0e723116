"""Collision-aware IK (``avoid_collisions``, :class:`engine.ik.tasks.CollisionTask`), judged at mesh level.

Pinocchio + coal are the reference: the robots' collision meshes (example-robot-data URDFs, the
SRDF's pairs removed) against each other and against the scene's obstacles as coal shapes. The
targets are the hand poses of random configurations that the sphere model calls collision-free
(so every target has a collision-free answer the solver can accept), solved from the default
configuration. Plain IK answers some of them in collision; with avoidance on at least 99 % must
be solved, and no answer that reports success may collide at mesh level.
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import pytest
from _backend import active, init_engine
from _coal import coal_shape, pin_coal
from _dual_arm import GRIPPERS, baxter_scene, close_hand_targets

import engine as gs
from engine.collision.robot import sample_qpos
from engine.collision.world import world_links
from engine.errors import InvalidTypeError, InvalidValueError
from engine.ik.tasks import CollisionTask, PoseTask, PostureTask
from engine.transforms import quat_to_matrix


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


def n_targets() -> int:
    return 256 if active() == "cpu" else 128  # lavapipe runs the solver in software: fewer, same checks


CLUTTER = (  # a table, a pillar, a ball, an overhead bar and a crate around the Panda
    ("box", dict(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3))),
    ("cylinder", dict(pos=(0.45, 0.25, 0.45), radius=0.04, height=0.3)),
    ("sphere", dict(pos=(0.5, -0.25, 0.38), radius=0.07)),
    ("box", dict(pos=(0.45, 0.0, 0.85), size=(0.06, 0.9, 0.06))),
    ("box", dict(pos=(0.7, 0.0, 0.4), size=(0.14, 0.2, 0.2))),
)
MORPHS = {"box": gs.morphs.Box, "cylinder": gs.morphs.Cylinder, "sphere": gs.morphs.Sphere}


class MeshJudge:
    """Mesh-level collision of a robot's configurations: coal on its URDF's collision meshes,
    self pairs as the SRDF leaves them and every moving link against the obstacle morphs."""

    def __init__(self, robot, obstacles):
        self.robot = robot
        self.ref, self.geom = pin_coal(robot.tree)
        self.data, self.gdata = self.ref.model.createData(), pin.GeometryData(self.geom)
        keep = world_links(robot.tree, fixed_base=True)
        names = robot.tree.link_names()
        self.moving = [g for g, obj in enumerate(self.geom.geometryObjects)
                       if keep[names.index(self.ref.model.frames[obj.parentFrame].name)]]
        self.shapes = [(coal_shape(m, world=True), coal.Transform3s(quat_to_matrix(m.quat), np.asarray(m.pos, float)))
                       for m in obstacles]

    def collides(self, qpos) -> tuple[bool, bool]:
        """(self collision, collision with an obstacle) at ``qpos`` (n_qs,)."""
        pq = self.ref.pin_q(qpos)
        hit_self = pin.computeCollisions(self.ref.model, self.data, self.geom, self.gdata, pq, True)
        pin.updateGeometryPlacements(self.ref.model, self.data, self.geom, self.gdata)
        request = coal.CollisionRequest()
        for g in self.moving:
            obj = self.geom.geometryObjects[g]
            tf = coal.Transform3s(self.gdata.oMg[g].rotation, self.gdata.oMg[g].translation)
            for shape, shape_tf in self.shapes:
                if coal.collide(obj.geometry, tf, shape, shape_tf, request, coal.CollisionResult()):
                    return bool(hit_self), True
        return bool(hit_self), False

    def count(self, qpos, which) -> int:
        """How many of the configurations ``qpos[which]`` collide at mesh level (self or world)."""
        return sum(any(self.collides(q)) for q in np.asarray(qpos)[which])


def free_targets(robot, links, n, seed, select=None):
    """Poses ``[(pos (n, 3), quat (n, 4))]`` of ``links`` in ``n`` random configurations the sphere
    model calls collision-free (and ``select(robot, qpos) -> bool mask`` keeps), and those
    configurations."""
    kept, chunk = [], robot.configuration.n_envs
    for k in range(40):
        q = sample_qpos(robot.tree, chunk, seed=seed + k)
        ok = ~robot.in_collision(q)
        if select is not None:
            ok &= select(robot, q)
        kept.append(q[ok])
        if sum(len(x) for x in kept) >= n:
            break
    qs = np.concatenate(kept)[:n]
    assert len(qs) == n, f"only {len(qs)} collision-free configurations"
    pose = robot.configuration.fk_poses(qs)
    idx = [robot.get_link(name).idx_local for name in links]
    return [(pose[:, i, :3].astype(float), pose[:, i, 3:].astype(float)) for i in idx], qs


@pytest.fixture(scope="module")
def clutter(f32):
    n = n_targets()
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    morphs = [MORPHS[kind](fixed=True, **kw) for kind, kw in CLUTTER]
    for m in morphs:
        scene.add_entity(m)
    scene.build(n_envs=n)
    targets, _ = free_targets(panda, ["panda_hand"], n, seed=11)
    return panda, MeshJudge(panda, morphs), targets[0]


def test_clutter_answers_are_collision_free_by_coal(clutter):
    panda, judge, (pos, quat) = clutter
    hand = panda.get_link("panda_hand")
    plain = panda.inverse_kinematics(hand, pos, quat, seed=1, return_info=True)
    plain_hits = judge.count(plain.qpos, plain.success)
    assert plain.min_distance is None
    r = panda.inverse_kinematics(hand, pos, quat, seed=1, return_info=True, avoid_collisions=True)
    false_successes = judge.count(r.qpos, r.success)
    print(f"{active()}: plain IK {plain.success.mean():.3f} solved, {plain_hits} of them in collision (coal); with "
          f"avoidance {r.success.mean():.3f} solved, {false_successes} in collision")
    assert plain_hits > 0  # the clutter is in the way: without avoidance some answers collide
    assert r.success.mean() >= 0.99
    assert false_successes == 0
    np.testing.assert_allclose(r.min_distance, panda.collision_distance(r.qpos), atol=1e-6)
    assert not panda.in_collision(r.qpos)[r.success].any()
    assert (r.min_distance[r.success] >= 0).all() and r.error.shape == (len(pos), 1, 6)
    assert (r.pos_error[r.success] <= 5e-4).all() and (r.rot_error[r.success] <= 5e-3).all()
    moved = r.success & (r.sample > 0) & plain.success & (plain.sample == 0) & panda.in_collision(plain.qpos)
    assert moved.any()  # where sample 0 ended in collision, a restart gave the answer


def test_margin_is_kept_and_refusal_is_honest(clutter):
    panda, _, (pos, quat) = clutter
    hand = panda.get_link("panda_hand")
    r = panda.inverse_kinematics(hand, pos, quat, seed=2, return_info=True, avoid_collisions=True,
                                 collision_margin=0.02)
    assert r.success.mean() > 0.6  # some targets lie closer than 2 cm to something: those fail honestly
    assert (panda.collision_distance(r.qpos)[r.success] >= 0.02).all()
    # each refusal is honest: the answer misses its target or comes nearer than the margin
    missed = (r.pos_error[:, 0] > 5e-4) | (r.rot_error[:, 0] > 5e-3) | (r.min_distance < 0.02 + 2e-6)
    assert (~r.success).any() and missed[~r.success].all()
    # in the table: no answer avoids it (8 envs: each runs every restart with the avoidance task,
    # the slowest case there is, a minute on lavapipe for every env of the fixture)
    few = np.arange(8)
    inside = np.tile([0.55, 0.0, 0.2], (len(few), 1))
    r = panda.inverse_kinematics(hand, inside, quat[few], seed=2, return_info=True, avoid_collisions=True,
                                 envs_idx=few)
    assert r.success.shape == (len(few),)
    assert not r.success.any() and (r.sample == -1).all()


def test_avoidance_is_a_task_of_solve_ik(clutter):
    panda, judge, (pos, quat) = clutter
    n = 32
    task = PoseTask("panda_hand", pos[:n], quat[:n])
    plain = panda.solve_ik([task], envs_idx=np.arange(n), seed=3)
    with_task = panda.solve_ik([task, CollisionTask(margin=0.005), PostureTask(weight=0.05)],
                               envs_idx=np.arange(n), seed=3)
    flag = panda.solve_ik([task], envs_idx=np.arange(n), seed=3, avoid_collisions=True, collision_margin=0.005)
    for r in (with_task, flag):
        assert r.error.shape == (n, 1, 6) and r.min_distance.shape == (n,) and len(r.min_pair) == n
        assert r.success.mean() >= 0.9 and judge.count(r.qpos, r.success) == 0
        assert (r.min_distance[r.success] >= 0.005).all()
    assert plain.min_distance is None
    named = [p for p in flag.min_pair if p is not None]
    assert named and all(len(p) == 2 and isinstance(p[0], str) for p in named)


def test_avoidance_off_changes_nothing(clutter):
    panda, _, (pos, quat) = clutter
    hand = panda.get_link("panda_hand")
    a = panda.inverse_kinematics(hand, pos, quat, seed=4)
    b = panda.inverse_kinematics(hand, pos, quat, seed=4, avoid_collisions=False, collision_margin=0.0)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kernel", ["generic", "per_robot"])
def test_both_solver_forms_avoid(clutter, kernel):
    panda, judge, (pos, quat) = clutter
    hand = panda.get_link("panda_hand")
    if kernel == "per_robot" and active() == "vulkan":
        with pytest.raises(InvalidValueError, match="kernel: on a software Vulkan device"):
            panda.inverse_kinematics(hand, pos, quat, avoid_collisions=True, kernel=kernel)
        return
    r = panda.inverse_kinematics(hand, pos, quat, seed=5, return_info=True, avoid_collisions=True, kernel=kernel)
    assert r.success.mean() >= 0.99 and judge.count(r.qpos, r.success) == 0


def test_bad_avoidance_arguments_are_named(clutter):
    panda, _, (pos, quat) = clutter
    hand = panda.get_link("panda_hand")
    with pytest.raises(InvalidTypeError, match="avoid_collisions"):
        panda.inverse_kinematics(hand, pos, quat, avoid_collisions="yes")
    with pytest.raises(InvalidValueError, match="collision_margin"):
        panda.inverse_kinematics(hand, pos, quat, avoid_collisions=True, collision_margin=-0.01)
    with pytest.raises(InvalidValueError, match="collision_margin"):
        panda.inverse_kinematics_multilink([hand], [pos], [quat], collision_margin=float("nan"))
    with pytest.raises(InvalidValueError, match="margin"):
        CollisionTask(margin=-1.0)
    with pytest.raises(InvalidValueError, match="second collision avoidance task"):
        panda.solve_ik([PoseTask(hand, pos, quat), CollisionTask()], avoid_collisions=True)
    with pytest.raises(AttributeError, match="fixed when the task is made"):
        CollisionTask().margin = 0.1


def test_dual_arm_arms_avoid_each_other(f32):
    """Baxter's two grippers on targets less than 35 cm apart: with avoidance the arms keep clear
    of each other and of the body (coal on the meshes, the SRDF's pairs)."""
    n, batch = (100, 1024) if active() == "cpu" else (24, 256)
    _, baxter, removed = baxter_scene(batch)
    assert removed == []  # the hulls settle the fingertips the spheres alone read as touching
    links = [baxter.get_link(name) for name in GRIPPERS]
    poss, quats, _ = close_hand_targets(baxter, n, seed=100)
    judge = MeshJudge(baxter, [])
    # two 7-dof arms on two targets need more restarts than one arm: at the default 50, over four
    # sets of 400 targets (bench/dual_arm.py), plain IK solves 99.5-99.75 % and avoidance 99.0-100 %;
    # at 100 both solve all of these
    args = dict(poss=poss, quats=quats, seed=6, return_info=True, envs_idx=np.arange(n), max_samples=100)
    plain = baxter.inverse_kinematics_multilink(links, **args)
    r = baxter.inverse_kinematics_multilink(links, avoid_collisions=True, **args)
    plain_hits, false_successes = judge.count(plain.qpos, plain.success), judge.count(r.qpos, r.success)
    print(f"{active()} Baxter: plain {plain.success.mean():.3f} solved, {plain_hits} in collision; avoiding "
          f"{r.success.mean():.3f} solved, {false_successes} in collision")
    assert plain_hits > 0
    assert r.success.mean() >= 0.99 and false_successes == 0


def test_unbatched_scene_gives_scalars(f32):
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.add_entity(gs.morphs.Box(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3), fixed=True))
    scene.build()
    r = panda.inverse_kinematics(panda.get_link("panda_hand"), (0.45, 0.1, 0.45), (0, 1, 0, 0), seed=0,
                                 return_info=True, avoid_collisions=True, collision_margin=0.01)
    assert r.success and np.ndim(r.min_distance) == 0 and r.min_distance >= 0.01
    assert isinstance(r.min_pair, tuple) and r.error.shape == (1, 6)
    assert r.min_distance == pytest.approx(float(panda.collision_distance(r.qpos)), abs=1e-6)


def test_a_mesh_scaled_per_axis_has_a_collision_model(f32):
    scene = gs.Scene()
    body = scene.add_entity(gs.morphs.Mesh(file="meshes/axis.obj", scale=(1.0, 2.0, 0.5)))
    scene.build()
    spheres = body.collision_model().spheres
    assert spheres.n_spheres > 0 and not body.in_collision()


def test_the_tables_follow_pairs_changed_between_calls(clutter):
    """A pair removed (or added back) between two calls is packed into the next solve's tables, and
    on a software Vulkan device the launch budget follows the search's new loop count."""
    from engine.runtime import dispatch

    panda, _judge, (pos, quat) = clutter
    hand = panda.get_link("panda_hand")

    def solve():
        return panda.inverse_kinematics(hand, pos[:8], quat[:8], envs_idx=np.arange(8), seed=0, return_info=True,
                                        avoid_collisions=True, kernel="generic")

    solve()
    plan = panda.ik_state.plans.values()[-1]
    loops, solver_loops, pairs = plan.avoid.loops, plan.avoid.solver_loops, panda.collision_model().pairs
    assert 0 < solver_loops <= loops
    a, b = pairs[0]
    panda.remove_collision_pair(a, b)
    try:
        r = solve()
        assert panda.ik_state.plans.values()[-1] is plan and plan.avoid.loops < loops
        assert plan.avoid.solver_loops < solver_loops
        assert (a, b) not in r.min_pair and (b, a) not in r.min_pair
        assert plan.budget == dispatch.solver_budget(*plan.budget_sizes, plan.avoid.solver_loops)
    finally:
        panda.add_collision_pair(a, b)
    solve()
    assert plan.avoid.loops == loops and plan.avoid.solver_loops == solver_loops
    assert plan.budget == dispatch.solver_budget(*plan.budget_sizes, solver_loops)
    if active() != "cpu":
        assert 0 < plan.budget


def test_plain_generic_solves_compile_no_avoidance_code(clutter, monkeypatch):
    """The avoidance search is most of the generic solver's code (compiled in, every generic solve
    took 205-212 s to compile cold here instead of 28 s: bench/compile.py), so only requests that
    avoid collisions get a generic solver with it: the kernel's on-demand kinds (the template
    argument before the last two; those: boxed limits, the launch's first thread) hold COLLIDE's
    bit only then, and never the look-at's (:func:`engine.kernels.kinds.on_demand_mask`)."""
    from engine.kernels import generic as ik_kernels
    from engine.kernels.kinds import LOOK_AT
    from engine.kernels.tables import COLLIDE

    panda, _judge, (pos, quat) = clutter
    hand = panda.get_link("panda_hand")
    solve, flags = ik_kernels.solve, []
    monkeypatch.setattr(ik_kernels, "solve", lambda *args: flags.append(args[-3]) or solve(*args))
    plain = panda.inverse_kinematics(hand, pos, quat, seed=0, kernel="generic", return_info=True)
    # envs the avoiding solve redoes from their warm start with the avoidance task: their plain answer
    # (from the warm start) is clear but within the margin (engine.ik.avoiding, stage 2)
    depth = panda.collision_distance(plain.qpos)
    hit = np.flatnonzero(plain.success & (plain.sample == 0) & (depth > 0) & (depth < 0.05))[:4]
    assert len(hit)
    call = dict(envs_idx=hit, seed=0, kernel="generic", max_samples=1)
    flags.clear()
    panda.inverse_kinematics(hand, pos[hit], quat[hit], **call)
    assert flags and set(flags) == {0}
    flags.clear()
    panda.inverse_kinematics(hand, pos[hit], quat[hit], **call, avoid_collisions=True, collision_margin=0.05)
    # plain first (every env), then with the avoidance task for the envs whose answers collide
    assert set(flags) == {0, 1 << COLLIDE} and not (1 << LOOK_AT) & flags[-1]


def test_avoiding_keeps_each_plain_answer_that_is_clear(clutter):
    """An avoiding solve is a plain solve first: an env whose plain answer succeeds and is clear of
    everything by the margin (by the collision model) keeps that answer, bit for bit, and only the
    others are solved again with the avoidance task; none of theirs that succeeds collides (coal)."""
    panda, judge, (pos, quat) = clutter
    hand = panda.get_link("panda_hand")
    for margin in (0.0, 0.02):
        plain = panda.inverse_kinematics(hand, pos, quat, seed=1, return_info=True)
        clear = plain.success & (panda.collision_distance(plain.qpos) >= margin + 2e-6)
        r = panda.inverse_kinematics(hand, pos, quat, seed=1, return_info=True, avoid_collisions=True,
                                     collision_margin=margin)
        assert clear.any() and (~clear).any(), clear.mean()
        np.testing.assert_array_equal(r.qpos[clear], plain.qpos[clear])
        np.testing.assert_array_equal(r.sample[clear], plain.sample[clear])
        np.testing.assert_array_equal(r.iterations[clear], plain.iterations[clear])
        np.testing.assert_array_equal(r.error[clear], plain.error[clear])
        assert r.success[clear].all()
        if margin == 0.0:  # the envs solved again too (at 2 cm some targets lie nearer than the margin)
            assert r.success.mean() >= 0.99, r.success.mean()
        assert judge.count(r.qpos, r.success) == 0
        assert (r.min_distance[r.success] >= margin).all()
        np.testing.assert_allclose(r.min_distance, panda.collision_distance(r.qpos), atol=1e-6)
