"""Undo / redo over the scene edits a user makes in the app: targets and obstacles, one history.

A step is a snapshot of what those edits change in the controller's scene spec: the targets (as
plain dicts, validated again on the way back) and the obstacles (their spec objects: an obstacle
edit replaces one by a validated copy, never changes it in place). An edit pushes the snapshot
taken before it; a gizmo drag is one step, however many moves it made. Undo and redo swap the
spec's targets and obstacles for a snapshot under the controller's ``edit_lock`` and count as an
edit (``controller.edited()``), so the sim solves again, and obstacles moved back are put back in
every env. The history belongs to a scene: a new scene starts an empty one (a rebuild that keeps
the edits, a new env count, keeps it too).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import scenefile

UNDO_DEPTH = 100  # steps kept


@dataclass(frozen=True)
class Snapshot:
    """The editable part of a scene spec: ``targets`` as dicts, ``obstacles`` as spec objects."""

    targets: tuple
    obstacles: tuple


class EditHistory:
    """The undo and redo stacks of ``controller``'s scene edits (:class:`Snapshot` steps)."""

    def __init__(self, controller, depth: int = UNDO_DEPTH):
        self.c = controller
        self.depth = depth
        self._undo: list[Snapshot] = []
        self._redo: list[Snapshot] = []

    def __len__(self) -> int:
        """Steps that undo can take back."""
        return len(self._undo)

    def snapshot(self) -> Snapshot:
        spec = self.c.spec
        return Snapshot(tuple(t.model_dump() for t in spec.targets), tuple(spec.obstacles))

    def push(self, before: Snapshot) -> None:
        """Record an edit made since ``before`` was taken: one undo step; the redo steps are gone."""
        self._undo.append(before)
        del self._undo[:-self.depth]
        self._redo.clear()

    def undo(self) -> bool:
        """Take the last edit back; False when there is none."""
        return self._swap(self._undo, self._redo)

    def redo(self) -> bool:
        """Make the last undone edit again; False when there is none."""
        return self._swap(self._redo, self._undo)

    def _swap(self, source: list, sink: list) -> bool:
        if not source:
            return False
        sink.append(self.snapshot())
        snap = source.pop()
        targets = [scenefile.TargetSpec.model_validate(d) for d in snap.targets]
        with self.c.edit_lock:
            self.c.spec.targets = targets
            self.c.spec.obstacles = list(snap.obstacles)
        for editor in (self.c.targets, self.c.obstacles):
            if editor is not None:
                editor.keep_selection()
        self.c.edited()
        return True


__all__ = ["UNDO_DEPTH", "EditHistory", "Snapshot"]
