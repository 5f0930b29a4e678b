"""Shared fixtures: hermetic environment, vaults, stores and the sample vault."""

from __future__ import annotations

import compileall
import faulthandler
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2
import pytest
from click.testing import CliRunner
from hypothesis import settings as hypothesis_settings

from memstore.core.config import Settings
from memstore.launcher import main as launcher_main
from memstore.service.store import Store, init_vault

# Hypothesis's per-example deadline (200 ms) measures the machine, not the property: on a
# shared 2-core runner an example of a merge property took 259 ms. Properties are held by
# their examples; speed is measured by the benchmarks.
hypothesis_settings.register_profile("memstore", deadline=None)
hypothesis_settings.load_profile("memstore")


REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_VAULT = REPO_ROOT / "sample-vault"
EXE = Path(sys.executable).with_name("memstore")  # the executable of the venv running pytest


SHARED_MEMORY = Path("/dev/shm")
TEMP_PREFIX = "memstore-tests-"
SHARED_MEMORY_NEEDED = 4 << 30  # a whole run's folders stay until it ends: 0.8 GiB measured
_MEMORY_TEMP = pytest.StashKey[Path]()


# A test still running this long past its pytest-timeout bound is one no Python handler can
# end (a wait in C holding the interpreter's lock: a sqlite connection shared by two threads
# with a Python callback). faulthandler's own thread then prints every thread's stack and
# ends the process: xdist reports the test as crashed and replaces the worker; the run goes on.
HARD_STOP_AFTER_S = 30.0
_HARD_STOP_FD = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "hard_stop_after",
        "seconds past a test's pytest-timeout bound after which its process is ended",
        default=str(HARD_STOP_AFTER_S),
    )


@pytest.hookimpl(tryfirst=True)  # before pytest's own set-up reads --basetemp
def pytest_configure(config: pytest.Config) -> None:
    """Keep a copy of stderr for the hard stop's stacks (a test's own output is captured),
    and put the tests' folders in memory (tmpfs) unless --basetemp names a place.

    Hundreds of tests make a vault and commit to it; on a disk every commit's fsync waits for
    the disk other programs share (the durability they prove is against a killed process, which
    tmpfs keeps too). One folder per run, named with its process id, removed at the end; a
    folder whose run was killed is removed by the next run. xdist's workers take theirs inside.
    """
    config.stash[_HARD_STOP_FD] = os.dup((sys.__stderr__ or sys.stderr).fileno())
    # .ci/run's guard: SIGUSR1 prints every thread's stack (a hang outside any one test)
    faulthandler.register(signal.SIGUSR1, file=config.stash[_HARD_STOP_FD], all_threads=True)
    if hasattr(config, "workerinput"):
        return
    compile_bytecode()
    if config.option.basetemp:
        return
    if not (SHARED_MEMORY.is_dir() and os.access(SHARED_MEMORY, os.W_OK)):
        return
    free = os.statvfs(SHARED_MEMORY)
    if free.f_bavail * free.f_frsize < SHARED_MEMORY_NEEDED:
        return  # a container's small /dev/shm (64 MiB by default): stay on the disk
    for stale in SHARED_MEMORY.glob(f"{TEMP_PREFIX}*"):
        owner = stale.name.removeprefix(TEMP_PREFIX).split("-")[0]
        if owner.isdigit() and not _is_running(int(owner)):
            shutil.rmtree(stale, ignore_errors=True)
    folder = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=SHARED_MEMORY)
    config.option.basetemp = folder
    config.stash[_MEMORY_TEMP] = Path(folder)


def compile_bytecode() -> None:
    """Write the bytecode of memstore and index once, before any test starts a process.

    With PYTHONDONTWRITEBYTECODE set (it is in the team's shells) and a fresh checkout, no
    process writes it, so each `memstore` process and daemon the tests start (~800 in a run)
    compiled every module it imports again: `memstore --version` 1.0 s of CPU without
    bytecode, 0.5 s with it. compileall writes it whatever that setting says (~1 s, once); a
    source changed later is compiled again in memory, as before, until the next run.
    """
    for package in ("memstore", "index"):
        compileall.compile_dir(REPO_ROOT / package, quiet=2)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _HARD_STOP_FD in config.stash:
        faulthandler.unregister(signal.SIGUSR1)
        os.close(config.stash[_HARD_STOP_FD])
    folder = config.stash.get(_MEMORY_TEMP, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """End the process, with every thread's stack, if a test outlives its pytest-timeout
    bound by HARD_STOP_AFTER_S (set-up and tear-down included; a bound of 0 is none)."""
    bound = hard_stop_s(item)
    if bound:
        fd = item.config.stash[_HARD_STOP_FD]
        faulthandler.dump_traceback_later(bound, exit=True, file=fd)
    try:
        return (yield)
    finally:
        if bound:
            faulthandler.cancel_dump_traceback_later()


def hard_stop_s(item: pytest.Item) -> float:
    """Seconds after which `item`'s process is ended: its pytest-timeout bound (its marker's,
    else --timeout's, else the ini's) and `hard_stop_after`; 0 when it has no bound."""
    marker = item.get_closest_marker("timeout")
    if marker is not None and (marker.args or "timeout" in marker.kwargs):
        value = marker.args[0] if marker.args else marker.kwargs["timeout"]
    else:
        value = item.config.getoption("timeout", None) or item.config.getini("timeout")
    seconds = float(value or 0)
    return seconds + float(item.config.getini("hard_stop_after")) if seconds > 0 else 0.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long soak, crash and scale versions run without the per-test bound (pyproject)."""
    for item in items:
        if item.get_closest_marker("long") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(0))


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@pytest.fixture(scope="session", autouse=True)
def hermetic_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The same for what runs before `hermetic`: a module's shared fixture ran memstore with
    this machine's HOME and git identity and no MEMSTORE_NO_DAEMON, and the daemon it started
    outlived the whole run."""
    with pytest.MonkeyPatch.context() as patch:
        make_hermetic(tmp_path_factory.mktemp("session"), patch)
        yield


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, git config and MEMSTORE_* at tmp_path; fix the git identity."""
    home = make_hermetic(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    return home


def make_hermetic(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, git config, the temporary folder and MEMSTORE_* into `folder`; return HOME."""
    home = folder / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("HOME", str(home))
    # What memstore keeps in the temporary folder on purpose (an edit's text when the edit
    # fails, a conflict being resolved) stays in this test's folder, in this process and in
    # every memstore it starts, instead of piling up in /tmp.
    scratch = folder / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for name in list(os.environ):
        if name.startswith("MEMSTORE_") or name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMSTORE_SESSION", "test-session")
    monkeypatch.setenv("MEMSTORE_HOST", "test-host")
    # Ordinary tests run every command in-process; tests/daemon/test_daemon.py unsets this.
    monkeypatch.setenv("MEMSTORE_NO_DAEMON", "1")
    # A hook that misses its budget answers nothing (by design, for the agent's sake): on a
    # machine the parallel suite keeps busy a 4 s prompt hook can miss it. Tests of the budget
    # itself set their own.
    monkeypatch.setenv("MEMSTORE_HOOK_BUDGET", "120")
    # libgit2 reads the global config path once per process: point it at this home.
    pygit2.settings.search_path[pygit2.enums.ConfigLevel.GLOBAL] = str(home)
    return home


def settings_at(path: Path, source: str = "test") -> Settings:
    return Settings(vault=path, source=source, session="test-session", host="test-host")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """An initialized, empty vault."""
    path = tmp_path / "vault"
    init_vault(path, settings_at(path))
    return path


# The clock of the large-segment vault's adds: under load they span seconds, and two
# near-tied scores could round apart between a ranking before a merge and one after it.
LARGE_SEGMENTS_NOW = datetime(2026, 12, 7, 12, 0, 0, tzinfo=UTC)
LARGE_SEGMENTS_TOPICS = (
    "kafka consumer lag",
    "redis eviction policy",
    "postgres vacuum",
    "nginx upload limit",
)


@pytest.fixture
def large_segments(vault: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Large segments cheaply: a vault of 60 memories (added at LARGE_SEGMENTS_NOW) with no
    index, which the next catch-up builds in chunks of 6: ten segments above a "large" of 5
    documents, of which a tier of six is due to merge."""
    from memstore.catalog import updater
    from memstore.index import engine, merging

    with Store.open(settings_at(vault), clock=lambda: LARGE_SEGMENTS_NOW) as store:
        for n in range(60):
            topic = LARGE_SEGMENTS_TOPICS[n % 4]
            store.add(f"{topic} note {n}: seen on host{n}", workspace="webshop")
    shutil.rmtree(vault / ".memstore" / "index")
    monkeypatch.setattr(updater, "CHUNK_FILES", 6)
    monkeypatch.setattr(engine, "MERGE_MAX_DOCS", 5)
    monkeypatch.setattr(merging, "MERGE_MAX_DOCS", 5)
    return vault


@pytest.fixture
def store(vault: Path) -> Iterator[Store]:
    with Store.open(settings_at(vault)) as opened:
        yield opened


@pytest.fixture
def sample_vault(tmp_path: Path) -> Path:
    """A vault holding a copy of sample-vault/, committed."""
    path = tmp_path / "sample"
    init_vault(path, settings_at(path))
    for item in SAMPLE_VAULT.iterdir():
        if item.is_dir():
            shutil.copytree(item, path / item.name)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "import sample vault")
    return path


GIT_TIMEOUT_S = 120  # a git of the tests' own on a local repository: a bound, not a wait


def git(cwd: Path, *args: str) -> str:
    """Run the git CLI (as a person would) and return its output."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=GIT_TIMEOUT_S,
    )
    return done.stdout


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD").strip()


def commit_count(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD").strip())


def vault_bytes(path: Path) -> dict[str, bytes]:
    """Every file of the vault outside .git and .memstore, with its bytes."""
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not {".git", ".memstore"} & set(p.relative_to(path).parts)
    }


def load_per_core() -> float:
    """The machine's load per core now: the larger of its 1- and 5-minute load averages
    (the 1-minute one lags a burst, the 5-minute one its end) over the cores it may use."""
    return max(os.getloadavg()[:2]) / len(os.sched_getaffinity(0))


def hang_bound_s(seconds: float) -> float:
    """`seconds`, a bound that only ends a hang, stretched by how busy the machine is: times
    its load per core when that is over 1 (at load 20 on 2 cores a process gets a tenth of
    a core: `memstore init` took over 60 s of wall time for well under 1 s of CPU).

    Never shorter than `seconds`: on an idle machine a hang fails as soon as before; on a
    busy one it still fails, later (or pytest-timeout's per-test bound ends it first). Not
    for a bound that is itself the claim (a time the code promises): measure CPU for that.
    """
    return seconds * max(1.0, load_per_core())


def wait_until(condition: Callable[[], object], timeout: float, message: str) -> None:
    """Poll `condition` until it is true; fail with `message` after `timeout` seconds,
    stretched by the machine's load (`hang_bound_s`, read again while it waits).

    The one way a test waits for something to happen (never a fixed sleep). The bound only
    ends a hang; a test whose claim is a time measures it otherwise.
    """
    started = time.monotonic()
    bound = timeout
    while not condition():
        waited = time.monotonic() - started
        if waited > timeout:
            bound = max(bound, hang_bound_s(timeout))  # the most the load has stretched it
            if waited > bound:
                raise AssertionError(
                    f"{message}: not within {bound:.1f} s ({timeout} s stretched by the load)"
                    if bound > timeout
                    else f"{message}: not within {timeout} s"
                )
        time.sleep(0.01)


def blocked_s() -> float:
    """Seconds the calling thread has spent blocked so far (asleep on a lock, a pipe, a
    timer): its age less its time on a CPU and its time waiting for one, from
    /proc/thread-self/schedstat. Unlike wall time, the machine's load does not grow it: a
    starved thread waits on the run queue, not asleep. Take the difference of two readings."""
    with open("/proc/thread-self/schedstat", encoding="ascii") as f:
        on_cpu_ns, queued_ns = (int(field) for field in f.read().split()[:2])
    return time.monotonic() - (on_cpu_ns + queued_ns) / 1e9


def wait_while_working(
    condition: Callable[[], object], cpu_s: float, message: str, *, wall_s: float = 600.0
) -> None:
    """Poll `condition` until it is true; fail with `message` once this process (every
    thread: an in-process watcher's too) has spent `cpu_s` seconds of CPU on it.

    For work done here whose bound is its own cost: at load 15-19 a wall-time bound
    measures the machine (a watcher got a tenth of a core). `wall_s` only stops a hang.
    """
    spent, deadline = time.process_time() + cpu_s, time.monotonic() + wall_s
    while not condition():
        if time.process_time() > spent:
            raise AssertionError(f"{message}: not within {cpu_s} s of CPU")
        if time.monotonic() > deadline:
            raise AssertionError(f"{message}: not within {wall_s} s (nothing ran?)")
        time.sleep(0.01)


def child_cpu_s(command: str) -> float:
    """The CPU seconds (user + system) spent so far by this process's living children whose
    command line holds `command`, read from /proc (a child not waited for yet); fail if none."""
    total, found = 0, 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == os.getpid() and command in cmdline:
            total += int(fields[11]) + int(fields[12])  # utime, stime
            found += 1
    assert found, f"no child process runs {command!r}"
    return total / os.sysconf("SC_CLK_TCK")


def run_bounded(
    argv: list[str], timeout: float, **options: object
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(argv, capture_output=True, text=True, timeout=…)` whose bound holds for
    what the command starts too: it runs in a session of its own, and past `timeout` every
    process of that session is killed (subprocess.run kills only the child, then waits with
    no bound for the pipes a grandchild still holds: a daemon, an xdist worker)."""
    with subprocess.Popen(
        argv,
        stdin=options.pop("stdin", subprocess.DEVNULL),  # type: ignore[arg-type]
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **options,  # type: ignore[arg-type]
    ) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate(timeout=30)  # the session is gone: its pipes close
            raise AssertionError(
                f"{argv[:4]} ran past {timeout} s\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}"
            ) from None
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def exit_status_or_stacks(process: subprocess.Popen[Any], timeout: float) -> int:
    """Wait up to `timeout` s for `process` to exit and return its status; past it, fail with
    every thread's stack: a child run with PYTHONFAULTHANDLER=1 and its stderr piped prints
    them on SIGABRT (a Python process that does not exit, however it is stuck)."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        try:
            _, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate(timeout=30)
        text = err.decode(errors="replace") if isinstance(err, bytes) else (err or "")
        raise AssertionError(
            f"{process.args} did not exit within {timeout} s:\n{text[-8000:]}"
        ) from None


def run_memstore(
    *args: str,
    vault: Path | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    errors: str = "strict",
) -> subprocess.CompletedProcess[str]:
    """Run the installed memstore executable and return what it did (never raising on a
    failure; a hang past `timeout` raises: by default 120 s stretched by the load).

    The environment is `base_env` (default: this process's) with `env` on top, and
    MEMSTORE_VAULT set to `vault` when given. Without `stdin` its input is closed (no
    terminal). Output that is not UTF-8 fails the test unless `errors` says otherwise.
    Use it where the executable is what is tested (the launcher and its lean path, the
    process's umask, exit codes, crash points, signals, a second process); elsewhere
    `invoke_memstore` runs the same command in this process, much faster.
    """
    environment = {**(os.environ if base_env is None else base_env), **(env or {})}
    if vault is not None:
        environment["MEMSTORE_VAULT"] = str(vault)
    return subprocess.run(
        [str(EXE), *args],
        cwd=cwd,
        env=environment,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors=errors,
        timeout=hang_bound_s(120) if timeout is None else timeout,
    )


class _ToStderr(logging.StreamHandler):
    """A warning handler writing to whatever `sys.stderr` is when the record comes."""

    def __init__(self) -> None:
        super().__init__()
        self.setLevel(logging.WARNING)
        self.setFormatter(logging.Formatter("memstore: %(message)s"))

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


def invoke_memstore(
    *args: str,
    vault: Path | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: Mapping[str, str | None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the executable's `main` in this process, as `run_memstore` runs the executable:
    same arguments, same result, a tenth of the time.

    It is the same code path (the launcher, the lean path of search and add, typer for the
    rest, `Error: …` on stderr and exit 1 for an expected failure, a logged warning as
    `memstore: …` on stderr); any other exception is raised here (a bug stays loud). `env`
    is laid over this process's environment (None removes a variable). What differs: no
    process boundary (no crash points, signals, a second process), this
    process's module state, and the launcher's umask and signal set-up are undone after.
    """
    environment = {**(env or {})}
    if vault is not None:
        environment["MEMSTORE_VAULT"] = str(vault)
    if {**os.environ, **environment}.get("MEMSTORE_CRASH_AT"):
        raise ValueError("a crash point kills the process it runs in: use run_memstore")
    saved_env, saved_argv, root = dict(os.environ), sys.argv, logging.getLogger()
    # click names the program from `__main__`: under `python -m pytest` it would be
    # "python -m pytest.memstore" (and completion would read _PYTEST.MEMSTORE_COMPLETE);
    # the executable's `__main__` is a script with no package.
    main_module = sys.modules["__main__"]
    saved_package = getattr(main_module, "__package__", None)
    saved_handlers, saved_sigpipe = list(root.handlers), signal.getsignal(signal.SIGPIPE)
    saved_umask, saved_cwd = os.umask(0o077), os.getcwd()
    os.umask(saved_umask)
    if cwd is not None:
        os.chdir(cwd)
    warnings = _ToStderr()  # the launcher's logging set-up: a warning is a line on stderr
    root.addHandler(warnings)
    status: int = 0
    try:
        with CliRunner().isolation(input=stdin, env=environment) as (stdout, stderr, _):
            sys.argv = [str(EXE), *args]  # as the executable sees it (MEMSTORE_EXECUTABLE)
            main_module.__package__ = None
            try:
                launcher_main()
            except SystemExit as done:
                status = _exit_status(done.code)
            sys.stdout.flush()  # what a process's exit flushes
            sys.stderr.flush()
            out, err = stdout.getvalue(), stderr.getvalue()
    finally:
        sys.argv = saved_argv
        main_module.__package__ = saved_package
        os.chdir(saved_cwd)
        os.umask(saved_umask)
        signal.signal(signal.SIGPIPE, saved_sigpipe)
        root.handlers[:] = saved_handlers
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(
        ["memstore", *args], status, out.decode("utf-8"), err.decode("utf-8")
    )


def _exit_status(code: object) -> int:
    """The exit status `sys.exit(code)` gives a process."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")  # sys.exit("message"): printed, status 1
    return 1
