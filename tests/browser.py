"""A headless chromium the tests drive over the DevTools protocol (--remote-debugging-pipe).

No driver package: chromium reads commands on fd 3 and writes replies and events on fd 4,
each a JSON message ended by a NUL byte. The page's Network events are recorded, so a test
sees every request the page tries, including one the page's CSP blocks (blockedReason
"csp"); a proxy at a closed port stops anything that would still leave.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any


def find_chromium() -> str | None:
    """The chromium executable on PATH (Debian's `chromium`, or `chromium-browser`)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class BrowserError(Exception):
    """Chromium answered a command with an error, exited, or did not answer in time."""


class Browser:
    """One headless chromium with one page; use as a context manager. `new_page` gives the
    same chromium a fresh page in a fresh browser context (no storage, cache or history of the
    page before it): a chromium's start costs more than most tests' work, so tests share one.
    """

    def __init__(
        self, profile: Path, *, width: int = 1280, height: int = 900, answer_s: float = 60
    ) -> None:
        exe = find_chromium()
        if exe is None:
            raise BrowserError("no chromium on PATH")
        profile.mkdir(parents=True, exist_ok=True)
        self._log = profile / "chromium.log"
        theirs_in, self._out = os.pipe()  # chromium reads commands from fd 3
        self._in, theirs_out = os.pipe()  # and writes to fd 4

        def wire() -> None:  # in the child: the pipe ends at fds 3 and 4, inheritable
            read, write = os.dup(theirs_in), os.dup(theirs_out)
            os.dup2(read, 3)
            os.dup2(write, 4)

        # chromium's singleton socket lives in TMPDIR, and a test's TMPDIR is too long a path
        self._tmp = Path(tempfile.mkdtemp(prefix="chromium-", dir="/tmp"))
        self._stderr = self._log.open("wb")
        self._process = subprocess.Popen(
            [
                exe,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                f"--proxy-server=127.0.0.1:{_closed_port()}",
                "--proxy-bypass-list=<-loopback>",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            preexec_fn=wire,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            env={**os.environ, "TMPDIR": str(self._tmp)},
        )
        os.close(theirs_in)
        os.close(theirs_out)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self._answer_s = answer_s  # how long each command waits for its answer, at most
        self._size = (width, height)
        self._session: str | None = None
        self._context: str | None = None
        try:
            self._attach(width, height)
        except BrowserError:
            self.close()
            raise

    def new_page(self) -> None:
        """Close the page (its browser context with it) and open a fresh one, its events
        forgotten: what the last test's page did is neither seen nor kept."""
        context, self._session, self._context = self._context, None, None
        if context is not None:
            self.call("Target.disposeBrowserContext", browserContextId=context)
        self.events = []
        self._attach(*self._size)

    def _attach(self, width: int, height: int) -> None:
        self._context = self.call("Target.createBrowserContext")["browserContextId"]
        target = self.call(
            "Target.createTarget", url="about:blank", browserContextId=self._context
        )["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Network", "Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", page=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            page=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=min(10, self._answer_s))
        except (BrowserError, OSError):
            self._process.kill()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()  # it did not close when asked
            self._process.wait(timeout=30)
        os.close(self._in)
        os.close(self._out)
        self._stderr.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            # select first: a chromium that lives but says nothing (or a child of it holding
            # the pipe open after it exited) would keep a bare read waiting for ever
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise BrowserError(f"chromium did not answer in time: {self._tail()}")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium exited: {self._tail()}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(message))

    def _tail(self) -> str:
        """The end of chromium's log (its stderr)."""
        return self._log.read_text(encoding="utf-8", errors="replace")[-2000:]

    def call(
        self, method: str, *, page: bool = False, timeout: float | None = None, **params: Any
    ) -> Any:
        """Send one command (to the page's session when `page`) and return its result, waiting
        `timeout` seconds at most (default: the browser's `answer_s`)."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if page:
            message["sessionId"] = self._session
        os.write(self._out, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + (self._answer_s if timeout is None else timeout)
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if reply.get("sessionId", self._session) == self._session:  # not a closed page's
                self.events.append(reply)

    def load(self, url: str, timeout: float = 60) -> None:
        """Navigate and wait for the load event."""
        seen = len(self.events)
        self.call("Page.navigate", page=True, url=url)
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events[seen:]):
            event = self._read(deadline)
            if event.get("sessionId", self._session) == self._session:
                self.events.append(event)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        result = self.call(
            "Runtime.evaluate",
            page=True,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(
        self, path: Path, *, selector: str | None = None, full_page: bool = False
    ) -> Path:
        """Save a PNG of the page: the viewport, all of it, or the element `selector` names."""
        params: dict[str, Any] = {
            "format": "png",
            "captureBeyondViewport": full_page or bool(selector),
        }
        if selector:
            box = self.evaluate(
                f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
                " return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })()"
            )
            params["clip"] = {**box, "scale": 1}
        result = self.call("Page.captureScreenshot", page=True, **params)
        path.write_bytes(base64.b64decode(result["data"]))
        return path

    def requests(self) -> list[str]:
        """Every URL the page asked for so far (blocked or not)."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def errors(self) -> list[str]:
        """Uncaught exceptions and console/log errors (a CSP violation is one) so far."""
        found = []
        for e in self.events:
            if e.get("method") == "Runtime.exceptionThrown":
                found.append(json.dumps(e["params"]["exceptionDetails"])[:500])
            elif e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error":
                found.append(e["params"]["entry"]["text"])
        return found
