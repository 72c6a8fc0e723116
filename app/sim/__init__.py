"""The app's sim wing: the engine side, in the sim thread (:class:`.loop.Sim`, :class:`.thread.SimThread`)
and the solver child processes (:mod:`.solver_proc`). It alone builds scenes, runs IK and draws
images, and publishes a snapshot the other wings read. It reads the controller only through the
fields :mod:`app.seam` names and imports no other wing (``tests/test_app_seam.py``)."""
