"""Inverse kinematics: what to achieve, how it is packed for the kernels, and how it is run.

- :mod:`.tasks`: the task kinds (``PoseTask``, ``RelativePoseTask``, ``ComTask``, ``PostureTask``,
  ``CollisionTask``): what a solve must achieve, each with its error rows.
- :mod:`.request`: ``IKRequest``, every parameter but the targets, validated once; frozen, hashable.
- :mod:`.plan`: ``IKPlan``, a request packed into the kernel tables, kept per request.
- :mod:`.run`: ``run``: targets and starts into the plan, launch, each env's answer.
- :mod:`.result`: ``IKResult``.
- :mod:`.api`: the entity's calls: ``solve_ik``, and Genesis' ``inverse_kinematics`` and
  ``inverse_kinematics_multilink``.

Imports :mod:`engine.kernels`, :mod:`engine.runtime` and :mod:`engine.collision`.
"""

from . import tasks as tasks
from .result import IKResult as IKResult
