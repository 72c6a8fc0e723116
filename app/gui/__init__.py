"""The app's GUI wing: the dearpygui window (:mod:`.window`), its panels, the 3D view's overlay
and the JSON report for outside test drivers. It runs in the GUI thread, turns widgets and input
into calls on :class:`app.control.controller.AppController`, and may import :mod:`app.control`,
:mod:`app.sim` (data only) and :mod:`app.seam`; never the command line, never an engine module
that launches kernels (``tests/test_app_seam.py``)."""

from .window import run as run
