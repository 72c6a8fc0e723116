"""Collision checks without IK, mixed into :class:`~engine.entity.RigidEntity`: the self-collision
model of :mod:`engine.collision` (spheres + counted pairs) queried for batched configurations.

Distances come from the kernel that checks IK answers (:func:`engine.collision.checks.distance`, one
thread per env) at the link poses the FK kernel gives: between the counted pairs' spheres, and
between the spheres and the scene's obstacles (:mod:`engine.collision.world`).
"""

from __future__ import annotations

import numpy as np

from .. import dofs as dofs_mod
from .. import inputs
from ..errors import InvalidValueError
from ..runtime.locking import serialised
from .robot import RobotCollision


class CollisionMethods:
    """``collision_model``, ``collision_pairs``, ``add/remove_collision_pair``, ``in_collision`` and
    ``collision_distance``."""

    @serialised
    def collision_model(self, spheres_per_link: int | None = None, seed: int | None = None,
                        samples: int | None = None, tolerance: float | None = None,
                        hulls: bool | None = None) -> RobotCollision:
        """The entity's :class:`~engine.collision.RobotCollision`, made on first use (fitting and pair
        sampling are cached on disk per robot file). The default model is the cover fit
        (:mod:`engine.collision.cover`: spheres standing out of the collision meshes by about
        ``tolerance`` m, default 0.004). ``spheres_per_link`` (1..64) asks for the older cluster
        fit with that many spheres per link instead; ``tolerance`` for the cover fit again.
        ``seed`` (default 0) or ``samples`` (configurations for pair selection without an SRDF;
        default 1000) different from the current model's make a new one too (pair edits are lost).
        ``hulls`` (default True): the checks (``in_collision``, ``collision_distance``, each IK
        answer's, the planner's) settle the pairs the spheres find within a few millimetres on
        the links' pieces (:mod:`engine.collision.pieces`: each link's convex hull, or convex
        pieces of a link that its hull fits loosely), to a few hundredths of a millimetre on
        convex meshes; False: the spheres alone."""
        if spheres_per_link is not None and tolerance is not None:
            raise InvalidValueError(f"spheres_per_link, tolerance: one fit or the other (the cluster fit's count or "
                                    f"the cover fit's tolerance), got both: {spheres_per_link!r}, {tolerance!r}")
        state = self.collision_state
        model = state.model
        want = {"spheres_per_link": spheres_per_link, "seed": seed, "samples": samples, "tolerance": tolerance,
                "hulls": hulls}
        if model is not None and all(v is None or getattr(model, k) == v for k, v in want.items()):
            return model
        base = {"spheres_per_link": None, "tolerance": None, "seed": 0, "samples": 1000, "hulls": True} \
            if model is None else {"spheres_per_link": model.spheres_per_link, "tolerance": model.tolerance,
                                   "seed": model.seed, "samples": model.samples, "hulls": model.hulls}
        if spheres_per_link is not None:  # one fit or the other
            base["tolerance"] = None
        if tolerance is not None:
            base["spheres_per_link"] = None
        base.update({k: v for k, v in want.items() if v is not None})
        state.model = RobotCollision(self, **base)
        return state.model

    def collision_pairs(self) -> list[tuple[str, str]]:
        """The link pairs the self-collision checks count, as ``(name_a, name_b)``."""
        return self.collision_model().pairs

    @serialised
    def add_collision_pair(self, link_a, link_b) -> None:
        """Count the pair of links (names or links of this entity) in the checks."""
        self.collision_model().add_pair(link_a, link_b)

    @serialised
    def remove_collision_pair(self, link_a, link_b) -> None:
        """Stop counting the pair of links (names or links of this entity) in the checks."""
        self.collision_model().remove_pair(link_a, link_b)

    def _collision_poses(self, qpos, envs_idx) -> tuple[np.ndarray, np.ndarray]:
        """(env indices, link poses ``(n, n_links, 7)``) of ``qpos`` or the current state."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        if qpos is None:
            return envs, cfg.pose[envs]
        full = inputs.batched("qpos", qpos, (self.n_qs,), len(envs), cfg.batched, dtype=cfg.dtype)
        self.tree.check_joint_values("qpos", full)
        if cfg.has_quaternions:
            full = dofs_mod.normalize_quaternions(self.tree, full)
        return envs, cfg.fk_poses(np.asarray(full))

    @serialised
    def collision_distance(self, qpos=None, envs_idx=None, return_pair: bool = False, world: bool = True,
                           self_collision: bool = True):
        """Smallest collision distance ``([n_envs,])`` m, from the collision model (the spheres, and
        for pairs near contact the larger of theirs and the links' pieces', :mod:`engine.collision.pieces`):
        with ``self_collision`` over the counted self-collision pairs and, with ``world``, to the
        scene's fixed Box / Sphere / Cylinder / Plane entities (:mod:`engine.collision.world`).
        Negative when they overlap (by the spheres), inf when there is nothing to check. It is at
        most the distance of the collision meshes (spheres and pieces contain them).

        ``qpos``: ``([n_envs,] n_qs)`` configurations (of the envs in ``envs_idx``); None: the
        current state. ``return_pair``: also return what sets each distance, ``([n_envs,])``
        tuples ``(link, link)`` or ``(link, obstacle)`` (obstacles are named ``"box#3"``: kind and
        entity index; None when there is nothing to check)."""
        from .checks import AvoidTables, distance

        world = inputs.as_flag("world", world)
        self_collision = inputs.as_flag("self_collision", self_collision)
        self.collision_model()
        cfg = self.configuration
        envs, pose = self._collision_poses(qpos, envs_idx)
        tables = self.collision_state.check_tables  # per (self pairs, world)
        key = (self_collision, world)
        if key not in tables:
            tables[key] = AvoidTables(1, cfg.dtype, self_pairs=self_collision, world=world)
        tables[key].update(self, envs)
        dist, names = distance(self, pose, envs, tables[key])
        dist = cfg.out(dist.astype(cfg.dtype))
        if not return_pair:
            return dist
        return dist, (names if cfg.batched else names[0])

    @serialised
    def in_collision(self, qpos=None, envs_idx=None, margin: float = 0.0, world: bool = True,
                     self_collision: bool = True):
        """``([n_envs,])`` bool: some counted pair's spheres (or, with ``world``, a sphere and an
        obstacle) are closer than ``margin`` (m, >= 0; 0: overlap). ``self_collision`` / ``world``:
        which checks count. False proves the collision meshes apart by at least ``margin``."""
        margin = inputs.as_positive("margin", margin, allow_zero=True)
        dist = np.asarray(self.collision_distance(qpos, envs_idx, world=world, self_collision=self_collision))
        return dist < margin
