"""The service: one vault, its git history and its index. CLI, MCP and watcher call this."""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import logging
import os
import re
import shlex
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from memstore.catalog.codebase import KIND as CODE_KIND
from memstore.catalog.codebase import (
    BusyError,
    CodeIndex,
    CodeRoot,
    IngestSummary,
    fuse,
    ingested,
    registered_roots,
)
from memstore.catalog.indexer import CatchUp, Drift, Entry, Indexer, Progress, rebuild
from memstore.catalog.retrieval import (
    SEMANTIC_DEPTH,
    core_memories,
    find,
    fuse_similar,
    recall_message,
    stand_ins,
    with_corrections,
    with_neighbors,
)
from memstore.catalog.semantic import Passage, VectorIndex, load_embedder
from memstore.core.codec import (
    content_hash,
    derive_id,
    merged_ids,
    normalize_text,
    parse_memory,
    render_changes,
    render_memory,
    slugify,
    trace_slug,
)
from memstore.core.config import SEMANTIC_ON, Settings
from memstore.core.contradictions import disagreement
from memstore.core.errors import InvalidInputError, NotFoundError, SecretError, VaultError
from memstore.core.faults import crash_point
from memstore.core.merge import merge_file, tally
from memstore.core.model import (
    ADDABLE_KINDS,
    GLOBAL,
    AddResult,
    AddStatus,
    Contradiction,
    CoreMemory,
    Hit,
    Memory,
    Recall,
    SearchResult,
    check_kind,
    check_workspace,
    summary,
)
from memstore.core.ranking import (
    HIT_OVERHEAD_TOKENS,
    estimate_tokens,
    pack,
)
from memstore.core.secrets import find_secret_in_fields
from memstore.core.similar import containment, term_sets
from memstore.index import SearchIndex, SearchIndexError, terms
from memstore.service.sync import (
    MARKER,
    SyncOptions,
    SyncOutcome,
    finish_interrupted,
    note_forgotten,
    sync,
)
from memstore.vault import remote
from memstore.vault.edits import commit_edits, wait_for_git_commit
from memstore.vault.files import Vault, first_stranger, has_vault_mark, process_alive
from memstore.vault.git import (
    GitRepo,
    LogEntry,
    Trailers,
    clear_stale_locks,
    find_enclosing_repository,
    git_debris,
    index_lag_idle,
    index_lags,
    parent_repository_message,
    read_index_lag,
    secret_message,
)
from memstore.vault.usage import Usage

MAX_TEXT_BYTES = 100_000
CONTRADICTION_CANDIDATES = 5  # closest memories an add compares itself with
# Term containment a pair needs before it is compared (the audit's candidate pairs too): a
# changed value lowers the overlap, so dedupe's 0.7 would miss short memories.
CONTRADICTION_CLOSE = 0.5
UNHINTED = ("core", "trace")  # kinds never named as the memory a new one contradicts
# The semantic view embeds this many memories per hold of the vault lock (~0.3 s), and says
# so in one line when a search must embed more than EMBED_NOTICE first.
EMBED_BATCH = 64
EMBED_NOTICE = 500
MAX_KEYWORD_CHARS = 64
# With no watcher, a search walks the ingested trees for changed code (~40 ms at 3,000
# files): the first search of a process does, then at most one every this many seconds.
SOURCES_REFRESH_S = 2.0
log = logging.getLogger(__name__)
REPLICA = "replica"  # state file: this clone's name in per-replica counters, and its path
WRITING = "writing"  # state file: paths a writer is between writing and committing
# A large git index is staged once writes pause this long (at most INDEX_LAG_MAX_S after
# the first), not on every add: writing it costs in proportion to the vault.
INDEX_QUIET_S = 0.5
INDEX_LAG_MAX_S = 5.0
_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
Clock = Callable[[], datetime]


@dataclass(frozen=True)
class InitResult:
    """What `init` did."""

    path: Path
    created_repository: bool
    changed_files: tuple[str, ...]
    commit: str
    checked_out: str = ""  # the remote branch an empty clone took, e.g. "origin/main"
    registered_merge_driver: bool = False
    plain_git: tuple[str, ...] = ()  # what .git/config got so plain git pull works


@dataclass(frozen=True)
class Stats:
    """A summary of the vault."""

    vault: Path
    memories: int
    by_workspace: dict[str, int]
    by_kind: dict[str, int]
    problems: int
    index_bytes: int
    last_commit: LogEntry | None


F = TypeVar("F", bound=Callable[..., Any])


def _serialized(method: F) -> F:
    """Run a Store method under the store's mutex (threads share one index and repository)."""

    @functools.wraps(method)
    def locked(self: Store, *args: Any, **kwargs: Any) -> Any:
        with self._mutex:
            self._follow_index()
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]


def _now() -> datetime:
    return datetime.now(UTC)


def init_vault(path: Path, settings: Settings, *, adopt_any: bool = False) -> InitResult:
    """Create a vault at `path`, or adopt the git repository already there.

    Only an empty folder or repository, a clone of a vault, or one whose files all read as
    memories is adopted, unless `adopt_any`: memstore commits every file in its vault.
    """
    if path.exists() and not path.is_dir():
        raise VaultError(f"{path} is a file, not a folder; choose another vault path")
    owner = (
        find_enclosing_repository(path) if path.exists() else find_enclosing_repository(path.parent)
    )
    if owner is not None and owner.resolve() != path.resolve():
        raise VaultError(parent_repository_message(path, owner))
    if path.exists() and not adopt_any:
        _refuse_strangers(path, is_repository=owner is not None)
    created = owner is None
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as err:
        raise VaultError(f"cannot create vault folder {path}: {err.strerror}") from err
    git = GitRepo.init(path)
    registered = git.register_merge_driver(
        settings.executable
        or shutil.which("memstore", path=settings.env.get("PATH", ""))
        or "memstore"
    )
    adopted = git.adopt_remote_branch()
    vault = Vault(path)
    vault.make_private()  # a clone or an adopted repository was made with the umask's modes
    if not created:
        vault.make_git_private()
    changed = tuple(vault.ensure_layout())
    commit = ""
    if changed or not git.head():
        trailers = Trailers(settings.source, settings.session, settings.host)
        commit = git.commit("init: memstore vault", trailers, add=changed)
    plain_git = tuple(git.prepare_plain_git())
    return InitResult(path, created, changed, commit, adopted, registered, plain_git)


def _refuse_strangers(path: Path, *, is_repository: bool) -> None:
    """Refuse to make a vault of a folder holding files that are not memories (a project)."""
    vault = Vault(path)
    if vault.has_vault_mark():
        return
    stranger = vault.stranger()
    if not stranger and is_repository:
        git = GitRepo.open(path)
        stranger = _stranger_on_remote(git)
        unseen = "" if stranger else git.unseen_remote()
        if unseen:
            raise VaultError(
                f"{path} is a git repository without commits whose remote {unseen} memstore "
                f"has not seen, likely a project's: for memories use 'memstore init "
                f"~/memstore'; if that remote holds a vault, run 'git -C {path} fetch' and "
                "init again; --adopt-any makes this repository a vault"
            )
    if stranger:
        what = "a git repository" if is_repository else "a folder"
        raise VaultError(
            f"{path} is {what} with files that are not memories ({stranger}); pick an empty "
            f"folder, e.g. 'memstore init ~/memstore', or pass --adopt-any to make this "
            f"{'repository' if is_repository else 'folder'} a vault"
        )


def _stranger_on_remote(git: GitRepo) -> str:
    """Return a file that is not a memory on the remote branch an empty repository would
    adopt, or, when no single branch stands out, on any remote branch when none of them is
    a vault's ('' when there is none)."""
    branch = git.branch_to_adopt()  # what an empty clone would check out
    branches = [branch] if branch else git.remote_branches() if git.head() == "" else []
    found = ""
    for name in branches:
        files = git.files_at(git.resolve(name))
        if has_vault_mark(files.get(".gitattributes", b"")):
            return ""
        stranger = first_stranger(sorted(files), files.__getitem__)
        if stranger and not found:
            where = "" if branch else f" on {name.removeprefix('refs/remotes/')}"
            found = stranger + where
    return found


class Store:
    """A vault opened for reading and writing memories."""

    def __init__(self, settings: Settings, vault: Vault, clock: Clock = _now) -> None:
        self.settings = settings
        self.vault = vault
        self._clock = clock
        self._git: GitRepo | None = None
        self._indexer: Indexer | None = None
        self._code: CodeIndex | None = None  # opened when a source tree was ingested
        self._code_mutex = threading.Lock()
        # A long-running process (the daemon, `serve`) keeps more in memory for its later
        # requests: the code index's terms for typo walks (~0.2 s to read, ~3 MB at 22k
        # chunks; a one-off command walks the segments instead).
        self.resident = False
        # Checked here, before anything is written: trailers are single lines.
        self.trailers = Trailers(settings.source, settings.session, settings.host)
        self.usage = Usage(vault.state_dir / "usage.sqlite")
        self._core_cache: dict[object, tuple[CoreMemory, ...]] = {}
        # The semantic view of each model asked for (Settings.semantic), and the index
        # version its vectors were last brought in step with.
        self._vector_views: dict[str, VectorIndex] = {}
        self._vectors_at: dict[str, int] = {}
        # One Store may serve several threads (the MCP server and its watcher).
        self._mutex = threading.RLock()
        self._index_timer: threading.Timer | None = None
        self._index_due = 0.0  # when git's index is staged: writes paused, or lag too long
        self._index_since = 0.0
        self._sources_refreshed: float | None = None  # monotonic time of a search's walk
        self._replica: str | None = None  # this clone's name in seen_by/recalled_by, once read
        vault.on_lock = self._heal

    @classmethod
    def open(cls, settings: Settings, *, create: bool = False, clock: Clock = _now) -> Store:
        """Open the vault in `settings`; with `create`, make it first if it does not exist."""
        root = settings.vault
        if root.exists() and not root.is_dir():
            raise VaultError(
                f"vault path {root} is a file, not a folder; set MEMSTORE_VAULT or --vault"
            )
        if not (root / ".git").exists():
            is_empty = not root.exists() or not any(root.iterdir())
            if create and is_empty and settings.may_create_vault:
                init_vault(root, settings)
            elif is_empty and not settings.may_create_vault:
                # Made only at the default path: anywhere else it is most likely a typo.
                raise NotFoundError(
                    f"there is no vault at {root}; run 'memstore init {shlex.quote(str(root))}' "
                    "to make one there, or fix MEMSTORE_VAULT / --vault"
                )
            elif not root.exists():
                raise NotFoundError(
                    f"no vault at {root}; run 'memstore init' (or 'memstore add' to start one)"
                )
            else:
                raise VaultError(f"{root} is not a memstore vault; run: memstore init {root}")
        return cls(settings, Vault(root), clock)

    def hold(self) -> None:
        """Wait for the operation under way, then keep every other out (the process is
        about to exit; nothing releases this)."""
        self._mutex.acquire()

    def close(self) -> None:
        self._sync_git_index(final=True)
        self.usage.close()
        if self._indexer is not None:
            self._indexer.close()
            self._indexer = None
        if self._code is not None:
            self._code.close()
            self._code = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def git(self) -> GitRepo:
        if self._git is None:
            self._git = GitRepo.open(self.vault.root)
        return self._git

    def _follow_index(self) -> None:
        """Reopen the index if another process replaced it (`memstore reindex` beside a
        daemon): this process would otherwise write to files no longer on disk.

        Only under the store's mutex (never waiting for it: the caller may hold the vault
        lock), so no other thread is reading the index being closed.
        """
        if self._indexer is None or not self._mutex.acquire(blocking=False):
            return
        try:
            if self._indexer is not None and self._indexer.follow():
                self._forget_index_caches()
        finally:
            self._mutex.release()

    def _forget_index_caches(self) -> None:
        # A new index (followed, healed, rebuilt) numbers its versions from the start again.
        self._core_cache = {}
        self._vectors_at = {}

    def _heal(self) -> None:
        """Clear what a killed process left in git (runs each time the vault lock is taken).

        Costs a few stats unless there is something to repair.
        """
        self._follow_index()  # a reindex beside this process finished under the lock
        locks, index_stale = git_debris(self.vault.root)
        if locks:
            removed = clear_stale_locks(self.vault.root, locks)
            if removed:
                log.warning(
                    "removed %s left by a killed process (no git process was using it)",
                    ", ".join(removed),
                )
        if self.vault.read_state(MARKER):
            # before anything commits edits: a half-done checkout is memstore's, not a person's
            try:
                if finish_interrupted(self.vault, self.git, self.settings.host):
                    log.warning("finished a sync that was stopped during its checkout")
            except VaultError as err:
                log.warning("%s; the next memstore command tries again", err)
        self._undo_killed_write()
        lagging = index_lags(self.vault.root)  # a person's `git status` re-dates the index
        if (index_stale or lagging) and not self._index_lag_is_live():
            try:
                self.git.sync_index()  # deferred staging a process left unfinished: routine
                fixed = self.git.repair_index() if index_stale else []
            except VaultError as err:
                log.warning("%s; the next memstore command tries again", err)
                return
            if fixed:
                log.warning(
                    "repaired git's index for %d %s a killed commit left staged wrong (%s)",
                    len(fixed),
                    "file" if len(fixed) == 1 else "files",
                    ", ".join(fixed[:3]) + (" …" if len(fixed) > 3 else ""),
                )

    def _index_lag_is_live(self) -> bool:
        """Whether git's index lags HEAD only because a live process defers staging it."""
        pids, lagging = read_index_lag(self.vault.root)  # no pygit2: runs in every process
        return (
            bool(lagging)
            and any(process_alive(pid) for pid in pids)
            and index_lag_idle(self.vault.root) < 2 * INDEX_LAG_MAX_S
        )

    def _stage_later(self) -> None:
        """Have git's index catch up once writes pause (see GitRepo.commit's defer_index)."""
        if not self.git.index_lag()[1]:
            return
        with self._mutex:
            now = time.monotonic()
            self._index_due = min(now + INDEX_QUIET_S, self._index_since + INDEX_LAG_MAX_S)
            if self._index_timer is None:
                self._index_since = now
                self._index_due = now + INDEX_QUIET_S
                self._start_index_timer(INDEX_QUIET_S)

    def _start_index_timer(self, delay: float) -> None:
        self._index_timer = threading.Timer(delay, self._sync_git_index)
        self._index_timer.daemon = True
        self._index_timer.start()

    def _sync_git_index(self, *, final: bool = False) -> None:
        """Stage what this process's commits deferred, when no write is under way."""
        with self._mutex:
            timer, self._index_timer = self._index_timer, None
            if final and timer is not None:
                timer.cancel()
            elif not final:
                wait = self._index_due - time.monotonic()
                if wait > 0:
                    self._start_index_timer(wait)
                    return
            if self._git is None or os.getpid() not in self.git.index_lag()[0]:
                return
            try:
                with self.vault.try_lock() as locked:
                    if locked:
                        self.git.sync_index()
                    elif not final:
                        self._start_index_timer(INDEX_QUIET_S)  # a writer is busy: after it
            except VaultError as err:
                log.warning("%s; the next memstore command tries again", err)

    def ensure_merge_driver(self) -> bool:
        """Point git's merge driver entry at this memstore when the command it names is gone
        (memstore reinstalled elsewhere, or registered before it was on PATH); True if fixed.
        """
        current = self.git.merge_driver_command()
        program = current.split(" ", 1)[0].strip("'\"")
        path = self.settings.env.get("PATH", "")
        if program and (
            shutil.which(program, path=path) if "/" not in program else os.access(program, os.X_OK)
        ):
            return False
        if not self.settings.executable:
            return False
        with self.vault.lock(self.settings.lock_timeout):
            fixed = self.git.register_merge_driver(self.settings.executable)
        if fixed and current:
            log.warning(
                "git's merge driver pointed at %s, which does not exist; it now runs %s",
                program,
                self.settings.executable,
            )
        return fixed

    def commit_edits(self, paths: Iterable[str] | None) -> list[str]:
        """Commit outside edits among `paths` (None: every file) on their own, before a write
        of memstore's touches them (the caller holds the lock). Returns the commits made.
        A person's `git commit` under way in the vault is waited for first (up to the lock
        timeout): a commit of memstore's meanwhile would make theirs fail."""
        if paths is not None:
            paths = list(paths)
            if not paths:
                return []  # the caller touches no file: it commits nothing
            if len(paths) > 500:
                paths = None  # git's status is cheaper than hashing this many files
        wait_for_git_commit(self.vault.root, self.settings.lock_timeout)
        return commit_edits(self.vault, self.git, self.settings.host, paths)

    @property
    def indexer(self) -> Indexer:
        if self._indexer is None:
            self._indexer = Indexer.open(self.vault)
        return self._indexer

    # --- the read lane --------------------------------------------------------------

    def catch_up(self, *, wait: bool = False, workspaces: set[str] | None = None) -> CatchUp:
        """Bring the index up to date with the files.

        A reader (`wait` False) skips this when a writer holds the lock right now: readers
        do not wait, and the writer updates the index itself. The watcher waits its turn, and
        so does a reader whose index was just created (a person deleted it): it is empty.
        """
        with self._mutex:
            if wait:
                with self.vault.lock(self.settings.lock_timeout):
                    if workspaces is None:
                        return self.catch_up_locked()
                    results = [self.catch_up_locked(workspace) for workspace in sorted(workspaces)]
                    return CatchUp(
                        tuple(p for r in results for p in r.updated),
                        tuple(p for r in results for p in r.removed),
                        tuple(p for r in results for p in r.problems),
                    )
            watched = self.vault.is_watched()  # first: it heals a .memstore made a file
            if self.indexer.unfilled:  # created just now (deleted by hand?): fill it first
                with self.vault.lock(self.settings.lock_timeout):
                    return self.catch_up_locked()
            if watched:
                return CatchUp()  # a running watcher (memstore serve / watch) keeps it current
            with self.vault.try_lock() as locked:
                return self.catch_up_locked() if locked else CatchUp()

    def catch_up_locked(
        self, workspace: str | None = None, progress: Progress | None = None
    ) -> CatchUp:
        """Catch up the index; the caller holds the vault's write lock."""
        try:
            return self.indexer.catch_up(progress, workspace=workspace)
        except SearchIndexError as err:
            return self._rebuild_damaged(err)

    def _rebuild_damaged(self, err: SearchIndexError) -> CatchUp:
        # The index broke while open (e.g. a crash mid-commit): set it aside and rebuild.
        self._forget_index_caches()
        return self.indexer.heal(err)

    @_serialized
    def search(
        self,
        query: str,
        *,
        workspace: str | None = None,
        k: int = 5,
        catch_up: bool = True,
        archived: bool = False,
    ) -> SearchResult:
        """Return up to `k` hits, ranked: all query terms first, then any term; a memory
        another corrects comes just below its correction.

        `workspace` None searches every workspace; a name searches it plus `global`.
        `catch_up` False skips the scan for files changed outside memstore (a running
        watcher already keeps the index current).
        """
        if k < 1:
            raise InvalidInputError(f"-k must be at least 1, not {k}")
        scope = None if workspace is None else {check_workspace(workspace), GLOBAL}
        if catch_up:
            self.catch_up()
            if ingested(self.vault.state_dir) and not self.vault.is_watched():
                # no watcher chunks changed code (no daemon): this reader does, unless a
                # writer holds the code index right now (readers never wait for it)
                self._refresh_sources_now_and_then()
        # with the semantic view on, each view's first SEMANTIC_DEPTH are fused, then cut to k
        depth = max(k, SEMANTIC_DEPTH) if self.settings.semantic else k
        try:
            result = find(self.indexer, query, scope, depth, self._clock(), archived=archived)
        except SearchIndexError as err:
            # Not under the vault lock: a read-only vault's search still answers.
            self._rebuild_damaged(err)
            result = find(self.indexer, query, scope, depth, self._clock(), archived=archived)
        hits = with_corrections(self.indexer, result.hits, depth, scope)
        vectors = self._vectors(locked=False)
        if vectors is not None:
            similar = [key for key, _ in vectors.hits(query, SEMANTIC_DEPTH, scope)]
            hits = fuse_similar(self.indexer, hits, similar, k, archived=archived)
            if hits:
                result = replace(result, weak=all(hit.weak for hit in hits))
        read_as = tuple((s.word, s.stand_in) for s in stand_ins(self.indexer, query))
        code = self.code_index()
        if code is not None:
            hits = [self._with_code(code, hit) for hit in hits]
            if chunks := code.find(query, scope, k):
                hits = fuse(hits, chunks, k)
                return replace(
                    result, hits=tuple(hits), read_as=read_as, weak=all(h.weak for h in hits)
                )
        return replace(result, hits=tuple(hits), read_as=read_as)

    def code_index(self) -> CodeIndex | None:
        """Return the index of ingested source trees (None when none was ever ingested).

        Never takes the vault lock, never chunks: a reader serves what the code index holds
        (writers, memstore/catalog/codebase.py, refill what a deletion or a killed run left out).
        """
        with self._code_mutex:
            if self._code is not None and self._code.is_replaced():
                self._code.close()  # deleted or rebuilt by another process: read the new one
                self._code = None
            if self._code is None and ingested(self.vault.state_dir):
                self._code = CodeIndex.open(self.vault.state_dir)
                self._code.search.holds_terms = self.resident
            return self._code

    def _writable_code(self) -> CodeIndex:
        code = self.code_index()
        if code is not None:
            return code
        with self._code_mutex:
            if self._code is None:
                self._code = CodeIndex.open(self.vault.state_dir)
            return self._code

    def ingest(
        self, path: Path, workspace: str, *, dry_run: bool = False, progress: Progress | None = None
    ) -> IngestSummary:
        """Chunk the source tree at `path` into `workspace` (memstore/catalog/codebase.py).

        It holds the code index's own writer lock, never the vault's: memories are written
        meanwhile, and searches wait only for its short writing steps.
        """
        check_workspace(workspace, for_add=True)
        root = path.resolve()
        vault = self.vault.root.resolve()
        if root == vault or vault in root.parents or root in vault.parents:
            raise InvalidInputError(
                f"{root} holds or is inside the vault {vault}; ingest a source tree outside it"
            )
        code = self._writable_code()
        for other in code.roots():
            known = Path(other.path)
            if root != known and (known in root.parents or root in known.parents):
                raise InvalidInputError(
                    f"{root} overlaps the ingested folder {known}; ingest one of them "
                    f"(memstore ingest --remove {known} drops that one)"
                )
        return code.ingest(root, workspace, dry_run=dry_run, progress=progress)

    def forget_source(self, path: Path) -> tuple[CodeRoot, int]:
        """Unregister an ingested source tree and drop its chunks."""
        return self._writable_code().remove(path)

    def refresh_source(self, path: str, *, wait: float = 0.0) -> IngestSummary | None:
        """Bring one ingested root's chunks up to date (None when it is not registered, or
        another process is writing the code index over `wait` s: the caller tries later)."""
        code = self.code_index()
        if code is None or not Path(path).is_dir():
            return None
        root = next((r for r in code.roots() if r.path == path), None)
        return None if root is None else code.refresh(root, wait=wait)

    def refresh_sources(self, *, wait: float = 0.0) -> None:
        """Chunk what changed in the ingested roots chunked whole (a reader with no watcher
        running: nothing else does); a root another process keeps writing is skipped, and
        one not chunked whole is left to a writer (`ingest`, `reindex`, a watcher)."""
        code = self.code_index()
        if code is None:
            return
        for root in code.roots():
            if Path(root.path).is_dir():
                code.refresh(root, wait=wait, refill=False)

    def _refresh_sources_now_and_then(self) -> None:
        """Refresh the ingested roots at this process's first search, then at most once
        every SOURCES_REFRESH_S: a walk stats every file, so searches in a row share one."""
        now = time.monotonic()
        last = self._sources_refreshed
        if last is not None and now - last < SOURCES_REFRESH_S:
            return
        self._sources_refreshed = now
        self.refresh_sources()

    def refill_sources(self) -> None:
        """Chunk ingested roots the code index lacks (deleted, or a killed run's)."""
        code = self.code_index()
        if code is None:
            return
        with contextlib.suppress(BusyError), code.writing(wait=0.0):
            code.refill()

    def _with_code(self, code: CodeIndex, hit: Hit) -> Hit:
        """Attach where the code a memory names is (a decision beside the code it is about)."""
        entities = [entity for entity, _ in self.indexer.search.entities_of(hit.path)]
        refs = code.named(entities, {hit.workspace, GLOBAL})
        return replace(hit, code=tuple(refs)) if refs else hit

    def workspaces(self) -> list[str]:
        """Return the vault's workspaces: its folders with a workspace's name, `global`, and
        those of ingested source trees."""
        names = {GLOBAL}
        for entry in self.vault.root.iterdir():
            if entry.is_dir() and not entry.name.startswith("."):
                with contextlib.suppress(InvalidInputError):
                    names.add(check_workspace(entry.name))
        names.update(root.workspace for root in registered_roots(self.vault.state_dir))
        return sorted(names)

    def source_roots(self) -> list[tuple[CodeRoot, int]]:
        """Return each ingested source tree with its chunk count."""
        code = self.code_index()
        if code is None:
            return []
        return [(root, code.chunk_count(root.path)) for root in code.roots()]

    @_serialized
    def recall(
        self,
        query: str,
        *,
        workspace: str | None,
        k: int = 5,
        max_tokens: int | None = None,
        catch_up: bool = True,
        record_usage: bool = False,
    ) -> Recall:
        """Search, then attach corrections and neighbours, add core memories, fit a budget.

        `max_tokens` covers hits and core memories together (hits first, whole or not at all).
        """
        if max_tokens is not None and max_tokens < 1:
            raise InvalidInputError(f"max_tokens must be at least 1, not {max_tokens}")
        result = self.search(query, workspace=workspace, k=k, catch_up=catch_up)
        scope = None if workspace is None else {workspace, GLOBAL}
        hits = [
            hit if hit.kind == CODE_KIND else with_neighbors(self.indexer, hit)
            for hit in result.hits
        ]
        sizes = [estimate_tokens(hit.content) + HIT_OVERHEAD_TOKENS for hit in hits]
        kept, dropped = pack(hits, sizes, max_tokens)
        core = self._core_memories(scope)
        if max_tokens is not None:
            # The budget covers the whole answer: core memories fill what the hits leave.
            taken = {id(hit) for hit in kept}
            left = max_tokens - sum(
                n for hit, n in zip(hits, sizes, strict=True) if id(hit) in taken
            )
            core = tuple(pack(core, [estimate_tokens(c.content) + 10 for c in core], left)[0])
        if record_usage:
            self.usage.record([hit.id for hit in kept if hit.kind != CODE_KIND], self._timestamp())
        message = recall_message(self.indexer, query, kept, result.weak, dropped)
        return Recall(tuple(kept), core, message, result.weak, dropped)

    def _core_memories(self, scope: set[str] | None) -> tuple[CoreMemory, ...]:
        # The block is the same for every recall until the index changes: compute it once.
        key = (self.indexer.search.version(), tuple(sorted(scope)) if scope else None)
        if key not in self._core_cache:
            self._core_cache = {key: core_memories(self.indexer, scope)}
        return self._core_cache[key]

    @_serialized
    def resolve(self, id_prefix: str) -> Entry:
        """Return the one memory whose id starts with `id_prefix`."""
        prefix = check_id(id_prefix)
        self.catch_up()
        return self._resolve_indexed(id_prefix, prefix)

    def _resolve_indexed(self, id_prefix: str, prefix: str) -> Entry:
        # An id `dedupe --merge` folded away names the memory it was merged into.
        entries = self.indexer.by_id_prefix(prefix) or self._merged_into(prefix)
        exact = [e for e in entries if e.id == prefix]
        if exact:
            entries = exact  # an id that is also a prefix of longer ids names itself
        ids = sorted({e.id for e in entries})
        if not entries:
            raise NotFoundError(
                f"no memory with id {id_prefix!r}; run 'memstore search' to find ids"
            )
        if len(ids) > 1:
            shown = ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")
            raise InvalidInputError(
                f"id prefix {id_prefix!r} matches {len(ids)} memories ({shown}); type more of it"
            )
        if len(entries) > 1:
            paths = ", ".join(e.path for e in entries)
            raise InvalidInputError(
                f"id {ids[0]!r} is used by {len(entries)} files ({paths}); rename or remove one"
            )
        return entries[0]

    def _merged_into(self, prefix: str) -> list[Entry]:
        """Return the memories whose `merged:` key names an id starting with `prefix`.

        Asked only when no memory has such an id. A merge sums `seen`, so only memories
        stored twice or more are read, and only those whose file names a `merged:` key.
        """
        found = []
        for entry in self.indexer.entries():
            if entry.seen < 2:
                continue
            try:
                data = self.vault.path(entry.path).read_bytes()
            except OSError:
                continue  # gone since the catch-up: not the memory asked for
            if b"\nmerged:" in data and any(
                folded.startswith(prefix) for folded in merged_ids(self.vault.read(entry.path))
            ):
                found.append(entry)
        return found

    @_serialized
    def show(self, id_prefix: str) -> tuple[Entry, Memory]:
        """Return a memory by id (or unique id prefix), read from its file."""
        entry = self.resolve(id_prefix)
        return entry, self.vault.read(entry.path)

    @_serialized
    def stats(self) -> Stats:
        """Summarize the vault: memories by workspace and kind, index size, last commit."""
        self.catch_up()
        docs = self.indexer.search.documents()
        log = self.git.log(limit=1)
        return Stats(
            vault=self.vault.root,
            memories=len(docs),
            by_workspace=dict(sorted(Counter(d.workspace for d in docs).items())),
            by_kind=dict(sorted(Counter(d.kind for d in docs).items())),
            problems=len(self.indexer.problems()),
            index_bytes=self.indexer.search.size_bytes(),
            last_commit=log[0] if log else None,
        )

    @_serialized
    def problems(self) -> list[tuple[str, str]]:
        """Return (path, reason) for every file that could not be read cleanly."""
        self.catch_up()
        return [(p.path, p.reason) for p in self.indexer.problems()]

    @_serialized
    def doctor(self, *, fix: bool = False) -> tuple[Drift, Drift | None]:
        """Compare the index with the files; with `fix`, reconcile and compare again.

        Returns the drift found and, when fixing, the drift left afterwards.
        """
        found = self.indexer.drift()
        if not fix or found.is_clean:
            return found, None
        self.catch_up(wait=True)
        after = self.indexer.drift()
        if not after.is_clean:
            self.reindex()
            after = self.indexer.drift()
        return found, after

    @_serialized
    def overlap(self, text: str, workspace: str) -> float:
        """Return how much of `text` an existing memory already says (0–1, term containment).

        The share of the text's index terms found in its most similar memory in the
        workspace or `global`.
        """
        wanted = terms(text)
        if not wanted:
            return 1.0
        self.catch_up()
        scope = {check_workspace(workspace), GLOBAL}
        candidates = self.indexer.search.search(text, workspaces=scope, limit=5, any_term=True)
        best = max((len(wanted & terms(h.document.content)) for h in candidates), default=0)
        return best / len(wanted)

    @_serialized
    def changes_since_last_session(self, agent: str) -> tuple[list[LogEntry], bool]:
        """Return the commits since `agent` last asked (newest first) and remember HEAD.

        The second value is False the first time an agent asks (nothing to compare with).
        """
        marker = f"briefing-{check_source(agent)}"
        since = self.vault.read_state(marker)
        head = self.git.head()
        changes = self.git.log(limit=200, since=since) if since and since != head else []
        if head:
            self.vault.write_state(marker, head)
        return changes, bool(since)

    @_serialized
    def log(self, limit: int = 20) -> list[LogEntry]:
        return self.git.log(limit)

    # --- the write lane -------------------------------------------------------------

    @_serialized
    def add(
        self,
        text: str,
        *,
        workspace: str,
        kind: str = "note",
        keywords: tuple[str, ...] = (),
        source: str | None = None,
        supersedes: tuple[str, ...] = (),
        allowed_kinds: tuple[str, ...] = ADDABLE_KINDS,
        allow_secret: bool = False,
        merge_duplicate: bool = True,
    ) -> AddResult:
        """Store a memory: a new file and commit, or a duplicate folded into its file.

        A text that looks like it holds a credential is refused unless `allow_secret`; with
        `merge_duplicate` false a duplicate is reported and left untouched (re-imports).
        """
        body = check_text(text)
        fields = {
            "text": body,
            "keywords": keywords,
            "source": source or self.settings.source,
            "session": self.settings.session,
        }
        found = None if allow_secret else find_secret_in_fields(fields)
        if found:
            field, kind = found
            where = "memory text" if field == "text" else f"the memory's {field}"
            raise InvalidInputError(
                f"{where} contains what looks like {kind}; remove it "
                "(memory is shared through git); a person can store it anyway with "
                "memstore add --allow-secret"
            )
        check_workspace(workspace, for_add=True)
        check_kind(kind, allowed=allowed_kinds)
        keywords = check_keywords(keywords)
        source = check_source(source or self.settings.source)
        with self.vault.lock(self.settings.lock_timeout):
            if not self.vault.is_watched():
                # Duplicates live in the same workspace: checking its folder is enough.
                self.catch_up_locked(workspace)
            targets = tuple(self._resolve_target(s) for s in supersedes)
            existing = self.indexer.by_hash(workspace, content_hash(body))
            if existing and not merge_duplicate:
                current = existing[0]
                return AddResult(
                    "duplicate_skipped", current.id, current.path, current.seen, workspace
                )
            if existing:
                return self._merge_duplicate(
                    existing[0], keywords, targets, source, allow_secret=allow_secret
                )
            # Looked up before the write: the index searched is the one the catch-up (or the
            # last recall) left current, not a version this add makes stale.
            contradicted = () if kind == "trace" else self._contradicted(body, workspace, targets)
            added = self._add_new(
                body, workspace, kind, keywords, source, targets, allow_secret=allow_secret
            )
        return replace(added, contradicts=contradicted)

    def _contradicted(
        self, body: str, workspace: str, supersedes: tuple[str, ...]
    ) -> tuple[Contradiction, ...]:
        """Return the memories closest to a new `body` in its workspace that it disagrees with.

        Only a workspace's own memories: one of `global` may be the rule a workspace's
        memory makes an exception to, and superseding it would mark it corrected in every
        workspace. Left out: what the add already supersedes, archived and superseded
        memories, core memories (a person's rules, sent beside every recall, which a
        supersede does not take out of that block) and traces (a record of one session,
        not a claim that stays true; the capture hook stores them and never reads a hint).
        """
        try:
            try:
                return self._find_contradicted(body, workspace, set(supersedes))
            except SearchIndexError as err:  # damage the catch-up's look did not meet
                self._rebuild_damaged(err)
                return self._find_contradicted(body, workspace, set(supersedes))
        except SearchIndexError as err:
            log.warning("could not look for memories the new one contradicts: %s", err)
            return ()
        except Exception:  # a hint: whatever goes wrong in it must not stop the add
            log.warning("could not look for memories the new one contradicts", exc_info=True)
            return ()

    def _find_contradicted(
        self, body: str, workspace: str, skip: set[str]
    ) -> tuple[Contradiction, ...]:
        hits = self.indexer.search.search(
            body, workspaces={workspace}, limit=CONTRADICTION_CANDIDATES, any_term=True
        )
        close = [h.document for h in hits]
        entries = {e.path: e for e in self.indexer.by_path([d.key for d in close])}
        mine, *theirs = term_sets([body, *(d.content for d in close)])
        found = []
        for doc, terms_of_doc in zip(close, theirs, strict=True):
            entry = entries.get(doc.key)
            if entry is None or entry.id in skip or entry.archived or entry.kind in UNHINTED:
                continue
            if containment(mine, terms_of_doc) < CONTRADICTION_CLOSE:
                continue
            found_one = disagreement(body, doc.content)
            if found_one and not self.indexer.superseded_by(entry.id):
                found.append(Contradiction(entry.id, found_one.kind, found_one.detail))
        return tuple(found)

    def resolve_locked(self, id_prefix: str) -> Entry:
        """Return the one memory `id_prefix` names; the caller holds the vault lock.

        Catches up first, so a memory written by hand since the last catch-up is found.
        """
        prefix = check_id(id_prefix)
        self.catch_up_locked()
        return self._resolve_indexed(id_prefix, prefix)

    def _resolve_target(self, id_prefix: str) -> str:
        try:
            return self.resolve_locked(id_prefix).id
        except NotFoundError as err:
            raise NotFoundError(
                f"supersedes {id_prefix!r}: no memory has that id; nothing was stored "
                "(memstore search or memory_recall shows ids)"
            ) from err

    def _add_new(
        self,
        body: str,
        workspace: str,
        kind: str,
        keywords: tuple[str, ...],
        source: str,
        supersedes: tuple[str, ...],
        *,
        allow_secret: bool = False,
    ) -> AddResult:
        path, memory = self.plan_memory(
            body, workspace=workspace, kind=kind, keywords=keywords, source=source
        )
        memory = replace(memory, supersedes=tuple(dict.fromkeys(supersedes)))
        message = f"add({workspace}): {summary(body)}"
        commit = self.write_memory(path, memory, message, source, allow_secret=allow_secret)
        return AddResult("added", memory.id, path, 1, workspace, commit)

    def _free_id(self, workspace: str, body: str) -> str:
        for length in range(8, 27, 2):
            candidate = derive_id(workspace, body, length)
            if not self.indexer.by_id_prefix(candidate):
                return candidate
        raise VaultError(f"no free id for this memory in {workspace}; run 'memstore reindex'")

    def _merge_duplicate(
        self,
        entry: Entry,
        keywords: tuple[str, ...],
        supersedes: tuple[str, ...],
        source: str,
        *,
        allow_secret: bool = False,
    ) -> AddResult:
        current = self.vault.read(entry.path)
        # The text again with --supersedes is a correction being recorded (a contradiction
        # hint followed), not the memory stored again: `seen` stays, and a correction
        # already recorded changes nothing.
        if current.id in supersedes:
            raise InvalidInputError(
                f"this text is memory {current.id} itself, which cannot supersede itself; "
                "nothing was stored (to correct it, add the corrected text with "
                f"--supersedes {current.id})"
            )
        named = tuple(dict.fromkeys(supersedes))
        links = tuple(s for s in named if s not in current.supersedes)
        if links and current.problem:
            raise InvalidInputError(
                f"{entry.path} holds this text but cannot be read cleanly ({current.problem}); "
                f"fix it (memstore doctor) before it can supersede {', '.join(links)}"
            )
        if named and not links:
            return AddResult(
                "supersede_recorded",
                current.id,
                entry.path,
                current.seen,
                current.workspace,
                linked=named,
            )
        if (not current.has_front_matter and not links) or current.problem:
            # A hand-written or unreadable file is never rewritten by an add: not counted.
            return AddResult(
                "duplicate_uncounted", current.id, entry.path, current.seen, current.workspace
            )
        merged = replace(
            tally(current, "seen", self.replica()) if not named else current,
            keywords=tuple(dict.fromkeys((*current.keywords, *keywords))),
            supersedes=(*current.supersedes, *links),
            # A hand-written file asked to correct another gets the front matter that says so.
            has_front_matter=True,
        )
        workspace, text = current.workspace, summary(current.body)
        if links:
            message = f"supersede({workspace}): {text} (corrects {', '.join(links)})"
        else:
            message = f"seen({workspace}): {text} (seen {merged.seen})"
        commit = self.write_memory(
            entry.path, merged, message, source, basis=current, allow_secret=allow_secret
        )
        status: AddStatus = "supersede_recorded" if links else "duplicate_merged"
        return AddResult(
            status, merged.id, entry.path, merged.seen, merged.workspace, commit, linked=named
        )

    @_serialized
    def plan_memory(
        self, body: str, *, workspace: str, kind: str, keywords: tuple[str, ...], source: str
    ) -> tuple[str, Memory]:
        """Return the path and memory `add` would write for a new `body`; writes nothing.

        The id is free among the memories indexed now; the caller holds the vault lock.
        The file goes in a folder for the month it was created (UTC), so no git tree a
        commit rewrites grows with the vault (docs/file-format.md, "Where files go").
        """
        memory_id = self._free_id(workspace, body)
        memory = Memory(
            id=memory_id,
            workspace=workspace,
            body=body,
            kind=kind,
            keywords=keywords,
            source=source,
            created=self._timestamp(),
        )
        return memory_path(memory), memory

    def write_memory(
        self,
        path: str,
        memory: Memory,
        message: str,
        source: str,
        basis: Memory | None = None,
        *,
        allow_secret: bool = False,
    ) -> str:
        """Write one memory atomically, commit it, and index it (the caller holds the lock).

        `basis` is the memory as the caller read it. A person's uncommitted edit of the file
        is committed first, on its own; if that edit came after the caller read the file,
        memstore's change is merged into it by the merge rules instead of overwriting it.
        If the commit fails, the file is put back as it was: a failed write changes nothing.
        A file a person left holding a credential is refused before anything is written
        (SecretError), even with `allow_secret`: a person's `add --allow-secret` vouches for
        the add's own text, never for another uncommitted edit of the file.
        """
        trailers = Trailers(source, self.settings.session, self.settings.host)
        held = self.git.secrets_among([path])
        if held:
            raise SecretError(secret_message(path, held[path]))
        self.commit_edits([path])
        before = self.git.read_work_file(path)
        data = self._render_over(path, before, memory, basis)
        with self.writing({path: data}):
            self.vault.write_bytes_atomic(path, data)
            crash_point("memory-written")
            try:
                commit = self.git.commit(
                    message, trailers, add=(path,), defer_index=True, allow_secret=allow_secret
                )
            except (VaultError, SecretError):
                self._put_back(path, before)
                raise
        self._stage_later()
        in_step = self._vectors_in_step()
        self.indexer.record(path, parse_memory(data.decode("utf-8"), path=path))
        if in_step:  # embed the memory written, not the vault
            self._vectors(locked=True, written=[path])
        return commit

    def _render_over(
        self, path: str, before: bytes | None, memory: Memory, basis: Memory | None = None
    ) -> bytes:
        """The file's bytes for `memory`: an existing file keeps every line it does not
        change (a person's comments, key order and quoting); a file a person changed since
        `basis` was read gets memstore's change merged in."""
        if before is None:
            return render_memory(memory).encode("utf-8")
        try:
            text = before.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InvalidInputError(
                f"{path} is not valid UTF-8; fix its encoding before memstore changes it"
            ) from err
        on_disk = parse_memory(text, path=path)
        if basis is not None and on_disk != basis:
            ours = render_memory(memory).encode("utf-8")
            merged = merge_file(path, render_memory(basis).encode("utf-8"), ours, before)
            return merged.data if merged.data is not None else ours
        return render_changes(text, on_disk, memory).encode("utf-8")

    @contextlib.contextmanager
    def writing(self, files: Mapping[str, bytes | None]) -> Iterator[None]:
        """Journal the files about to be written (path → the bytes memstore writes, None
        for a deletion) until their commit is made or given up (the caller holds the lock).

        A process killed in between is undone by the next one — only where the file still
        holds what memstore wrote: the write was never reported, and anything else on disk
        is a person's, kept for an edit commit.
        """
        self.note_writing(files)
        try:
            yield
        finally:
            self.note_writing({})

    def note_writing(self, files: Mapping[str, bytes | None]) -> None:
        """Record the files written but not yet committed (empty: none); see `writing`."""
        self.vault.write_state(
            WRITING, "\n".join(f"{_digest(data)} {path}" for path, data in files.items())
        )

    def _undo_killed_write(self) -> None:
        journal = [line.partition(" ") for line in self.vault.read_state(WRITING).splitlines()]
        # A garbled journal must never make this touch a file outside the vault's memories.
        entries = [(path, digest) for digest, _, path in journal if _is_memory_path(path)]
        if not entries:
            if journal:
                self.vault.write_state(WRITING, "")
            return
        undone, kept = [], []
        head = self.git.head()
        for folder in sorted({path.rpartition("/")[0] for path, _ in entries}):
            self.vault.remove_scratch(folder)  # a temp file the kill left before its rename
        for path, digest in entries:
            committed, now = self.git.read_at(head, path), self.git.read_work_file(path)
            if now == committed:
                continue  # the commit was made, or nothing was written yet
            if _digest(now) != digest:
                kept.append(path)  # changed since the killed write: a person's, never undone
                continue
            self._put_back(path, committed)
            undone.append(path)
        paths = [path for path, _ in entries]
        try:
            restaged = self.git.repair_index(paths)
        except VaultError as err:
            log.warning("%s; the next memstore command tries again", err)
            return  # the journal stays: the next lock holder repairs the index
        self.vault.write_state(WRITING, "")
        _report_healed(undone, kept, restaged)

    def _put_back(self, path: str, data: bytes | None) -> None:
        if data is None:
            self.vault.path(path).unlink(missing_ok=True)
        else:
            self.vault.write_bytes_atomic(path, data)

    @_serialized
    def _timestamp(self) -> str:
        return self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")

    @_serialized
    def flush_usage(self) -> int:
        """Write pending recall counts into the memory files, in one commit; return how many."""
        with self.vault.lock(self.settings.lock_timeout):
            return self._flush_usage_locked()

    def tidy(self) -> None:
        """Flush recall counters, pack git history past git's own threshold and compact an
        index of many segments: what a long-running shell (serve, watch) does every few
        minutes."""
        self.flush_usage()
        if remote.needs_packing(self.vault.root):
            with self.vault.lock(self.settings.lock_timeout):
                remote.pack(self.vault.root, self.settings.env, auto=True)
        with self._mutex:
            crowded = self.indexer.search.needs_compacting()
        if crowded:
            self.compact_index()

    def compact_index(self) -> int:
        """Merge the index into one segment; return how many it had.

        Seconds at 10,000 memories, so it works on an index object of its own and leaves
        the store to other threads: searches go on reading the segments they have until
        it commits. The vault lock keeps memstore's writers out meanwhile.
        """
        with self.vault.lock(self.settings.lock_timeout):
            own = SearchIndex.open(self.indexer.search.root, create=False)
            try:
                before = own.segment_count()
                own.compact()
            finally:
                own.close()
        return before

    def replica(self) -> str:
        """Return this clone's name in the files' per-replica counters (`seen_by`).

        The host's name and a random tag, kept under .memstore/state with the vault's path:
        two clones on one host, or a vault copied elsewhere, count apart. A new name is
        always safe (its entry starts at 0); only two clones sharing one would lose a count.
        The path is compared resolved: a vault reached through a symlink, or spelled another
        way, keeps its name (each new one would add an entry to every memory it counts).
        """
        if self._replica is not None:
            return self._replica
        root = os.path.realpath(self.vault.root)
        name, _, where = self.vault.read_state(REPLICA).partition(" ")
        if not name or os.path.realpath(where) != root:
            host = re.sub(r"[^a-z0-9.-]+", "-", self.settings.host.lower()).strip("-.") or "host"
            tag = base64.b32encode(os.urandom(5)).decode("ascii").lower()[:4]
            name = f"{host[:40]}-{tag}"
            self.vault.write_state(REPLICA, f"{name} {root}")
        self._replica = name
        return name

    def _flush_usage_locked(self) -> int:
        pending = self.usage.pending()
        flushed = dict(pending)
        written: list[tuple[str, Memory]] = []
        found = {
            memory_id: [e for e in self.indexer.by_id_prefix(memory_id) if e.id == memory_id]
            for memory_id in pending
        }
        # A person's edit of a recalled memory is committed on its own, not in the flush.
        paths = [entries[0].path for entries in found.values() if entries]
        self.commit_edits(paths)
        # A file left uncommitted for a credential is not rewritten: its counts wait for it.
        held = set(self.git.changed_paths(paths)) if paths else set()
        for memory_id, (count, last) in pending.items():
            entries = found[memory_id]
            if not entries or not self.vault.path(entries[0].path).is_file():
                continue  # forgotten meanwhile: its counts go with it
            if entries[0].path in held:
                del flushed[memory_id]
                continue
            current = self.vault.read(entries[0].path)
            if not current.has_front_matter or current.problem:
                continue  # a file memstore did not write is never rewritten for a counter
            updated = replace(
                tally(current, "recalled", self.replica(), count),
                last_recalled=max(current.last_recalled, last),
            )
            written.append((entries[0].path, updated))
        befores = {path: self.git.read_work_file(path) for path, _ in written}
        files = {path: self._render_over(path, befores[path], m) for path, m in written}
        with self.writing(files):
            for path, data in files.items():
                self.vault.write_bytes_atomic(path, data)
            crash_point("memory-written")
            if written:
                try:
                    self.git.commit(
                        f"recall: usage of {len(written)} "
                        f"{'memory' if len(written) == 1 else 'memories'}",
                        self.trailers,
                        add=tuple(files),
                    )
                except (VaultError, SecretError):  # a refused commit leaves nothing written
                    for path, old in befores.items():
                        self._put_back(path, old)
                    raise
            self.indexer.record_all(dict(written))
        self.usage.clear(flushed)
        return len(written)

    @_serialized
    def set_remote(self, url: str, name: str = "origin") -> list[str]:
        """Point the vault's remote at `url` (added if missing) and set up a plain `git pull`
        (GitRepo.prepare_plain_git); return the git settings that changed."""
        remote.set_remote(self.vault.root, name, url, self.settings.env)
        with self.vault.lock(self.settings.lock_timeout):
            return self.git.prepare_plain_git(name)

    def remote_name(self) -> str:
        """Return the remote sync uses by default: the one the branch tracks (`remote add
        NAME URL` sets it), else origin."""
        return self.git.tracked_remote() or "origin"

    def remote_url(self, name: str = "") -> str:
        return remote.remote_url(self.vault.root, name or self.remote_name(), self.settings.env)

    @_serialized
    def sync(
        self,
        name: str = "",
        progress: Progress | None = None,
        options: SyncOptions = SyncOptions(),
    ) -> tuple[SyncOutcome, int, CatchUp]:
        """Commit edits and usage, fetch, merge with memstore's rules, push, catch up the
        index (`progress` follows the indexing of what the pull brought). `name`: the
        remote (default: the one the branch tracks, else origin)."""
        name = name or self.remote_name()
        self.ensure_merge_driver()
        with self.vault.lock(self.settings.lock_timeout):
            self.catch_up_locked()
            flushed = self._flush_usage_locked()
        outcome = sync(
            self.vault,
            self.git,
            self.trailers,
            self.settings.env,
            name,
            lambda: self.vault.lock(self.settings.lock_timeout),
            options,
        )
        if outcome.rebased or outcome.purged_here:
            # A purge: the index keeps a deleted memory's text in its segment files until
            # they merge, so it is rebuilt, as forget --purge rebuilds it.
            caught_up = self.reindex(progress)
        with self.vault.lock(self.settings.lock_timeout):
            if not (outcome.rebased or outcome.purged_here):
                caught_up = self.catch_up_locked(progress=progress)
            if remote.needs_packing(self.vault.root):
                remote.pack(self.vault.root, self.settings.env, auto=True)
            plain_git = self.git.prepare_plain_git(name)  # a vault set up before it did this
        if plain_git:
            log.warning("set up a plain git pull in this vault: %s", ", ".join(plain_git))
        return outcome, flushed, caught_up

    @_serialized
    def update(
        self, id_prefix: str, change: Callable[[Memory], Memory], verb: str
    ) -> tuple[Memory, bool]:
        """Apply `change` to one memory and commit it as `verb(workspace): …`.

        Returns the memory and whether anything changed (an unchanged memory is not
        rewritten, so commands like promote are idempotent).
        """
        with self.vault.lock(self.settings.lock_timeout):
            entry = self.resolve_locked(id_prefix)
            current = self.vault.read(entry.path)
            if not current.has_front_matter or current.problem:
                raise InvalidInputError(
                    f"{entry.path} has no front matter memstore can update; add front matter by "
                    "hand (see docs/file-format.md) or fix the reported problem first"
                )
            updated = change(current)
            if updated == current:
                return current, False
            message = f"{verb}({current.workspace}): {summary(current.body)}"
            self.write_memory(entry.path, updated, message, self.settings.source, basis=current)
            return updated, True

    def confirm(self, id_prefix: str) -> Memory:
        """Record that a person vouches for a memory: it decays more slowly from now on."""
        memory, _ = self.update(
            id_prefix, lambda m: tally(m, "confirmed", self.replica()), "confirm"
        )
        return memory

    @_serialized
    def delete(self, entry: Entry, message: str) -> str:
        """Delete a memory's file in one commit and drop it from the index (lock held by caller)."""
        self.commit_edits([entry.path])
        before = self.git.read_work_file(entry.path)
        with self.writing({entry.path: None}):
            try:
                self.vault.path(entry.path).unlink()
            except OSError as err:
                raise VaultError(f"cannot delete {entry.path}: {err.strerror}") from err
            crash_point("memory-written")
            try:
                commit = self.git.commit(
                    message, self.trailers, remove=(entry.path,), defer_index=True
                )
            except VaultError:
                self._put_back(entry.path, before)
                raise
        self._stage_later()
        self.indexer.remove([entry.path])
        note_forgotten(self.vault, entry.path, entry.id)  # sync says if it comes back
        return commit

    @_serialized
    def reindex(
        self, progress: Progress | None = None, embedding: Progress | None = None
    ) -> CatchUp:
        """Rebuild the index from the files alone; with the semantic view on, embed the
        memories its vectors lack (`embedding` reports that step)."""

        def step(done: int, total: int) -> None:
            if done * 2 >= total:
                crash_point("reindex")
            if progress is not None:
                progress(done, total)

        with self.vault.lock(self.settings.lock_timeout):
            self.close()
            self._forget_index_caches()
            self._indexer, result = rebuild(self.vault, step)
            if ingested(self.vault.state_dir):  # source trees are chunked again from scratch
                self._writable_code().rebuild()
            self._vectors(locked=True, progress=embedding)
            return result

    # --- the semantic view (optional, off by default: docs/retrieval.md) ----------------

    def _vectors_in_step(self) -> bool:
        """Say whether this request's semantic view matches the index as it is now."""
        choice = self.settings.semantic
        return bool(choice) and self._vectors_at.get(choice) == self.indexer.search.version()

    def _vectors(
        self,
        *,
        locked: bool,
        written: Iterable[str] | None = None,
        progress: Progress | None = None,
    ) -> VectorIndex | None:
        """Return this request's semantic view (None when off), in step with the index.

        Vectors are a cache keyed by each memory's content hash: bringing them in step
        embeds only new and changed memories. `written` names the only files changed since
        the view was last in step (a write's fast path); else every hash is compared, which
        happens once per index change. A reader (`locked` False) that finds the vault lock
        taken uses the view as it is: readers never wait, and the writer embeds.

        Raises:
            InvalidInputError: the extra is not installed, or the model folder holds no model.
        """
        choice = self.settings.semantic
        if not choice:
            return None
        vectors = self._vector_views.get(choice)
        if vectors is None:
            model = load_embedder(None if choice == SEMANTIC_ON else Path(choice))
            vectors = VectorIndex.open(self.vault.state_dir / "semantic", model)
            self._vector_views[choice] = vectors
        version = self.indexer.search.version()
        if self._vectors_at.get(choice) == version:
            return vectors
        if locked:
            self._embed(vectors, written, progress, lambda: contextlib.nullcontext(True))
        elif not self._embed(vectors, None, progress, self.vault.try_lock):
            return vectors  # a writer holds the lock: the next search goes on
        self._vectors_at[choice] = version
        return vectors

    def _embed(
        self,
        vectors: VectorIndex,
        written: Iterable[str] | None,
        progress: Progress | None,
        lock: Callable[[], contextlib.AbstractContextManager[bool]],
    ) -> bool:
        """Embed what the index holds and the vectors lack; say whether all of it was done.

        Each batch takes `lock` on its own, so a reader embedding a whole vault (the first
        search with the view on) lets a waiting writer in between batches, and stops (False)
        when it cannot take the lock back.
        """
        entries = self.indexer.entries() if written is None else self.indexer.by_path(list(written))
        memories = {e.path: (e.hash, e.workspace) for e in entries}
        held = vectors.digests()
        missing = [path for path, (digest, _) in memories.items() if held.get(path) != digest]
        gone = [] if written is not None else [path for path in held if path not in memories]
        if len(missing) > EMBED_NOTICE:
            log.warning(
                "semantic view: embedding %d memories (once; memstore reindex shows progress)",
                len(missing),
            )
        with lock() as taken:
            if not taken:
                return False
            vectors.drop(gone)
        for start in range(0, len(missing), EMBED_BATCH):
            paths = missing[start : start + EMBED_BATCH]
            documents = self.indexer.search.get(paths)
            passages = [
                Passage(path, *memories[path], normalize_text(documents[path].content))
                for path in paths
                if path in documents
            ]
            with lock() as taken:
                if not taken:
                    return False
                vectors.put(passages)
            if progress is not None:
                progress(start + len(paths), len(missing))
        return True

    @contextlib.contextmanager
    def acting_for(self, settings: Settings) -> Iterator[Store]:
        """Serve one request with its caller's settings (source, session, host, environment),
        holding the store meanwhile; the daemon's own settings return afterwards."""
        if settings.vault != self.settings.vault:
            raise VaultError(f"this store serves {self.settings.vault}, not {settings.vault}")
        with self._mutex:
            saved = self.settings, self.trailers
            trailers = Trailers(settings.source, settings.session, settings.host)
            self.settings, self.trailers = settings, trailers
            try:
                yield self
            finally:
                self.settings, self.trailers = saved


def _digest(data: bytes | None) -> str:
    return hashlib.sha1(data).hexdigest() if data is not None else "-"


def _report_healed(undone: list[str], kept: list[str], restaged: list[str]) -> None:
    def names(paths: list[str]) -> str:
        return ", ".join(paths[:3]) + (" …" if len(paths) > 3 else "")

    if undone:
        log.warning(
            "undid an uncommitted write of %s by a process that was killed (it reported nothing)",
            names(undone),
        )
    if kept:
        log.warning(
            "kept %s as found: a killed process was writing it and someone changed it since",
            names(kept),
        )
    if restaged and not undone:
        log.warning(
            "repaired git's index for %s, which a process killed mid-commit left stale",
            names(restaged),
        )


def _is_memory_path(path: str) -> bool:
    parts = path.split("/")
    return (
        len(parts) >= 2
        and path.endswith(".md")
        and "\0" not in path
        and "\ufffd" not in path
        and all(part and not part.startswith(".") for part in parts)
    )


def memory_path(memory: Memory) -> str:
    """Return where a new memory's file goes: `<workspace>/<YYYY-MM>/<slug>-<id>.md`.

    A trace (an agent's closing message, "Found it: the …") is named by its most specific
    words rather than its first ones.
    """
    slug = trace_slug(memory.body) if memory.kind == "trace" else slugify(memory.body)
    return f"{memory.workspace}/{memory.created[:7]}/{slug}-{memory.id}.md"


def check_id(id_prefix: str) -> str:
    """Return `id_prefix` normalized, or raise InvalidInputError if it cannot be an id."""
    prefix = id_prefix.strip().lower()
    if not re.fullmatch(r"[a-z0-9]{1,40}", prefix):
        raise InvalidInputError(f"{id_prefix!r} is not a memory id; ids look like k3xq9v2m")
    return prefix


def check_text(text: str) -> str:
    """Return the body to store for `text`, or raise InvalidInputError."""
    if "\0" in text:
        raise InvalidInputError("memory text contains NUL bytes; store plain text, not binary data")
    size = len(check_encodable(text, "memory text").encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise InvalidInputError(
            f"memory text is {size:,} bytes; the limit is {MAX_TEXT_BYTES:,}: store a short "
            "summary and point at the document instead"
        )
    body = text.strip()
    if not body:
        raise InvalidInputError(
            'memory text is empty; pass the text to remember, e.g. memstore add "…"'
        )
    return body.replace("\r\n", "\n") + "\n"


def check_encodable(text: str, what: str) -> str:
    """Return `text` if it can be written as UTF-8, else raise InvalidInputError.

    Invalid UTF-8 on a command line or stdin reaches Python as lone surrogates.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InvalidInputError(
            f"{what} is not valid UTF-8 (character {err.start + 1}); pass plain UTF-8 text"
        ) from err
    return text


def check_keywords(keywords: tuple[str, ...]) -> tuple[str, ...]:
    """Return cleaned, distinct keywords, or raise InvalidInputError."""
    cleaned: dict[str, None] = {}
    for raw in keywords:
        for word in raw.split(","):
            word = " ".join(check_encodable(word, "a keyword").split()).lower()
            if not word:
                continue
            if len(word) > MAX_KEYWORD_CHARS or "\0" in word:
                raise InvalidInputError(
                    f"keyword {word[:20]!r}… is too long; keep keywords under {MAX_KEYWORD_CHARS} characters"
                )
            cleaned.setdefault(word, None)
    return tuple(cleaned)


def check_source(source: str) -> str:
    """Return `source` if it is a valid agent or person name, else raise InvalidInputError."""
    if not _SOURCE.match(source):
        raise InvalidInputError(
            f"invalid --source {source!r}; use a short name such as claude-code"
        )
    return source
