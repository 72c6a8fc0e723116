"""The robots' link meshes a :class:`~engine.vis.visualizer.Visualizer` draws, as one set per level
of detail, and the switch from a quick first set to the decimated one.

A set is ``(entries, specs)``: ``entries`` a list of ``(entity index, link indices (k,), key)``, one
per instanced mesh (links drawn alike share one: Baxter's two arms), and ``specs`` {key:
:class:`~engine.vis.meshes.MeshSpec`}. Keys are ``("link", entity, first link, i, lod)``: a set of
another level of detail never reuses the renderer's meshes of this one.

Decimating a robot's meshes the first time on a machine takes seconds (the UR5: 2.3 s, of them
1.6 s in the decimating worker), after which they come from the disk cache
(:mod:`engine.vis.mesh_cache`). :class:`LinkSets` with ``quick_first=True`` does not make the first
image wait for it: when the decimated meshes are not all cached and the envs' full meshes are light
enough to draw (:data:`QUICK_FULL_TRIANGLES`), the first images show the full meshes while a
background thread decimates, and the decimated set replaces them at the next frame once ready.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

import numpy as np

from . import meshes

QUICK_FULL_TRIANGLES = 2_000_000  # full meshes over all envs drawn while decimating (UR5 x 16: 1.5 M)


def build(scene, lod: str, max_faces: int, stop: threading.Event | None = None) -> tuple[list, dict]:
    """The link mesh set of ``scene``'s entities at ``lod`` ("full" | "decimated"), each decimated
    visual capped at ``max_faces`` faces (see the module docstring for the layout). Raises
    ``meshes.Stopped`` between links once ``stop`` is set (the scene is then let go at once, not
    after its last mesh is decimated)."""
    entries, specs = [], {}
    for e, entity in enumerate(scene.entities):
        shared: dict = {}  # links whose visuals are the same (Baxter's two arms): one mesh, more instances
        for i, (link_idx, spec) in enumerate(meshes.link_specs(entity.tree, lod, max_faces, stop)):
            same = meshes.visuals_signature(entity.tree.links[link_idx])
            if same is not None and same in shared:
                shared[same][1].append(link_idx)
                continue
            key = ("link", e, link_idx, i, lod)
            specs[key] = spec
            entry = (e, [link_idx], key)
            entries.append(entry)
            if same is not None:
                shared[same] = entry
    return [(e, np.asarray(links), key) for e, links, key in entries], specs


def decimated_ready(scene, max_faces: int) -> bool:
    """Every visual of ``scene``'s entities that "decimated" would decimate is already decimated, in
    memory or in the disk cache (loads the mesh files, not decimating any)."""
    return all(meshes.decimation_cached(visual, max_faces)
               for entity in scene.entities for link in entity.tree.links for visual in link.visuals)


class LinkSets:
    """The link mesh set in use and, with ``quick_first``, the decimated one being made.

    :meth:`current` gives ``(entries, specs, lod drawn)``, building the set on the first call (in
    the caller's thread) and swapping in a finished background one on later calls.
    """

    def __init__(self, quick_first: bool = False):
        self.quick_first = bool(quick_first)
        self._set: tuple[list, dict] | None = None
        self._lod: str | None = None
        self._next: Future | None = None
        self._stop = threading.Event()  # set by release(): a background set in the making stops

    @property
    def lod(self) -> str | None:
        """The level of detail of the set in use (None before the first)."""
        return self._lod

    @property
    def preparing(self) -> bool:
        """A decimated set is being made in the background."""
        return self._next is not None

    def release(self) -> None:
        """Drop the sets (a closed visualizer); a set still being made stops after the link it is
        at, and lets its scene go."""
        self._stop.set()
        self._set = self._next = None

    def current(self, scene, lod: str, max_faces: int, full_triangles) -> tuple[list, dict, str]:
        """``(entries, specs, lod drawn)``. ``lod`` the level of detail wanted, ``max_faces`` the
        decimated face budget, ``full_triangles()`` the envs' triangle count at full detail (called
        only when a quick first set is considered). The first call builds the set."""
        nxt = self._next
        if nxt is not None and nxt.done():
            self._next = None
            if nxt.exception() is None:  # a failed background set: the full one stays (as lod="full" would)
                self._set, self._lod = nxt.result(), "decimated"
        if self._set is None:
            built = lod
            if (lod == "decimated" and self.quick_first and full_triangles() <= QUICK_FULL_TRIANGLES
                    and not decimated_ready(scene, max_faces)):
                built = "full"
            self._set, self._lod = build(scene, built, max_faces), built
            if built != lod:
                self._next = _in_background(build, scene, lod, max_faces, self._stop)
        entries, specs = self._set
        return entries, specs, self._lod


def _in_background(fn, *args) -> Future:
    fut: Future = Future()

    def run():
        try:
            fut.set_result(fn(*args))
        except BaseException as err:  # noqa: BLE001 (handed to the caller through the Future)
            fut.set_exception(err)

    threading.Thread(target=run, name="ikstudio-decimate", daemon=True).start()
    return fut
