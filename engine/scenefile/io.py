"""Reading, checking and writing scene files.

``load(path) -> SceneSpec`` parses the YAML (:mod:`engine.scenefile.yamlparse`: syntax errors carry
their line), validates it with the models, then runs :func:`check_spec`: the robot resolves
(catalog name or file), every target's link exists in it, groups agree on their masks, per-env
lists match ``n_envs``, mesh obstacles' files can be read (:mod:`engine.scenefile.obstacles`). Every problem found
is reported at once in one :class:`SceneFileError`, each line naming the file, the key path and,
where known, the line of the file.

``save(spec, path)`` writes the keys that were given, in the file's order (new keys in the models'
order); comments are not kept.
"""

from __future__ import annotations

import functools
import math
import os
import stat
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ValidationError

from .. import assets, morphs
from .. import model as model_mod
from ..errors import InvalidValueError
from .errors import Issue, SceneFileError, issues_from_validation, show, suggest
from .models import MOTION_TYPES, OBSTACLE_KINDS, KeyframesMotion, OffsetMotion, RobotSpec, SceneSpec, SpecModel
from .obstacles import obstacle_issues
from .yamlparse import MAX_FILE_BYTES as MAX_FILE_BYTES  # re-exported: batch jobs read settings files too
from .yamlparse import line_of, parse_yaml

ROBOT_SUFFIXES = (".urdf", ".xml", ".mjcf")
# keys whose value (or each item of whose list) is one of several models, told apart by a tag key
_TAGGED = {"motion": ("type", MOTION_TYPES), "obstacles": ("kind", OBSTACLE_KINDS)}
_TAGGED_LISTS = {"obstacles"}  # of these, the list's items are tagged
_UNION_TAGS = {key: tuple(models) for key, (_, models) in _TAGGED.items()}

# -- validation -------------------------------------------------------------------------------------


def _fields_at(loc: tuple, data: Any) -> list[str]:
    """Keys allowed at a key path (for "did you mean" on unknown keys); a motion's keys follow its
    type, an obstacle's its kind."""
    model: type[BaseModel] | None = SceneSpec
    node = data
    listed = None  # the key of a list of tagged models, whose item's index comes next
    for part in loc:
        node = node[part] if isinstance(node, dict | list) and _has(node, part) else None
        if isinstance(part, int):
            if listed is not None:
                model, listed = _tagged_model(listed, node), None
            continue
        field = model.model_fields.get(part) if model is not None else None
        if field is None:
            return []
        if part in _TAGGED_LISTS:
            listed = part
            continue
        model = _tagged_model(part, node) if part in _TAGGED else _model_in(field.annotation)
    return list(model.model_fields) if model is not None and listed is None else []


def _tagged_model(key: str, node) -> type[BaseModel] | None:
    """The model of a tagged value (a motion, an obstacle) by its tag, or None."""
    tag_key, models = _TAGGED[key]
    tag = node.get(tag_key) if isinstance(node, dict) else None
    return models.get(tag) if isinstance(tag, str) else None


def _has(node, part) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(part, int) and 0 <= part < len(node)


def _model_in(annotation) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def validate(data: Any, file: str = "<spec>", lines: dict | None = None, base_dir: Path | None = None,
             source: Path | None = None, check: bool = True) -> SceneSpec:
    """A :class:`SceneSpec` from parsed YAML data; :class:`SceneFileError` listing every problem."""
    lines = lines or {}
    issues: list[Issue] = []
    if data is None:
        raise SceneFileError(file, [Issue((), "the file is empty; expected a mapping with at least a robot key")])
    if not isinstance(data, dict):
        raise SceneFileError(file, [Issue((), f"expected a mapping (robot: ..., targets: ...) at the top level, "
                                              f"got {type(data).__name__} {show(data)}")])
    spec = None
    try:
        spec = SceneSpec.model_validate(data)
    except ValidationError as err:
        issues += issues_from_validation(err, lambda loc: _fields_at(loc, data), _UNION_TAGS)
        issues += _raw_robot_issues(data, base_dir or Path.cwd())
    except (RecursionError, OverflowError) as err:
        issues.append(Issue((), f"cannot read the scene: {type(err).__name__}: {err}"))
    if spec is not None:
        spec._source = source
        spec._base = None if source is not None else base_dir
        if check:
            issues += spec_issues(spec)
    if issues:
        raise SceneFileError(file, [_with_line(i, lines) for i in _sorted(issues, lines)])
    return spec


def _with_line(issue: Issue, lines: dict) -> Issue:
    if issue.line is not None:
        return issue
    return Issue(issue.loc, issue.message, line_of(issue.loc, lines))


def _sorted(issues: list[Issue], lines: dict) -> list[Issue]:
    def key(item):
        i, issue = item
        line = issue.line if issue.line is not None else line_of(issue.loc, lines)
        return (line if line is not None else -1, i)

    return [issue for _, issue in sorted(enumerate(issues), key=key)]


def loads(text: str, file: str = "<string>", base_dir: str | os.PathLike | None = None,
          check: bool = True) -> SceneSpec:
    """Parse and validate scene YAML ``text``; relative paths resolve against ``base_dir`` (default cwd)."""
    data, lines, issues = parse_yaml(text)
    if issues and data is None:
        raise SceneFileError(file, issues)
    base = Path(base_dir).resolve() if base_dir is not None else None
    try:
        spec = validate(data, file, lines, base_dir=base, source=None, check=check)
    except SceneFileError as err:
        raise SceneFileError(file, _sorted(issues + err.issues, lines)) from None
    if issues:
        raise SceneFileError(file, issues)
    return spec


def load(path: str | os.PathLike, check: bool = True) -> SceneSpec:
    """Read a scene file. Raises :class:`SceneFileError` (message: every problem, one per line).

    ``check=False`` skips the checks that need the robot (link names): structure only.
    """
    file = os.fspath(path)
    p = Path(file)
    try:
        info = p.stat()  # through links: a link to /dev/zero or a pipe is no scene file either
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(file)
        if not stat.S_ISREG(info.st_mode):
            raise SceneFileError(file, [Issue((), "not a regular file (a device, a pipe or a socket); "
                                                  "expected a .yaml scene file")])
        if info.st_size > MAX_FILE_BYTES:
            raise SceneFileError(file, [Issue((), f"{info.st_size:,} bytes; a scene file is a few KB "
                                                  f"(at most {MAX_FILE_BYTES:,} accepted)")])
        text = p.read_bytes().decode("utf-8")  # no newline translation: YAML handles \r itself
    except FileNotFoundError:
        raise SceneFileError(file, [Issue((), "no such file")]) from None
    except IsADirectoryError:
        raise SceneFileError(file, [Issue((), "is a folder; expected a .yaml scene file")]) from None
    except UnicodeDecodeError as err:
        raise SceneFileError(file, [Issue((), f"not UTF-8 text ({err.reason} at byte {err.start})")]) from None
    except OSError as err:
        raise SceneFileError(file, [Issue((), f"cannot read: {err.strerror or err}")]) from None
    data, lines, issues = parse_yaml(text)
    if data is None and issues:
        raise SceneFileError(file, issues)
    source = p.resolve()
    try:
        spec = validate(data, file, lines, base_dir=source.parent, source=source, check=check)
    except SceneFileError as err:
        raise SceneFileError(file, _sorted(issues + err.issues, lines)) from None
    if issues:
        raise SceneFileError(file, issues)
    return spec


# -- checks that need the robot or several sections --------------------------------------------------


def _is_path(text: str) -> bool:
    return "/" in text or "\\" in text or Path(text).suffix.lower() in ROBOT_SUFFIXES


def _robot_loc(robot: RobotSpec) -> tuple:
    return ("robot",) if robot.key_order() is None else ("robot", "file")


def resolve_robot(file: str, base_dir: Path) -> tuple[Path, str]:
    """``(robot file, "urdf" | "mjcf")`` for a catalog name or a path relative to ``base_dir``.

    Raises ValueError with the user-facing message.
    """
    text = file.strip()
    try:
        return _resolve_robot(text, base_dir)
    except OSError as err:  # a path the OS rejects (too long, a bad character)
        raise InvalidValueError(f"cannot use robot file {text!r}: {err.strerror or err}") from None


def _resolve_robot(text: str, base_dir: Path) -> tuple[Path, str]:
    if "\0" in text:
        raise InvalidValueError(f"expected a catalog name or a file path, got {text!r}")
    if _is_path(text):
        path = Path(text).expanduser()
        path = path if path.is_absolute() else (base_dir / path)
        suffix = path.suffix.lower()
        if suffix not in ROBOT_SUFFIXES:
            raise InvalidValueError(f"robot file {text!r} has suffix {suffix!r}; expected one of "
                                    f"{', '.join(ROBOT_SUFFIXES)}")
        if not path.is_file():
            raise InvalidValueError(f"no such robot file: {text!r} (looked for {path.resolve()})")
        return path.resolve(), "urdf" if suffix == ".urdf" else "mjcf"
    try:
        entry = assets.resolve(text)
    except KeyError:
        names = assets.robot_names()
        hint = suggest(text.lower(), names)
        more = "" if hint else " (`ikstudio robots` lists the catalog; a path to a .urdf/.xml file works too)"
        raise InvalidValueError(f"unknown robot {text!r}{hint}{more}") from None
    except (ValueError, FileNotFoundError) as err:
        raise InvalidValueError(str(err)) from None
    return entry.path, entry.format


def _raw_robot_issues(data: dict, base_dir: Path) -> list[Issue]:
    """The robot check alone, on data that failed validation elsewhere (so both get reported)."""
    robot = data.get("robot")
    if isinstance(robot, str) and robot.strip():
        loc, file = ("robot",), robot
    elif isinstance(robot, dict) and isinstance(robot.get("file"), str) and robot["file"].strip():
        loc, file = ("robot", "file"), robot["file"]
    else:
        return []
    try:
        resolve_robot(file, base_dir)
    except ValueError as err:
        return [Issue(loc, str(err))]
    return []


@functools.lru_cache(maxsize=64)
def _link_names_cached(path: str, mtime: float, fmt: str) -> tuple[str, ...]:
    morph = morphs.URDF(file=path, fixed=True) if fmt == "urdf" else morphs.MJCF(file=path)
    with warnings.catch_warnings():  # model warnings (ignored mimics) are the robot's, not the scene's
        warnings.simplefilter("ignore")
        return tuple(model_mod.load(morph).link_names())


def link_names(path: Path, fmt: str) -> tuple[str, ...]:
    """The link names of a robot file (cached while the file is unchanged)."""
    return _link_names_cached(str(path), path.stat().st_mtime, fmt)


def spec_issues(spec: SceneSpec, n_envs: int | None = None) -> list[Issue]:
    """Problems that need the robot or several sections; ``n_envs`` overrides the file's."""
    issues: list[Issue] = []
    robot_loc = _robot_loc(spec.robot)
    names: tuple[str, ...] | None = None
    try:
        path, fmt = resolve_robot(spec.robot.file, spec.base_dir)
    except ValueError as err:
        issues.append(Issue(robot_loc, str(err)))
    else:
        if fmt == "mjcf" and spec.robot.fixed is False:
            issues.append(Issue(("robot", "fixed"), "fixed applies to URDF robots only; an MJCF robot's base "
                                                    "joint (a <freejoint/>) is set in its file"))
        try:
            names = link_names(path, fmt)
        except Exception as err:  # a broken robot file: report it, do not crash the check
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            issues.append(Issue(robot_loc, f"cannot load robot file {path}: {first}"))
    n = spec.envs.n_envs if n_envs is None else n_envs
    first_in_group: dict[str, int] = {}
    links_in_group: dict[str, dict[str, int]] = {}
    for i, target in enumerate(spec.targets):
        loc = ("targets", i)
        if names is not None and target.link not in names:
            hint = suggest(target.link, names)
            if not hint:
                shown = ", ".join(names[:12]) + (f", ... ({len(names)} links)" if len(names) > 12 else "")
                hint = f"; links are: {shown}"
            issues.append(Issue((*loc, "link"), f"no link {target.link!r} in the robot{hint}"))
        if target.group is not None:
            g = target.group
            if g in first_in_group:
                j = first_in_group[g]
                other = spec.targets[j]
                for mask in ("pos_mask", "rot_mask"):
                    mine, theirs = getattr(target, mask), getattr(other, mask)
                    if mine != theirs:
                        issues.append(Issue((*loc, mask), f"{show(list(mine))} differs from targets[{j}].{mask} "
                                                          f"{show(list(theirs))} in group {g!r}; a group is one "
                                                          "IK call, which shares its masks"))
                seen = links_in_group[g]
                if target.link in seen:
                    issues.append(Issue((*loc, "link"), f"link {target.link!r} is already a target of group {g!r} "
                                                        f"(targets[{seen[target.link]}])"))
                seen.setdefault(target.link, i)
            else:
                first_in_group[g] = i
                links_in_group[g] = {target.link: i}
        motion = target.motion
        if isinstance(motion, OffsetMotion) and motion.offsets is not None and len(motion.offsets) != n:
            issues.append(Issue((*loc, "motion", "offsets"), f"expected {n} offsets (one per env; n_envs is {n}), "
                                                             f"got {len(motion.offsets)}"))
        if isinstance(motion, KeyframesMotion):
            if motion.poses[0].pos is None and target.pos is None and target.orientation() is None \
                    and motion.poses[0].orientation() is None:
                issues.append(Issue((*loc, "motion"), "the keyframes give neither pos nor quat"))
    return issues + obstacle_issues(spec)


def check_spec(spec: SceneSpec, n_envs: int | None = None) -> None:
    """Raise :class:`SceneFileError` if :func:`spec_issues` finds anything."""
    issues = spec_issues(spec, n_envs)
    if issues:
        raise SceneFileError(str(spec.source) if spec.source is not None else "<spec>", issues)


# -- writing ----------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block mappings, flow lists of scalars (``pos: [0.4, -0.2, 0.25]``), no aliases."""

    def ignore_aliases(self, data):
        return True

    def increase_indent(self, flow=False, indentless=False):  # "targets:\n  - link: ..." (indented lists)
        return super().increase_indent(flow, False)


def _represent_list(dumper: yaml.SafeDumper, data: list):
    flow = all(not isinstance(x, dict | list) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _represent_float(dumper: yaml.SafeDumper, data: float):
    if math.isfinite(data) and data == round(data) and abs(data) < 1e15:
        return dumper.represent_scalar("tag:yaml.org,2002:float", f"{data:.1f}")
    return dumper.represent_scalar("tag:yaml.org,2002:float", repr(data)) if math.isfinite(data) \
        else yaml.SafeDumper.represent_float(dumper, data)


def _represent_str(dumper: yaml.SafeDumper, data: str):
    # PyYAML writes a lone NEL / line separator raw in single quotes and reads it back as a space:
    # any string with a line break or a control character goes double-quoted (escaped).
    special = any(c in "\x85\u2028\u2029\r" or (not c.isprintable() and c not in "\n") for c in data)
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"' if special else None)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(float, _represent_float)


def _plain(value: Any, rewrite=None, loc: tuple = (), tidy: bool = False) -> Any:
    if isinstance(value, SpecModel):
        order = value.key_order() or []
        fields = type(value).model_fields
        keys = [k for k in order if k in value.model_fields_set and k in fields]
        keys += [k for k in fields if k in value.model_fields_set and k not in keys]
        keys = [k for k in keys if getattr(value, k) is not None or fields[k].default is not None]  # no `null`s
        if isinstance(value, RobotSpec) and keys == ["file"]:
            return _plain(value.file, rewrite, (*loc, "file"), tidy)
        return {k: _plain(getattr(value, k), rewrite, (*loc, k), tidy) for k in keys}
    if isinstance(value, list | tuple):
        return [_plain(v, rewrite, (*loc, i), tidy) for i, v in enumerate(value)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and tidy:
        return clean_float(value)
    if isinstance(value, str) and rewrite is not None:
        return rewrite(loc, value)
    return value


def clean_float(x: float) -> float:
    """``x`` without arithmetic noise, for a file people read: a float32 value (a pose that went
    through the engine) as the shortest decimal that reads back to it (0.44999998807907104 ->
    0.45), else rounded to 12 significant digits (0.30000000000000004 -> 0.3; 0.3999999999999999,
    a drag's sum, -> 0.4): a relative change below 1e-12."""
    if not math.isfinite(x) or x == 0.0:
        return x
    if float(np.float32(x)) == x and len(repr(x).lstrip("-0.").split("e")[0]) > 12:  # float32 noise, not 0.927734375
        return float(str(np.float32(x)))
    return float(f"{x:.12g}")


def to_dict(spec: SceneSpec) -> dict:
    """The spec as plain data: the keys that were given, in the file's order."""
    return _plain(spec)


def dumps(spec: SceneSpec, base_dir: str | os.PathLike | None = None, tidy: bool = False) -> str:
    """The spec as YAML text. With ``base_dir``, relative paths are rewritten relative to it.
    ``tidy``: floats without arithmetic noise (:func:`clean_float`; what an editor saves, where a
    value went through float32 or sums: a load gives back values within a float32 ulp)."""
    rewrite = None
    if base_dir is not None:
        new_base = Path(base_dir).resolve()

        def rewrite(loc, text):
            path_keys = {("robot", "file"), ("record", "output")}
            mesh = len(loc) == 3 and loc[0] == "obstacles" and loc[2] == "file"
            if mesh and not spec.resolve_path(text).is_file():  # one of the engine's meshes, found by name
                return text
            if not mesh and loc not in path_keys or (loc == ("robot", "file") and not _is_path(text)):
                return text
            p = Path(text).expanduser()
            if p.is_absolute():
                return text
            target = spec.resolve_path(p)
            if os.path.commonpath([target, new_base]) == os.path.dirname(new_base.anchor or os.sep):
                return target.as_posix()  # nothing in common but the root: keep it absolute
            return Path(os.path.relpath(target, new_base)).as_posix()

    data = _plain(spec, rewrite, tidy=tidy)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False,
                     width=120)


def save(spec: SceneSpec, path: str | os.PathLike, tidy: bool = False) -> None:
    """Write ``spec`` to ``path`` as YAML (relative paths re-based on the new file's folder;
    ``tidy``: see :func:`dumps`)."""
    p = Path(path)
    rebase = spec._source is not None or spec._base is not None
    text = dumps(spec, base_dir=p.resolve().parent if rebase else None, tidy=tidy)
    p.write_bytes(text.encode("utf-8"))
