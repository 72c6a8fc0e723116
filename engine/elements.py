"""Handles to a robot's links and joints, as returned by ``entity.get_link`` / ``get_joint``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class RigidLink:
    """A link of an entity. ``idx_local`` indexes the entity's links; ``idx`` the scene's.

    ``get_pos()`` / ``get_quat()`` read its pose from the scene's state, batched as the entity's
    calls are: ``([n_envs,] 3)`` m and ``([n_envs,] 4)`` (w, x, y, z), in the env-local world frame.
    """

    name: str
    idx_local: int
    idx: int
    parent_idx_local: int
    entity_id: int
    _entity: object = field(default=None, compare=False, repr=False)

    @property
    def entity(self):
        """The entity this link belongs to."""
        return self._entity

    def get_pos(self, envs_idx=None) -> np.ndarray:
        """The link origin ``([n_envs,] 3)``, m (``envs_idx``: a subset of envs)."""
        return self._entity.get_links_pos(links_idx_local=[self.idx_local], envs_idx=envs_idx)[..., 0, :]

    def get_quat(self, envs_idx=None) -> np.ndarray:
        """The link orientation ``([n_envs,] 4)``, (w, x, y, z)."""
        return self._entity.get_links_quat(links_idx_local=[self.idx_local], envs_idx=envs_idx)[..., 0, :]

    def __repr__(self) -> str:
        return f"RigidLink({self.name!r}, idx_local={self.idx_local})"


@dataclass(frozen=True)
class RigidJoint:
    """A joint of an entity, with where it sits in the entity's qpos and dof vectors."""

    name: str
    type: str
    idx_local: int
    idx: int
    link_idx_local: int
    qs_idx_local: tuple[int, ...]
    dofs_idx_local: tuple[int, ...]
    entity_id: int

    @property
    def n_qs(self) -> int:
        return len(self.qs_idx_local)

    @property
    def n_dofs(self) -> int:
        return len(self.dofs_idx_local)

    @property
    def dof_idx_local(self) -> int | None:
        """The single dof of a 1-dof joint (None otherwise)."""
        return self.dofs_idx_local[0] if len(self.dofs_idx_local) == 1 else None

    @property
    def q_idx_local(self) -> int | None:
        return self.qs_idx_local[0] if len(self.qs_idx_local) == 1 else None

    def __repr__(self) -> str:
        return f"RigidJoint({self.name!r}, {self.type}, dofs={list(self.dofs_idx_local)})"
