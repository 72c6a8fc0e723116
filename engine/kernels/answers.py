"""Each env's answer among its restart slots, chosen on the device.

The IK solvers (:mod:`engine.kernels.generic`, :mod:`engine.kernels.per_robot`) leave one kept
solution per thread: K restart slots per env, thread ``t = e + k B`` serving env ``e``. This
kernel reduces them to one answer per env, so that on a GPU only B rows cross to the host, not
K x B. The rule: the slot with the lowest successful sample (with ``exhaustive``, the successful
one nearest the rest posture); with no success, the lowest score. Ties go to the lowest slot.
Since a thread runs its samples in increasing order and keeps its first success, the winner is
the env's lowest successful sample whatever the thread schedule.

Arguments (columns named in :mod:`engine.kernels.tables`): ``best_q`` (K B, n_qs + 2): kept qpos,
then ``KEPT_F``; ``best_err`` (K B, Lt, 6); ``best_i`` (K B, 3) ``BEST_I``. Outputs: ``q`` (B, n_qs),
``err`` (B, Lt, 6), ``info`` (B, 2) ``CHOICE_I``: the sample that won (-1 for none), its iterations.
"""

import taichi as ti

from ..runtime.launch import fast
from .tables import BEST_I, CHOICE_I, KEPT_F


@fast
@ti.kernel
def choose(best_q: ti.types.ndarray(), best_err: ti.types.ndarray(), best_i: ti.types.ndarray(), exhaustive: ti.i32,
           q: ti.types.ndarray(), err: ti.types.ndarray(), info: ti.types.ndarray(), serial: ti.template()):
    B = q.shape[0]
    n_qs = q.shape[1]
    K = best_q.shape[0] // B
    ti.loop_config(serialize=serial)
    for e in range(B):
        pick = e
        found = 0
        best_key = 0.0
        best_score = 0.0
        for k in range(K):
            t = e + k * B
            score = best_q[t, n_qs + KEPT_F.score]
            if best_i[t, BEST_I.success] >= 0:
                key = ti.cast(best_i[t, BEST_I.success], float)
                if exhaustive == 1:
                    key = best_q[t, n_qs + KEPT_F.rest_dist]
                if found == 0 or key < best_key:
                    pick = t
                    best_key = key
                found = 1
            elif found == 0 and (k == 0 or score < best_score):
                pick = t
                best_score = score
        for i in range(n_qs):
            q[e, i] = best_q[pick, i]
        for i in range(err.shape[1]):
            for c in ti.static(range(6)):
                err[e, i, c] = best_err[pick, i, c]
        info[e, CHOICE_I.sample] = -1
        if found == 1:
            info[e, CHOICE_I.sample] = best_i[pick, BEST_I.success]
        info[e, CHOICE_I.iters] = best_i[pick, BEST_I.iters]
