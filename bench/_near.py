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
from _coal import MeshJudge, near_free_configurations  # noqa: E402
from _near_targets import clutter_panda  # noqa: E402

NEAR = 0.04  # m
HAND = "panda_hand"


def clutter_scene(n_envs: int):
    """(scene, panda, judge) of :data:`SCENE`, built with ``n_envs`` envs; ``judge`` the coal
    reference over its obstacles (the tests' own scene: ``tests/_near_targets.clutter_panda``)."""
    return clutter_panda(n_envs)


def near_configurations(panda, judge: MeshJudge, n: int, seed: int, near: float = NEAR,
                        beyond: float = 0.0) -> np.ndarray:
    """``(n, n_qs)`` mesh-free configurations whose nearest obstacle is within ``near`` and
    farther than ``beyond`` (m; seeded)."""
    return near_free_configurations(panda, judge, n, seed, near, beyond)


def hand_poses(panda, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hand poses ``(pos (n, 3), quat (n, 4))`` float32 of ``qpos (n, n_qs)``."""
    pose = panda.configuration.fk_poses(np.ascontiguousarray(qpos, panda.configuration.dtype))
    hand = panda.get_link(HAND).idx_local
    return np.asarray(pose[:, hand, :3], np.float32), np.asarray(pose[:, hand, 3:], np.float32)
