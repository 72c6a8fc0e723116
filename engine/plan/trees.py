"""The search trees of every env, in kernel arrays, and the two kernels that touch them.

Each env owns two trees (RRT-Connect: tree 0 grows from the start, tree 1 from the goal; RRT
grows tree 0 only and keeps the goal alone in tree 1). Their nodes live in one array ``nodes
(B, 2, N, n_qs)`` (device memory on a GPU, :func:`engine.runtime.memory.scratch`), with a host
copy for reading paths back. A round asks, for a batch of queries ``(env, tree, target)``, for
each query's nearest node (:func:`nearest`: one thread per query, a squared Euclidean distance in
joint space, ties to the lowest index), and appends accepted nodes (:func:`append`).

On a software Vulkan device a thread may run only so many loop iterations per launch
(docs/backends.md): the search over a tree's nodes is then split over launches of at most
:data:`CHUNK_LOOPS` iterations each, carrying the best node so far; the answer is the same.
"""


import numpy as np
import taichi as ti

from ..runtime import memory
from ..runtime.dispatch import SOFTWARE_LOOP_LIMIT, serial
from ..runtime.launch import fast
from ..runtime.state import STATE

CHUNK_LOOPS = SOFTWARE_LOOP_LIMIT // 2  # loop iterations of one nearest-node launch on a software device


@ti.kernel
def _nearest(nodes: ti.types.ndarray(), count: ti.types.ndarray(), env: ti.types.ndarray(),
             tree: ti.types.ndarray(), target: ti.types.ndarray(), best: ti.types.ndarray(),
             best_d: ti.types.ndarray(), n0: ti.i32, n1: ti.i32, serial: ti.template()):
    """For each query ``r``: the node of tree ``tree[r]`` of env ``env[r]`` among indices
    ``[n0, min(n1, count))`` nearest to ``target[r]``, if nearer than ``best_d[r]`` (squared
    distance; updated with ``best[r]``)."""
    ti.loop_config(serialize=serial)
    for r in range(env.shape[0]):
        e, t = env[r], tree[r]
        stop = ti.min(n1, count[e, t])
        bd, bi = best_d[r], best[r]
        for i in range(n0, stop):
            d = 0.0
            for k in range(target.shape[1]):
                x = nodes[e, t, i, k] - target[r, k]
                d += x * x
            if d < bd:
                bd, bi = d, i
        best_d[r], best[r] = bd, bi


@ti.kernel
def _append(nodes: ti.types.ndarray(), env: ti.types.ndarray(), tree: ti.types.ndarray(),
            slot: ti.types.ndarray(), q: ti.types.ndarray(), serial: ti.template()):
    """Write ``q[r]`` as node ``slot[r]`` of tree ``tree[r]`` of env ``env[r]``."""
    ti.loop_config(serialize=serial)
    for r in range(env.shape[0]):
        for k in range(q.shape[1]):
            nodes[env[r], tree[r], slot[r], k] = q[r, k]


nearest_kernel = fast(_nearest)
append_kernel = fast(_append)


class Forest:
    """Two trees per env for ``B`` envs of up to ``N`` nodes each over ``n`` joint values.

    Host arrays: ``count (B, 2)`` int32, ``parent (B, 2, N)`` int32 (-1 at a root),
    ``clearance (B, 2, N)`` m (:meth:`engine.plan.checks.Checker.clearance` of each node),
    ``host (B, 2, N, n)`` (the nodes); ``nodes``: the same in kernel memory."""

    def __init__(self, B: int, N: int, n: int, dtype):
        self.B, self.N, self.n, self.dtype = B, N, n, np.dtype(dtype)
        self.count = np.zeros((B, 2), np.int32)
        self.parent = np.full((B, 2, N), -1, np.int32)
        self.clearance = np.zeros((B, 2, N))
        self.host = np.zeros((B, 2, N, n), self.dtype)
        self.nodes = memory.scratch((B, 2, N, n), self.dtype)

    def add(self, env: np.ndarray, tree: np.ndarray, q: np.ndarray, parent: np.ndarray,
            clearance: np.ndarray) -> np.ndarray:
        """Append node ``q[r]`` to tree ``tree[r]`` of env ``env[r]`` (one node per (env, tree) per
        call) with its parent index and clearance; returns the new nodes' indices."""
        env, tree = np.asarray(env, np.int32), np.asarray(tree, np.int32)
        slot = self.count[env, tree].copy()
        if len(env):
            q = np.ascontiguousarray(q, self.dtype)
            append_kernel(self.nodes, env, tree, slot, q, serial(len(env)))
            self.host[env, tree, slot] = q
            self.parent[env, tree, slot] = parent
            self.clearance[env, tree, slot] = clearance
            self.count[env, tree] += 1
        return slot

    def nearest(self, env: np.ndarray, tree: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Index of the node of tree ``tree[r]`` of env ``env[r]`` nearest to ``target[r]`` (R,)."""
        env, tree = np.asarray(env, np.int32), np.asarray(tree, np.int32)
        R = len(env)
        best = np.zeros(R, np.int32)
        best_d = np.full(R, np.finfo(self.dtype).max, self.dtype)
        if R == 0:
            return best
        target = np.ascontiguousarray(target, self.dtype)
        top = int(self.count[env, tree].max())
        step = top if not STATE.software else max(1, CHUNK_LOOPS // (self.n + 2))
        for n0 in range(0, top, step):
            nearest_kernel(self.nodes, self.count, env, tree, target, best, best_d, n0, n0 + step, serial(R))
        return best

    def branch(self, env: int, tree: int, node: int) -> np.ndarray:
        """The nodes from ``node`` up to its tree's root ``(k, n)``, ``node`` first."""
        out = []
        while node >= 0:
            out.append(self.host[env, tree, node])
            node = int(self.parent[env, tree, node])
        return np.array(out)


__all__ = ["CHUNK_LOOPS", "Forest", "append_kernel", "nearest_kernel"]
