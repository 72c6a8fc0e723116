"""Genesis' PD gains and force calls, accepted by this kinematic engine (mixed into
:class:`~engine.entity.RigidEntity`).

* ``set_dofs_kp`` / ``set_dofs_kv`` (``(n,)`` or ``([n_envs,] n)``, >= 0) and
  ``set_dofs_force_range(lower, upper)`` (lower <= upper) are checked and stored per env and dof;
  ``get_dofs_kp`` / ``get_dofs_kv`` / ``get_dofs_force_range`` read them back (0 and +-inf until
  set). Nothing here uses them: ``control_dofs_position`` moves a dof to its target at its velocity
  limit, whatever its gains.
* ``control_dofs_force`` checks its forces and takes the dofs off position control: they hold
  still. It logs one warning line per process saying so: no force acts here, so fingers closed
  by force grip nothing (a grasped object does not follow the hand).
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from . import inputs
from .errors import InvalidValueError
from .runtime.locking import serialised

LOG = logging.getLogger("engine")
FORCE_WARNING = ("control_dofs_force: this engine is kinematic: forces move nothing; the dofs given stop "
                 "following their position targets and hold still (fingers closed by force grip nothing)")
_warned = threading.Event()


class DofGains:
    """``set/get_dofs_kp``, ``set/get_dofs_kv``, ``set/get_dofs_force_range``, ``control_dofs_force``."""

    def _gains(self) -> dict:
        cfg = self.configuration
        kept = self.__dict__.get("_dof_gains")
        if kept is None or kept["kp"].shape != (cfg.n_envs, self.n_dofs):
            shape = (cfg.n_envs, self.n_dofs)
            kept = {"kp": np.zeros(shape), "kv": np.zeros(shape), "lower": np.full(shape, -np.inf),
                    "upper": np.full(shape, np.inf)}
            self.__dict__["_dof_gains"] = kept
        return kept

    def _dof_values(self, name, value, dofs_idx_local, envs_idx, allow_inf=False):
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        sel = inputs.as_index_list("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        dofs = np.arange(self.n_dofs) if sel is None else sel
        arr = inputs.as_float_array(name, value, allow_nonfinite=allow_inf)
        if np.isnan(arr).any():
            raise InvalidValueError(f"{name}: expected numbers, got NaN")
        values = inputs.batched(name, arr, (len(dofs),), len(envs), cfg.batched)
        return envs, dofs, np.asarray(values, float)

    def _set_gain(self, key, name, value, dofs_idx_local, envs_idx):
        envs, dofs, values = self._dof_values(name, value, dofs_idx_local, envs_idx)
        if (values < 0).any():
            raise InvalidValueError(f"{name}: expected non-negative gains, got {float(values.min()):g}")
        self._gains()[key][np.ix_(envs, dofs)] = values

    def _get(self, key, dofs_idx_local, envs_idx):
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        sel = inputs.as_index_list("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        dofs = np.arange(self.n_dofs) if sel is None else sel
        return cfg.out(self._gains()[key][np.ix_(envs, dofs)].astype(cfg.dtype))

    @serialised
    def set_dofs_kp(self, kp, dofs_idx_local=None, envs_idx=None) -> None:
        """Store position gains ``([n_envs,] n)`` (>= 0); see the module docstring."""
        self._set_gain("kp", "kp", kp, dofs_idx_local, envs_idx)

    @serialised
    def set_dofs_kv(self, kv, dofs_idx_local=None, envs_idx=None) -> None:
        """Store velocity gains ``([n_envs,] n)`` (>= 0); see the module docstring."""
        self._set_gain("kv", "kv", kv, dofs_idx_local, envs_idx)

    @serialised
    def set_dofs_force_range(self, lower, upper, dofs_idx_local=None, envs_idx=None) -> None:
        """Store force ranges ``([n_envs,] n)`` each (N or N m, lower <= upper, inf allowed)."""
        envs, dofs, lo = self._dof_values("lower", lower, dofs_idx_local, envs_idx, allow_inf=True)
        _, _, hi = self._dof_values("upper", upper, dofs_idx_local, envs_idx, allow_inf=True)
        if (lo > hi).any():
            k = int(np.argwhere(lo > hi)[0][-1])
            raise InvalidValueError(f"lower, upper: expected lower <= upper, got {lo.ravel()[k]:g} > "
                                    f"{hi.ravel()[k]:g} (dof {int(dofs[k])})")
        gains = self._gains()
        gains["lower"][np.ix_(envs, dofs)], gains["upper"][np.ix_(envs, dofs)] = lo, hi

    @serialised
    def get_dofs_kp(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        return self._get("kp", dofs_idx_local, envs_idx)

    @serialised
    def get_dofs_kv(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        return self._get("kv", dofs_idx_local, envs_idx)

    @serialised
    def get_dofs_force_range(self, dofs_idx_local=None, envs_idx=None) -> tuple[np.ndarray, np.ndarray]:
        return self._get("lower", dofs_idx_local, envs_idx), self._get("upper", dofs_idx_local, envs_idx)

    @serialised
    def control_dofs_force(self, force, dofs_idx_local=None, envs_idx=None) -> None:
        """Check ``force`` ``([n_envs,] n)`` (finite, N or N m) and take those dofs off position
        control (they hold still); one warning line per process (see the module docstring)."""
        envs, dofs, values = self._dof_values("force", force, dofs_idx_local, envs_idx)
        self.configuration.dof_controlled[np.ix_(envs, dofs)] = False
        if not _warned.is_set():
            _warned.set()
            LOG.warning(FORCE_WARNING)


__all__ = ["FORCE_WARNING", "DofGains"]
