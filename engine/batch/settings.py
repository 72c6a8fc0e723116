"""A batch job's settings, validated once: the robot, its links and masks, the chunking, the seed
and the solver settings of scene files.

:class:`JobSpec` is everything a worker needs to solve any chunk of the job (plain, picklable
data), and :meth:`JobSpec.fingerprint` the part of it that fixes the answers: the manifest of an
output folder stores it, so a resumed job must match it exactly (:mod:`engine.batch.dataset`).

Solver settings are those of a scene file's ``solver:`` section (:class:`SolverSpec`, the same
validation and messages), read from a YAML file (:func:`solver_file`) and/or given as a mapping;
a batch job's ``kernel`` defaults to ``"auto"`` (the per-robot solver: fastest once compiled).

Randomness: the IK's restarts are drawn from a hash of (call seed, env, sample). Chunk ``k`` of
a job with seed ``s`` is solved with the call seed :func:`chunk_seed` ``(s, k)`` and its rows as
envs ``0 .. n-1``, so a row's answer depends only on the job's settings, never on which worker
solved it, in which order, or whether the job was resumed.
"""

from __future__ import annotations

import hashlib
import os
import stat
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from pydantic import TypeAdapter, ValidationError

from ..errors import InvalidTypeError, InvalidValueError, UnknownNameError
from ..scenefile.errors import Issue, SceneFileError, format_loc, issues_from_validation, suggest
from ..scenefile.io import MAX_FILE_BYTES, parse_yaml, resolve_robot
from ..scenefile.models import Mask, RotMask, SolverSpec

TRACK_KEYS = ("track", "max_joint_velocity")  # a trajectory job's (engine.batch.trajectories), not an IK call's
PLAN_KEYS = ("plan", "plan_max_nodes")  # a scene file's planned motion: a plan job (engine.batch.planning)
SOLVER_KEYS = tuple(k for k in SolverSpec.model_fields if k != "seed" and k not in TRACK_KEYS)
DEFAULT_KERNEL = "auto"
CPU_CHUNK = 4096  # rows per call on a CPU: the per-row rate is flat from ~1024 rows (2 cores, Panda)
GPU_CHUNK = 65536  # a GPU needs many more threads in flight
MAX_CHUNK = 1 << 20
ALL = (True, True, True)


# -- solver settings ----------------------------------------------------------------------------------


def solver_file(path: str | os.PathLike) -> dict:
    """The solver settings of a YAML file: a mapping of ``solver:`` keys, ``{solver: {...}}``, or a
    whole scene file (its ``solver`` section). Returns the keys the file gives; raises
    :class:`~engine.scenefile.SceneFileError` naming the file, the key and the line."""
    file = os.fspath(path)
    p = Path(file)
    try:
        info = p.stat()
        if not stat.S_ISREG(info.st_mode):
            raise SceneFileError(file, [Issue((), "not a regular file; expected a .yaml file of solver settings")])
        if info.st_size > MAX_FILE_BYTES:
            raise SceneFileError(file, [Issue((), f"{info.st_size:,} bytes; a settings file is a few hundred")])
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise SceneFileError(file, [Issue((), "no such file")]) from None
    except UnicodeDecodeError as err:
        raise SceneFileError(file, [Issue((), f"not UTF-8 text ({err.reason} at byte {err.start})")]) from None
    except OSError as err:
        raise SceneFileError(file, [Issue((), f"cannot read: {err.strerror or err}")]) from None
    data, lines, issues = parse_yaml(text)
    if issues:
        raise SceneFileError(file, issues)
    if isinstance(data, dict) and "robot" in data:  # a scene file: validated whole, its solver used
        from ..scenefile import load

        spec = load(file, check=False)
        return {k: getattr(spec.solver, k) for k in spec.solver.model_fields_set}
    prefix: tuple = ()
    if isinstance(data, dict) and set(data) == {"solver"}:
        data, prefix = data["solver"], ("solver",)
    if not isinstance(data, dict):
        raise SceneFileError(file, [Issue(prefix, f"expected a mapping of solver settings ({', '.join(SOLVER_KEYS)}, "
                                                  f"seed), got {type(data).__name__}")])
    try:
        spec = SolverSpec.model_validate(data)
    except ValidationError as err:
        found = issues_from_validation(err, lambda loc: list(SolverSpec.model_fields))
        raise SceneFileError(file, [Issue((*prefix, *i.loc), i.message, lines.get((*prefix, *i.loc[:1])))
                                    for i in found]) from None
    return {k: getattr(spec, k) for k in spec.model_fields_set}


def solver_settings(values: dict | None, labels: dict[str, str] | None = None) -> dict:
    """Every solver setting (:data:`SOLVER_KEYS`, plus ``seed`` where given) from ``values``, validated
    by the scene files' rules; a bad value raises :class:`InvalidValueError` naming it as
    ``labels[key]`` (e.g. the command line's ``--damping``), else ``solver.<key>``."""
    values = dict(values or {})
    labels = labels or {}
    values.setdefault("kernel", DEFAULT_KERNEL)
    try:
        spec = SolverSpec.model_validate(values)
    except ValidationError as err:
        issue = issues_from_validation(err, lambda loc: list(SolverSpec.model_fields))[0]
        key = str(issue.loc[0]) if issue.loc else ""
        raise InvalidValueError(f"{labels.get(key, 'solver.' + format_loc(issue.loc))}: {issue.message}") from None
    out = {k: getattr(spec, k) for k in SOLVER_KEYS}
    for key in ("seed", *TRACK_KEYS, *PLAN_KEYS):
        if key in values:
            out[key] = getattr(spec, key)
    return out


# -- masks ----------------------------------------------------------------------------------------------


_MASK = TypeAdapter(Mask)
_ROT_MASK = TypeAdapter(RotMask)


def _one_mask(value, name: str, rot: bool) -> tuple[bool, bool, bool]:
    if isinstance(value, str):  # "0,0,1" / "true,false,true" as typed on a command line
        words = [w.strip().lower() for w in value.replace(" ", ",").split(",") if w.strip()]
        table = {"1": True, "0": False, "true": True, "false": False, "t": True, "f": False}
        if any(w not in table for w in words):
            raise InvalidValueError(f"{name}: expected 3 booleans such as 0,0,1, got {value!r}")
        value = [table[w] for w in words]
    try:
        return (_ROT_MASK if rot else _MASK).validate_python(list(value) if isinstance(value, tuple) else value)
    except ValidationError as err:
        raise InvalidValueError(f"{name}: {issues_from_validation(err)[0].message}") from None
    except TypeError:
        raise InvalidValueError(f"{name}: expected 3 booleans, got {value!r}") from None


def masks(value, links: list[str], name: str, rot: bool) -> list[tuple[bool, bool, bool]]:
    """One mask per link from ``value``: None (all axes), one mask for every link, or a mapping
    ``{link: mask}`` (links not named: all axes). ``name`` labels errors (``--rot-mask``)."""
    if value is None:
        return [ALL] * len(links)
    if isinstance(value, dict):
        unknown = [k for k in value if k not in links]
        if unknown:
            raise InvalidValueError(f"{name}: {unknown[0]!r} is not a link of this job; links: {', '.join(links)}")
        return [_one_mask(value[link], f"{name} {link}", rot) if link in value else ALL for link in links]
    mask = _one_mask(value, name, rot)
    return [mask] * len(links)


# -- the job ----------------------------------------------------------------------------------------------


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def resolve_robot_source(robot) -> tuple[str, Path, str, dict]:
    """``(source, file, fmt, options)`` for a catalog name, a robot file path, a morph or a built
    entity (its morph): ``source`` is what a worker resolves again (the catalog name, or the file's
    absolute path); ``options`` the morph's ``pos``, ``quat``, ``scale`` where they differ from the
    defaults, and a URDF's ``fixed`` always (True for a name or a path), as plain lists. Errors
    name ``robot``."""
    if hasattr(robot, "morph") and hasattr(robot, "tree"):  # a RigidEntity: its morph
        robot = robot.morph
    if hasattr(robot, "file") and hasattr(robot, "scale"):  # an engine.morphs morph
        path = Path(robot.file)
        options = {}
        if not np.allclose(robot.pos, 0):
            options["pos"] = [float(x) for x in robot.pos]
        if not np.allclose(robot.quat, [1, 0, 0, 0]):
            options["quat"] = [float(x) for x in robot.quat]
        if robot.scale != 1.0:
            options["scale"] = float(robot.scale)
        if hasattr(robot, "fixed") and path.suffix.lower() == ".urdf":  # stated, whatever URDF's default
            options["fixed"] = bool(robot.fixed)
        return str(path), path, "urdf" if path.suffix.lower() == ".urdf" else "mjcf", options
    if not isinstance(robot, str | os.PathLike):
        raise InvalidTypeError(f"robot: expected a catalog name, a robot file path or a morph, got "
                               f"{type(robot).__name__}")
    text = os.fspath(robot)
    try:
        path, fmt = resolve_robot(text, Path.cwd())
    except ValueError as err:
        raise InvalidValueError(f"robot: {err}") from None
    is_path = "/" in text or "\\" in text or Path(text).suffix.lower() in (".urdf", ".xml", ".mjcf")
    # a robot named by catalog name or file is fixed, as before URDF's default became Genesis' (free)
    return (str(path) if is_path else text.strip()), path, fmt, ({"fixed": True} if fmt == "urdf" else {})


def make_morph(path: Path, fmt: str, options: dict):
    """The engine morph of a resolved robot file with ``options`` (see :func:`resolve_robot_source`)."""
    from .. import morphs

    return morphs.URDF(file=path, **options) if fmt == "urdf" else morphs.MJCF(file=path, **options)


def load_tree(source: str, path: Path, fmt: str, options: dict | None = None):
    """The robot's :class:`~engine.model.tree.KinematicTree` (no taichi: the driver of a Ray job
    never starts the engine)."""
    from .. import model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return model.load(make_morph(path, fmt, options or {}))
        except Exception as err:
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InvalidValueError(f"robot: cannot load {source!r}: {first}") from None


def check_links(links, tree, label: str = "links") -> list[str]:
    """``links`` (a name or a list of names) as a list of unique link names of ``tree``."""
    if isinstance(links, str):
        links = [links]
    if not isinstance(links, list | tuple) or not links:
        raise InvalidValueError(f"{label}: expected a link name or a list of them, got {links!r}")
    names = tree.link_names()
    out = []
    for link in links:
        link = getattr(link, "name", link)
        if not isinstance(link, str):
            raise InvalidTypeError(f"{label}: expected link names, got {link!r}")
        if link not in names:
            hint = suggest(link, names) or f"; links are: {', '.join(names[:12])}" + (" ..." if len(names) > 12 else "")
            raise UnknownNameError(f"{label}: no link {link!r} in '{tree.name}'{hint}")
        if link in out:
            raise InvalidValueError(f"{label}: link {link!r} is given twice")
        out.append(link)
    return out


def qpos_names(tree) -> list[str]:
    """One output column name per qpos entry: ``q_<joint>``, or ``q_<joint>_<part>`` for the 7 of a
    free joint (x, y, z, qw, qx, qy, qz) and the 4 of a ball joint (qw, qx, qy, qz)."""
    names = [""] * tree.n_qs
    for joint in tree.joints:
        n = joint.n_qs
        parts = [""] if n == 1 else ["x", "y", "z", "qw", "qx", "qy", "qz"][-n:] if n in (4, 7) else \
            [str(i) for i in range(n)]
        for i, part in zip(joint.qs_idx, parts):
            names[i] = f"q_{joint.name}" + (f"_{part}" if part else "")
    owner = {}
    for joint in tree.joints:  # two joints whose names make one column (a free joint b, a hinge b_x)
        for i in joint.qs_idx:
            if names[i] in owner and owner[names[i]] != joint.name:
                raise InvalidValueError(f"robot: joints {owner[names[i]]!r} and {joint.name!r} of '{tree.name}' both "
                                        f"map to the output column {names[i]!r}; rename one of them in the robot "
                                        "file")
            owner[names[i]] = joint.name
    return names


def default_chunk(gpu: bool) -> int:
    """Rows per solve call when none is given: :data:`CPU_CHUNK` on a CPU, :data:`GPU_CHUNK` on a GPU."""
    return GPU_CHUNK if gpu else CPU_CHUNK


def check_chunk(chunk) -> int:
    if isinstance(chunk, bool | np.bool_) or not isinstance(chunk, int | np.integer) or not 1 <= chunk <= MAX_CHUNK:
        raise InvalidValueError(f"chunk: expected rows per solve call, 1 to {MAX_CHUNK:,}, got {chunk!r}")
    return int(chunk)


def check_seed(seed) -> int:
    if isinstance(seed, bool | np.bool_) or not isinstance(seed, int | np.integer) or not 0 <= seed <= 2**31 - 1:
        raise InvalidValueError(f"seed: a batch job needs an integer seed in [0, {2**31 - 1}] (its chunks' seeds "
                                f"derive from it, so that a resumed or distributed run gives the same rows), "
                                f"got {seed!r}")
    return int(seed)


_MASK64 = (1 << 64) - 1


def chunk_seed(job_seed: int, chunk: int) -> int:
    """The IK call seed of chunk ``chunk`` (0-based) of a job seeded ``job_seed``: SplitMix64 of
    the pair, in [0, 2**31)."""
    z = ((job_seed << 32) + chunk + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) & 0x7FFFFFFF


@dataclass(frozen=True)
class JobSpec:
    """What any worker needs to solve any chunk (plain data, picklable).

    ``robot``: catalog name or absolute robot file path; ``robot_options``: its morph's non-default
    ``pos`` / ``quat`` / ``scale``, and a URDF's ``fixed`` always; ``links``: link names; ``pos_masks`` /
    ``rot_masks``: one per link; ``chunk``: rows per call (a worker's scene has ``envs`` =
    min(chunk, rows) envs); ``seed``: the job seed; ``solver``: keyword arguments of the IK call
    (:data:`SOLVER_KEYS`); ``backend`` / ``precision``: of ``engine.init`` in workers;
    ``obstacles``: ``(text, folder)`` of a scene file whose ``obstacles:`` every worker's scene
    gets (fixed bodies in every env; :func:`obstacle_file`), or None; ``files``: SHA-256 of every
    other file the answers depend on (:mod:`engine.batch.files`). A trajectory job
    (:mod:`engine.batch.trajectories`): ``trajectory`` / ``time`` name its columns, ``chunk`` and
    ``envs`` count trajectories, ``max_joint_velocity`` bounds its frames after the first (None: the
    robot file's), which run ``track_samples`` samples (1 unless the solver settings gave ``max_samples``).
    A plan job (:mod:`engine.batch.planning`): ``plan`` holds its ``plan_path`` keywords (None: no
    plan job); each row's path starts at ``start_qpos`` (one configuration for every row), at the
    row's values of the targets' columns ``start_columns`` (in qpos order), or, both None, at the
    robot's default qpos.
    """

    robot: str
    robot_sha256: str
    robot_options: dict = field(hash=False)
    links: tuple[str, ...] = ()
    pos_masks: tuple[tuple[bool, bool, bool], ...] = ()
    rot_masks: tuple[tuple[bool, bool, bool], ...] = ()
    chunk: int = 1
    envs: int = 1
    seed: int = 0
    solver: dict = field(default_factory=dict, hash=False)
    backend: str = "cpu"
    precision: str = "32"
    obstacles: tuple[str, str] | None = None
    files: dict = field(default_factory=dict, hash=False)
    trajectory: str | None = None
    time: str | None = None
    max_joint_velocity: object = None
    track_samples: int = 1
    plan: dict | None = field(default=None, hash=False)
    start_qpos: tuple[float, ...] | None = None
    start_columns: tuple[str, ...] | None = None

    @property
    def has_pos(self) -> list[bool]:
        """Per link: whether any position axis is matched (else the link takes no position target)."""
        return [any(m) for m in self.pos_masks]

    @property
    def has_quat(self) -> list[bool]:
        """Per link: whether its orientation is matched at all (else no orientation target)."""
        return [any(m) for m in self.rot_masks]

    def fingerprint(self) -> dict:
        """The settings that fix the answers (what a resumed job must repeat), JSON-ready."""
        d = asdict(self)
        d.pop("envs")  # the backend and precision stay: their rows differ (float rounding)
        d["files"] = dict(sorted(self.files.items()))
        d["robot"] = {"source": d.pop("robot"), "sha256": d.pop("robot_sha256"),
                      "options": dict(sorted(d.pop("robot_options").items()))}
        d["links"] = list(self.links)
        d["pos_masks"] = [list(m) for m in self.pos_masks]
        d["rot_masks"] = [list(m) for m in self.rot_masks]
        d["solver"] = dict(sorted(self.solver.items()))
        d["obstacles"] = None if self.obstacles is None else hashlib.sha256(self.obstacles[0].encode()).hexdigest()
        if self.trajectory is None:  # a row job's settings read as before trajectories existed
            for key in ("trajectory", "time", "max_joint_velocity", "track_samples"):
                d.pop(key)
        elif isinstance(self.max_joint_velocity, tuple):
            d["max_joint_velocity"] = list(self.max_joint_velocity)
        if self.plan is None:  # likewise a job without plan_path
            for key in ("plan", "start_qpos", "start_columns"):
                d.pop(key)
        else:
            d["plan"] = dict(sorted(self.plan.items()))
            d["start_qpos"] = None if self.start_qpos is None else list(self.start_qpos)
            d["start_columns"] = None if self.start_columns is None else list(self.start_columns)
        return d


def obstacle_file(path: str | os.PathLike) -> tuple[str, str]:
    """``(text, folder)`` of the scene file ``path`` whose ``obstacles:`` a batch job places (its
    robot and the rest are not used), validated now: a bad file raises
    :class:`~engine.scenefile.SceneFileError` naming the file, the key and the line."""
    from ..scenefile import load

    spec = load(path, check=False)
    if not spec.obstacles:
        raise SceneFileError(os.fspath(path), [Issue(("obstacles",), "no obstacles in this scene file")])
    p = Path(path).resolve()
    return p.read_text(encoding="utf-8"), str(p.parent)


def add_job_obstacles(job: JobSpec, scene) -> list:
    """Add ``job.obstacles`` to ``scene`` (not built yet); returns their entities."""
    if job.obstacles is None:
        return []
    from ..scenefile.io import loads
    from ..scenefile.obstacles import add_obstacles

    text, folder = job.obstacles
    return add_obstacles(loads(text, file=str(Path(folder) / "obstacles"), base_dir=folder, check=False), scene)
