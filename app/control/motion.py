"""The solver's motion modes, as the Solver panel switches them: answers as found (both off), smooth
tracking (``solver.track``: velocity-limited, frame by frame) or planned motion (``solver.plan``:
collision-free paths played at the velocity limits, :mod:`engine.scenefile.planned`). The two are
exclusive, as in a scene file."""

from __future__ import annotations


def switch(solver, kept_velocity, track: bool, plan: bool):
    """Set ``solver``'s mode to ``track`` / ``plan`` (not both). A scene's ``max_joint_velocity``
    bounds either motion and may be given only with one, so with both off it is set aside and
    returned (``kept_velocity``), and it comes back with either on. Returns the velocity now set
    aside (or None). Each assignment is validated, so the velocity is set aside while they change."""
    if track and plan:
        raise ValueError("solver: track and plan are two ways to move; choose one")
    if solver.max_joint_velocity is not None:  # aside while the switches change (it needs one of them)
        kept_velocity, solver.max_joint_velocity = solver.max_joint_velocity, None
    solver.track = solver.plan = False
    solver.track, solver.plan = track, plan
    if (track or plan) and kept_velocity is not None:
        solver.max_joint_velocity, kept_velocity = kept_velocity, None
    return kept_velocity
