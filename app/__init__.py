"""The app: the `ikstudio` command line and the desktop window, in four wings that follow its
thread rule: :mod:`app.cli` (command line) starts :mod:`app.gui` (GUI thread), which drives
:mod:`app.control` (state and actions), which owns :mod:`app.sim` (the sim thread, the only one
that calls the engine). A wing imports only the wings after it; :mod:`app.seam` names the
control-sim crossing and :mod:`app.signals` is shared (``tests/test_app_seam.py``)."""
