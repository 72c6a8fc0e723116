"""The seed's IK methods, mixed into :class:`~engine.entity.RigidEntity` (kept apart so the entity
module stays about state; the solver itself is :mod:`engine.ik`)."""

from __future__ import annotations

from . import inputs
from .ik import IKResult, solve_ik
from .locking import serialised


class IKMethods:
    """``inverse_kinematics`` and ``inverse_kinematics_multilink`` with Genesis' parameters."""

    @serialised
    def inverse_kinematics(self, link, pos=None, quat=None, local_point=None, init_qpos=None,
                           respect_joint_limit=True, max_samples=50, max_solver_iters=20, damping=0.01,
                           pos_tol=5e-4, rot_tol=5e-3, pos_mask=(True, True, True), rot_mask=(True, True, True),
                           max_step_size=0.5, seed=None, dofs_idx_local=None, return_error=False, envs_idx=None,
                           return_info=False, rest_qpos=None, rest_weight=0.0, kernel="auto"):
        """Joint configuration placing ``link`` at ``pos`` ([n_envs,] 3) / ``quat`` ([n_envs,] 4, wxyz).

        Returns qpos ``([n_envs,] n_qs)``; with ``return_error`` also the masked error
        ``([n_envs,] 6)``; with ``return_info`` an :class:`~engine.ik.IKResult` instead. The scene's
        state is not changed: apply the answer with ``set_qpos`` or ``control_dofs_position``.
        ``rest_qpos`` (n_qs,) and ``rest_weight`` > 0 pick, among solutions meeting the tolerances,
        the one nearest ``rest_qpos`` (default: the robot's default qpos), and pull toward it.
        ``kernel``: "auto" (the solver compiled for this robot where it qualifies: fastest, ~10 s to
        compile the first time), "per_robot" or "generic" (compiled once for every robot); see
        :data:`engine.ik.KERNELS`.
        """
        return_error, return_info = _flags(return_error, return_info)
        result: IKResult = solve_ik(self, [link], [pos], [quat], [local_point], init_qpos, respect_joint_limit,
                                    max_samples, max_solver_iters, damping, pos_tol, rot_tol, pos_mask, rot_mask,
                                    max_step_size, seed, dofs_idx_local, envs_idx, rest_qpos, rest_weight,
                                    single=True, kernel=kernel)
        if return_info:
            return result
        if return_error:
            return result.qpos, result.error[..., 0, :]
        return result.qpos

    @serialised
    def inverse_kinematics_multilink(self, links, poss=None, quats=None, local_points=None, init_qpos=None,
                                     respect_joint_limit=True, max_samples=50, max_solver_iters=20, damping=0.01,
                                     pos_tol=5e-4, rot_tol=5e-3, pos_mask=(True, True, True),
                                     rot_mask=(True, True, True), max_step_size=0.5, seed=None,
                                     dofs_idx_local=None, return_error=False, envs_idx=None, return_info=False,
                                     rest_qpos=None, rest_weight=0.0, kernel="auto"):
        """One configuration meeting every link's target together.

        ``links``: list of links; ``poss`` / ``quats`` / ``local_points``: lists of the same length
        whose entries may be None (no position / no orientation target for that link; not both).
        Returns qpos ``([n_envs,] n_qs)``, plus the error ``([n_envs,] n_links, 6)`` with
        ``return_error``, or an :class:`~engine.ik.IKResult` with ``return_info``.
        """
        return_error, return_info = _flags(return_error, return_info)
        links = list(links) if isinstance(links, list | tuple) else [links]
        n = len(links)
        poss, quats, local_points = (_per_link(name, value, n) for name, value in
                                     (("poss", poss), ("quats", quats), ("local_points", local_points)))
        result: IKResult = solve_ik(self, links, poss, quats, local_points, init_qpos, respect_joint_limit,
                                    max_samples, max_solver_iters, damping, pos_tol, rot_tol, pos_mask, rot_mask,
                                    max_step_size, seed, dofs_idx_local, envs_idx, rest_qpos, rest_weight,
                                    kernel=kernel)
        if return_info:
            return result
        if return_error:
            return result.qpos, result.error
        return result.qpos


def _flags(return_error, return_info) -> tuple[bool, bool]:
    """The two return-shape flags, checked (a string such as 'no' is not False)."""
    return inputs.as_flag("return_error", return_error), inputs.as_flag("return_info", return_info)


def _per_link(name: str, value, n: int) -> list:
    """A per-link argument of the multilink call as a list (None: n Nones); a scalar or a string is
    a TypeError naming ``name``."""
    if value is None:
        return [None] * n
    if isinstance(value, list | tuple) or (hasattr(value, "__len__") and hasattr(value, "__getitem__")
                                           and not isinstance(value, str | bytes)):
        return list(value)
    raise TypeError(f"{name}: expected a list with one entry per link ({n}), got {type(value).__name__}")
