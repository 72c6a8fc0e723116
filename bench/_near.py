"""Hard targets for the collision-aware IK bench: hand poses of configurations that are collision-
free at mesh level and pass within ``NEAR`` of an obstacle, judged by Pinocchio + coal.

The scene is ``scenes/panda_clutter.yaml`` (a Panda on a table top among a pillar, a ball, an
overhead bar and a crate; its obstacles, example-robot-data's Panda URDF). Configurations are
seeded uniform random ones within the joint limits; coal judges each on the collision meshes: no
self collision (the SRDF's pairs), no moving link touching an obstacle, and the nearest
obstacle closer than ``NEAR``. The links rigidly attached to the world (the base on the table top)
are not checked against obstacles, as in the engine.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "tests"))  # the coal reference of the tests

SCENE = ROOT / "scenes" / "panda_clutter.yaml"
NEAR = 0.04  # m
HAND = "panda_hand"


def clutter_scene(n_envs: int):
    """(scene, panda, obstacle morphs) of :data:`SCENE`, built with ``n_envs`` envs."""
    import engine
    from engine.scenefile import io
    from engine.scenefile.obstacles import add_obstacles

    spec = io.load(SCENE)
    scene = engine.Scene()
    panda = scene.add_entity(engine.morphs.URDF(file="erd:panda", fixed=True))
    bodies = add_obstacles(spec, scene)
    scene.build(n_envs=n_envs)
    return scene, panda, [b.morph for b in bodies]


class MeshJudge:
    """Pinocchio + coal on the Panda's collision meshes and the obstacles' exact shapes."""

    def __init__(self, robot, morphs):
        import coal
        import pinocchio as pin
        from _coal import coal_shape, pin_coal

        from engine.collision.world import world_links
        from engine.transforms import quat_to_matrix

        self.coal, self.pin = coal, pin
        self.ref, self.geom = pin_coal(robot.tree)
        self.data, self.gdata = self.ref.model.createData(), pin.GeometryData(self.geom)
        keep = world_links(robot.tree, fixed_base=True)
        names = robot.tree.link_names()
        self.moving = [g for g, obj in enumerate(self.geom.geometryObjects)
                       if keep[names.index(self.ref.model.frames[obj.parentFrame].name)]]
        self.shapes = [(coal_shape(m, world=True), coal.Transform3s(quat_to_matrix(np.asarray(m.quat, float)),
                                                              np.asarray(m.pos, float))) for m in morphs]

    def judge(self, qpos) -> tuple[bool, float]:
        """(self collision, the smallest mesh distance to an obstacle (m; <= 0: touching)) at ``qpos``."""
        coal, pin = self.coal, self.pin
        pq = self.ref.pin_q(np.asarray(qpos, float))
        hit_self = pin.computeCollisions(self.ref.model, self.data, self.geom, self.gdata, pq, True)
        pin.updateGeometryPlacements(self.ref.model, self.data, self.geom, self.gdata)
        best = np.inf
        for g in self.moving:
            obj = self.geom.geometryObjects[g]
            tf = coal.Transform3s(self.gdata.oMg[g].rotation, self.gdata.oMg[g].translation)
            for shape, shape_tf in self.shapes:
                d = coal.distance(obj.geometry, tf, shape, shape_tf, coal.DistanceRequest(), coal.DistanceResult())
                best = min(best, d)
        return bool(hit_self), float(best)

    def collides(self, qpos) -> bool:
        hit_self, d = self.judge(qpos)
        return hit_self or d <= 0.0

    def count(self, qpos, which) -> int:
        """How many of ``qpos[which]`` collide at mesh level (self or an obstacle)."""
        return sum(self.collides(q) for q in np.asarray(qpos)[which])


def near_configurations(panda, judge: MeshJudge, n: int, seed: int, near: float = NEAR,
                        beyond: float = 0.0) -> np.ndarray:
    """``(n, n_qs)`` mesh-free configurations whose nearest obstacle is within ``near`` and
    farther than ``beyond`` (m; seeded)."""
    from engine.collision.robot import sample_qpos

    kept, k = [], 0
    while len(kept) < n:
        for q in sample_qpos(panda.tree, 256, seed=seed + k):
            hit_self, d = judge.judge(q)
            if not hit_self and max(beyond, 0.0) < d <= near:
                kept.append(q)
        k += 1
        if k > 400:
            raise RuntimeError(f"only {len(kept)} near-obstacle configurations in {k * 256} samples")
    return np.array(kept[:n])


def hand_poses(panda, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hand poses ``(pos (n, 3), quat (n, 4))`` float32 of ``qpos (n, n_qs)``."""
    pose = panda.configuration.fk_poses(np.ascontiguousarray(qpos, panda.configuration.dtype))
    hand = panda.get_link(HAND).idx_local
    return np.asarray(pose[:, hand, :3], np.float32), np.asarray(pose[:, hand, 3:], np.float32)
