"""Genesis' runtime names (``gs.device``, ``gs.tc_float``, ``gs.destroy()``) and the features of
Genesis that are not part of this engine, each with a clear error.

``gs.device``: the compute device, as a string: ``"cuda"``, ``"vulkan"`` or ``"cpu"`` (None before
``init``, as in Genesis, whose value is a ``torch.device``). ``gs.tc_float`` / ``gs.np_float``:
the engine's float dtype, ``numpy.float32`` or ``numpy.float64`` by ``init(precision=)``
(Genesis' ``tc_float`` is a torch dtype; arrays here are numpy). ``gs.tc_int`` / ``gs.np_int``:
``numpy.int32``.

A script that reaches for a Genesis feature this kinematic engine does not have gets a
:class:`~engine.errors.NotCoveredError` (an ``AttributeError``) that names the feature and says it
is not part of this engine, instead of a bare "has no attribute".
"""

from __future__ import annotations

import numpy as np

from .errors import NotCoveredError

# Genesis' module-level names (gs.X) that are not part of this engine -> what they are in Genesis
MODULE_FEATURES = {
    "renderers": "renderers (ray tracing, batch rendering)",
    "textures": "textures",
    "sensors": "sensors",
    "recorders": "recorders",
    "engine": "Genesis' internal engine package",
    "ext": "Genesis' bundled third-party extensions",
    "coupler": "solver coupling",
    "grad": "differentiable simulation",
    "constraint_solver": "constraint-solver enum (RigidOptions takes the name as a string: \"Newton\")",
    "integrator": "integrator enum (RigidOptions takes the name as a string)",
    "friction_cone": "friction-cone enum (RigidOptions takes the name as a string)",
    "contact_resolution": "contact-resolution enum (RigidOptions takes the name as a string)",
    "broadphase_traversal": "broad-phase enum (RigidOptions takes the name as a string)",
}

# Genesis' morphs that are not part of this engine
MORPH_FEATURES = {name: f"{name} morph" for name in ("Terrain", "Drone", "USD", "MeshSet", "Nowhere", "PlanarRobot")}

# Genesis' option groups of the solvers, couplers and renderers this engine does not have
OPTION_FEATURES = {name: f"{name} (a solver, coupler or renderer this kinematic engine does not have)"
                   for name in ("ToolOptions", "KinematicOptions", "MPMOptions", "SPHOptions", "FEMOptions",
                                "SFOptions", "PBDOptions", "LegacyCouplerOptions", "SAPCouplerOptions",
                                "IPCCouplerOptions", "ProfilingOptions", "CoacdOptions")}

# Genesis' entity methods that are not part of this engine -> what they belong to
ENTITY_FEATURES = {
    **dict.fromkeys(("control_dofs_velocity", "set_dofs_stiffness", "set_dofs_damping", "set_dofs_armature",
                     "set_dofs_frictionloss",
                     "get_dofs_stiffness", "get_dofs_damping", "get_dofs_armature", "get_dofs_frictionloss",
                     "get_mass_mat",
                     "set_mass_shift", "set_COM_shift", "set_friction", "set_friction_ratio", "get_links_acc",
                     "get_links_inertial_mass", "get_mass", "set_gravity_compensation"),
                    "dynamics (forces, gains, masses, friction)"),
    **dict.fromkeys(("attach", "detach"), "welding entities together"),
    **dict.fromkeys(("get_AABB", "get_vAABB", "get_verts", "get_vverts"), "geometry readers"),
    **dict.fromkeys(("get_sdf",), "signed distance fields"),
}

# Genesis' scene methods and attributes that are not part of this engine
SCENE_FEATURES = {
    "add_camera": "cameras (record with scene.visualizer.start_recording instead)",
    "add_sensor": "sensors",
    "add_light": "lights",
    "add_recorder": "recorders",
    "start_recording": "recorders (use scene.visualizer.start_recording)",
    "draw_debug_mesh": "debug meshes",
    "draw_debug_box": "debug boxes",
    "draw_debug_points": "debug point clouds",
    "draw_debug_particles": "particle debugging",
    "sim": "Genesis' simulator object (solvers, substeps)",
    "rigid_solver": "Genesis' rigid solver object",
    "mpm_solver": "the MPM solver",
    "sph_solver": "the SPH solver",
    "pbd_solver": "the PBD solver",
    "fem_solver": "the FEM solver",
    "sf_solver": "the stable-fluid solver",
    "tool_solver": "the tool solver",
    "kinematic_solver": "Genesis' kinematic solver object",
}


def not_covered(owner: str, name: str, feature: str) -> NotCoveredError:
    """The error for Genesis' ``owner.name``, a part of ``feature`` that this engine does not have."""
    return NotCoveredError(f"{owner}.{name}: this belongs to Genesis' {feature}, which is not part of this "
                           f"engine (IK Studio computes kinematics only; README, 'Genesis compatibility', lists what "
                           f"is covered)")


def missing(owner: str, name: str, table: dict) -> AttributeError:
    """The error for an attribute ``name`` that ``owner`` lacks: a named Genesis feature when
    ``table`` knows it, else a plain AttributeError."""
    if name in table:
        return not_covered(owner, name, table[name])
    return AttributeError(f"{owner!s} has no attribute {name!r}")


def module_attribute(name: str):
    """``gs.<name>`` for Genesis' runtime names computed from the current backend state; raises
    AttributeError (a NotCoveredError for a known Genesis feature) for anything else."""
    from .runtime.state import STATE

    if name == "device":
        return STATE.arch if STATE.initialised else None
    if name in ("tc_float", "np_float"):
        return np.float64 if STATE.precision == "64" else np.float32
    if name in ("tc_int", "np_int"):
        return np.int32
    raise missing("engine", name, MODULE_FEATURES)


def destroy() -> None:
    """Genesis' ``gs.destroy()``: release the taichi runtime; scenes built before it can no longer
    be used, and the next engine call (or ``init``) starts a fresh runtime. Safe to call twice."""
    from .errors import StateError
    from .runtime import locking, memory
    from .runtime.backend import reset_taichi
    from .runtime.state import LOCK, STATE

    with LOCK:
        if not STATE.initialised:
            return
        busy = locking.calls_in_progress()
        if busy:
            raise StateError(f"destroy: {busy} engine call(s) are running in other threads; call it after they finish")
        memory.orphan_device_arrays()
        reset_taichi()  # (which writes taichi's cache once its lock is free)
        STATE.initialised = False
        STATE.generation += 1  # scenes built before it refuse further calls
        STATE.runtime += 1  # and every compiled kernel and device array is gone
