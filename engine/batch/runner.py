""":func:`solve`: a job from its targets to its output dataset, in this process or on Ray."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sys
from pathlib import Path
from time import perf_counter as clock

import numpy as np

from ..errors import InvalidTypeError, InvalidValueError
from . import settings as st
from .dataset import FORMAT, MANIFEST, Output, PartWriter
from .planning import PLAN_CHUNK
from .progress import Bar, Progress, SolveSummary
from .targets import load_targets, pa_modules

TRAJECTORY_CHUNK = 64  # trajectories per chunk by default in a trajectory job (each frame one call of this many envs)
LABELS = {"robot": "robot", "targets": "targets", "links": "links", "out": "out", "pos_mask": "pos_mask",
          "rot_mask": "rot_mask", "chunk": "chunk", "seed": "seed", "solver": "solver", "ray": "ray",
          "workers": "workers", "trajectory": "trajectory", "time": "time", "plan": "plan", "start": "start",
          "start_qpos": "start_qpos"}
PLAN_COLUMNS = ["path", "plan_valid", "plan_reason", "path_length"]  # a plan job's (engine.batch.planning)


def solve(robot, targets, links, out, *, pos_mask=None, rot_mask=None, chunk: int | None = None,
          seed: int | None = None, solver=None, ray=None, workers: int | None = None, backend: str | None = None,
          precision: str | None = None, progress=False, log=None, labels: dict | None = None,
          init=None, obstacles=None, trajectory: str | None = None, time: str | None = None, plan=None,
          start=None, start_qpos=None) -> SolveSummary:
    """Solve IK for every row of ``targets`` and write the answers to the Parquet dataset ``out``.

    Args:
        robot: a catalog name, a URDF/MJCF path, a morph or a built entity (its morph is used).
        targets: a ``.parquet`` / ``.npz`` / ``.csv`` file, a pyarrow Table, a pandas DataFrame or a
            mapping of columns: ``x, y, z`` (m) and ``qw, qx, qy, qz`` per row, prefixed ``LINK.``
            for several links; other columns are carried into the output (:mod:`engine.batch.targets`).
        links: a link name, or a list of them for a multilink job.
        out: the output folder (made if missing). Rerunning into it resumes the job: finished
            chunks are skipped; another job's folder is refused (:mod:`engine.batch.dataset`).
        pos_mask, rot_mask: 3 booleans for every link, or ``{link: mask}``; default all axes.
        chunk: rows per IK call (default :data:`~engine.batch.settings.CPU_CHUNK` on a CPU,
            ``GPU_CHUNK`` on a GPU; on resume, the job's own). Part of the job's settings.
        seed: the job's seed (default the solver settings' seed, else 0): chunk k's IK call is
            seeded from (seed, k), so the rows are the same however the job is run.
        solver: the solver settings of scene files (max_samples, damping, pos_tol, kernel, ...): a
            mapping, a :class:`~engine.scenefile.SolverSpec` or a YAML file path.
        ray: None runs in this process; True joins Ray (an initialised one, else ``RAY_ADDRESS``,
            else a new local cluster); ``"auto"`` the cluster ``ray start`` began on this machine;
            ``"HOST:PORT"`` that cluster.
        workers: Ray workers (default: one per CPU of the cluster, one per GPU with a GPU backend).
        backend, precision: of ``engine.init``. In-process, None keeps the engine as it is
            (initialising it on the CPU if it never was); any other value re-initialises it if it
            differs, which invalidates scenes built before. Ray workers use them (default "cpu").
        progress: True draws a bar on stderr; a callable gets a :class:`Progress` after each chunk.
        log: callable for one-line notes (resumed chunks, a worker replaced); default: stderr when
            ``progress`` is on, else nothing.
        labels: names for the arguments in error messages (the command line passes its flags).
        init: ``init(backend, precision)`` to call instead of ``engine.init`` when an in-process
            job starts the engine (the command line's keeps taichi's console lines off stdout).
        obstacles: a scene file whose ``obstacles:`` are placed in every env of every worker (with
            ``avoid_collisions: true`` among the solver settings the answers keep clear of them;
            without, they only count in nothing). Part of the job's settings.
        trajectory, time: column names (both or neither): the rows are motions, each trajectory's
            frames solved in time order (s), warm-started and velocity-limited after its first
            frame (``solver`` ``max_joint_velocity``, else the robot file's limits), whole
            trajectories per chunk (``chunk`` counts trajectories, default 64); the output adds
            ``step`` (:mod:`engine.batch.trajectories`).
        plan: True, or a mapping of ``plan_path`` keywords (``num_waypoints`` (default 32),
            ``max_nodes``, ``resolution``, ``max_retry``, ``smooth_path``, ``planner``,
            ``safety_margin``, ``ignore_collision``): each row also gets a collision-free joint path
            from its start to its IK answer, among the obstacles; the output adds ``path``,
            ``plan_valid``, ``plan_reason`` and ``path_length`` (:mod:`engine.batch.planning`).
            ``avoid_collisions`` then defaults to true; ``chunk`` to
            :data:`~engine.batch.planning.PLAN_CHUNK`. Not with ``trajectory``.
        start: a plan job's start columns: ``n_qs`` numeric columns of ``targets`` (a list, or a
            comma-separated string) in qpos order, each row's own start.
        start_qpos: a plan job's one start for every row (``n_qs`` numbers). Neither: the robot's
            default qpos.

    Returns:
        A :class:`SolveSummary`. Read the results with ``pyarrow.parquet.read_table(out)`` or
        ``pandas.read_parquet(out)``: a row per target, in input order when sorted by ``target``.
    """
    t_start = clock()
    pa, _ = pa_modules()
    labels = {**LABELS, **(labels or {})}
    bar = Bar() if progress is True else None
    on_progress = bar if bar is not None else (progress if callable(progress) else None)
    if log is None:
        log = (lambda message: print(message, file=sys.stderr, flush=True)) if progress else (lambda message: None)

    if not isinstance(out, str | os.PathLike) or not os.fspath(out):
        raise InvalidTypeError(f"{labels['out']}: expected the path of the output folder, got {out!r}")
    source, robot_path, fmt, robot_options = st.resolve_robot_source(robot)
    tree = st.load_tree(source, robot_path, fmt, robot_options)
    links = st.check_links(links, tree, labels["links"])
    pos_masks = st.masks(pos_mask, links, labels["pos_mask"], rot=False)
    rot_masks = st.masks(rot_mask, links, labels["rot_mask"], rot=True)
    for link, pm, rm in zip(links, pos_masks, rot_masks):
        if not any(pm) and not any(rm):
            raise InvalidValueError(f"{labels['pos_mask']}, {labels['rot_mask']}: link {link!r} has every axis masked "
                                    "out; it would constrain nothing")
    obstacle_source = None
    if obstacles is not None:
        obstacle_source = st.obstacle_file(obstacles)
    from .files import obstacle_files, robot_files

    files = {**robot_files(tree, st.make_morph(robot_path, fmt, robot_options), robot_path),
             **obstacle_files(obstacle_source, labels.get("obstacles", "obstacles"))}
    solver_values = _solver_values(solver, labels)
    file_seed = solver_values.pop("seed", 0)
    track_given = {k: solver_values.pop(k) for k in st.TRACK_KEYS if k in solver_values}
    plan = _scene_plan(plan, {k: solver_values.pop(k) for k in st.PLAN_KEYS if k in solver_values})
    plan_values, start_columns, one_start = _plan_job(plan, start, start_qpos, trajectory, tree, solver, solver_values,
                                                      labels)
    if (trajectory is None) != (time is None):
        raise InvalidValueError(f"{labels['trajectory']}, {labels['time']}: a trajectory job needs both columns, got "
                                f"{labels['trajectory']}={trajectory!r}, {labels['time']}={time!r}")
    if trajectory is None and track_given:
        raise InvalidValueError(f"{labels['solver']}: {', '.join(track_given)}: velocity-limited tracking applies to "
                                f"trajectory jobs ({labels['trajectory']} and {labels['time']})")
    if seed is None:
        if file_seed is None:
            raise InvalidValueError(f"{labels['solver']}: seed: null (a random seed) cannot be used by a batch job; "
                                    "give an integer seed")
        seed = file_seed
    seed = _labelled(st.check_seed, seed, labels["seed"])
    if chunk is not None:
        chunk = _labelled(st.check_chunk, chunk, labels["chunk"])
    if workers is not None:
        workers = _labelled(_positive, workers, labels["workers"])
    q_names = st.qpos_names(tree)
    error_names = ["pos_error", "rot_error"] if len(links) == 1 else \
        [f"{link}.{e}" for link in links for e in ("pos_error", "rot_error")]
    reserved = {"target", "success", "iterations", *q_names, *error_names, *(["step"] if trajectory else []),
                *(PLAN_COLUMNS if plan_values else [])}

    t0 = clock()
    data = load_targets(targets, links, [any(m) for m in pos_masks], [any(m) for m in rot_masks], reserved,
                        labels["targets"])
    motions = None
    if trajectory is not None:
        from .targets import numeric_column
        from .trajectories import plan

        motions = plan(data.carried, trajectory, time, numeric_column, data.source)
    starts = None
    if start_columns is not None:
        from .planning import read_starts
        from .targets import numeric_column

        starts = read_starts(data.carried, start_columns, tree, numeric_column, data.source, labels["start"])
    read_s = clock() - t0

    cluster = None
    if ray is not None and ray is not False:
        from . import cluster as cl

        ray_mod, started, address = cl.connect(ray)
        gpu = backend not in (None, "cpu") and cl.cluster_gpus(ray_mod) > 0
        worker_backend = backend if gpu else "cpu"
        worker_precision = precision or "32"
        cluster = (ray_mod, started, address)
    else:
        arch = _local_engine(backend, precision, init)
        gpu = arch != "cpu"
        from ..runtime import backend as engine_backend

        worker_backend, worker_precision = arch, engine_backend.STATE.precision
    try:
        if chunk is None:
            chunk = _resumed_chunk(out) or (TRAJECTORY_CHUNK if motions else PLAN_CHUNK if plan_values else
                                            st.default_chunk(gpu))
        chunk = _labelled(st.check_chunk, chunk, labels["chunk"])
        n = data.n_rows
        if motions is None:
            n_chunks = -(-n // chunk)
            chunk_rows = [min(chunk, n - k * chunk) for k in range(n_chunks)]
        else:
            chunk_rows = motions.chunk_rows(chunk)
            n_chunks = len(chunk_rows)
        envs = min(chunk, n if motions is None else motions.n_trajectories)
        job = st.JobSpec(robot=source, robot_sha256=st.file_sha256(robot_path),
                         robot_options=robot_options, links=tuple(links),
                         pos_masks=tuple(pos_masks), rot_masks=tuple(rot_masks), chunk=chunk, envs=envs,
                         seed=seed, solver=solver_values, backend=worker_backend, precision=worker_precision,
                         obstacles=obstacle_source, files=files, trajectory=trajectory, time=time,
                         max_joint_velocity=track_given.get("max_joint_velocity"),
                         track_samples=solver_values["max_samples"] if _gave(solver, "max_samples") else 1,
                         plan=plan_values, start_qpos=one_start, start_columns=start_columns)
        manifest = {"format": FORMAT, "input": {"source": data.source, "sha256": data.sha256, "rows": n},
                    "settings": job.fingerprint(), "chunks": n_chunks, "columns": ["target", *q_names, "success",
                                                                                   *error_names, "iterations",
                                                                                   *(["step"] if motions else []),
                                                                                   *(PLAN_COLUMNS if plan_values
                                                                                     else []),
                                                                                   *data.carried.column_names],
                    "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
        output = Output.open(out, manifest, chunk_rows, labels["out"])
        for note in output.notes:  # parts that failed their checks: removed, solved again
            log(note)
        try:
            return _run(job, data, output, chunk_rows, q_names, error_names, cluster, workers, labels,
                        on_progress, log, t_start, read_s, motions, starts)
        finally:
            output.close()
            if bar is not None:
                bar.close()
    finally:
        if cluster is not None and cluster[1]:
            with contextlib.suppress(Exception):
                cluster[0].shutdown()


def _run(job, data, output, chunk_rows, q_names, error_names, cluster, workers, labels, on_progress, log,
         t_start, read_s, motions=None, starts=None) -> SolveSummary:
    pa, pq = pa_modules()
    todo = [k for k in range(len(chunk_rows)) if k not in output.done]
    skipped = sorted(output.done)
    rows_skipped = sum(chunk_rows[k] for k in skipped)
    if skipped:
        log(f"resuming: {len(skipped)} of {len(chunk_rows)} chunks ({rows_skipped:,} rows) are already in "
            f"{output.path}; skipping them")
    progress = Progress(data.n_rows, len(chunk_rows), rows_done=rows_skipped, chunks_done=len(skipped),
                        rows_skipped=rows_skipped, chunks_skipped=len(skipped))
    dictionary = [c for c in data.carried.column_names
                  if pa.types.is_string(data.carried.schema.field(c).type)
                  or pa.types.is_large_string(data.carried.schema.field(c).type)]
    writer = PartWriter(output, dictionary)
    solve_s, succeeded, backends, n_workers, retried = 0.0, 0, set(), 1, 0
    planned = 0
    run_start = setup_end = clock()

    def rows_of(k: int) -> np.ndarray:
        if motions is not None:
            return motions.chunk(k, job.chunk)[0]
        return np.arange(k * job.chunk, k * job.chunk + chunk_rows[k], dtype=np.int64)

    def chunk_args(k: int):
        if motions is None:
            start = k * job.chunk
            if starts is not None:  # a plan job's starts of its own
                return (*data.chunk(start, start + chunk_rows[k]), None, None, starts[start:start + chunk_rows[k]])
            return data.chunk(start, start + chunk_rows[k])
        rows, times, lengths = motions.chunk(k, job.chunk)
        pos, quat = data.rows(rows)
        return pos, quat, times, lengths

    def handle(result: dict) -> None:
        nonlocal solve_s, succeeded, planned
        k = result["index"]
        rows = rows_of(k)
        carried = data.carried.slice(int(rows[0]), len(rows)) if motions is None else data.carried.take(rows)
        writer.submit(k, _table(pa, result, rows, q_names, error_names, carried))
        solve_s += result["seconds"]
        succeeded += int(np.count_nonzero(result["success"]))
        planned += int(np.count_nonzero(result.get("plan_valid", ())))
        backends.add(result["backend"])
        progress.add(chunk_rows[k], result["pid"], result["backend"])
        if on_progress is not None:
            on_progress(progress)

    pool = solver = None
    try:
        if todo and cluster is None:
            from .worker import ChunkSolver

            solver = ChunkSolver(job, init_engine=False)
            run_start = setup_end = progress.started = clock()
            for k in todo:
                handle(solver.solve(k, *chunk_args(k)))
            solver.close()
        elif todo:
            from .cluster import Pool, check_workers, cluster_cpus, cluster_gpus

            ray_mod = cluster[0]
            gpu = job.backend != "cpu"
            if workers is not None:
                check_workers(ray_mod, workers, gpu, labels["workers"])
            n_workers = workers or (cluster_gpus(ray_mod) if gpu else cluster_cpus(ray_mod))
            n_workers = max(1, min(_labelled(_positive, n_workers, labels["workers"]), len(todo)))
            pool = Pool(ray_mod, job, n_workers, gpu, log)
            progress.workers.update(pool.wait_ready())
            setup_end = run_start = progress.started = clock()
            for result in pool.run(todo, chunk_args):
                handle(result)
            retried = pool.retried
        writer.close()
        if pool is not None:
            pool.release()  # the workers write their compiled kernels to disk: the next job loads them
    except BaseException:
        with contextlib.suppress(BaseException):  # keep what was solved: the parts already handed over
            writer.close()
        raise
    finally:
        if pool is not None:
            pool.close()
        if solver is not None:
            solver.close()
    end = clock()
    t0 = clock()
    counted = ["success", *(["plan_valid"] if job.plan is not None else [])]
    for k in skipped:  # the dataset's success count includes the chunks a resumed run skipped
        part = pq.read_table(output.path / output.part_name(k), columns=counted, use_threads=False)
        succeeded += int(np.count_nonzero(part.column(0).to_numpy()))
        if job.plan is not None:
            planned += int(np.count_nonzero(part.column(1).to_numpy()))
    read_s += clock() - t0
    return SolveSummary(out=str(output.path), rows=data.n_rows, rows_solved=data.n_rows - rows_skipped,
                        rows_skipped=rows_skipped, chunks=len(chunk_rows), chunks_solved=len(todo),
                        chunks_skipped=len(skipped), succeeded=succeeded, wall_s=clock() - t_start,
                        setup_s=setup_end - t_start, run_s=end - run_start, solve_s=solve_s, read_s=read_s,
                        write_s=writer.seconds, chunk=job.chunk, workers=n_workers,
                        backend=", ".join(sorted(backends)) or job.backend,
                        ray=None if cluster is None else cluster[2], retried=retried,
                        planned=planned if job.plan is not None else None)


def _table(pa, result: dict, rows: np.ndarray, q_names, error_names, carried):
    """One chunk's output rows (input rows ``rows``) as a pyarrow Table (see the dataset's columns in
    the README)."""
    columns = {"target": pa.array(np.asarray(rows, dtype=np.int64))}
    qpos = result["qpos"]
    for i, name in enumerate(q_names):
        columns[name] = pa.array(np.ascontiguousarray(qpos[:, i]))
    columns["success"] = pa.array(np.asarray(result["success"], dtype=bool))
    for j, name in enumerate(error_names):
        which = "pos_error" if name.endswith("pos_error") else "rot_error"
        columns[name] = pa.array(np.ascontiguousarray(result[which][:, j // 2], dtype=np.float64))  # m / rad
    columns["iterations"] = pa.array(np.asarray(result["iterations"], dtype=np.int32))
    if "step" in result:
        columns["step"] = pa.array(np.asarray(result["step"], dtype=np.float64))  # rad or m
    if "plan_valid" in result:
        from .planning import plan_columns

        columns.update(plan_columns(pa, result))
    table = pa.table(columns)
    for name in carried.column_names:
        table = table.append_column(carried.schema.field(name), carried.column(name))
    return table


def _solver_values(solver, labels) -> dict:
    from ..scenefile.models import SolverSpec

    if solver is None:
        values = {}
    elif isinstance(solver, str | os.PathLike):
        values = st.solver_file(solver)
    elif isinstance(solver, SolverSpec):
        values = {k: getattr(solver, k) for k in solver.model_fields_set}
    elif isinstance(solver, dict):
        values = dict(solver)
    else:
        raise InvalidTypeError(f"{labels['solver']}: expected a mapping of solver settings, a SolverSpec or a YAML "
                               f"file path, got {type(solver).__name__}")
    return st.solver_settings(values, labels)


def _scene_plan(plan, given: dict):
    """The job's ``plan``, with a scene file's ``solver: {plan: true, plan_max_nodes}`` taken as a
    plan job (``plan`` not given) and its node budget as the default ``max_nodes``."""
    if plan is None and given.get("plan"):
        plan = True
    if plan is None or plan is False or "plan_max_nodes" not in given:
        return plan
    plan = {} if plan is True else dict(plan) if isinstance(plan, dict) else plan
    if isinstance(plan, dict):
        plan.setdefault("max_nodes", given["plan_max_nodes"])
    return plan


def _gave(solver, key: str) -> bool:
    """Whether the job's solver settings name ``key`` (``max_samples``: a trajectory's later frames
    then run that many, else one; ``avoid_collisions``: a plan job's default is true)."""
    if isinstance(solver, str | os.PathLike):
        return key in st.solver_file(solver)
    if hasattr(solver, "model_fields_set"):
        return key in solver.model_fields_set
    return isinstance(solver, dict) and key in solver


def _plan_job(plan, start, start_qpos, trajectory, tree, solver, solver_values: dict, labels: dict) -> tuple:
    """A plan job's ``(plan_path keywords, start columns, one start)``, checked (all None without
    ``plan``); sets ``avoid_collisions`` in ``solver_values`` where the settings do not name it."""
    from . import planning

    values = planning.plan_settings(plan, labels["plan"], labels)
    given = [labels[k] for k, v in (("start", start), ("start_qpos", start_qpos)) if v is not None]
    if values is None:
        if given:
            raise InvalidValueError(f"{', '.join(given)}: a path's start applies to a plan job ({labels['plan']})")
        return None, None, None
    if trajectory is not None:
        raise InvalidValueError(f"{labels['plan']}, {labels['trajectory']}: a plan job plans each row from a start; a "
                                "trajectory job's rows are frames of motions: give one or the other")
    if len(given) == 2:
        raise InvalidValueError(f"{labels['start']}, {labels['start_qpos']}: give one start, columns or one "
                                "configuration")
    planning.check_plannable(tree, labels["plan"])
    q_names = st.qpos_names(tree)
    columns = None if start is None else planning.start_columns_of(start, q_names, labels["start"])
    one = None if start_qpos is None else planning.start_qpos_of(start_qpos, tree, q_names, labels["start_qpos"])
    if not _gave(solver, "avoid_collisions"):
        solver_values["avoid_collisions"] = True
    return values, columns, one


def _labelled(check, value, label: str):
    try:
        return check(value)
    except InvalidValueError as err:
        message = str(err)
        head = message.split(":", 1)
        raise InvalidValueError(f"{label}:{head[1]}" if len(head) == 2 else f"{label}: {message}") from None


def _positive(n):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidValueError(f"workers: expected a positive integer, got {n!r}")
    return n


def _local_engine(backend, precision, init=None) -> str:
    """Initialise the engine for an in-process job if asked (see :func:`solve`); returns its arch."""
    from ..runtime import backend as engine_backend

    if init is None:
        from .. import init

    state = engine_backend.STATE
    if (not state.initialised or backend not in (None, state.arch, "gpu")
            or (precision is not None and str(precision) != state.precision)):
        init(backend or "cpu", str(precision or state.precision))
    return state.arch


def _resumed_chunk(out) -> int | None:
    """The chunk size of the job already in ``out`` (its manifest), if any: a rerun without
    ``chunk`` resumes that job rather than being refused for a different default."""
    path = Path(out) / MANIFEST
    try:
        chunk = json.loads(path.read_text(encoding="utf-8"))["settings"]["chunk"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return chunk if isinstance(chunk, int) and not isinstance(chunk, bool) else None
