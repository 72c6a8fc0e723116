"""URDF -> KinematicTree, parsed with yourdfpy. Every link is kept, fixed joints included.

A link's body frame is its URDF link frame: the link's offset is its joint's ``<origin>`` and the
joint acts at that frame's origin, about its axis given in that frame. So the ``<inertial>``
origin's xyz is the centre of mass in the body frame as it stands (its rpy only turns the inertia
tensor, which is not kept).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..transforms import quat_from_matrix, quat_mul, quat_rotate
from .errors import ModelLoadError
from .tree import Joint, KinematicTree, Link, Mimic, Visual

_URDF_TYPES = {"fixed": "fixed", "revolute": "revolute", "continuous": "continuous",
               "prismatic": "prismatic", "floating": "free"}


def origin_pose(origin) -> tuple[np.ndarray, np.ndarray]:
    if origin is None:
        return np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
    origin = np.asarray(origin, dtype=float)
    return origin[:3, 3].copy(), quat_from_matrix(origin[:3, :3])


def _inertial(link, scale: float) -> tuple[float, np.ndarray]:
    """Mass (kg) and centre of mass ``(3,)`` (m, times ``scale``, link frame) of a yourdfpy link;
    0 kg at the link origin without ``<inertial>`` or ``<mass>``."""
    inertial = link.inertial
    if inertial is None:
        return 0.0, np.zeros(3)
    mass = 0.0 if inertial.mass is None else float(inertial.mass)
    com = np.zeros(3) if inertial.origin is None else np.asarray(inertial.origin, dtype=float)[:3, 3] * scale
    return mass, com


def _material_rgba(visual, materials: dict) -> np.ndarray:
    material = visual.material
    if material is not None:
        if material.color is None and material.name in materials:
            material = materials[material.name]
        if material.color is not None and material.color.rgba is not None:
            return np.asarray(material.color.rgba, dtype=float)
    return np.array([0.7, 0.7, 0.7, 1.0])


def urdf_visual(visual, link_name: str, urdf_path: Path, materials: dict, scale: float) -> Visual | None:
    from ..assets import resolve_package_uri

    pos, quat = origin_pose(visual.origin)
    pos = pos * scale
    rgba = _material_rgba(visual, materials)
    geom = visual.geometry
    if geom.box is not None:
        return Visual("box", np.asarray(geom.box.size, float) * scale, pos, quat, rgba)
    if geom.sphere is not None:
        return Visual("sphere", np.array([geom.sphere.radius]) * scale, pos, quat, rgba)
    if geom.cylinder is not None:
        return Visual("cylinder", np.array([geom.cylinder.radius, geom.cylinder.length]) * scale,
                      pos, quat, rgba)
    if geom.mesh is not None:
        path = resolve_package_uri(geom.mesh.filename, urdf_path)
        if path is None:
            warnings.warn(f"{urdf_path}: link '{link_name}': mesh file not found: '{geom.mesh.filename}';"
                          " loading the robot without this visual", RuntimeWarning, stacklevel=4)
            return None
        mesh_scale = np.ones(3) if geom.mesh.scale is None else np.broadcast_to(
            np.asarray(geom.mesh.scale, float), (3,)).copy()
        return Visual("mesh", mesh_scale * scale, pos, quat, rgba, mesh_file=path)
    return None


def parse_urdf(path: Path):
    import yourdfpy
    from lxml import etree

    try:  # strict parse first: yourdfpy silently "recovers" malformed XML into a different robot
        etree.parse(str(path))
    except etree.XMLSyntaxError as err:
        raise ModelLoadError(f"{path}: malformed XML (line {err.lineno}): {err.msg}") from None
    try:
        return yourdfpy.URDF.load(str(path), build_scene_graph=False, load_meshes=False,
                                  build_collision_scene_graph=False, load_collision_meshes=False).robot
    except Exception as err:  # yourdfpy raises assorted errors for missing attributes
        raise ModelLoadError(f"{path}: cannot parse URDF: {type(err).__name__}: {err}") from None


def load_urdf(morph) -> KinematicTree:
    """Build the tree of a :class:`engine.morphs.URDF` (its file, base pose, scale, fixed base)."""
    path = Path(morph.file)
    robot = parse_urdf(path)
    link_by_name = {link.name: link for link in robot.links}
    if not link_by_name:
        raise ModelLoadError(f"{path}: <robot> has no <link> element")
    for kind, elements in (("link", robot.links), ("joint", robot.joints)):
        seen: set = set()
        for element in elements:
            if element.name in seen:
                raise ModelLoadError(f"{path}: two <{kind} name=\"{element.name}\"> elements; names must be unique")
            seen.add(element.name)
    children: dict[str, list] = {name: [] for name in link_by_name}
    parent_joint: dict[str, object] = {}
    for joint in robot.joints:
        for role in ("parent", "child"):
            if getattr(joint, role) not in link_by_name:
                raise ModelLoadError(f"{path}: <joint name=\"{joint.name}\">: {role} link "
                                     f"'{getattr(joint, role)}' is not a <link> of this robot")
        if joint.type not in _URDF_TYPES:
            raise ModelLoadError(f"{path}: <joint name=\"{joint.name}\">: unsupported joint type "
                                 f"'{joint.type}' (supported: {', '.join(_URDF_TYPES)})")
        if joint.child in parent_joint:
            raise ModelLoadError(f"{path}: <joint name=\"{joint.name}\">: link '{joint.child}' already "
                                 f"has parent joint '{parent_joint[joint.child].name}'")
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    roots = [name for name in link_by_name if name not in parent_joint]
    if len(roots) != 1:
        raise ModelLoadError(f"{path}: expected one root link, found {len(roots)}: {roots}")

    materials = {m.name: m for m in (robot.materials or [])}
    links: list[Link] = []
    joints: list[Joint] = []
    joint_source: list = []
    stack = [(roots[0], -1)]
    while stack:  # depth-first, children in file order
        name, parent = stack.pop()
        urdf_joint = parent_joint.get(name)
        pos, quat = origin_pose(urdf_joint.origin) if urdf_joint is not None else (np.zeros(3), np.eye(4)[0])
        pos = pos * morph.scale
        idx = len(links)
        if parent < 0:
            if morph.fixed:
                pos, quat = morph.pos + quat_rotate(morph.quat, pos), quat_mul(morph.quat, quat)
            else:
                joints.append(Joint("root_joint", "free", idx, np.zeros(3), np.zeros(3)))
                joint_source.append(None)
        visuals = [v for v in (urdf_visual(vis, name, path, materials, morph.scale)
                               for vis in link_by_name[name].visuals) if v is not None]
        mass, com = _inertial(link_by_name[name], morph.scale)
        links.append(Link(name, parent, pos, quat, visuals, mass, com))
        if urdf_joint is not None:
            joints.append(_joint(urdf_joint, idx, morph.scale, path))
            joint_source.append(urdf_joint)
        stack.extend((j.child, idx) for j in reversed(children[name]))
    if len(links) != len(link_by_name):  # every link has a parent, yet some cannot be reached: a cycle
        reached = {link.name for link in links}
        lost = [name for name in link_by_name if name not in reached]
        raise ModelLoadError(f"{path}: links {', '.join(repr(n) for n in lost)} are not connected to the root "
                             f"link '{roots[0]}' (their joints form a cycle)")

    joint_index = {j.name: i for i, j in enumerate(joints)}
    for joint, src in zip(joints, joint_source):
        if src is not None and src.mimic is not None:
            if src.mimic.joint not in joint_index:  # Pinocchio ignores such a mimic too
                warnings.warn(f"{path}: <joint name=\"{src.name}\">: mimic names unknown joint "
                              f"'{src.mimic.joint}'; the joint moves on its own", RuntimeWarning, stacklevel=3)
                continue
            joint.mimic = Mimic(joint_index[src.mimic.joint],
                                1.0 if src.mimic.multiplier is None else float(src.mimic.multiplier),
                                0.0 if src.mimic.offset is None else float(src.mimic.offset) * (
                                    morph.scale if joint.type == "prismatic" else 1.0))
    tree = KinematicTree(robot.name or path.stem, path, links, joints)
    if not morph.fixed:
        q = tree.default_qpos.copy()
        q[0:3], q[3:7] = morph.pos, morph.quat
        tree.default_qpos = q
    return tree


def _joint(src, link_idx: int, scale: float, path: Path) -> Joint:
    kind = _URDF_TYPES[src.type]
    axis = np.array([1.0, 0.0, 0.0]) if src.axis is None else np.asarray(src.axis, float)
    norm = np.linalg.norm(axis)
    if kind in ("revolute", "continuous", "prismatic") and norm < 1e-12:
        raise ModelLoadError(f"{path}: <joint name=\"{src.name}\">: zero axis")
    axis = axis / norm if norm > 0 else axis
    lower, upper, velocity = -np.inf, np.inf, np.inf
    limit = src.limit
    if limit is not None:
        if limit.velocity is not None:
            velocity = float(limit.velocity) * (scale if kind == "prismatic" else 1.0)
        if kind in ("revolute", "prismatic") and limit.lower is not None and limit.upper is not None:
            lin = scale if kind == "prismatic" else 1.0
            lower, upper = float(limit.lower) * lin, float(limit.upper) * lin
    return Joint(src.name, kind, link_idx, np.zeros(3), axis, lower, upper, velocity)
