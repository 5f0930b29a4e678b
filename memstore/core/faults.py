"""Named crash points: the reliability suite arms one and the process dies right there.

Only a shell arms a point (from MEMSTORE_CRASH_AT); unarmed, a crash point costs one
comparison. Points are named where a kill leaves the most to repair: between a file
write and its commit, between a commit and git's index, inside a sync's merge.
"""

from __future__ import annotations

import os
import signal

_armed = ""


def arm(name: str) -> None:
    """Make the process kill itself (SIGKILL, no cleanup) when it reaches point `name`."""
    global _armed
    _armed = name


def crash_point(name: str) -> None:
    """Die here if this point is armed."""
    if _armed and _armed == name:
        os.kill(os.getpid(), signal.SIGKILL)
