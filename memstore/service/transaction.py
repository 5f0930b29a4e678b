"""One write to the vault: the lock held, the index caught up, one commit, the index updated."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from memstore.catalog.indexer import CatchUp, Entry, Indexer, Progress
from memstore.catalog.updater import Moved
from memstore.core.codec import parse_memory, render_changes, render_memory
from memstore.core.errors import InvalidInputError, SecretError, VaultError
from memstore.core.faults import crash_point
from memstore.core.model import Caller, Memory
from memstore.service import journal
from memstore.service.checks import check_id
from memstore.vault.edits import NAMED_EDITS_MAX, commit_edits, wait_for_git_commit
from memstore.vault.files import Vault
from memstore.vault.git import GitRepo, Trailers, secret_message

if TYPE_CHECKING:
    from memstore.service.store import Store


class Transaction:
    """The vault held for one write (`with store.transaction(caller) as tx:`).

    Whoever holds one holds the vault's write lock: its methods are the only writes that
    need it. A person's uncommitted edit is committed on its own first (`commit_edits`);
    memstore's own change is then ONE commit (`commit`, or `write_memory` / `delete`, which
    journal, write, commit and update the index); a second commit is refused.
    """

    def __init__(self, store: Store, caller: Caller) -> None:
        self.store = store
        self.caller = caller
        # Checked here, before anything is written: trailers are single lines.
        self.trailers = Trailers(caller.source, caller.session, caller.host)
        self.vault: Vault = store.vault
        self.commits: list[str] = []
        # a commit asked to leave git's index for the stager (GitRepo.commit's defer_index,
        # GitRepo.advance): left only where the index is large; the stager looks which
        self.deferred = False

    @property
    def git(self) -> GitRepo:
        return self.store.git

    @property
    def indexer(self) -> Indexer:
        return self.store.indexer

    def catch_up(
        self,
        workspace: str | None = None,
        progress: Progress | None = None,
        moved: Moved | None = None,
    ) -> CatchUp:
        """Bring the index up to date with the files (of one workspace, or all; `moved`:
        what a checkout of memstore's changed, see Indexer.catch_up)."""
        return self.store.maintenance.catch_up_held(workspace, progress, moved)

    def resolve(self, id_prefix: str) -> Entry:
        """Return the one memory `id_prefix` names, caught up first so a memory written by
        hand since the last catch-up is found."""
        prefix = check_id(id_prefix)
        self.catch_up()
        return self.store.reader.resolve_indexed(id_prefix, prefix)

    def commit_edits(self, paths: Iterable[str] | None) -> list[str]:
        """Commit outside edits among `paths` (None: every file) on their own, before a write
        of memstore's touches them. Returns the commits made. A person's `git commit` under
        way in the vault is waited for first (up to the lock timeout): a commit of
        memstore's meanwhile would make theirs fail."""
        if paths is not None:
            paths = list(paths)
            if not paths:
                return []  # the caller touches no file: it commits nothing
            if len(paths) > NAMED_EDITS_MAX:
                # git's status is cheaper than hashing this many files (a status looks at
                # every file: at 1,000,000 it cost 7.2 s where hashing 606 named files,
                # a sync's counter flush, costs milliseconds)
                paths = None
        settings = self.store.settings
        wait_for_git_commit(self.vault.root, settings.lock_timeout)
        return commit_edits(self.vault, self.git, settings.host, paths)

    def commit(
        self,
        message: str,
        *,
        add: tuple[str, ...] = (),
        remove: tuple[str, ...] = (),
        trailers: Trailers | None = None,
        defer_index: bool = False,
        allow_secret: bool = False,
        clean: frozenset[str] = frozenset(),
    ) -> str:
        """Make this transaction's one commit of memstore's; return its id (`clean`: see
        GitRepo.commit)."""
        if self.commits:
            raise RuntimeError("a transaction commits once; open another for a second commit")
        commit = self.git.commit(
            message,
            trailers or self.trailers,
            add=add,
            remove=remove,
            defer_index=defer_index,
            allow_secret=allow_secret,
            clean=clean,
        )
        self.commits.append(commit)
        self.deferred = self.deferred or defer_index
        return commit

    @contextlib.contextmanager
    def writing(self, files: Mapping[str, bytes | None]) -> Iterator[None]:
        """Journal the files about to be written (path → the bytes memstore writes, None
        for a deletion) until their commit is made or given up.

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
        journal.note_writing(self.vault, files)

    def put_back(self, path: str, data: bytes | None) -> None:
        journal.put_back(self.vault, path, data)

    def write_memory(
        self,
        path: str,
        memory: Memory,
        message: str,
        source: str | None = None,
        basis: Memory | None = None,
        *,
        allow_secret: bool = False,
        clean: frozenset[str] = frozenset(),
    ) -> str:
        """Write one memory atomically, commit it, and index it.

        `basis` is the memory as the caller read it. A person's uncommitted edit of the file
        is committed first, on its own; if that edit came after the caller read the file,
        memstore's change is merged into it by the merge rules instead of overwriting it.
        If the commit fails, the file is put back as it was: a failed write changes nothing.
        A file a person left holding a credential is refused before anything is written
        (SecretError), even with `allow_secret`: a person's `add --allow-secret` vouches for
        the add's own text, never for another uncommitted edit of the file. `clean`: the
        lines the writer's scan found clean (core.secrets.FieldScan), not scanned again.
        """
        caller = self.caller
        trailers = Trailers(source or caller.source, caller.session, caller.host)
        held = self.git.secrets_among([path])
        if held:
            raise SecretError(secret_message(path, held[path]), path=path, kind=held[path])
        self.commit_edits([path])
        before = self.git.read_work_file(path)
        data = self.render_over(path, before, memory, basis)
        # the folder stays known as indexed only if unchanged until now (catalog/listings.py)
        with self.indexer.listings.writing([path]):
            with self.writing({path: data}):
                self.vault.write_bytes_atomic(path, data)
                crash_point("memory-written")
                try:
                    commit = self.commit(
                        message, trailers=trailers, add=(path,), defer_index=True,
                        allow_secret=allow_secret, clean=clean,
                    )  # fmt: skip
                except (VaultError, SecretError):
                    self.put_back(path, before)
                    raise
            vectors = self.store.vectors
            in_step = vectors.in_step()
            self.indexer.record(path, parse_memory(data.decode("utf-8"), path=path))
        if in_step:  # embed the memory written, not the vault
            vectors.view(locked=True, written=[path])
        return commit

    def delete(self, entry: Entry, message: str) -> str:
        """Delete a memory's file in one commit and drop it from the index."""
        self.commit_edits([entry.path])
        before = self.git.read_work_file(entry.path)
        with self.indexer.listings.writing([entry.path]):
            with self.writing({entry.path: None}):
                try:
                    self.vault.path(entry.path).unlink()
                except OSError as err:
                    raise VaultError(f"cannot delete {entry.path}: {err.strerror}") from err
                crash_point("memory-written")
                try:
                    commit = self.commit(message, remove=(entry.path,), defer_index=True)
                except VaultError:
                    self.put_back(entry.path, before)
                    raise
            self.indexer.remove([entry.path])
        from memstore.service.sync import note_forgotten  # not for an add (nor its import)

        note_forgotten(self.vault, entry.path, entry.id)  # sync says if it comes back
        return commit

    def render_over(
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
            from memstore.core.merge import merge_file  # a person's edit meanwhile: rare

            ours = render_memory(memory).encode("utf-8")
            merged = merge_file(path, render_memory(basis).encode("utf-8"), ours, before)
            return merged.data if merged.data is not None else ours
        return render_changes(text, on_disk, memory).encode("utf-8")
