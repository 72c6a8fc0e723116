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

from . import inputs
from .runtime.locking import serialised


class KinematicReaders:
    """Dof velocities, link velocities, forces and contacts (see the module docstring)."""

    def _dof_velocity_all(self) -> np.ndarray:
        """(B, n_dofs) dof velocities, zeros where nothing set them."""
        cfg = self.configuration
        vel = cfg.dof_velocity
        if vel is None or vel.shape != (cfg.n_envs, self.n_dofs):
            return np.zeros((cfg.n_envs, self.n_dofs), cfg.dtype)
        return vel

    def velocities_kept(self, zero_velocity, skip_forward=False):
        """Before a teleport: the dof velocities to put back after it (None: they become zero);
        checks Genesis' ``zero_velocity`` and ``skip_forward`` flags."""
        zero = inputs.as_flag("zero_velocity", zero_velocity)
        inputs.as_flag("skip_forward", skip_forward)
        return None if zero else self.configuration.dof_velocity

    def _indices(self, name: str, idx, size: int, what: str) -> np.ndarray:
        sel = inputs.as_index_list(name, idx, size, what)
        return np.arange(size) if sel is None else sel

    @serialised
    def get_dofs_velocity(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        """Dof velocities ``([n_envs,] n)``, rad/s or m/s (see the module docstring)."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        dofs = self._indices("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        return cfg.out(self._dof_velocity_all()[np.ix_(envs, dofs)].copy())

    @serialised
    def set_dofs_velocity(self, velocity=None, dofs_idx_local=None, envs_idx=None, skip_forward: bool = False) -> None:
        """Record dof velocities ``([n_envs,] n)`` (None: zeros) for the readers; nothing moves."""
        cfg = self.configuration
        inputs.as_flag("skip_forward", skip_forward)
        envs = cfg.envs(envs_idx)
        dofs = self._indices("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        values = (np.zeros((len(envs), len(dofs))) if velocity is None
                  else inputs.batched("velocity", velocity, (len(dofs),), len(envs), cfg.batched))
        vel = self._dof_velocity_all().copy()
        vel[np.ix_(envs, dofs)] = values
        cfg.dof_velocity = vel.astype(cfg.dtype)

    def _links_twist(self, links_idx_local, envs_idx) -> np.ndarray:
        """(n_envs_sel, n_links_sel, 6): J @ qdot per link, linear then angular."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        links = self._indices("links_idx_local", links_idx_local, self.n_links, "link")
        qdot = self._dof_velocity_all()[envs].astype(float)
        out = np.zeros((len(envs), len(links), 6), cfg.dtype)
        if not np.any(qdot):
            return out
        for k, link in enumerate(links):
            J = self.get_jacobian(self.links[link], envs_idx=envs if cfg.batched else None)
            J = J.reshape(len(envs), 6, self.n_dofs).astype(float)
            out[:, k] = np.einsum("eij,ej->ei", J, qdot)
        return out

    @serialised
    def get_links_vel(self, links_idx_local=None, envs_idx=None, *, ref=None, relative: bool = True) -> np.ndarray:
        """Link origins' linear velocities ``([n_envs,] n_links, 3)``, m/s, world axes. ``ref`` and
        ``relative`` are Genesis' arguments: link origins are the only reference point here."""
        inputs.as_flag("relative", relative)
        return self.configuration.out(self._links_twist(links_idx_local, envs_idx)[..., :3])

    @serialised
    def get_links_ang(self, links_idx_local=None, envs_idx=None) -> np.ndarray:
        """Links' angular velocities ``([n_envs,] n_links, 3)``, rad/s, world axes."""
        return self.configuration.out(self._links_twist(links_idx_local, envs_idx)[..., 3:])

    @serialised
    def get_dofs_force(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        """Zeros ``([n_envs,] n)``: no forces act in a kinematic engine."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        dofs = self._indices("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        return cfg.out(np.zeros((len(envs), len(dofs)), cfg.dtype))

    @serialised
    def get_dofs_control_force(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        """Zeros ``([n_envs,] n)``: position control here moves dofs directly, with no force."""
        return self.get_dofs_force(dofs_idx_local, envs_idx)

    @serialised
    def get_contacts(self, with_entity=None, exclude_self_contact: bool = False, is_padded: bool = False) -> dict:
        """No contacts: Genesis' keys with empty arrays (``link_a``, ``link_b``, ``geom_a``,
        ``geom_b``: int, ``(0,)``; ``position``, ``force_a``, ``force_b``: ``(0, 3)``; with a
        leading env axis in a batched scene). Distances to obstacles: ``collision_distance``."""
        cfg = self.configuration
        inputs.as_flag("exclude_self_contact", exclude_self_contact)
        inputs.as_flag("is_padded", is_padded)
        lead = (cfg.n_envs,) if cfg.batched else ()
        out = {key: np.zeros(lead + (0,), np.int32) for key in ("link_a", "link_b", "geom_a", "geom_b")}
        out.update({key: np.zeros(lead + (0, 3), cfg.dtype) for key in ("position", "force_a", "force_b")})
        return out

    def __getattr__(self, name: str):
        """Genesis' entity features that are not part of this engine: a clear error naming them."""
        if name.startswith("_"):
            raise AttributeError(f"'RigidEntity' object has no attribute {name!r}")
        from .genesis_names import ENTITY_FEATURES, missing

        raise missing("RigidEntity", name, ENTITY_FEATURES)
