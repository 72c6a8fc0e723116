"""``ikstudio solve``: a table of targets solved into a Parquet dataset (:func:`engine.batch.solve`).

    ikstudio solve panda --link hand --targets grasps.parquet --out solutions/
    ikstudio solve panda --link left_finger --link right_finger --rot-mask 0,0,1 --targets t.csv --out o/
    ikstudio solve panda --link hand --targets t.npz --out o/ --solver fast.yaml --damping 0.02 --ray
    ikstudio solve panda --link hand --targets t.parquet --out o/ --obstacles clutter.yaml --plan --start-qpos 0,...

Ctrl+C, SIGTERM or SIGHUP stop it within a second or so: every finished part stays, and the same
command resumes (exit status 128 + the signal). The summary line goes to stdout (the JSON summary
instead, with ``--json``); the progress bar and notes go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import warnings

from ..signals import Interrupted, stop_on_signals
from .common import EXIT_FAIL, EXIT_USAGE, CliError, init_engine


def _add_setting_flag(parser, setting) -> None:
    """``--name`` for one solver setting (:class:`engine.ik.options.Setting`): a number, a choice,
    or ``--name`` / ``--no-name`` for a flag; unset flags leave the solver file's value."""
    default = "the solver file's, else " + ("yes" if setting.default is True else "no" if setting.default is False
                                             else repr(setting.default))
    text = f"{setting.help}{f' ({setting.unit})' if setting.unit else ''}; default: {default}"
    if setting.kind == "bool":
        parser.add_argument(setting.flag, dest=setting.name, action=argparse.BooleanOptionalAction, default=None,
                            help=text)
    elif setting.kind == "choice":
        parser.add_argument(setting.flag, dest=setting.name, choices=setting.choices, help=text)
    else:
        kind = int if setting.kind == "int" else float
        parser.add_argument(setting.flag, dest=setting.name, type=kind, metavar="N" if kind is int else "X", help=text)


def add_parser(sub, add_backend) -> None:
    from engine.ik.options import SETTINGS  # the solver settings' table (imports the engine: not at module level)

    p = sub.add_parser(
        "solve", help="solve IK for every row of a table of targets into a Parquet dataset",
        description="Solve IK for every row of TARGETS (Parquet, .npz or .csv: x, y, z, qw, qx, qy, qz; LINK.x ... "
                    "for several links; other columns are carried through) into OUT, a Parquet dataset with one "
                    "part per chunk. Rerun the same command to resume an interrupted job.",
        epilog="Columns of OUT: target (the input row), q_<joint> per qpos entry, success, pos_error and rot_error "
               "(LINK.pos_error ... for several links), iterations, then the carried columns. With --plan, after "
               "iterations: path (a list of --num-waypoints waypoints of one value per qpos entry, float32 at "
               "precision 32; null where no valid path), plan_valid, plan_reason (why not valid: goal_unreachable "
               "where the IK failed, else plan_path's reason; null where valid) and path_length (rad / m in joint "
               "space; null where not valid).")
    p.add_argument("robot", nargs="?", help="catalog name (`ikstudio robots`) or a .urdf / .xml file")
    p.add_argument("--link", action="append", metavar="LINK",
                   help="the link to place; repeat it (or comma-separate) for a multilink job")
    p.add_argument("--targets", metavar="FILE", help="targets: .parquet, .npz or .csv")
    p.add_argument("--out", metavar="DIR", help="output folder (a Parquet dataset)")
    p.add_argument("--verify", metavar="DIR",
                   help="check a job's output folder instead of solving: every part read fully and compared with "
                        "the SHA-256 its manifest records (exit 0: complete and intact; 1: not)")
    p.add_argument("--pos-mask", action="append", metavar="[LINK=]MASK",
                   help="position axes to match, e.g. 1,1,0 (default all); LINK=MASK for one link of several")
    p.add_argument("--rot-mask", action="append", metavar="[LINK=]MASK",
                   help="rotation axes: 1,1,1 full orientation (default), 0,0,1 align z only, 0,0,0 free")
    p.add_argument("--chunk", type=int, metavar="N", help="rows per IK call (default 4096 on a CPU, 65536 on a GPU; "
                                                         "a resumed job keeps its own)")
    p.add_argument("--seed", type=int, help="job seed (default: the solver file's, else 0)")
    p.add_argument("--trajectory", metavar="COLUMN",
                   help="trajectory id column: rows sharing an id are one motion, solved in --time order, each frame "
                        "warm-started from the previous and velocity-limited (--chunk then counts trajectories)")
    p.add_argument("--time", metavar="COLUMN", help="time column of a --trajectory job, seconds")
    plan = p.add_argument_group("paths (--plan)")
    plan.add_argument("--plan", action="store_true",
                      help="also plan, per row, a collision-free joint path from a start to the row's IK answer among "
                           "the --obstacles (plan_path, certified between waypoints; seeded from --seed and the chunk, "
                           "so resumed and Ray runs give the same paths); --avoid-collisions defaults to on, "
                           "--chunk to 256")
    plan.add_argument("--start", metavar="COLUMNS",
                      help="the start of each row's path: one numeric column of TARGETS per qpos entry, "
                           "comma-separated, in qpos order (default: the robot's default qpos)")
    plan.add_argument("--start-qpos", metavar="Q1,Q2,...",
                      help="one start for every row: one value per qpos entry (rad or m); write "
                           "--start-qpos=-0.5,... when the first is negative")
    plan.add_argument("--num-waypoints", type=int, metavar="N", help="waypoints per path; default 32")
    plan.add_argument("--max-nodes", type=int, metavar="N", help="tree nodes per row and attempt; default 2000")
    plan.add_argument("--max-retry", type=int, metavar="N", help="attempts for rows still failing; default 1")
    plan.add_argument("--resolution", type=float, metavar="X",
                      help="largest step per joint of a tree edge (rad or m); default 0.05")
    plan.add_argument("--planner", choices=("RRTConnect", "RRT"), help="default RRTConnect")
    plan.add_argument("--safety-margin", type=float, metavar="M", help="clearance every path keeps (m); default 0")
    plan.add_argument("--smooth-path", action=argparse.BooleanOptionalAction, default=None,
                      help="shortcut the found paths; default yes")
    p.add_argument("--solver", metavar="FILE.yaml", help="solver settings, as in a scene file's solver: section")
    for setting in SETTINGS:  # a flag per solver setting (engine.ik.options), as in a scene file's solver: section
        _add_setting_flag(p, setting)
    p.add_argument("--ray", nargs="?", const=True, metavar="ADDRESS",
                   help="spread the chunks over a Ray cluster: ADDRESS (HOST:PORT, or auto: the one `ray start` "
                        "began on this machine), else RAY_ADDRESS, else a new local one")
    p.add_argument("--workers", type=int, help="Ray workers (default: one per CPU of the cluster)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--obstacles", metavar="FILE.yaml",
                   help="a scene file whose obstacles: are placed in every env (its robot is not used)")
    add_backend(p)


def _masks(values, flag: str):

    if not values:
        return None
    if not any("=" in v for v in values):
        if len(values) > 1:
            raise CliError(f"{flag}: given {len(values)} times; give one mask for every link, or LINK=MASK per link",
                           EXIT_USAGE)
        return values[0]
    out = {}
    for v in values:
        link, sep, mask = v.partition("=")
        if not sep or not link:
            raise CliError(f"{flag}: expected LINK=MASK for each of several masks, got {v!r}", EXIT_USAGE)
        out[link.strip()] = mask
    return out


PLAN_FLAGS = ("num_waypoints", "max_nodes", "max_retry", "resolution", "planner", "safety_margin", "smooth_path")


def _plan(args, labels: dict):
    """``plan=`` of :func:`engine.batch.solve` from ``--plan`` and its flags (their labels added)."""
    given = {key: getattr(args, key) for key in PLAN_FLAGS if getattr(args, key) is not None}
    for key in PLAN_FLAGS:
        labels[key] = "--" + key.replace("_", "-")
    if not args.plan:
        if given:
            flags = ", ".join(labels[key] for key in given)
            raise CliError(f"{flags}: path settings apply with --plan", EXIT_USAGE)
        return None
    return given or True


def run(args) -> int:
    """``ikstudio solve``; returns the exit status. Errors are raised as ``CliError`` (one line)."""
    import engine.batch
    from engine.ik.options import SETTINGS
    from engine.scenefile import SceneFileError


    if args.verify is not None:
        return _verify(args)
    missing = [flag for flag, value in (("ROBOT", args.robot), ("--link", args.link), ("--targets", args.targets),
                                        ("--out", args.out)) if not value]
    if missing:
        raise CliError(f"{', '.join(missing)}: required to solve (or give --verify DIR to check a finished job)",
                       EXIT_USAGE)
    if args.workers is not None and not args.ray:
        raise CliError("--workers: only with --ray (an in-process job is one worker using every core)", EXIT_USAGE)
    links = [name.strip() for value in args.link for name in value.split(",") if name.strip()]
    solver = engine.batch.settings.solver_file(args.solver) if args.solver else {}
    labels = {"links": "--link", "out": "--out", "targets": "--targets", "pos_mask": "--pos-mask",
              "rot_mask": "--rot-mask", "chunk": "--chunk", "seed": "--seed", "solver": "--solver",
              "ray": "--ray", "workers": "--workers", "robot": "robot", "obstacles": "--obstacles",
              "trajectory": "--trajectory", "time": "--time", "plan": "--plan", "start": "--start",
              "start_qpos": "--start-qpos"}
    for setting in SETTINGS:
        labels[setting.name] = setting.flag
        if getattr(args, setting.name) is not None:
            solver[setting.name] = getattr(args, setting.name)
    plan = _plan(args, labels)
    pos_mask = _masks(args.pos_mask, "--pos-mask")
    rot_mask = _masks(args.rot_mask, "--rot-mask")
    with stop_on_signals() as signals, warnings.catch_warnings(), _stdout_to_stderr():
        warnings.showwarning = _note
        try:
            summary = engine.batch.solve(
                args.robot, args.targets, links, args.out, pos_mask=pos_mask, rot_mask=rot_mask, chunk=args.chunk,
                seed=args.seed, solver=solver, ray=args.ray, workers=args.workers,
                backend=args.backend, progress=not args.no_progress,
                log=lambda message: print(f"note: {message}", file=sys.stderr, flush=True),
                labels=labels, init=lambda backend, precision: init_engine(backend), obstacles=args.obstacles,
                trajectory=args.trajectory, time=args.time, plan=plan, start=args.start, start_qpos=args.start_qpos)
            signals.check()
        except SceneFileError:
            raise
        except Interrupted as stop:
            kept = engine.batch.finished_parts(args.out)
            print(f"ikstudio: stopped by {stop.name}; {args.out} keeps its {kept} finished parts: run the same "
                  "command again to resume", file=sys.stderr)
            return stop.exit_code
        except (ValueError, TypeError, KeyError, RuntimeError, ImportError, OSError, MemoryError) as err:
            message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise CliError(message) from None
    if args.json:  # stdout is the job's own again: the JSON alone
        print(json.dumps(summary.to_dict(), sort_keys=True))
        print(summary.line(), file=sys.stderr)
    else:
        print(summary.line())
    return 0


def _verify(args) -> int:
    """``ikstudio solve --verify DIR``: the verdict on stdout (JSON with ``--json``), a line per
    problem on stderr; exit 0 when every part is there and sound."""
    import engine.batch.verify


    try:
        verdict = engine.batch.verify.verify(args.verify, "--verify")
    except (ValueError, OSError) as err:
        raise CliError(str(err).strip().splitlines()[0]) from None
    for problem in verdict.problems:
        print(f"problem: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps({"out": verdict.out, "ok": verdict.ok, "complete": verdict.complete, "chunks": verdict.chunks,
                          "parts_ok": verdict.parts_ok, "rows": verdict.rows, "rows_ok": verdict.rows_ok,
                          "problems": verdict.problems}, sort_keys=True))
    else:
        print(verdict.line())
    return 0 if verdict.ok else EXIT_FAIL


@contextlib.contextmanager
def _stdout_to_stderr():
    """While a job runs, file descriptor 1 points at stderr, so that nothing but the result printed
    afterwards reaches stdout (Ray's raylet and workers, taichi and native libraries write to fd 1
    directly). A stdout without a file descriptor (a test's capture) is left alone."""
    try:
        fd = sys.stdout.fileno()
        err_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    os.dup2(err_fd, fd)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, fd)
        os.close(saved)


def _note(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings during a job as one line each on stderr (``init``'s backend fallback as a note)."""
    text = str(message)
    if issubclass(category, RuntimeWarning) and text.startswith("init: "):
        print(f"note: {text.removeprefix('init: ')}", file=sys.stderr)
    else:
        print(f"warning: {text}", file=sys.stderr)
