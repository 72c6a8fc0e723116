"""The robot catalog: names that scene files and the GUI use (``robot: panda``).

Two sources feed it:

* ``ikstudio``: every robot file (``*.xml`` MJCF, ``*.urdf``) under the repo's
  ``assets/`` folder.  The robot's folder names it: ``assets/panda/panda.xml``
  is ``panda``.  A second robot file in the same folder, say
  ``assets/panda/scene.xml``, is ``panda_scene``.
* ``example-robot-data``: every URDF the package ships.  A file that an
  ``example_robot_data.robots_loader.ROBOTS`` loader points at takes the
  loader's name (``ur5``, ``talos``, ``tiago_dual``); any other file takes its
  stem (``iris_simple``), or ``<package>_<stem>`` when the stem is taken.

Naming scheme when both sources claim a name: the project's own asset keeps
the bare name and the example-robot-data robot gets the suffix ``_urdf``
(``panda`` is ours, MJCF; ``panda_urdf`` is example-robot-data's Panda).
The prefix ``erd:`` always means example-robot-data and takes the robot's
example-robot-data name, so ``resolve("erd:panda")`` is the ``panda_urdf``
entry and ``resolve("erd:ur5")`` the ``ur5`` entry.  Loader names that share a
file with another loader (``talos_legs``, which trims ``talos``' URDF in code)
are aliases: they resolve to that file's entry but are not listed.

``python -m engine.assets`` prints the catalog.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from .errors import InvalidValueError, MissingFileError, UnknownNameError

__all__ = ["RobotEntry", "UnknownRobotError", "list_robots", "resolve", "robot_names",
           "erd_robots_dir", "package_dirs_for", "resolve_package_uri"]

ASSETS_DIR = Path(__file__).resolve().parent / "data" / "assets"  # the repository's assets/ links here
ERD_PREFIX = "erd:"
CLASH_SUFFIX = "_urdf"
ROBOT_SUFFIXES = {".urdf": "urdf", ".xml": "mjcf", ".mjcf": "mjcf"}

Family = Literal["arm", "dual_arm", "humanoid", "quadruped", "hand", "mobile_manipulator", "other"]

# Hand-written family of each example-robot-data robot (by its erd name) and of our own.
_FAMILY_NAMES = {
    "arm": "panda panda_collision ur3 ur3_gripper ur3_limited ur5 ur5_gripper ur5_limited ur10 "
           "ur10_limited kinova z1 xarm7 so100 so101 bravo7_gripper bravo7_no_ee talos_arm finger_edu",
    "dual_arm": "dual_arm baxter",
    "humanoid": "talos talos_box talos_full talos_full_box talos_legs talos_reduced_corrected icub "
                "icub_reduced romeo romeo_small romeo_laas_small g1 g1_with_hands simple_humanoid human "
                "simple_humanoid_classical alexander alex_nub_hands alex_psyonic_hands alex_sake_hands",
    "quadruped": "solo8 solo12 anymal anymal_c hyq go1 go2 a1 b1 laikago quadruped",
    "hand": "allegro_right_hand allegro_left_hand",
    "mobile_manipulator": "tiago tiago_dual tiago_no_hand tiago_pro pr2 anymal_kinova b1_z1 centauro "
                          "borinot hextilt falcon_bravo7_gripper falcon_bravo7_no_ee "
                          "bluevolta_bravo7_gripper bluevolta_bravo7_no_ee",
}
_FAMILIES = {name: family for family, names in _FAMILY_NAMES.items() for name in names.split()}

# Upstream's ROBOTS maps "ur3" to UR5Loader; the UR3 has its own file.
_LOADER_FILE_FIXES = {"ur3": "ur_description/urdf/ur3_robot.urdf"}


@dataclass(frozen=True)
class RobotEntry:
    """One robot of the catalog: its name, file format and file path, where it
    comes from, its family (``arm``, ``humanoid``, ...) and a one-line description."""

    name: str
    format: Literal["urdf", "mjcf"]
    path: Path
    source: Literal["ikstudio", "example-robot-data"]
    family: Family
    description: str


class UnknownRobotError(UnknownNameError):
    """A robot name that is in neither the catalog nor the file system."""


@functools.cache
def erd_robots_dir() -> Path | None:
    """Return the example-robot-data ``robots`` directory (holding ``ur_description``
    and the other package folders), or None when the package is not installed."""
    tail = Path("share", "example-robot-data", "robots")
    candidates = [Path(p).joinpath("..", "..", "..", tail) for p in sys.path if p]
    candidates += [Path(sys.prefix, tail), Path(sys.prefix, "cmeel.prefix", tail)]
    for cand in candidates:
        if (cand / "ur_description").is_dir():
            return cand.resolve()
    return None


def _root_tag(path: Path) -> str | None:
    """The tag of the file's root element, read without parsing the rest."""
    try:
        for _event, elem in ET.iterparse(path, events=("start",)):
            return elem.tag
    except (ET.ParseError, OSError):
        pass
    return None


def _own_entries() -> list[RobotEntry]:
    """The project's robots: in each folder under assets/, the file named like the
    folder (else the first one) takes the folder's name, the others ``folder_stem``."""
    by_folder: dict[str, list[Path]] = {}
    for path in sorted(ASSETS_DIR.rglob("*")) if ASSETS_DIR.is_dir() else []:
        fmt = ROBOT_SUFFIXES.get(path.suffix.lower())
        if fmt and path.is_file() and _root_tag(path) == ("robot" if fmt == "urdf" else "mujoco"):
            rel = path.relative_to(ASSETS_DIR)
            by_folder.setdefault(rel.parts[0] if len(rel.parts) > 1 else "", []).append(path)
    entries = []
    for folder, paths in by_folder.items():
        main = next((p for p in paths if p.stem == folder), paths[0])
        for path in paths:
            name = _slug(path.stem if not folder else folder if path == main else f"{folder}_{path.stem}")
            fmt = ROBOT_SUFFIXES[path.suffix.lower()]
            rel = path.relative_to(ASSETS_DIR).as_posix()
            entries.append(RobotEntry(name, fmt, path.resolve(), "ikstudio", _FAMILIES.get(name, "other"),
                                      f"IK Studio asset assets/{rel} ({fmt.upper()})"))
    return entries


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _loader_files(robots: Path) -> dict[str, tuple[Path, bool]]:
    """Map example_robot_data loader names to (URDF file, whether the loader's own
    class sets that file rather than inheriting it); empty without the loaders."""
    try:
        from example_robot_data.robots_loader import ROBOTS
    except Exception:  # the loaders need pinocchio; the catalog then names files by stem
        return {}
    out = {}
    for name, cls in ROBOTS.items():
        rel = _LOADER_FILE_FIXES.get(name)
        if rel is None and getattr(cls, "urdf_filename", ""):
            rel = Path(cls.path, cls.urdf_subpath, cls.urdf_filename)
        if rel is not None and (robots / rel).is_file():
            out[name] = ((robots / rel).resolve(), name in _LOADER_FILE_FIXES or "urdf_filename" in vars(cls))
    return out


def _erd_entries() -> tuple[list[tuple[str, Path]], dict[str, str]]:
    """Return ([(erd name, path)], {alias: erd name}) for every URDF example-robot-data ships."""
    robots = erd_robots_dir()
    if robots is None:
        return [], {}
    by_file: dict[Path, list[str]] = {}
    loaders = _loader_files(robots)
    for name, (path, _own) in loaders.items():
        by_file.setdefault(path, []).append(name)
    named, aliases, taken = [], {}, set()
    for path, names in by_file.items():  # talos_legs shares talos' file: talos names it
        names.sort(key=lambda n: (not loaders[n][1], len(n), n))
        named.append((names[0], path))
        aliases.update(dict.fromkeys(names[1:], names[0]))
        taken.update(names)
    for path in sorted(p.resolve() for p in robots.rglob("*.urdf")):
        if path in by_file:
            continue
        name = _slug(path.stem)
        if name in taken:
            name = _slug(f"{path.relative_to(robots).parts[0].removesuffix('_description')}_{path.stem}")
        while name in taken:
            name += "_"
        taken.add(name)
        named.append((name, path))
    return named, aliases


@functools.cache
def _own_catalog() -> dict[str, RobotEntry]:
    """The project's own entries by name: they keep their names in the whole catalog (an
    example-robot-data name that clashes gets a suffix), so a name found here resolves without
    scanning example-robot-data, whose loaders import pinocchio (~0.1 s of every start)."""
    return {e.name: e for e in _own_entries()}


@functools.cache
def _catalog() -> tuple[dict[str, RobotEntry], dict[str, str], dict[str, str]]:
    """(entries by name, erd name -> catalog name, alias -> catalog name)."""
    entries = dict(_own_catalog())
    erd_names: dict[str, str] = {}
    robots = erd_robots_dir()
    named, aliases = _erd_entries()
    for erd_name, path in named:
        name = erd_name if erd_name not in entries else erd_name + CLASH_SUFFIX
        while name in entries:
            name += "_"
        rel = path.relative_to(robots).as_posix()
        family = _FAMILIES.get(erd_name, "other")
        entries[name] = RobotEntry(name, "urdf", path, "example-robot-data", family,
                                   f"{family.replace('_', ' ')} from example-robot-data: {rel}")
        erd_names[erd_name] = name
    alias_map = {a: erd_names[t] for a, t in aliases.items() if a not in entries}
    erd_names.update({a: erd_names[t] for a, t in aliases.items()})
    return dict(sorted(entries.items())), erd_names, alias_map


def list_robots() -> list[RobotEntry]:
    """Return every catalog entry, sorted by name (a new list; the scan is cached)."""
    return list(_catalog()[0].values())


def robot_names() -> list[str]:
    """Return the catalog's names, sorted."""
    return list(_catalog()[0])


# Genesis' bundled asset paths that its IK examples use -> the catalog's equivalent robot, so a
# Genesis script runs with only its import line changed.
GENESIS_PATHS = {
    "xml/franka_emika_panda/panda.xml": "panda",
    "urdf/panda_bullet/panda.urdf": "erd:panda",
}


def resolve(name_or_path: str | os.PathLike) -> RobotEntry:
    """Return the RobotEntry for a catalog name (``panda``), an example-robot-data
    name (``erd:panda``), an alias (``talos_legs``) or an existing robot file path
    (``.urdf`` / ``.xml`` / ``.mjcf``; a file of the catalog returns its entry).

    Raises UnknownRobotError (a KeyError) naming close matches for unknown names,
    FileNotFoundError for a missing robot file, ValueError for another file type."""
    text = os.fspath(name_or_path)
    key = text.strip().lower()
    own = _own_catalog()
    if key in own:
        return own[key]
    entries, erd_names, aliases = _catalog()
    if key.startswith(ERD_PREFIX):
        erd = key[len(ERD_PREFIX):]
        if erd in erd_names:
            return entries[erd_names[erd]]
        if erd in entries and entries[erd].source == "example-robot-data":  # erd:panda_urdf
            return entries[erd]
        raise UnknownRobotError(_unknown_message(text, [ERD_PREFIX + n for n in erd_names]))
    if key in entries:
        return entries[key]
    if key in aliases:
        return entries[aliases[key]]
    if key in GENESIS_PATHS and not Path(text).expanduser().is_file():
        return resolve(GENESIS_PATHS[key])
    path = Path(text).expanduser()
    suffix = path.suffix.lower()
    if path.is_file() or suffix in ROBOT_SUFFIXES:
        if suffix not in ROBOT_SUFFIXES:
            raise InvalidValueError(f"robot file {text!r} has suffix {suffix!r}; expected one of "
                                    f"{sorted(ROBOT_SUFFIXES)}")
        if not path.is_file():
            raise MissingFileError(f"robot file {text!r} does not exist")
        path = path.resolve()
        for entry in entries.values():
            if entry.path == path:
                return entry
        robots = erd_robots_dir()
        source = "example-robot-data" if robots and path.is_relative_to(robots) else "ikstudio"
        return RobotEntry(_slug(path.stem), ROBOT_SUFFIXES[suffix], path, source, "other", f"file {path}")
    raise UnknownRobotError(_unknown_message(text, [*entries, *aliases]))


def _unknown_message(name: str, pool: list[str]) -> str:
    close = difflib.get_close_matches(name.strip().lower(), pool, n=3, cutoff=0.6)
    hint = "; did you mean " + " or ".join(repr(c) for c in close) + "?" if close else ""
    return (f"unknown robot {name!r}{hint} (engine.assets.list_robots() or `python -m engine.assets` "
            f"lists the catalog; a path to a .urdf/.xml file works too)")


def package_dirs_for(urdf_path: str | os.PathLike) -> list[Path]:
    """Return the directories searched for ``package://PKG/...`` URIs of this URDF,
    nearest first: every ancestor of the file, the ``ROS_PACKAGE_PATH`` entries,
    then the example-robot-data ``robots`` dir and the dir above it (for
    ``package://example-robot-data/robots/...``).  No duplicates."""
    path = Path(urdf_path).expanduser().resolve()
    dirs = list(path.parents)
    dirs += [Path(p) for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
    robots = erd_robots_dir()
    if robots is not None:
        dirs += [robots, robots.parent]
    return list(dict.fromkeys(dirs))


def resolve_package_uri(uri: str, urdf_path: str | os.PathLike) -> Path | None:
    """Turn a URDF file reference into an existing file: ``package://PKG/rest``
    (searched in ``package_dirs_for(urdf_path)``: ``DIR/PKG/rest``, or
    ``DIR/rest`` when DIR itself is named PKG), ``file://`` URIs, absolute paths,
    and paths relative to the URDF's directory.  Return the resolved Path, or
    None when no such file exists."""
    base = Path(urdf_path).expanduser().resolve().parent
    if uri.startswith("package://"):
        pkg, _, rest = uri[len("package://"):].lstrip("/").partition("/")
        if not pkg:
            return None
        for d in package_dirs_for(urdf_path):
            for cand in (d / pkg / rest, d / rest if d.name == pkg else None):
                if cand is not None and cand.is_file():
                    return cand.resolve()
        return None
    if uri.startswith("file://"):
        parsed = urlparse(uri)
        host = "" if parsed.netloc in ("", "localhost") else parsed.netloc
        uri = unquote(host + parsed.path)
    cand = base / Path(uri).expanduser()  # an absolute path replaces base
    return cand.resolve() if cand.is_file() else None


if __name__ == "__main__":
    for _e in list_robots():
        print(f"{_e.name:28s} {_e.format:4s} {_e.family:18s} {_e.source:18s} {_e.path}")
