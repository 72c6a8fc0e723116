"""Motion planning: collision-free joint paths for every env in one call (``entity.plan_path``).

Modules, one job each:

``draws``      counter-based random numbers (same seed -> same draws in any process, on any backend)
``bounds``     how far each collision sphere can move over a joint-space segment (lever arms)
``checks``     distances of batched configurations (the collision kernel of :mod:`engine.collision.checks`)
               and the certification of segments (every point of a segment, not only samples)
``trees``      the search trees in kernel arrays: nearest-node search and node appends, over (env, tree)
``search``     RRT and RRT-Connect rounds over every env of a batch at once
``smoothing``  shortcutting and resampling of found paths
``result``     :class:`PlanResult` and the failure reasons
``api``        ``plan_path`` on the entity (argument checks, retries, the shapes Genesis returns)
"""

from .result import REASONS, PlanResult

__all__ = ["REASONS", "PlanResult"]
