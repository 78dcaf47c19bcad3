"""Progress reports from a Python training loop to faultline (standard library only).

faultline starts a command job's ranks with FAULTLINE_PROGRESS naming a file; each call to
report() appends one line of faultline's progress protocol to it (workloads/progress/
progress.h, ParseProgressLine):

    it=ITERATION bytes=BYTES [ok=0|1] t=WALL_NS

t is time.time_ns() at the call (CLOCK_REALTIME, the clock faultline's agents read), so
call it when the iteration has ended. ok, when given, says that the iteration's result was
checked (1: right, 0: wrong); leave it out when nothing was checked. The file is opened
once, line-buffered, and each line is flushed at once: faultline reads it while the job
runs. Without FAULTLINE_PROGRESS (the script run by hand) report() does nothing.

Example:

    import faultline_progress
    for step in range(steps):
        train_step(); faultline_progress.report(step, grad_bytes)
"""

import os
import time

__all__ = ["report"]

_file = None  # the opened progress file; None before the first call
_disabled = False  # FAULTLINE_PROGRESS is unset: report() is a no-op


def report(iteration, nbytes, ok=None):
    """Appends `it=ITERATION bytes=NBYTES [ok=0|1] t=NOW_NS` to $FAULTLINE_PROGRESS."""
    global _file, _disabled
    if _disabled:
        return
    if _file is None:
        path = os.environ.get("FAULTLINE_PROGRESS")
        if not path:
            _disabled = True
            return
        _file = open(path, "a", buffering=1, encoding="ascii")  # line-buffered
    line = "it=%d bytes=%d" % (int(iteration), int(nbytes))
    if ok is not None:
        line += " ok=%d" % (1 if ok else 0)
    line += " t=%d\n" % time.time_ns()
    _file.write(line)
    _file.flush()
