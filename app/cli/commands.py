"""The ``ikstudio`` command line (also ``python -m app``).

    ikstudio [SCENE]                      open the GUI on SCENE (default: scenes/batched_panda.yaml)
    ikstudio record SCENE -o demo.mp4     render a video headless (--frames N | --seconds S, --size, --fps)
    ikstudio check SCENE...               validate scene files; print every problem
    ikstudio robots                       list the robot catalog
    ikstudio bench                        a short batched IK benchmark, success checked by FK
    ikstudio solve ROBOT --link L --targets IN --out OUT   a table of targets into a Parquet dataset

Exit status: 0 success, 1 failure (a bad scene, a failed check or render), 2 usage error. Errors are
printed as one short message, never a traceback (``--debug`` shows it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import time
import warnings
from pathlib import Path

from ..signals import Interrupted, stop_on_signals
from . import solve
from .common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, CliError, init_engine

# Quiet taichi before anything imports it: no banner, no telemetry or version check.
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")
os.environ.setdefault("TI_ENABLE_TELEMETRY", "0")
os.environ.setdefault("TI_SKIP_VERSION_CHECK", "ON")
os.environ.setdefault("MUJOCO_GL", "disable")  # mujoco only compiles models: no GLFW probe (~0.1 s); a user's is kept

DEFAULT_SCENE = Path(__file__).resolve().parents[1] / "scenes" / "batched_panda.yaml"  # the repo's scenes/ links here
COMMANDS = ("record", "check", "robots", "bench", "solve", "gui")
MAX_ERROR_LINES = 20
# -- argument parsing -------------------------------------------------------------------------------


def _size(text: str) -> tuple[int, int]:
    parts = text.lower().replace("×", "x").split("x")
    try:
        w, h = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 1280x720, got {text!r}") from None
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise argparse.ArgumentTypeError(f"expected width and height in [16, 8192], got {text!r}")
    return w, h


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}") from None
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}")
        return value

    parse.__name__ = kind.__name__
    return parse


def _add_backend(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("gpu", "cuda", "vulkan", "cpu"), default="gpu",
                   help="compute backend (default: gpu, which falls back to the CPU when there is none)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ikstudio",
        description="IK Studio: batched inverse kinematics, scene files, videos.",
        epilog="Without a command, `ikstudio [SCENE]` opens the GUI on SCENE (default: "
               "scenes/batched_panda.yaml). `ikstudio COMMAND --help` describes a command.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("gui", help="open the GUI on a scene (the default command)")
    p.add_argument("scene", nargs="?", help="scene file (default: scenes/batched_panda.yaml)")
    _add_backend(p)

    p = sub.add_parser("record", help="render a scene to a video, headless",
                       description="Render SCENE to a video, headless, stepping the IK once per frame.")
    p.add_argument("scene", help="scene file (.yaml)")
    p.add_argument("-o", "--output", help="video file (.mp4); default: the scene's record.output, "
                                          "else SCENE_NAME.mp4 in the current folder")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--frames", type=_positive(int), help="number of frames (default: the scene's)")
    length.add_argument("--seconds", type=_positive(float), help="length in seconds of video")
    p.add_argument("--size", type=_size, metavar="WxH", help="resolution, e.g. 1280x720 (default: the scene's)")
    p.add_argument("--fps", type=_positive(float), help="frames per second (default: the scene's, else 30)")
    p.add_argument("--n-envs", type=_positive(int), help="override the scene's number of envs")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_backend(p)

    p = sub.add_parser("check", help="validate scene files", description="Validate scene files: structure, "
                                                                          "robot, link names, groups.")
    p.add_argument("scenes", nargs="+", metavar="SCENE", help="scene files")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")

    p = sub.add_parser("robots", help="list the robot catalog", description="List the robots a scene can "
                                                                            "name (robot: NAME).")
    p.add_argument("--family", help="only this family (arm, dual_arm, humanoid, quadruped, hand, ...)")

    p = sub.add_parser("bench", help="a short batched IK benchmark",
                       description="Solve random reachable targets (poses of random configurations) in "
                                   "batches; print solves per second and the success rate, checked by FK.")
    p.add_argument("--robot", default="panda", help="catalog name or robot file (default: panda)")
    p.add_argument("--link", default=None, help="end-effector link (default: hand for the Panda, else the last)")
    p.add_argument("--n-envs", type=_positive(int), default=1024, help="batch size (default: 1024)")
    p.add_argument("--calls", type=_positive(int), default=5, help="timed IK calls (default: 5)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    _add_backend(p)

    solve.add_parser(sub, _add_backend)
    return parser


# -- helpers ----------------------------------------------------------------------------------------


def _print_scene_error(err) -> None:
    lines = str(err).splitlines()
    if len(lines) > MAX_ERROR_LINES:
        lines = lines[:MAX_ERROR_LINES] + [f"... and {len(lines) - MAX_ERROR_LINES} more problems"]
    print("\n".join(lines), file=sys.stderr)


def _load(path: str):
    from engine import scenefile

    return scenefile.load(path)


def shipped_scene(arg: str) -> str:
    """``arg``, or the shipped scene it names where no such file is here: ``scenes/NAME.yaml``,
    ``NAME.yaml`` or ``NAME`` (a wheel install has no scenes/ folder beside the user's files)."""
    p = Path(arg)
    if p.exists() or not (len(p.parts) == 1 or (len(p.parts) == 2 and p.parts[0] == "scenes")):
        return arg
    shipped = DEFAULT_SCENE.parent / (p.name if p.suffix == ".yaml" else p.name + ".yaml")
    return str(shipped) if shipped.is_file() else arg


def _build(spec, n_envs: int | None = None):
    """``(scene, runner)`` of a loaded spec (engine.scenefile.build)."""
    from engine import scenefile

    return scenefile.build(spec, n_envs=n_envs)


def _summary(spec, n_envs: int | None = None) -> str:
    n_t = len(spec.targets)
    groups = spec.groups()
    n_envs = spec.envs.n_envs if n_envs is None else n_envs
    return (f"robot {spec.robot.file}, {n_envs} env{'s' * (n_envs != 1)}, "
            f"{n_t} target{'s' * (n_t != 1)} in {len(groups)} IK call{'s' * (len(groups) != 1)} per frame")


# -- commands ---------------------------------------------------------------------------------------


def display_problem() -> str | None:
    """Why no window can open here (dearpygui aborts the whole process then), or None."""
    if sys.platform != "linux" or os.environ.get("WAYLAND_DISPLAY"):
        return None
    display = os.environ.get("DISPLAY", "")
    if not display:
        return "no display (DISPLAY is not set)"
    host, _, number = display.rpartition(":")
    if host in ("", "unix") and not Path(f"/tmp/.X11-unix/X{number.split('.')[0]}").exists():
        return f"no X server answers on DISPLAY={display}"
    return None


def _gui_scene(args) -> str:
    """The scene file the GUI command opens."""
    return shipped_scene(args.scene) if args.scene else str(DEFAULT_SCENE)


def cmd_gui(args) -> int:
    scene = _gui_scene(args)
    from app.sim import solver_proc

    # the first IK child (main started it) builds the scene now, beside this check (a bad scene
    # leaves it nothing built, and the error below ends it)
    solver_proc.preload_early(scene, args.backend)
    _load(scene)  # a bad scene is reported here, before any window opens
    problem = display_problem()
    if problem is not None:
        raise CliError(f"the GUI needs a display: {problem}. Run it in a desktop session, under "
                       f"`xvfb-run ikstudio`, or render headless: ikstudio record {scene} -o demo.mp4")
    try:
        gui = importlib.import_module("app.gui")
    except ModuleNotFoundError as err:
        if err.name not in ("app.gui", "app"):
            raise CliError(f"the GUI cannot start: a package it needs is missing ({err.name}); "
                           "reinstall with `pip install -e .[dev]`") from None
        print("ikstudio: the desktop GUI is not part of this build yet (app.gui is missing).\n"
              f"  Render a video instead:  ikstudio record {scene} -o demo.mp4\n"
              f"  Validate a scene:        ikstudio check {scene}", file=sys.stderr)
        return EXIT_USAGE
    if not hasattr(gui, "run"):
        print("ikstudio: app.gui has no run(scene_path); the GUI is not wired up yet", file=sys.stderr)
        return EXIT_USAGE
    init_engine(args.backend)
    result = gui.run(scene)
    return int(result) if isinstance(result, int) else EXIT_OK


def cmd_record(args) -> int:
    scene = runner = out = fps = None  # (a signal may come before they are known)
    with stop_on_signals() as signals:  # SIGINT, SIGTERM, SIGHUP: finish the video, exit 128 + signal
        try:
            # start-up: a signal's exception may be swallowed (trimesh's lazy imports catch
            # BaseException), but the signal is remembered: check after each step
            _preload_lazy_imports()
            signals.check()
            spec, out, n_frames, fps = _record_plan(args)
            n_envs = args.n_envs or spec.envs.n_envs
            arch = init_engine(args.backend)
            signals.check()
            scene, runner = _build(spec, n_envs=args.n_envs)
            signals.check()
            print(f"recording {args.scene}: {_summary(spec, n_envs)}, {n_frames} frames at {fps:g} fps on {arch}",
                  file=sys.stderr)
            stats = runner.record(out, n_frames=n_frames, fps=fps, res=args.size, progress=not args.no_progress,
                                  before_frame=lambda i: signals.check())
            signals.check()  # one that came during the last frame
        except Interrupted as stop:
            return _stopped(stop, scene, runner, out, fps, args.size)
        except Exception as err:
            if signals.signum is not None:  # a signal whose exception a library swallowed broke it on its way
                return _stopped(Interrupted(signals.signum), scene, runner, out, fps, args.size)  # (trimesh)
            if isinstance(err, RuntimeError):
                raise CliError(f"cannot record: {err}") from None
            raise
    print(f"wrote {out}: {stats['frames']} frames ({stats['frames'] / fps:.2f} s of video at {fps:g} fps) "
          f"in {stats['seconds']:.2f} s, {stats['fps']:.1f} frames/s")
    return EXIT_OK


def _stopped(stop: Interrupted, scene, runner, out: Path, fps: float, size) -> int:
    """``ikstudio record`` stopped by a signal: keep the frames finished (one of the scene as it is
    when none was), say so, and return the shell's status for the signal."""
    frames = scene.visualizer.recorded_frames if scene is not None and out.exists() else 0
    if scene is not None and not frames:  # stopped before a frame was finished: one of the scene as it is
        frames = _record_one_frame(runner, out, fps, size)
    kept = f"{out} holds the {frames} frames finished before it" if frames else "no frame was written"
    print(f"ikstudio: stopped by {stop.name}; {kept}", file=sys.stderr)
    return stop.exit_code


def _record_plan(args):
    """(spec, output path, frames, fps) of ``ikstudio record``; usage errors as CliError."""
    from engine.scenefile.models import MAX_ENVS

    if args.n_envs is not None and args.n_envs > MAX_ENVS:
        raise CliError(f"--n-envs: expected 1 to {MAX_ENVS} (every env is drawn), got {args.n_envs}", EXIT_USAGE)
    spec = _load(shipped_scene(args.scene))
    record = spec.record
    fps = args.fps if args.fps is not None else spec.fps
    if args.frames is not None:
        n_frames = args.frames
    elif args.seconds is not None:
        n_frames = max(1, round(args.seconds * fps))
    elif record is not None:
        n_frames = record.frames if record.frames is not None else max(1, round(record.n_frames / spec.fps * fps))
    else:
        n_frames = round(4 * fps)
    if args.output:
        out = Path(args.output)
    elif record is not None and record.output:
        out = spec.resolve_path(record.output)
    else:
        out = Path(Path(args.scene).stem + ".mp4")
    if out.suffix.lower() not in (".mp4", ".mkv", ".mov", ".avi"):
        raise CliError(f"output: expected a video file ending in .mp4 (or .mkv, .mov, .avi), got '{out}'",
                       EXIT_USAGE)
    if not out.parent.resolve().is_dir():
        raise CliError(f"output: folder '{out.parent}' does not exist")
    return spec, out, n_frames, fps


def _preload_lazy_imports() -> None:
    """Import now what trimesh imports lazily while the first meshes load: a signal landing inside
    such an import (which trimesh wraps in ``except BaseException``) left a half-made module that
    failed later with an AttributeError instead of stopping the recording."""
    with contextlib.suppress(ImportError):
        import networkx  # noqa: F401
        import trimesh.exchange.load  # noqa: F401
        import trimesh.graph  # noqa: F401


def _record_one_frame(runner, out: Path, fps: float, res) -> int:
    """Write the scene's current view, at the recording's size, as a one-frame video (a stopped
    recording still leaves a playable file); returns the frames written (0 if even that fails)."""
    try:
        runner.apply_camera(res)
        vis = runner.scene.visualizer
        if vis.is_recording:
            vis.stop_recording()
        vis.start_recording(out, fps=fps)
        vis.update()
        vis.stop_recording()
        return vis.recorded_frames
    except Exception:
        return 0


def cmd_check(args) -> int:
    from engine.scenefile import SceneFileError

    failed = 0
    for path in args.scenes:
        try:
            spec = _load(shipped_scene(path))
        except SceneFileError as err:
            failed += 1
            _print_scene_error(err)
            continue
        if not args.quiet:
            print(f"ok: {path} ({_summary(spec)})")
    if len(args.scenes) > 1 and not args.quiet:
        print(f"{len(args.scenes) - failed} of {len(args.scenes)} scene files ok")
    return EXIT_FAIL if failed else EXIT_OK


def cmd_robots(args) -> int:
    from engine import assets

    entries = assets.list_robots()
    if args.family:
        families = sorted({e.family for e in entries})
        if args.family not in families:
            raise CliError(f"--family: expected one of {', '.join(families)}, got {args.family!r}", EXIT_USAGE)
        entries = [e for e in entries if e.family == args.family]
    width = max((len(e.name) for e in entries), default=4)
    print(f"{'name':{width}}  format  {'family':18}  source")
    for e in entries:
        print(f"{e.name:{width}}  {e.format:6}  {e.family:18}  {e.source}")
    print(f"{len(entries)} robots; use a name in a scene file as `robot: NAME`")
    return EXIT_OK


def cmd_bench(args) -> int:
    import numpy as np

    import engine
    from engine.transforms import quat_conj, quat_mul, quat_to_rotvec

    arch = init_engine(args.backend)
    scene = engine.Scene()
    try:
        morph = engine.morphs.from_file(args.robot, fixed=True)  # a catalog arm stands on its base
    except (FileNotFoundError, ValueError) as err:
        raise CliError(f"--robot: {err}", EXIT_USAGE) from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        robot = scene.add_entity(morph)
    n = args.n_envs
    scene.build(n_envs=n)
    if args.link is None:
        link = robot.get_link("hand") if "hand" in [link.name for link in robot.links] else robot.links[-1]
    else:
        try:
            link = robot.get_link(args.link)
        except KeyError as err:
            raise CliError(f"--link: {err.args[0]}", EXIT_USAGE) from None
    rng = np.random.default_rng(args.seed)
    lo, hi = robot.q_limits
    lo, hi = np.where(np.isfinite(lo), lo, -np.pi), np.where(np.isfinite(hi), hi, np.pi)
    start = robot.get_qpos()
    pos_tol, rot_tol = 5e-4, 5e-3

    def targets():
        pos, quat = robot.forward_kinematics(rng.uniform(lo, hi, (n, robot.n_qs)))
        return pos[:, link.idx_local], quat[:, link.idx_local]

    def solve_batch(pos, quat, seed):
        robot.set_qpos(start)
        return robot.inverse_kinematics(link=link, pos=pos, quat=quat, seed=seed, return_info=True)

    print(f"bench: {args.robot} link '{link.name}', {n} envs x {args.calls} calls, 6-D targets from random "
          f"configurations, on {arch.describe()}")
    if arch.timing_note():
        print(f"  ({arch.timing_note()})")
    t0 = time.perf_counter()
    solve_batch(*targets(), seed=args.seed)  # compiles the kernels (cached on disk for the next run)
    print(f"  first call (compile + solve): {time.perf_counter() - t0:.2f} s")
    times, reported, verified = [], [], []
    for call in range(args.calls):
        pos, quat = targets()
        t0 = time.perf_counter()
        result = solve_batch(pos, quat, seed=args.seed + 1 + call)
        times.append(time.perf_counter() - t0)
        fk_pos, fk_quat = robot.forward_kinematics(result.qpos)
        pos_err = np.linalg.norm(fk_pos[:, link.idx_local] - pos, axis=-1)
        rot_err = np.linalg.norm(quat_to_rotvec(quat_mul(fk_quat[:, link.idx_local], quat_conj(quat))), axis=-1)
        ok = (pos_err <= pos_tol * 1.05 + 1e-6) & (rot_err <= rot_tol * 1.05 + 1e-6)
        reported.append(np.mean(result.success))
        verified.append(np.mean(ok))
    t = float(np.median(times))
    print(f"  {t * 1e3:.1f} ms per call (median), {n / t:,.0f} solves/s")
    print(f"  success: {100 * np.mean(reported):.1f}% reported by IK, {100 * np.mean(verified):.1f}% verified by FK "
          f"(pos <= {pos_tol:g} m, rot <= {rot_tol:g} rad)")
    return EXIT_OK


def cmd_solve(args) -> int:
    return solve.run(args)


HANDLERS = {"gui": cmd_gui, "record": cmd_record, "check": cmd_check, "robots": cmd_robots, "bench": cmd_bench,
            "solve": cmd_solve}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    gui = _is_gui(argv)
    if gui:  # the first scene's IK child starts now, beside this process's imports (app.sim.solver_proc)
        from app.sim import solver_proc

        solver_proc.start_early()
    try:
        return _main(argv)
    finally:
        if gui:
            solver_proc.discard_early()


def _with_command(argv: list[str]) -> list[str]:
    """``argv`` with ``gui`` inserted where no command is given: ``ikstudio [SCENE]`` opens the GUI
    (argparse's subcommands cannot be optional)."""
    first = next((a for a in argv if a != "--debug"), None)
    if first is None or first not in COMMANDS and first not in ("-h", "--help"):
        return [*(["--debug"] if "--debug" in argv else []), "gui", *[a for a in argv if a != "--debug"]]
    return list(argv)


def _is_gui(argv: list[str]) -> bool:
    """Whether ``argv`` opens the GUI on a display (no command or ``gui``, as :func:`_main` reads it; not
    ``--help``)."""
    words = [a for a in _with_command(argv) if a != "--debug"]
    return words[0] == "gui" and not {"-h", "--help"} & set(words) and display_problem() is None


def _main(argv: list[str]) -> int:
    try:
        # the parser (its solver flags come from the engine's settings table) imports the engine, taichi and
        # trimesh (a second or two); a signal meanwhile is remembered, since a library's import may swallow
        # its exception (trimesh's optional imports catch BaseException)
        with stop_on_signals() as signals:
            try:
                parser = build_parser()
                from engine.scenefile import SceneFileError
            except Exception:  # a half-made module a swallowed signal left behind
                if signals.signum is None:
                    raise
            signals.check()
    except KeyboardInterrupt as stop:
        print("ikstudio: interrupted", file=sys.stderr)
        return stop.exit_code if isinstance(stop, Interrupted) else 130
    try:
        args = parser.parse_args(_with_command(argv))
    except SystemExit as exit_:  # argparse: 0 for --help, 2 for usage errors
        return int(exit_.code or 0)
    debug = args.debug or os.environ.get("IKSTUDIO_DEBUG") == "1"

    try:
        return HANDLERS[args.command](args)
    except SceneFileError as err:
        if debug:
            raise
        _print_scene_error(err)
        return EXIT_FAIL
    except CliError as err:
        if debug:
            raise
        print(f"ikstudio: error: {err}", file=sys.stderr)
        return err.code
    except BrokenPipeError:  # `ikstudio robots | head`: the reader left; say nothing more
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        print("ikstudio: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # anything else: one line, not a traceback (--debug shows it)
        if debug:
            raise
        print(f"ikstudio: error: {type(err).__name__}: {err} (run with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
