"""The dual-arm collision scene of tests/test_ik_collision.py and bench/dual_arm.py: Baxter (the
example-robot-data URDF and SRDF, fixed base) with both grippers on targets less than 35 cm apart,
taken from configurations whose right arm mirrors the left (plus noise), so that the hands meet in
front of the robot and the arms must keep clear of each other and of the body. Plain numpy over
the engine's API; no test framework."""

from __future__ import annotations

import numpy as np

import engine as gs
from engine.collision.robot import sample_qpos

GRIPPERS = ("left_gripper", "right_gripper")
MAX_GAP = 0.35  # m between the two grippers' targets


def baxter_scene(n_envs: int):
    """(scene, baxter, removed pairs): built with ``n_envs`` envs; the counted pairs that the
    checks find touching at rest are no longer counted, as a user would do, so that the rest pose
    is collision-free (with the spheres alone: the fingertips of one gripper, which IK of the
    grippers never moves, as the spheres are larger than the meshes the SRDF was written for;
    with the links' hulls, the default, none)."""
    scene = gs.Scene()
    baxter = scene.add_entity(gs.morphs.URDF(file="erd:baxter", fixed=True))
    scene.build(n_envs=n_envs)
    rest = np.tile(baxter.tree.default_qpos, (n_envs, 1))
    removed = []
    while True:
        dist, pair = baxter.collision_distance(rest, return_pair=True)
        if dist[0] >= 0:
            return scene, baxter, removed
        baxter.remove_collision_pair(*pair[0])
        removed.append(pair[0])


def mirrored_arms(robot, n: int, seed: int) -> np.ndarray:
    """``n`` Baxter configurations ``(n, n_qs)`` whose right arm mirrors the left one (plus noise);
    the head and the fingers, which IK of the grippers does not move, at their defaults."""
    q = np.tile(robot.tree.default_qpos, (n, 1))
    arms = [j.q_start for j in robot.tree.joints if j.n_qs == 1 and j.name[:6] in ("left_s", "left_e", "left_w")]
    q[:, arms] = sample_qpos(robot.tree, n, seed=seed)[:, arms]
    rng = np.random.default_rng(seed)
    lo, hi = robot.q_limits
    start = {j.name: j.q_start for j in robot.tree.joints}
    for joint, sign in (("s0", -1), ("s1", 1), ("e0", -1), ("e1", 1), ("w0", -1), ("w1", 1), ("w2", -1)):
        left, right = start[f"left_{joint}"], start[f"right_{joint}"]
        q[:, right] = np.clip(sign * q[:, left] + rng.normal(0.0, 0.25, n), lo[right], hi[right])
    return q


def close_hand_targets(baxter, n: int, seed: int):
    """Targets for both grippers: ``(poss [2 x (n, 3)], quats [2 x (n, 4)], qpos (n, n_qs))`` from
    ``n`` sphere-collision-free mirrored configurations whose grippers are less than
    :data:`MAX_GAP` apart (``n`` at most the scene's env count). The state is back at rest after."""
    links = [baxter.get_link(name) for name in GRIPPERS]
    batch = baxter.configuration.n_envs
    kept = []
    for k in range(200):
        q = mirrored_arms(baxter, batch, seed=seed + k)
        baxter.set_qpos(q)
        gap = np.linalg.norm(links[0].get_pos() - links[1].get_pos(), axis=-1)
        kept.append(q[~baxter.in_collision() & (gap < MAX_GAP)])
        if sum(map(len, kept)) >= n:
            break
    qs = np.concatenate(kept)[:n]
    assert len(qs) == n, f"only {len(qs)} configurations"
    baxter.set_qpos(qs, envs_idx=np.arange(n))
    poss = [link.get_pos()[:n].copy() for link in links]
    quats = [link.get_quat()[:n].copy() for link in links]
    baxter.set_qpos(np.tile(baxter.tree.default_qpos, (batch, 1)))
    return poss, quats, qs
