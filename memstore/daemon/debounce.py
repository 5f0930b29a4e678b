"""Coalescing bursts of file events into batches: pure timing logic, no threads, no I/O."""

from __future__ import annotations

QUIET_S = 0.05  # a batch is due once no event has arrived for this long …
MAX_WAIT_S = 0.25  # … or once its oldest event is this old, even mid-burst
SETTLE_S = 0.5  # after a batch that changed something, look once more this much later
# … and commit what people changed then, or this long after the first change at the latest:
# a file written without pause (a log, a build in the vault, ignored or not) would otherwise
# keep every edit beside it from ever being committed
SETTLE_MAX_S = 10.0


class Debouncer:
    """Collect changed paths; say when the batch is due."""

    def __init__(self, quiet: float = QUIET_S, max_wait: float = MAX_WAIT_S) -> None:
        self.quiet = quiet
        self.max_wait = max_wait
        self._paths: set[str] = set()
        self._first = 0.0
        self._last = 0.0

    def note(self, path: str, now: float) -> None:
        """Record that `path` changed at `now`."""
        if not self._paths:
            self._first = now
        self._paths.add(path)
        self._last = now

    def deadline(self) -> float | None:
        """Return when the pending batch becomes due, or None when nothing is pending."""
        if not self._paths:
            return None
        return min(self._last + self.quiet, self._first + self.max_wait)

    def due(self, now: float) -> set[str]:
        """Return and clear the pending paths if their batch is due, else an empty set."""
        deadline = self.deadline()
        if deadline is None or now < deadline:
            return set()
        paths, self._paths = self._paths, set()
        return paths
