"""What ``plan_path(..., return_info=True)`` returns: :class:`PlanResult`, and the failure reasons."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OK = "ok"
START_IN_COLLISION = "start_in_collision"
GOAL_IN_COLLISION = "goal_in_collision"
START_OUT_OF_LIMITS = "start_out_of_limits"
GOAL_OUT_OF_LIMITS = "goal_out_of_limits"
TIMEOUT = "timeout"
NODE_BUDGET = "node_budget"
NOT_CERTIFIED = "not_certified"  # a found path whose resampled form could not be certified
GOAL_UNREACHABLE = "goal_unreachable"  # a Cartesian goal: IK found no collision-free solution
REASONS = (OK, START_IN_COLLISION, GOAL_IN_COLLISION, START_OUT_OF_LIMITS, GOAL_OUT_OF_LIMITS, TIMEOUT,
           NODE_BUDGET, NOT_CERTIFIED, GOAL_UNREACHABLE)


@dataclass
class PlanResult:
    """One ``plan_path`` call's answers, per selected env (shapes follow the scene: an unbatched
    scene has no env axis).

    ``path``: waypoints ``(num_waypoints, [n_envs,] n_qs)`` (an env that failed holds its start,
    unmoved); ``valid``: bool ``([n_envs])``; ``reason``: one of :data:`REASONS` per env;
    ``length``: the path's joint-space length (rad / m, Euclidean over qpos; 0 where invalid);
    ``planning_time``: seconds of the whole call; ``nodes``: tree nodes used per env (both trees,
    every attempt); ``attempts``: attempts run per env; ``certified``: every segment between
    consecutive waypoints was proven free (not only the waypoints), per env; ``goal``: the goal
    configuration ``([n_envs,] n_qs)`` each env planned to (a Cartesian goal's IK solution)."""

    path: np.ndarray
    valid: np.ndarray
    reason: list | str
    length: np.ndarray
    planning_time: float
    nodes: np.ndarray
    attempts: np.ndarray
    certified: np.ndarray
    goal: np.ndarray | None = None

    @property
    def success_rate(self) -> float:
        return float(np.mean(self.valid))


__all__ = ["GOAL_IN_COLLISION", "GOAL_OUT_OF_LIMITS", "GOAL_UNREACHABLE", "NODE_BUDGET", "NOT_CERTIFIED", "OK",
           "REASONS", "START_IN_COLLISION", "START_OUT_OF_LIMITS", "TIMEOUT", "PlanResult"]
