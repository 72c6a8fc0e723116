"""The side panels of the window, one :class:`~.base.Panel` object per section, each building its
own widgets and refreshing them from the controller every frame, plus the status line, the menu
and the file dialogs.

:class:`Panels` holds them all: :meth:`Panels.build_left` / :meth:`Panels.build_right` inside the
window's side columns, :meth:`Panels.refresh` once per GUI frame (it tells each panel when a new
scene or a new robot was installed), :meth:`Panels.reported` for the window's JSON report.
"""

from __future__ import annotations

from ..widgets import Handle
from .base import Panel
from .collisions import CollisionsPanel
from .envs import EnvsPanel
from .joints import JointsPanel
from .readouts import ReadoutsPanel
from .recording import RecordingPanel
from .robot import RobotPanel
from .solver import SolverPanel
from .status_line import StatusLine
from .targets import TargetsPanel


class Panels:
    """Every section of both side panels, in order, and the status line."""

    def __init__(self, app):
        self.app = app
        self.robot, self.envs, self.solver = RobotPanel(app), EnvsPanel(app), SolverPanel(app)
        self.readouts, self.recording = ReadoutsPanel(app), RecordingPanel(app)
        self.joints, self.targets, self.collisions = JointsPanel(app), TargetsPanel(app), CollisionsPanel(app)
        self.left: tuple[Panel, ...] = (self.robot, self.envs, self.solver, self.readouts, self.recording)
        self.right: tuple[Panel, ...] = (self.joints, self.targets, self.collisions)
        self.status = StatusLine(app)
        self.scene_shown = None  # the scene generation the panels were last told of
        self.robot_shown = None  # (robot name, robot file) the panels were last told of

    def build_left(self) -> None:
        for panel in self.left:
            panel.build()

    def build_right(self) -> None:
        for panel in self.right:
            panel.build()

    def refresh(self) -> None:
        """Per GUI frame: the status line, then every panel (those that need a scene once it is ready)."""
        c = self.app.controller
        self.status.refresh()
        panels = self.left + self.right
        for panel in panels:
            panel.refresh_always()
        if not c.ready:
            return
        if c.view.generation != self.scene_shown:
            self.scene_shown = c.view.generation
            robot = (c.robot.tree.name, str(c.spec.robot.file))
            robot_changed, self.robot_shown = robot != self.robot_shown, robot
            for panel in panels:
                panel.on_scene(robot_changed)
        for panel in panels:
            panel.refresh()

    def reported(self) -> dict[str, Handle]:
        """Every widget the window's report lists, by name."""
        out = {"status": self.status.text}
        for panel in self.left + self.right:
            out.update(panel.reported())
        return out
