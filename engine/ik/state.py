"""``IKState``: what an entity keeps between IK calls, made at ``scene.build()`` and dropped at
``scene.destroy()`` in one place (:class:`engine.entity.RigidEntity`).

- ``plans``: each request's kernel tables (:class:`engine.ik.plan.PlanCache`, LRU);
- ``requests``: the Genesis calls' parameters -> their validated request (:mod:`engine.ik.api`);
- ``scratch``: the solver's working arrays (:class:`Scratch`);
- ``first_call_checked``: whether the first IK call since build was judged (:mod:`engine.ik.first_call`).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..kernels.tables import BEST_I, CHOICE_I, RESUME_F, RESUME_I
from ..runtime import memory
from ..runtime.state import STATE
from .plan import PlanCache

MAX_REQUESTS = 64  # Genesis calls' requests kept per entity (least recently used dropped)


class IKState:
    """An entity's IK plans, kept requests and working arrays."""

    def __init__(self):
        self.plans = PlanCache()
        self.requests: OrderedDict = OrderedDict()
        self.scratch = Scratch()
        self.warned_nothing_to_avoid = False  # avoid_collisions found nothing to measure: said once
        self.first_call_checked = False  # engine.ik.first_call: the first call after build is judged once

    def kept_request(self, key, make):
        """The request kept under ``key`` (hashable), or ``make()``'s, then kept."""
        request = self.requests.get(key)
        if request is None:
            request = make()
            self.requests[key] = request
            while len(self.requests) > MAX_REQUESTS:
                self.requests.popitem(last=False)
        else:
            self.requests.move_to_end(key)
        return request


class Scratch:
    """An entity's IK working arrays, reused while shapes stay the same: the per-thread kept
    solutions and (generic solver) working set, which never leave the device on a GPU
    (:func:`engine.runtime.memory.scratch`), and the per-env answers the host reads."""

    KEPT = 3  # sets of arrays kept (an avoiding solve uses up to three shapes in turn: engine.ik.window)

    def __init__(self):
        self._sets: OrderedDict = OrderedDict()

    def get(self, n_envs: int, K: int, n_tasks: int, n_qs: int, pose_rows: int, n_dofs: int, dtype,
            generic: bool) -> dict:
        key = (n_envs, K, n_tasks, n_qs, pose_rows, n_dofs, dtype, generic, STATE.runtime)
        arrays = self._sets.get(key)
        if arrays is not None:
            self._sets.move_to_end(key)
            return arrays
        while len(self._sets) >= self.KEPT:
            self._sets.popitem(last=False)
        T, m = n_envs * K, 6 * n_tasks
        shapes = dict(best_q=((T, n_qs + 2), dtype), best_err=((T, n_tasks, 6), dtype),
                      best_i=((T, BEST_I.width), np.int32))
        if generic:  # the per-robot kernel keeps its working set in registers
            shapes.update(q=((T, n_qs), dtype), pose=((T, pose_rows, 7), dtype), J=((T, m, n_dofs), dtype),
                          A=((T, m, m), dtype), vec=((T, 2 * m + 2 * n_dofs), dtype),
                          resume_i=((T, RESUME_I.width), np.int32), resume_f=((T, RESUME_F.width), dtype))
        try:
            arrays = {k: memory.scratch(shape, dt) for k, (shape, dt) in shapes.items()}
        except MemoryError:  # the kept sets first
            self._sets.clear()
            arrays = {k: memory.scratch(shape, dt) for k, (shape, dt) in shapes.items()}
        arrays.update(q_out=np.zeros((n_envs, n_qs), dtype), err_out=np.zeros((n_envs, n_tasks, 6), dtype),
                      info_out=np.zeros((n_envs, CHOICE_I.width), np.int32))
        self._sets[key] = arrays
        return arrays
