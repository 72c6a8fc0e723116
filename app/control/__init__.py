"""The app's control wing: the state the GUI edits and the actions on it, with no GUI import
(:class:`.controller.AppController`, the target and obstacle editors, undo history, camera and
pointer logic, recording, the status line). It owns the :class:`app.sim.loop.Sim` and talks to it
only through the members :mod:`app.seam` names; it may import :mod:`app.sim` and :mod:`app.seam`,
never :mod:`app.gui` or :mod:`app.cli` (``tests/test_app_seam.py``)."""
