"""Plan jobs: a collision-free joint path per row, from a start to the row's IK answer (issue 31).

With ``plan=True`` (or a mapping of :data:`PLAN_KEYS`, ``plan_path``'s keywords) in
:func:`engine.batch.solve`, or ``ikstudio solve --plan``, each chunk's IK call is followed by one
batched ``robot.plan_path`` call in the same worker scene (the job's obstacles included):

- the goal of row ``i`` is its IK answer (the ``q_<joint>`` columns); a row whose IK failed is
  not planned: ``plan_valid`` false, ``plan_reason`` ``"goal_unreachable"``;
- its start is the robot's default qpos, or one configuration for every row (``start_qpos``), or
  the row's own values of ``n_qs`` numeric columns of the targets (``start``, in qpos order);
- the call is seeded :func:`plan_seed` ``(job seed, chunk)`` and the rows are envs ``0 .. n-1`` of
  it, as in the IK call: the planner's draws hash (seed, env), so a row's path depends on the
  job's settings and the chunk's rows only, never on which worker ran it, in what order, or
  whether the job was resumed. ``timeout`` is refused: a path that depends on the clock would not;
- output per row: ``path`` (``num_waypoints`` waypoints of ``n_qs`` values each, in the engine's
  precision: the waypoints ``plan_path`` certified, as returned; null where not valid),
  ``plan_valid``, ``plan_reason`` (``plan_path``'s reason, null where valid) and ``path_length``
  (rad / m, Euclidean in joint space; null where not valid).

A plan job's IK answers keep clear of the obstacles unless the solver settings say otherwise:
``avoid_collisions`` defaults to true there (an answer in collision would only come back
``goal_in_collision``).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidTypeError, InvalidValueError
from .settings import chunk_seed

PLAN_KEYS = ("num_waypoints", "max_nodes", "resolution", "max_retry", "smooth_path", "planner", "safety_margin",
             "ignore_collision")
DEFAULTS = {"num_waypoints": 32, "max_nodes": 2000, "resolution": 0.05, "max_retry": 1, "smooth_path": True,
            "planner": "RRTConnect", "safety_margin": 0.0, "ignore_collision": False}
PLAN_CHUNK = 256  # rows per chunk in a plan job: paths/s level off by ~256 envs (bench/plan.py); ~15 s a chunk
PLANNERS = ("RRTConnect", "RRT")
WHY_NOT = {  # plan_path keywords a dataset fixes itself, and why
    "timeout": "a path that depends on the clock would differ between runs, so a resumed or distributed job could "
               "not repeat it; bound the search with max_nodes and max_retry",
    "seed": "each chunk's planner seed derives from the job's seed",
    "qpos_goal": "the goal is each row's IK answer", "qpos_start": "give start (columns) or start_qpos",
    "envs_idx": "every row of a chunk is planned", "return_valid_mask": "the dataset has plan_valid",
    "return_info": "the dataset has plan_reason and path_length",
}
GOAL_UNREACHABLE = "goal_unreachable"  # engine.plan.result's reason for a goal IK did not reach
_STREAM = 0x2545F491  # keeps the planner's chunk seeds apart from the IK's


def plan_seed(job_seed: int, chunk: int) -> int:
    """The ``plan_path`` seed of chunk ``chunk`` of a job seeded ``job_seed``, in [0, 2**31)."""
    return chunk_seed(job_seed, chunk) ^ _STREAM


def plan_settings(plan, label: str = "plan", labels: dict | None = None) -> dict | None:
    """Every :data:`PLAN_KEYS` value of a plan job from ``plan`` (None or False: no plan job; True:
    the :data:`DEFAULTS`; a mapping: those keys over the defaults), checked as ``plan_path`` checks
    them. ``labels[key]`` names a key in errors (the command line's ``--num-waypoints``), else
    ``plan.<key>``."""
    from .. import inputs

    if plan is None or plan is False:
        return None
    if plan is True:
        plan = {}
    if not isinstance(plan, dict):
        raise InvalidTypeError(f"{label}: expected True or a mapping of plan_path keywords "
                               f"({', '.join(PLAN_KEYS)}), got {type(plan).__name__}")
    labels = labels or {}
    name = {k: labels.get(k, f"{label}.{k}") for k in PLAN_KEYS}
    for key in plan:
        if key in WHY_NOT:
            raise InvalidValueError(f"{label}: {key!r} is not a plan job's keyword: {WHY_NOT[key]}")
        if key not in DEFAULTS:
            raise InvalidValueError(f"{label}: unknown keyword {key!r}; expected some of {', '.join(PLAN_KEYS)}")
    v = {**DEFAULTS, **plan}
    if not isinstance(v["planner"], str) or v["planner"] not in PLANNERS:
        raise InvalidValueError(f"{name['planner']}: expected one of {', '.join(PLANNERS)}, got {v['planner']!r}")
    return {
        "num_waypoints": inputs.as_positive(name["num_waypoints"], v["num_waypoints"], integer=True, maximum=10_000),
        "max_nodes": inputs.as_positive(name["max_nodes"], v["max_nodes"], integer=True, maximum=1_000_000),
        "resolution": float(inputs.as_positive(name["resolution"], v["resolution"], maximum=10.0)),
        "max_retry": inputs.as_positive(name["max_retry"], v["max_retry"], integer=True, maximum=1000),
        "smooth_path": inputs.as_flag(name["smooth_path"], v["smooth_path"]),
        "planner": v["planner"],
        "safety_margin": float(inputs.as_positive(name["safety_margin"], v["safety_margin"], allow_zero=True,
                                                  maximum=10.0)),
        "ignore_collision": inputs.as_flag(name["ignore_collision"], v["ignore_collision"]),
    }


def check_plannable(tree, label: str = "plan") -> None:
    """Refuse a robot ``plan_path`` cannot plan for (free or ball joints), naming ``label``."""
    odd = [j.name for j in tree.joints if j.n_qs not in (0, 1)]
    if odd:
        raise InvalidValueError(f"{label}: robot '{tree.name}' has free or ball joints ({', '.join(odd[:4])}); "
                                "plan_path plans hinges and slides only (fix the base)")


def start_qpos_of(value, tree, q_names: list[str], label: str = "start_qpos") -> tuple[float, ...]:
    """One start configuration for every row: ``n_qs`` finite numbers (a sequence, or a string
    ``"q1,q2,..."`` as typed on a command line) within the joint limits."""
    if isinstance(value, str):
        words = [w for w in value.replace(" ", ",").split(",") if w]
        try:
            value = [float(w) for w in words]
        except ValueError:
            raise InvalidValueError(f"{label}: expected {len(q_names)} numbers such as 0,0.3,...; got {value!r}") \
                from None
    try:
        q = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"{label}: expected {len(q_names)} numbers (one per qpos entry), got {value!r}") \
            from None
    if q.shape != (len(q_names),):
        raise InvalidValueError(f"{label}: expected {len(q_names)} values, one per qpos entry "
                                f"({', '.join(q_names)}), got {q.size if q.ndim else 1}")
    if not np.isfinite(q).all():
        raise InvalidValueError(f"{label}: expected finite numbers, got {value!r}")
    lo, hi = tree.q_limits()
    out = np.flatnonzero((q < lo - 1e-5) | (q > hi + 1e-5))
    if out.size:
        i = int(out[0])
        raise InvalidValueError(f"{label}: {q_names[i]} = {q[i]:g} is outside its joint limits "
                                f"[{lo[i]:g}, {hi[i]:g}]")
    return tuple(float(x) for x in q)


def start_columns_of(value, q_names: list[str], label: str = "start") -> tuple[str, ...]:
    """The start columns: ``n_qs`` column names (a list, or one comma-separated string), in qpos order."""
    if isinstance(value, str):
        value = [w.strip() for w in value.split(",") if w.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(c, str) for c in value):
        raise InvalidTypeError(f"{label}: expected {len(q_names)} column names (comma-separated), got {value!r}")
    if len(value) != len(q_names):
        raise InvalidValueError(f"{label}: expected {len(q_names)} column names, one per qpos entry in the order "
                                f"{', '.join(q_names)}; got {len(value)}")
    if len(set(value)) != len(value):
        twice = next(c for c in value if value.count(c) > 1)
        raise InvalidValueError(f"{label}: column {twice!r} is named twice")
    return tuple(value)


def read_starts(carried, columns: tuple[str, ...], tree, column, source: str, label: str = "start") -> np.ndarray:
    """The start configurations ``(n, n_qs)`` float64 from the targets' other columns ``carried``
    (``column(table, name, source)`` reads a numeric column, naming the row of a bad value)."""
    missing = [c for c in columns if c not in carried.column_names]
    if missing:
        shown = ", ".join(carried.column_names[:20])
        raise InvalidValueError(f"{label}: no column {missing[0]!r} in {source}; its other columns are: "
                                f"{shown or 'none'}")
    q = np.stack([column(carried, c, source) for c in columns], axis=1)
    tree.check_joint_values(f"{source}: start columns", q)
    return q


def plan_chunk(robot, goal: np.ndarray, success: np.ndarray, start: np.ndarray, seed: int, settings: dict) -> dict:
    """Plan a chunk's ``n`` rows: ``goal`` ``(n, n_qs)`` (the IK answers), ``success`` ``(n,)``,
    ``start`` ``(n, n_qs)``; rows are envs ``0 .. n-1`` of ``robot``'s scene. Returns ``{"path"
    (n, num_waypoints, n_qs) in the engine's precision (zeros where not valid), "plan_valid" (n,)
    bool, "plan_reason" list of str or None, "path_length" (n,) float64}``."""
    n, n_qs = goal.shape
    T = settings["num_waypoints"]
    path = np.zeros((n, T, n_qs), robot.configuration.dtype)
    valid = np.zeros(n, bool)
    reason: list = [GOAL_UNREACHABLE] * n
    length = np.zeros(n)
    rows = np.flatnonzero(success)
    if len(rows):
        res = robot.plan_path(qpos_goal=goal[rows], qpos_start=start[rows], envs_idx=rows, return_info=True,
                              seed=seed, **settings)
        ok = np.asarray(res.valid, bool)
        valid[rows] = ok
        path[rows[ok]] = np.swapaxes(np.asarray(res.path), 0, 1)[ok]
        length[rows] = np.asarray(res.length, float)
        for k, r in enumerate(rows):
            reason[r] = None if ok[k] else res.reason[k]
    return {"path": path, "plan_valid": valid, "plan_reason": reason, "path_length": length}


def plan_columns(pa, result: dict) -> dict:
    """A chunk's plan columns as pyarrow arrays: ``path`` list<fixed_size_list<float, n_qs>> (null
    where not valid), ``plan_valid`` bool, ``plan_reason`` string, ``path_length`` float64 (null
    where not valid)."""
    path, valid = result["path"], np.asarray(result["plan_valid"], bool)
    n, T, n_qs = path.shape
    value_type = pa.float64() if path.dtype == np.float64 else pa.float32()
    kept = np.ascontiguousarray(path[valid]).reshape(-1)
    waypoints = pa.FixedSizeListArray.from_arrays(pa.array(kept, type=value_type), n_qs)
    offsets = pa.array(np.concatenate([[0], np.cumsum(np.where(valid, T, 0))]).astype(np.int32))
    paths = pa.ListArray.from_arrays(offsets, waypoints, mask=pa.array(~valid))
    return {"path": paths, "plan_valid": pa.array(valid),
            "plan_reason": pa.array(list(result["plan_reason"]), type=pa.string()),
            "path_length": pa.array(np.asarray(result["path_length"], float), mask=~valid)}


def read_paths(table, n_qs: int) -> np.ndarray:
    """The ``path`` column of a dataset ``table`` (its rows all valid) as ``(rows, num_waypoints,
    n_qs)``: a reader's helper (its null rows are skipped by the flattening, so select valid rows first)."""
    col = table.column("path").combine_chunks()
    flat = col.flatten().flatten().to_numpy()
    return flat.reshape(len(col) - col.null_count, -1, n_qs)


__all__ = ["DEFAULTS", "GOAL_UNREACHABLE", "PLAN_CHUNK", "PLAN_KEYS", "check_plannable", "plan_chunk",
           "plan_columns", "plan_seed", "plan_settings", "read_paths", "read_starts", "start_columns_of",
           "start_qpos_of"]
