"""The resident index: one process per vault keeps the index warm and current and answers over a socket.

It is the watcher grown up (watchman and git's fsmonitor daemon are the model): a Watcher
keeps the index in step with the files, and `.memstore/daemon.sock` (owner-only) answers the
lean client's requests (memstore/ops/client.py) one at a time, each with the caller's arguments,
directory, environment and stdin — never this process's. A flock on `.memstore/daemon.lock`,
held for the daemon's life, keeps a second one from starting. It exits when idle, when its
vault or `.memstore/` disappears, or on SIGTERM, writing pending recall counters on the way.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import queue
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from memstore.catalog.indexer import CatchUp
from memstore.core.config import Settings
from memstore.core.errors import MemstoreError, no_vault_at
from memstore.daemon import heap, warm
from memstore.daemon.heap import resident_mib
from memstore.daemon.watcher import Watcher
from memstore.index import SearchIndexError
from memstore.ops import hooks, lean, tools  # noqa: F401 (loaded now: a first hook is answered warm)
from memstore.ops.client import (
    LOCK_NAME,
    LOG_NAME,
    Frame,
    Reply,
    Request,
    decode_request,
    encode_reply,
    identity,
    read_frame,
    refusal,
    send_frame,
    sender,
    short_address,
    socket_path,
    state_dir,
)
from memstore.ops.options import DAEMON, Options, last, parse
from memstore.ops.output import catch_up_lines
from memstore.ops.registry import Op, runner
from memstore.service.store import Store

log = logging.getLogger("memstore.daemon.server")

IDLE_EXIT_S = 1800.0  # measured: docs/daemon.md ("Why 30 minutes")
CHECK_EVERY_S = 0.5  # how often the main loop looks at idleness, the vault and the socket
BUSY_WAIT_S = 5.0  # a request waiting longer for its turn is answered "run it yourself"
REQUEST_LIMIT_S = 90.0  # a request still running after this: the daemon is wedged; it exits
IO_TIMEOUT_S = 10.0  # reading a request, writing a reply
KEEP_WORKERS = 2  # threads kept waiting for the next connection
SETTLE_AFTER_S = 1.0  # idle this long after requests, the daemon collects and freezes its heap
LOG_LIMIT = 1 << 20  # the log starts over past 1 MiB

Say = Callable[[str], None]


class NotHereError(Exception):
    """The request names another vault than this daemon's: the caller runs it itself."""


def resident(store: Store) -> lean.OpenStore:
    """Return how a lean command opens "the store" in the daemon: this one, acting for the caller."""

    @contextlib.contextmanager
    def open_store(settings: Settings, create: bool) -> Iterator[Store]:
        if not _same_path(settings.vault, store.vault.root):
            raise NotHereError(str(settings.vault))
        with store.serving(replace(settings, vault=store.settings.vault)) as acting:
            yield acting

    return open_store


def _same_path(a: Path, b: Path) -> bool:
    try:
        return a == b or os.path.samefile(a, b)
    except OSError:
        return False


class _RequestLog(logging.Handler):
    """Warnings logged while a request is served go back to its caller's stderr, as they
    would in-process (e.g. "removed .git/index.lock left by a killed process")."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        lines = getattr(self.local, "lines", None)
        if lines is not None:
            lines.append(f"memstore: {record.getMessage()}\n")

    @contextlib.contextmanager
    def capture(self) -> Iterator[list[str]]:
        lines: list[str] = []
        self.local.lines = lines
        try:
            yield lines
        finally:
            self.local.lines = None


class Daemon:
    """Serve one vault's store over its socket until stopped, idle, or its vault is gone."""

    def __init__(
        self,
        store: Store,
        *,
        idle_exit: float = IDLE_EXIT_S,
        on_batch: Callable[[CatchUp, set[str]], None] | None = None,
    ) -> None:
        self.store = store
        self.idle_exit = idle_exit
        self.identity = identity()  # the code this process loaded, named before it can change
        self.watcher = Watcher(store, on_batch=on_batch, on_tick=self._tidy)
        self.socket_path = socket_path(store.vault.root)
        self.started = time.time()
        self.requests = 0
        self.stop_reason = ""
        self._last_request = time.monotonic()
        self._settled = 0.0  # when the heap was last frozen (see _settle)
        self._stop = threading.Event()
        self._serving = threading.Lock()
        self._turns = warm.Turns(self._serving, time.monotonic)  # requests before the warm-up
        self.warmed = False  # the warm-up's steps all done (`memstore status --json`)
        self._warming: threading.Thread | None = None
        self._warmed_again: int | None = None  # the index version last warmed again
        self._busy_since: float | None = None
        self._socket_inode = 0
        self._request_log = _RequestLog()
        # Connections go to a waiting worker thread; a new one starts only when none waits
        # (a status asked during a long add is answered at once, as with a thread each).
        self._connections: queue.SimpleQueue[socket.socket] = queue.SimpleQueue()
        self._waiting_workers = 0
        self._workers = threading.Lock()

    def stop(self, reason: str) -> None:
        """Ask the main loop to end (from any thread or a signal handler)."""
        self.stop_reason = self.stop_reason or reason
        self._stop.set()

    def run(self, say: Say) -> None:
        """Catch up, warm the index, listen, and serve until a reason to stop; then clean up."""
        logging.getLogger().addHandler(self._request_log)
        self.watcher.start(wait=True)
        try:
            left = warm.first(self.store, self._stop)  # before it answers (warm.py)
            self.warmed = left is None
            self._last_request = time.monotonic()  # its idle time counts from its first answer
            with self._listening() as listener:
                say(f"serving {self.store.vault.root} on {self.socket_path} (pid {os.getpid()})")
                if left is not None:
                    self._start_warming(left)
                self._serve(listener)
        finally:
            # a request under way finishes; a warm-up step does not hold the stop up (it
            # sees the stop and ends, whatever it read is dropped with the store)
            patience = 0.0 if self._turns.stepping else REQUEST_LIMIT_S
            with _acquired(self._serving, patience):
                # Pending recall counters stay journaled in usage.sqlite, outside git: the
                # next flush (a daemon's or watcher's tick, sync) writes them. Writing them
                # here held `daemon --stop` for seconds (713-832 files after a session).
                self.watcher.stop(final_tick=False)
            logging.getLogger().removeHandler(self._request_log)
        say(f"stopped: {self.stop_reason or 'asked to'}")

    def _start_warming(self, left: warm.Steps | None = None) -> None:
        self._warming = threading.Thread(
            target=self._warm, args=(left,), name="memstore-warm", daemon=True
        )
        self._warming.start()

    def _warm(self, left: warm.Steps | None = None) -> None:
        """Read what first requests would (`left`: the steps not run before it answered),
        in the background, only while no request waits or runs (memstore/daemon/warm.py)."""
        self.warmed = warm.warm(self.store, self._turns, self._stop, left)
        self._settled = 0.0  # what it read is frozen at the next idle moment (_settle)

    def _warm_again(self) -> None:
        """Warm again, between requests, once a large segment was swapped in (warm.again)."""
        if self._warming is not None and self._warming.is_alive():
            return
        version = warm.again(self.store, self._turns, self._warmed_again)
        if version is not None:
            self._warmed_again = version
            self._start_warming()

    def _tidy(self) -> None:
        """The watcher's periodic task (Store.tidy); what it read is settled at the next
        idle moment, not only after a request (a counter flush at a million memories)."""
        try:
            self.store.tidy(stopping=self._stop.is_set)  # a stop does not wait for its flush
        finally:
            self._settled = 0.0

    def _settle(self) -> None:
        """Settle the heap between requests, none waiting (memstore/daemon/heap.py)."""
        if self._settled > self._last_request or not self._serving.acquire(blocking=False):
            return
        try:
            heap.settle(self.store)
        finally:
            self._settled = time.monotonic()
            self._serving.release()

    @contextlib.contextmanager
    def _listening(self) -> Iterator[socket.socket]:
        listener = _bind(self.socket_path)
        self._socket_inode = os.stat(self.socket_path).st_ino
        try:
            yield listener
        finally:
            listener.close()
            if self._socket_is_ours():
                with contextlib.suppress(OSError):
                    self.socket_path.unlink()

    def _serve(self, listener: socket.socket) -> None:
        listener.settimeout(CHECK_EVERY_S)
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                conn = None
            if conn is not None:
                self._dispatch(conn)
            elif time.monotonic() - self._last_request >= SETTLE_AFTER_S > 0:
                self._warm_again()
                self._settle()
            reason = self._reason_to_stop()
            if reason:
                self.stop(reason)

    def _reason_to_stop(self) -> str:
        now = time.monotonic()
        busy = self._busy_since
        if busy is not None and now - busy > REQUEST_LIMIT_S:
            # Wedged (a hung file system, a bug): leave so the next command starts afresh.
            # Killed state heals (vault lock, git locks, the write journal); counters wait on disk.
            log.error("a request ran over %.0f s; exiting", REQUEST_LIMIT_S)
            os._exit(75)
        if self.idle_exit > 0 and busy is None and now - self._last_request > self.idle_exit:
            return f"idle for {self.idle_exit:.0f} s"
        if not (self.store.vault.root / ".git").exists():
            return f"the vault {self.store.vault.root} is gone"
        if not self._socket_is_ours():
            return f"{self.socket_path} was removed or replaced"
        return ""

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.socket_path).st_ino == self._socket_inode
        except OSError:
            return False

    def _dispatch(self, conn: socket.socket) -> None:
        """Hand `conn` to a waiting worker, or to a new one when none waits (starting a
        thread per request made the accept loop wait for each to be scheduled)."""
        with self._workers:
            if self._waiting_workers:
                self._waiting_workers -= 1
                self._connections.put(conn)
                return
        threading.Thread(target=self._work, args=(conn,), daemon=True).start()

    def _work(self, conn: socket.socket) -> None:
        """Answer `conn`, then wait for the next connection while fewer than KEEP_WORKERS
        wait (more only after a burst: they end)."""
        while True:
            self._handle(conn)
            with self._workers:
                if self._waiting_workers >= KEEP_WORKERS:
                    return
                self._waiting_workers += 1
            conn = self._connections.get()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(IO_TIMEOUT_S)
                answer = self._answer(read_frame(conn), conn)
                conn.settimeout(IO_TIMEOUT_S)
                send_frame(conn, answer)
            except (OSError, ConnectionError) as err:
                log.info("a client went away: %s", err)  # its command runs in-process instead
            except ValueError as err:
                # Only its owner can connect: a frame this code cannot read comes from a
                # memstore whose protocol it does not know. Make way for that one's daemon.
                self.stop(f"a client spoke another protocol ({err})")
            except Exception:  # a shell's outer loop: one bad request never ends the daemon
                log.exception("unexpected error while answering a request")

    def _answer(self, fields: Frame, conn: socket.socket) -> Frame:
        if sender(fields) != self.identity:
            self.stop(f"a client of other memstore code asked ({sender(fields)!r})")
            return refusal("version")
        try:
            request = decode_request(fields)
        except ValueError as err:
            return refusal(f"bad request: {err}")
        self._last_request = time.monotonic()
        if request.op == Op.STATUS:
            return encode_reply(Reply(0, "", "", self.status()))
        if request.op == Op.STOP:
            self.stop("asked to stop")
            return encode_reply(Reply(0))
        return encode_reply(self._serve_one(request, conn))

    def _serve_one(self, request: Request, conn: socket.socket) -> Reply:
        run = runner(request.op)  # memstore.ops.registry: the same runners as the lean path
        if run is None:
            return Reply(None)  # unknown here: the caller runs it itself
        with self._turns.request():
            return self._serve_held(run, request, conn)

    def _serve_held(
        self, run: Callable[..., Reply], request: Request, conn: socket.socket
    ) -> Reply:
        if not self._serving.acquire(timeout=BUSY_WAIT_S):
            return Reply(None)  # busy: the caller runs it itself
        if self._stop.is_set():
            self._serving.release()
            return Reply(None)  # stopping: the store may be closed by the time it would run
        if client_left(conn):
            # It gave up waiting (this process was stopped, or busy) and ran the command
            # itself: running it here too would add a memory twice.
            log.info("a client left before its %s ran; not run here", request.op)
            self._serving.release()
            return Reply(None)
        self._busy_since = time.monotonic()
        try:
            with self._request_log.capture() as warnings:
                reply = run(request, resident(self.store))
        except NotHereError:
            return Reply(None)
        except Exception:  # the caller runs it in-process and shows the same traceback
            log.exception("request %s %s failed", request.op, request.argv)
            return Reply(None)
        finally:
            self._busy_since = None
            self._last_request = time.monotonic()
            self._serving.release()
        self.requests += reply.status is not None  # answered here, not handed back
        if warnings:
            return Reply(reply.status, reply.stdout, "".join(warnings) + reply.stderr, reply.data)
        return reply

    def status(self) -> dict[str, object]:
        """Return what `memstore status` shows: pid, vault, memories, uptime, memory, catch-up."""
        try:
            memories: int | None = self.store.indexer.search.count()
        except (MemstoreError, SearchIndexError):  # damaged or deleted: the next request heals
            memories = None
        now = time.time()
        idle_left = self.idle_exit - (time.monotonic() - self._last_request)
        last = self.watcher.last_catch_up
        return {
            "running": True,
            "pid": os.getpid(),
            "vault": str(self.store.vault.root),
            "socket": str(self.socket_path),
            "memories": memories,
            "started": _iso(self.started),
            "uptime_s": round(now - self.started, 1),
            "rss_mib": resident_mib(),
            "last_catch_up": _iso(last) if last else None,
            "last_catch_up_ago_s": round(now - last, 1) if last else None,
            "idle_exit_s": self.idle_exit,
            "exits_at": _iso(now + idle_left) if self.idle_exit > 0 else None,
            "requests": self.requests,
            "warmed": self.warmed,
            "version": self.identity,
        }


def client_left(conn: socket.socket) -> bool:
    """Return whether the client of `conn` has closed its end. A client sends one request and
    then only reads, so anything readable before the reply is its end-of-file."""
    try:
        waiting = select.poll()
        waiting.register(conn, select.POLLIN)
        if not waiting.poll(0):
            return False
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True  # reset by the peer: gone too


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def _acquired(lock: threading.Lock, timeout: float) -> Iterator[bool]:
    got = lock.acquire(timeout=timeout)
    try:
        yield got
    finally:
        if got:
            lock.release()


def _bind(path: Path) -> socket.socket:
    """Listen on `path`, owner-only; a socket file left there (a killed daemon's) is replaced.

    Only the holder of the daemon lock binds, so whatever sits at `path` is stale.
    """
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with short_address(path) as address:
            listener.bind(address)
        os.chmod(path, 0o600)
        listener.listen(64)
    except OSError:
        listener.close()
        raise
    return listener


# --- the process ------------------------------------------------------------------------


def take_lock(vault: Path, *, wait: bool, say: Say) -> int | None:
    """Return a descriptor holding the vault's daemon lock, or None if another daemon has it
    (with `wait`, wait for it to end instead; None then only if stopped by a signal)."""
    folder = state_dir(vault)
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    said = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if not wait:
                os.close(fd)
                return None
            if not said:
                say(f"another memstore daemon serves {vault}; waiting for it to stop")
                said = True
            time.sleep(0.5)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def serve(
    vault: Path,
    env: Mapping[str, str],
    *,
    idle_exit: float,
    foreground: bool,
    say: Say,
    on_batch: Callable[[CatchUp, set[str]], None] | None = None,
) -> int:
    """Run the daemon for `vault` until it stops; return the exit status."""
    if not (vault / ".git").exists():
        say(f"Error: {no_vault_at(vault)}")  # as every command says it
        return 1
    heap.one_arena()  # before its threads start (memstore/daemon/heap.py)
    daemon: Daemon | None = None
    stopped = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stopped.set()
        if daemon is not None:
            daemon.stop(f"signal {signal.Signals(signum).name}")
        else:
            raise KeyboardInterrupt  # still waiting for the lock: just leave

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        lock = take_lock(vault, wait=foreground, say=say)
    except KeyboardInterrupt:
        return 0
    if lock is None:
        return 0  # another daemon serves this vault: nothing to do
    try:
        home = Path(env.get("HOME") or "/")
        settings = Settings.from_env(env, home=home, vault=vault, source="daemon")
        with Store.open(settings) as store:
            store.resident = True
            daemon = Daemon(store, idle_exit=idle_exit, on_batch=on_batch)
            if not stopped.is_set():
                daemon.run(say)
    except KeyboardInterrupt:
        pass  # a signal before the daemon existed: nothing to clean up but the lock
    except MemstoreError as err:
        if not (vault / ".git").exists():
            # removed under it while it worked (its catch-up, a request): that is its cue
            say(f"stopped: the vault {vault} is gone ({err})")
            return 0
        say(f"Error: {err}")
        return 1
    finally:
        os.close(lock)  # the next daemon may start
    return 0


def idle_exit_from(env: Mapping[str, str], default: float = IDLE_EXIT_S) -> float:
    """Return the idle time before a daemon exits: $MEMSTORE_DAEMON_IDLE seconds, else default."""
    try:
        return float(env.get("MEMSTORE_DAEMON_IDLE") or default)
    except ValueError:
        return default


def run_from_command_line(argv: list[str], env: Mapping[str, str], cwd: str) -> int | None:
    """Run `memstore daemon [--vault PATH] [--idle-exit SECONDS] [--stop] [--background]`;
    None lets the typer command answer (help, a typo)."""
    from memstore.ops.client import resolve_vault

    options = _parse(argv)
    if options is None:
        return None
    vault = resolve_vault(last(options, "vault") or None, env, cwd)
    if "stop" in options:
        from memstore.daemon.stopping import stop_from_command_line

        return stop_from_command_line(argv, env, cwd)
    background = "background" in options
    if background:
        _start_log(vault)
    default = idle_exit_from(env) if background else 0.0
    seconds = float(last(options, "idle_exit")) if "idle_exit" in options else default
    say = _say(background)
    return serve(
        vault,
        env,
        idle_exit=seconds,
        foreground=not background,
        say=say,
        on_batch=None if background else reporter(say),
    )


def reporter(say: Say) -> Callable[[CatchUp, set[str]], None]:
    """Return a batch callback that says which files a catch-up indexed (foreground runs)."""

    def report(result: CatchUp, _paths: set[str]) -> None:
        for line in catch_up_lines(result):
            say(line)

    return report


def _parse(argv: list[str]) -> Options | None:
    """Return the daemon command's options (memstore/ops/options.py), or None to let typer
    answer."""
    given = parse(argv, DAEMON)
    idle = last(given or {}, "idle_exit", "0")
    if given is None or not idle.replace(".", "", 1).isdigit():
        return None
    return given


def _start_log(vault: Path) -> None:
    """Start the log (stdout and stderr already point at it) over when it grew past its limit."""
    log_path = state_dir(vault) / LOG_NAME
    with contextlib.suppress(OSError):
        if log_path.stat().st_size > LOG_LIMIT:
            os.truncate(log_path, 0)
    root = logging.getLogger()
    for handler in root.handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s memstore daemon: %(message)s"))
    log.setLevel(logging.INFO)


def _say(background: bool) -> Say:
    if background:
        return lambda line: log.info("%s", line)
    return lambda line: print(line, file=sys.stderr, flush=True)
