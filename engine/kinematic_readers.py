"""Genesis' velocity, force and contact readers, with the meanings they can honestly have in a
kinematic engine (mixed into :class:`~engine.entity.RigidEntity`):

* ``get_dofs_velocity``: what ``set_dofs_velocity`` last set, else the change of the dof positions
  (``get_dofs_position``) over the last ``scene.step()`` divided by ``dt``; zero after a teleport
  (``set_qpos``, ``set_dofs_position``, ``set_pos``, ``reset``), as Genesis' ``zero_velocity``
  default does. ``set_dofs_velocity`` moves nothing: nothing here integrates velocities.
* ``get_links_vel`` / ``get_links_ang``: each link origin's linear / angular velocity, world axes,
  the link Jacobian times the dof velocities.
* ``get_dofs_force`` / ``get_dofs_control_force``: zeros (no dynamics here).
* ``get_contacts``: no contacts (empty arrays), not an error.
"""

from __future__ import annotations

import numpy as np

from . import dofs as dofs_mod
from . import inputs
from .locking import serialised


class KinematicReaders:
    """Dof velocities, link velocities, forces and contacts (see the module docstring)."""

    def _dof_velocity_all(self) -> np.ndarray:
        """(B, n_dofs) dof velocities, zeros where nothing set them."""
        vel = self.__dict__.get("_dof_vel")
        if vel is None or vel.shape != (self._B, self.n_dofs):
            return np.zeros((self._B, self.n_dofs), self._dtype)
        return vel

    def _note_motion(self, before: np.ndarray | None, dt: float) -> None:
        """After a step from qpos ``before`` (B, n_qs): the dof velocities; None: zero (a teleport,
        or a step that moved nothing)."""
        if before is None:
            self._dof_vel = None
            return
        old = dofs_mod.qpos_to_dofs(self.tree, before.astype(float))
        new = dofs_mod.qpos_to_dofs(self.tree, self._qpos.astype(float))
        self._dof_vel = ((new - old) / dt).astype(self._dtype)

    def _velocities_kept(self, zero_velocity, skip_forward=False):
        """Before a teleport: the dof velocities to put back after it (None: they become zero)."""
        zero = inputs.as_flag("zero_velocity", zero_velocity)
        inputs.as_flag("skip_forward", skip_forward)
        return None if zero else self.__dict__.get("_dof_vel")

    def _restore_velocities(self, kept) -> None:
        if kept is not None:
            self._dof_vel = kept

    @serialised
    def get_dofs_velocity(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        """Dof velocities ``([n_envs,] n)``, rad/s or m/s (see the module docstring)."""
        self._require_built()
        envs = self._envs(envs_idx)
        dofs = self._select("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        return self._out(self._dof_velocity_all()[np.ix_(envs, dofs)].copy())

    @serialised
    def set_dofs_velocity(self, velocity=None, dofs_idx_local=None, envs_idx=None, skip_forward: bool = False) -> None:
        """Record dof velocities ``([n_envs,] n)`` (None: zeros) for the readers; nothing moves."""
        self._require_built()
        inputs.as_flag("skip_forward", skip_forward)
        envs = self._envs(envs_idx)
        dofs = self._select("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        values = (np.zeros((len(envs), len(dofs))) if velocity is None
                  else inputs.batched("velocity", velocity, (len(dofs),), len(envs), self._batched))
        vel = self._dof_velocity_all().copy()
        vel[np.ix_(envs, dofs)] = values
        self._dof_vel = vel.astype(self._dtype)

    def _links_twist(self, links_idx_local, envs_idx) -> np.ndarray:
        """(n_envs_sel, n_links_sel, 6): J @ qdot per link, linear then angular."""
        envs = self._envs(envs_idx)
        links = self._select("links_idx_local", links_idx_local, self.n_links, "link")
        qdot = self._dof_velocity_all()[envs].astype(float)
        out = np.zeros((len(envs), len(links), 6), self._dtype)
        if not np.any(qdot):
            return out
        for k, link in enumerate(links):
            J = self.get_jacobian(self.links[link], envs_idx=None if not self._batched else envs)
            J = J.reshape(len(envs), 6, self.n_dofs).astype(float)
            out[:, k] = np.einsum("eij,ej->ei", J, qdot)
        return out

    @serialised
    def get_links_vel(self, links_idx_local=None, envs_idx=None, *, ref=None, relative: bool = True) -> np.ndarray:
        """Link origins' linear velocities ``([n_envs,] n_links, 3)``, m/s, world axes. ``ref`` and
        ``relative`` are Genesis' arguments: link origins are the only reference point here."""
        self._require_built()
        inputs.as_flag("relative", relative)
        return self._out(self._links_twist(links_idx_local, envs_idx)[..., :3])

    @serialised
    def get_links_ang(self, links_idx_local=None, envs_idx=None) -> np.ndarray:
        """Links' angular velocities ``([n_envs,] n_links, 3)``, rad/s, world axes."""
        self._require_built()
        return self._out(self._links_twist(links_idx_local, envs_idx)[..., 3:])

    @serialised
    def get_dofs_force(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        """Zeros ``([n_envs,] n)``: no forces act in a kinematic engine."""
        self._require_built()
        envs = self._envs(envs_idx)
        dofs = self._select("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        return self._out(np.zeros((len(envs), len(dofs)), self._dtype))

    @serialised
    def get_dofs_control_force(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        """Zeros ``([n_envs,] n)``: position control here moves dofs directly, with no force."""
        return self.get_dofs_force(dofs_idx_local, envs_idx)

    @serialised
    def get_contacts(self, with_entity=None, exclude_self_contact: bool = False, is_padded: bool = False) -> dict:
        """No contacts: Genesis' keys with empty arrays (``link_a``, ``link_b``, ``geom_a``,
        ``geom_b``: int, ``(0,)``; ``position``, ``force_a``, ``force_b``: ``(0, 3)``; with a
        leading env axis in a batched scene). Distances to obstacles: ``collision_distance``."""
        self._require_built()
        inputs.as_flag("exclude_self_contact", exclude_self_contact)
        inputs.as_flag("is_padded", is_padded)
        lead = (self._B,) if self._batched else ()
        out = {key: np.zeros(lead + (0,), np.int32) for key in ("link_a", "link_b", "geom_a", "geom_b")}
        out.update({key: np.zeros(lead + (0, 3), self._dtype) for key in ("position", "force_a", "force_b")})
        return out

    def __getattr__(self, name: str):
        """Genesis' entity features that are not part of this engine: a clear error naming them."""
        if name.startswith("_"):
            raise AttributeError(f"'RigidEntity' object has no attribute {name!r}")
        from .genesis_names import ENTITY_FEATURES, missing

        raise missing("RigidEntity", name, ENTITY_FEATURES)
