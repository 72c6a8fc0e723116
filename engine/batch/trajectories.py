"""Trajectory jobs: time-ordered targets solved as motions (issue 30), not row by row.

With ``trajectory=COLUMN`` and ``time=COLUMN`` (:func:`engine.batch.solve`, ``ikstudio solve
--trajectory --time``), the rows that share a trajectory id form one motion, ordered by their time
(seconds, strictly increasing within a trajectory). A chunk is ``chunk`` whole trajectories (the
trajectories in order of their first row), solved side by side as envs, frame after frame:

- frame 0 of every trajectory: the full restart search from the robot's default pose, seeded from
  (job seed, chunk) as a row job's chunk is;
- every later frame: warm-started from the previous frame's answer and velocity-limited
  (``track=True``): no hinge or slide moves more than ``max_joint_velocity`` (the solver
  settings', else the robot file's) times the frame's time step. The chunk's envs share one
  call, so one step: the smallest time step among the trajectories still running at that frame
  (a trajectory whose frames are spaced wider moves less than it could, never more);
- a trajectory shorter than the chunk's longest repeats its last frame; those answers are dropped.

Output rows are the input rows (``target``: the row's index in the input), plus ``step``: the
largest hinge or slide move from the previous frame's answer (frame 0: from the default pose),
rad or m. A resumed job skips whole chunks, hence whole trajectories.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidValueError


@dataclass(frozen=True)
class Plan:
    """The rows of a trajectory job in solving order. ``order`` (n,): input row indices, trajectory
    by trajectory, each in time order; ``bounds`` (n_traj + 1,): where each trajectory's rows start
    in ``order``; ``times`` (n,): their times (s), in ``order``."""

    order: np.ndarray
    bounds: np.ndarray
    times: np.ndarray

    @property
    def n_trajectories(self) -> int:
        return len(self.bounds) - 1

    def chunk_rows(self, chunk: int) -> list[int]:
        """Rows per chunk of ``chunk`` trajectories."""
        ends = self.bounds[chunk::chunk].tolist()
        if ends[-1:] != [self.bounds[-1]]:
            ends.append(int(self.bounds[-1]))
        return np.diff([0, *ends]).astype(int).tolist()

    def chunk(self, k: int, chunk: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Chunk ``k``: ``(rows (m,) input indices, times (m,) s, lengths (t,) frames per trajectory)``."""
        b = self.bounds[k * chunk:min((k + 1) * chunk, self.n_trajectories) + 1]
        return self.order[b[0]:b[-1]], self.times[b[0]:b[-1]], np.diff(b)


def plan(carried, trajectory: str, time: str, column, label: str = "targets") -> Plan:
    """Order the rows of the targets by trajectory and time. ``carried``: the input's other columns
    (a pyarrow Table holding ``trajectory`` and ``time``); ``column(table, name, label)`` reads a
    numeric column (:func:`engine.batch.targets` checks). Raises InvalidValueError naming the
    column for a missing one, a missing or non-finite time, or a time repeated within a trajectory."""
    for name, what in ((trajectory, "trajectory"), (time, "time")):
        if name not in carried.column_names:
            shown = ", ".join(carried.column_names[:20])
            raise InvalidValueError(f"{label}: no {what} column {name!r}; the other columns are: {shown or 'none'}")
    if trajectory == time:
        raise InvalidValueError(f"trajectory, time: both name column {time!r}; expected two columns")
    ids = carried.column(trajectory).combine_chunks()
    if ids.null_count:
        raise InvalidValueError(f"{label}: column {trajectory!r}: missing trajectory id")
    import pyarrow.compute as pc

    codes = pc.dictionary_encode(ids).indices.to_numpy(zero_copy_only=False)  # by first appearance
    t = column(carried, time, label)
    if not np.isfinite(t).all():
        bad = int(np.flatnonzero(~np.isfinite(t))[0])
        raise InvalidValueError(f"{label}: column {time!r}: row {bad}: expected a finite time in seconds, got {t[bad]}")
    order = np.lexsort((np.arange(len(t)), t, codes))
    sorted_codes, sorted_t = codes[order], t[order]
    same = sorted_codes[1:] == sorted_codes[:-1]
    repeated = np.flatnonzero(same & (np.diff(sorted_t) <= 0))
    if repeated.size:
        i = int(repeated[0])
        raise InvalidValueError(f"{label}: column {time!r}: time {sorted_t[i]:g} s twice in trajectory "
                                f"{ids[int(order[i])].as_py()!r} (rows {int(order[i])} and {int(order[i + 1])}); "
                                "expected strictly increasing times within a trajectory")
    bounds = np.concatenate([[0], np.flatnonzero(~same) + 1, [len(t)]]).astype(np.int64)
    return Plan(order.astype(np.int64), bounds, sorted_t.astype(np.float64))


def frame_rows(lengths: np.ndarray, frame: int) -> np.ndarray:
    """Per trajectory of a chunk, the row (within the chunk) of ``frame``, or of its last frame."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return starts + np.minimum(frame, lengths - 1)


def frame_dt(times: np.ndarray, lengths: np.ndarray, frame: int) -> float:
    """The chunk's time step into ``frame`` (>= 1): the smallest among the trajectories that reach it."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    running = lengths > frame
    i = starts[running] + frame
    return float((times[i] - times[i - 1]).min())


def solve_chunk(call, index: int, pos: list, quat: list, times: np.ndarray, lengths: np.ndarray,
                n_envs: int) -> dict:
    """Solve one chunk's trajectories with ``call(pos, quat, init_qpos, frame, dt)`` (None for
    frame 0 and its start) -> IKResult of ``n_envs`` envs; ``pos`` / ``quat``: per link, the chunk's
    rows ``(m, 3)`` / ``(m, 4)`` or None. Returns per row ``qpos``, ``pos_error``, ``rot_error``,
    ``success``, ``iterations``, ``step`` (the worker's result keys)."""
    m, t = len(times), len(lengths)
    out: dict = {}
    q = None
    for frame in range(int(lengths.max())):
        rows = frame_rows(lengths, frame)
        pad = np.concatenate([rows, np.repeat(rows[-1:], n_envs - t)])  # the spare envs repeat the last
        res = call([None if p is None else p[pad] for p in pos], [None if x is None else x[pad] for x in quat],
                   q, frame, None if frame == 0 else frame_dt(times, lengths, frame))
        q = res.qpos
        live = np.flatnonzero(lengths > frame)
        for key, value in (("qpos", res.qpos), ("pos_error", res.pos_error), ("rot_error", res.rot_error),
                           ("success", res.success), ("iterations", res.iterations), ("step", res.step)):
            if key not in out:
                out[key] = np.zeros((m, *np.shape(value)[1:]), np.asarray(value).dtype)
            out[key][rows[live]] = np.asarray(value)[live]
    return out
