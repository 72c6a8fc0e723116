"""Each env's answer among its restart slots, chosen on the device.

The IK solvers (:mod:`engine.kernels.generic`, :mod:`engine.kernels.per_robot`) leave one kept
solution per thread: K restart slots per env, thread ``t = e + k B`` serving env ``e``. This
kernel reduces them to one answer per env, so that on a GPU only B rows cross to the host, not
K x B. The rule: the slot with the lowest successful sample (with ``exhaustive``, the successful
one nearest the rest posture; with ``continuity``, sample 0 when it succeeded, else the success
nearest the start, ties to the lower sample); with no success, the lowest score. Other ties go to
the lowest slot. Since a thread runs its samples in increasing order and keeps its first success
(with continuity: its nearest, having run all its samples), the winner does not depend on the
thread schedule.

Arguments (columns named in :mod:`engine.kernels.tables`): ``best_q`` (K B, n_qs + 2): kept qpos,
then ``KEPT_F``; ``best_err`` (K B, Lt, 6); ``best_i`` (K B, 3) ``BEST_I``. Outputs: ``q`` (B, n_qs),
``err`` (B, Lt, 6), ``info`` (B, 3) ``CHOICE_I``: the sample that won (-1 for none), its iterations,
whether the warm start (sample 0, run by slot 0) succeeded.
"""

import taichi as ti

from ..runtime.launch import fast
from .tables import BEST_I, CHOICE_I, KEPT_F


@fast
@ti.kernel
def choose(best_q: ti.types.ndarray(), best_err: ti.types.ndarray(), best_i: ti.types.ndarray(), exhaustive: ti.i32,
           continuity: ti.i32, q: ti.types.ndarray(), err: ti.types.ndarray(), info: ti.types.ndarray(),
           serial: ti.template()):
    B = q.shape[0]
    n_qs = q.shape[1]
    K = best_q.shape[0] // B
    ti.loop_config(serialize=serial)
    for e in range(B):
        pick = e
        found = 0
        best_key = 0.0
        best_sample = 0
        best_score = 0.0
        for k in range(K):
            t = e + k * B
            score = best_q[t, n_qs + KEPT_F.score]
            sample = best_i[t, BEST_I.success]
            if sample >= 0:
                key = ti.cast(sample, float)
                if exhaustive == 1 or continuity == 1:
                    key = best_q[t, n_qs + KEPT_F.rest_dist]
                if found == 0 or key < best_key or (continuity == 1 and key == best_key and sample < best_sample):
                    pick = t
                    best_key = key
                    best_sample = sample
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
        info[e, CHOICE_I.warm] = ti.cast(best_i[e, BEST_I.success] == 0, ti.i32)
