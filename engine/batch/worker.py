"""The code that solves chunks, the same in-process and in a Ray actor.

A :class:`ChunkSolver` builds its scene once (``job.envs`` envs, the robot's default pose as
every call's start) and then solves chunk after chunk with one batched IK call each, so its
compiled kernels are made (or loaded from taichi's disk cache) once per worker. Chunk ``k``'s
rows are envs ``0 .. n-1`` of a call seeded :func:`~engine.batch.settings.chunk_seed` ``(seed, k)``;
a short last chunk is padded with copies of its last row, whose answers are dropped. So a row's
answer is the same whichever worker solves it. In a plan job, the chunk's rows are then planned
in the same scene, from their starts to their answers (:mod:`engine.batch.planning`).
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import numpy as np

from .settings import JobSpec, chunk_seed


class ChunkSolver:
    """Solves chunks of ``job``. ``init_engine``: call ``engine.init(job.backend, job.precision)``
    first (a worker process); False uses the engine as the caller initialised it.
    ``cpu_threads``: size of taichi's CPU thread pool in this process (a Ray worker is given one
    CPU: with one pool thread per core in each worker, two workers on two cores ran 4 threads);
    the answers do not depend on it."""

    def __init__(self, job: JobSpec, init_engine: bool = True, cpu_threads: int | None = None):
        import engine
        from engine.scenefile.io import resolve_robot

        from .settings import add_job_obstacles, make_morph

        self.job = job
        self.owns_engine = bool(init_engine)  # this process's engine is this worker's: release() ends it
        if init_engine:
            if cpu_threads is not None:  # read by taichi's init (its TI_<config key> variables)
                os.environ["TI_CPU_MAX_NUM_THREADS"] = str(int(cpu_threads))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # "gpu" falling back to the CPU: said by the driver
                engine.init(backend=job.backend, precision=job.precision)
        path, fmt = resolve_robot(job.robot, Path.cwd())
        morph = make_morph(path, fmt, job.robot_options)
        self.scene = engine.Scene()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            self.robot = self.scene.add_entity(morph)
            add_job_obstacles(job, self.scene)  # fixed bodies: what avoid_collisions keeps clear of
        self.scene.build(n_envs=job.envs)
        self.links = [self.robot.get_link(name) for name in job.links]
        self.q0 = self.robot.get_qpos()  # (envs, n_qs): every call starts from the default pose
        self.backend = engine.runtime.backend.current().describe()
        self.warm_up()

    def close(self) -> None:
        """Destroy the scene (its arrays and per-scene state go now, not whenever it is collected)."""
        if self.scene is not None:
            self.scene.destroy()
            self.scene = None

    def release(self) -> None:
        """Close the scene and, in a worker that started the engine, end it (``engine.destroy``).
        Ending it is what writes the kernels this process compiled to taichi's disk cache (taichi
        writes that cache only when its runtime is reset or the process exits cleanly, and a Ray
        worker is killed): the next job's workers, and a worker started later, load them from
        there instead of compiling them again (~10-20 s per worker on a 2-core CPU)."""
        self.close()
        if self.owns_engine:
            import engine

            engine.destroy()

    def ready(self) -> dict:
        """``{"pid", "backend"}``: this worker's process and engine (a Ray caller waits on it for the
        scene to be built and the kernels compiled)."""
        return {"pid": os.getpid(), "backend": self.backend}

    def warm_up(self) -> float:
        """One solve of the default pose's own link poses (met at once), so that the compile, or
        the load from taichi's disk cache, happens here and not in the first chunk; returns seconds."""
        t0 = time.perf_counter()
        pos, quat = self.robot.forward_kinematics(self.q0)
        idx = [link.idx_local for link in self.links]
        self.solve(-1, [pos[:, i] if has else None for i, has in zip(idx, self.job.has_pos)],
                   [quat[:, i] if has else None for i, has in zip(idx, self.job.has_quat)])
        return time.perf_counter() - t0

    def solve(self, index: int, pos: list, quat: list, times=None, lengths=None, starts=None) -> dict:
        """Solve chunk ``index``: ``pos[i]`` ``(n, 3)`` / ``quat[i]`` ``(n, 4)`` per link (None where
        the link takes no such target), ``n <= job.envs``; or, in a trajectory job, the chunk's
        rows with their ``times`` (n,) s and the trajectories' ``lengths`` (frames each, at most
        ``job.envs`` trajectories), solved as motions (:mod:`engine.batch.trajectories`). In a
        plan job, ``starts`` ``(n, n_qs)``: each row's start (None: ``job.start_qpos``, else the
        default qpos).

        Returns ``{"index", "qpos" (n, n_qs), "pos_error" (n, n_links) m, "rot_error" (n, n_links)
        rad, "success" (n,) bool, "iterations" (n,) int32, "seconds" (the IK and plan calls' wall
        time)}``, ``"step"`` (n,) rad or m in a trajectory job, and in a plan job the keys of
        :func:`~engine.batch.planning.plan_chunk` (``path``, ``plan_valid``, ``plan_reason``,
        ``path_length``).
        """
        t0 = time.perf_counter()
        if lengths is not None:
            from .trajectories import solve_chunk

            out = solve_chunk(lambda p, q, start, frame, dt: self._call(index, p, q, start, frame, dt), index,
                              pos, quat, np.asarray(times, float), np.asarray(lengths, np.int64), self.job.envs)
        else:
            n = next(len(a) for a in (*pos, *quat) if a is not None)
            result = self._call(index, [_pad(p, self.job.envs) for p in pos], [_pad(q, self.job.envs) for q in quat])
            out = {"qpos": result.qpos[:n], "pos_error": result.pos_error[:n], "rot_error": result.rot_error[:n],
                   "success": result.success[:n], "iterations": result.iterations[:n]}
            if self.job.plan is not None and index >= 0:  # not in the warm-up: its start may need a search
                out.update(self._plan(index, out["qpos"], out["success"], starts))
        out["iterations"] = out["iterations"].astype(np.int32)
        return {"index": index, **out, "seconds": time.perf_counter() - t0, "pid": os.getpid(),
                "backend": self.backend}

    def _plan(self, index: int, goal: np.ndarray, success: np.ndarray, starts) -> dict:
        """The chunk's paths: from ``starts`` (or the job's start) to ``goal`` where ``success``."""
        from .planning import plan_chunk, plan_seed

        n = len(goal)
        if starts is None:
            one = self.q0[0] if self.job.start_qpos is None else np.asarray(self.job.start_qpos)
            starts = np.repeat(np.asarray(one, float)[None], n, axis=0)
        return plan_chunk(self.robot, np.asarray(goal, float), np.asarray(success, bool), np.asarray(starts, float),
                          plan_seed(self.job.seed, max(index, 0)), self.job.plan)

    def _call(self, index: int, pos: list, quat: list, start=None, frame: int = 0, dt: float | None = None):
        """One IK call over every env: from the default pose (``start`` None), else velocity-limited
        over ``dt`` s from ``start`` (a trajectory's next frame); seeded from (job seed, chunk, frame)."""
        job = self.job
        seed = chunk_seed(job.seed, max(index, 0))
        if frame:
            seed = (seed + 7919 * frame) % (2**31 - 1)
        solver = dict(job.solver)
        track = {}
        if start is not None:
            track = {"track": True}
            solver["max_samples"] = job.track_samples  # 1 unless given: a restart would be a jump
        init = self.q0 if start is None else start
        if len(self.links) == 1:
            if track:
                track.update(max_joint_velocity=job.max_joint_velocity or "file", dt=dt)
            return self.robot.inverse_kinematics(
                link=self.links[0], pos=pos[0], quat=quat[0], init_qpos=init, seed=seed,
                pos_mask=job.pos_masks[0], rot_mask=job.rot_masks[0], return_info=True, **solver, **track)
        from engine.ik.limits import VelocityLimit
        from engine.ik.tasks import PoseTask, PostureTask

        rest_weight = solver.pop("rest_weight")
        tasks = [PoseTask(link, p, q, pos_mask=pm, rot_mask=rm) for link, p, q, pm, rm in
                 zip(self.links, pos, quat, job.pos_masks, job.rot_masks)]
        if rest_weight > 0:
            tasks.append(PostureTask(self.q0[0], rest_weight))
        if track:
            track["limits"] = [VelocityLimit(job.max_joint_velocity or "file", dt)]
        return self.robot.solve_ik(tasks, init_qpos=init, seed=seed, **solver, **track)


def _pad(a: np.ndarray | None, rows: int) -> np.ndarray | None:
    if a is None or len(a) == rows:
        return a
    return np.concatenate([a, np.repeat(a[-1:], rows - len(a), axis=0)])
