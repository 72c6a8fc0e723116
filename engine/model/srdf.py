"""SRDF files: where a robot ships one, and the link pairs its ``<disable_collisions>`` exclude.

example-robot-data keeps them beside the URDF's folder: ``panda_description/urdf/panda.urdf``
has ``panda_description/srdf/panda.srdf``. :func:`find_srdf` looks there, then next to the URDF.
"""

from __future__ import annotations

from pathlib import Path

from .errors import ModelLoadError


def find_srdf(robot_file) -> Path | None:
    """The SRDF of ``robot_file`` (a URDF path): ``../srdf/<stem>.srdf`` or ``<stem>.srdf`` beside
    it; None when there is none."""
    path = Path(robot_file)
    for cand in (path.parent.parent / "srdf" / f"{path.stem}.srdf", path.with_suffix(".srdf")):
        if cand.is_file():
            return cand
    return None


def disabled_pairs(srdf_file, link_names) -> set[frozenset[str]]:
    """The ``<disable_collisions link1= link2=>`` pairs of ``srdf_file`` as sets of two link names;
    pairs naming a link not in ``link_names`` are dropped (an SRDF may cover a larger robot).
    Malformed XML is a :class:`ModelLoadError` naming the file."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(srdf_file).getroot()
    except ET.ParseError as err:
        raise ModelLoadError(f"{srdf_file}: malformed SRDF: {err}") from None
    names = set(link_names)
    out = set()
    for el in root.iter("disable_collisions"):
        a, b = el.get("link1"), el.get("link2")
        if a in names and b in names and a != b:
            out.add(frozenset((a, b)))
    return out
