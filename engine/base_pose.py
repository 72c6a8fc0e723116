"""Genesis' base-pose calls (``get_pos`` / ``get_quat`` / ``set_pos`` / ``set_quat``), mixed into
:class:`~engine.entity.RigidEntity`: a free base's or a fixed single body's pose, per env.

Genesis 1.4.5's ``relative`` (default True) chooses between the authored link origin and the
solver's internal one, which differ only by a morph's ``offset_pos`` / ``offset_quat``; there are
no such offsets here, so both values set the same absolute pose (the pose is never added to the
current one). ``zero_velocity`` (default True) zeroes the dof velocities the readers report
(:mod:`engine.kinematic_readers`), as a teleport does anyway; ``skip_forward`` is accepted.
"""

from __future__ import annotations

import numpy as np

from . import dofs as dofs_mod
from . import inputs
from .errors import InvalidValueError, StateError
from .morphs import MAX_POS
from .runtime.locking import serialised


class BasePoseMethods:
    """``get_pos``, ``get_quat``, ``set_pos``, ``set_quat``."""

    @serialised
    def get_pos(self, envs_idx=None) -> np.ndarray:
        """The base link's position ``([n_envs,] 3)``, m."""
        return self.get_links_pos(links_idx_local=[0], envs_idx=envs_idx)[..., 0, :]

    @serialised
    def get_quat(self, envs_idx=None) -> np.ndarray:
        """The base link's orientation ``([n_envs,] 4)``, (w, x, y, z)."""
        return self.get_links_quat(links_idx_local=[0], envs_idx=envs_idx)[..., 0, :]

    @serialised
    def set_pos(self, pos, envs_idx=None, *, zero_velocity: bool = True, relative: bool = True,
                skip_forward: bool = False) -> None:
        """Move a free base, or a fixed single body, to ``pos`` ``([n_envs,] 3)`` m (absolute for
        either ``relative``; see the module docstring). A fixed body (an obstacle) keeps its new
        pose through ``set_qpos`` and ``step``; ``scene.reset()`` puts it back where it was built."""
        self._set_base("pos", pos, envs_idx, relative, zero_velocity, skip_forward)

    @serialised
    def set_quat(self, quat, envs_idx=None, *, zero_velocity: bool = True, relative: bool = True,
                 skip_forward: bool = False) -> None:
        """Turn a free base, or a fixed single body, to ``quat`` ``([n_envs,] 4)`` (w, x, y, z;
        absolute for either ``relative``)."""
        self._set_base("quat", quat, envs_idx, relative, zero_velocity, skip_forward)

    def _set_base(self, name: str, value, envs_idx, relative, zero_velocity, skip_forward) -> None:
        cfg = self.configuration
        inputs.as_flag("relative", relative)
        kept = self.velocities_kept(zero_velocity, skip_forward)
        placed = self.is_placed_body
        if not self.is_free and not placed:
            raise StateError(f"set_{name}: '{self.tree.name}' is a fixed robot: its base is bolted to the world (no "
                             f"free joint); only a free body, a floating base or a fixed single body (Plane, Box, "
                             f"Sphere, Cylinder, Mesh) can be moved")
        envs = cfg.envs(envs_idx)
        size, start = (3, 0) if name == "pos" else (4, 3)
        values = inputs.batched(name, value, (size,), len(envs), cfg.batched)
        full = (cfg.body_pose[envs] if placed else cfg.qpos[envs]).astype(float)
        if name == "quat" and np.any(np.linalg.norm(values, axis=-1) < 1e-9):
            raise InvalidValueError(f"quat: expected a non-zero (w, x, y, z) quaternion, got {values.tolist()}")
        if name == "pos" and np.abs(values).max(initial=0) > MAX_POS:
            raise InvalidValueError(f"pos: expected coordinates within {MAX_POS:g} m, got "
                                    f"{float(np.abs(values).max()):.3g}")
        full[:, start:start + size] = values
        if not placed:
            cfg.commit_qpos(envs, dofs_mod.normalize_quaternions(self.tree, full))
            cfg.dof_velocity = kept
            return
        full[:, 3:] /= np.linalg.norm(full[:, 3:], axis=-1, keepdims=True)
        moved = cfg.body_pose.copy()
        moved[envs] = full
        cfg.body_pose = moved
        cfg.pose[envs, 0] = moved[envs]
