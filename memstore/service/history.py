"""History from git: who wrote what, a memory or a search as of a date, undoing a session."""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

from memstore.catalog.indexer import rebuild
from memstore.catalog.retrieval import find, with_corrections
from memstore.core.errors import InvalidInputError, NotFoundError
from memstore.core.merge import merge_file
from memstore.core.model import GLOBAL, SearchResult, check_workspace
from memstore.service.store import Store
from memstore.vault.files import Vault
from memstore.vault.git_log import Commit


@dataclass(frozen=True)
class Change:
    """One commit as `memstore log` shows it."""

    commit: str
    time: str
    summary: str
    source: str
    session: str
    host: str


def parse_date(text: str, *, end_of_day: bool = True) -> datetime:
    """Read YYYY-MM-DD (the end of that day, UTC) or an ISO date-time; one-line error otherwise."""
    try:
        if len(text) == 10:
            day = datetime.fromisoformat(text).date()
            return datetime.combine(day, time.max if end_of_day else time.min, tzinfo=UTC)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as err:
        raise InvalidInputError(
            f"cannot read the date {text!r}; use YYYY-MM-DD or 2026-11-29T14:00:00Z"
        ) from err
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_AGE = re.compile(r"^(\d{1,5})(m|min|h|d|w)$")  # 30m: minutes (no age counts months)
_AGE_UNITS = {
    "m": timedelta(minutes=1),
    "min": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}


def parse_since(value: str, now: datetime, *, option: str = "--since") -> str:
    """Return the ISO cutoff for `--since` (list, log, view) and the moment of `--as-of`
    (search, show): a date (YYYY-MM-DD, kept as it is), an age (30m, 12h, 7d, 2w: that long
    before `now`) or an ISO date-time. `option` names the option in the error."""
    age = _AGE.match(value.strip().lower())
    if age:
        cutoff = now - int(age.group(1)) * _AGE_UNITS[age.group(2)]
        return cutoff.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        return datetime.strptime(value.strip(), "%Y-%m-%d").strftime("%Y-%m-%d")
    except ValueError:
        pass
    try:
        return parse_date(value.strip()).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except InvalidInputError:
        raise InvalidInputError(
            f"{option} {value!r} is neither a date nor an age; use e.g. 2026-11-01, "
            "2026-11-01T14:30, 7d, 12h or 30m"
        ) from None


def _count(n: int, noun: str) -> str:
    """Return "1 commit" / "2 commits" (a commit subject; the shells use output.count)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _stamp(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def no_session(session: str) -> str:
    return (
        f"no commit carries Memstore-Session: {session}; 'memstore log' shows each commit's session"
    )


class History:
    """Time travel and review over one store's git history."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def memory_paths(self, id_prefix: str) -> set[str]:
        """Every path a memory has had (its file name ends in -<id>.md)."""
        store = self.store
        try:
            entry = store.resolve(id_prefix)
            memory_id, paths = entry.id, {entry.path}
        except NotFoundError:
            memory_id, paths = id_prefix.strip().lower(), set()
        paths |= store.git.paths_ever(f"-{memory_id}.md")
        if not paths:
            raise NotFoundError(
                f"no memory with id {id_prefix!r} now or in the history; run 'memstore log' to find ids"
            )
        return paths

    def log(
        self, id_prefix: str | None = None, *, source: str | None = None, since: str | None = None
    ) -> list[Change]:
        """Commits newest first, filtered by memory, by source (agent) and by date."""
        paths = self.memory_paths(id_prefix) if id_prefix else None
        after = parse_date(since, end_of_day=False).timestamp() if since else None
        changes = []
        for commit in self.store.git.history():
            if paths is not None and not commit.paths & paths:
                continue
            if source and commit.trailer("Source") != source:
                continue
            if after is not None and commit.time < after:
                continue
            changes.append(
                Change(
                    commit.id,
                    _stamp(commit.time),
                    commit.message.splitlines()[0],
                    commit.trailer("Source"),
                    commit.trailer("Session"),
                    commit.trailer("Host"),
                )
            )
        return changes

    def commit_at(self, when: str) -> Commit:
        """The newest commit made at or before `when`."""
        moment = parse_date(when).timestamp()
        first: Commit | None = None
        for commit in self.store.git.history():  # newest first: the last seen is the first
            if commit.time <= moment:
                return commit
            first = commit
        starts = f"at {_stamp(first.time)}: pass --as-of that or later" if first else "later"
        raise NotFoundError(
            f"the vault has no commit on or before {when}; its history starts {starts}"
        )

    def show_as_of(self, id_prefix: str, when: str) -> tuple[str, str]:
        """The memory's file as it was at `when`: (path, text)."""
        commit = self.commit_at(when)
        for path in sorted(self.memory_paths(id_prefix)):
            data = self.store.git.read_at(commit.id, path)
            if data is not None:
                return path, data.decode("utf-8", errors="replace")
        raise NotFoundError(f"memory {id_prefix!r} did not exist on {when}")

    def search_as_of(self, query: str, when: str, *, workspace: str | None, k: int) -> SearchResult:
        """Recall over the vault as it was at `when`, from that commit, work tree untouched."""
        commit = self.commit_at(when)
        scope = None if workspace is None else {check_workspace(workspace), GLOBAL}
        root = Path(tempfile.mkdtemp(prefix="memstore-asof-"))
        try:
            for path, data in self.store.git.files_at(commit.id).items():
                if "/" in path and path.endswith(".md"):
                    (root / path).parent.mkdir(parents=True, exist_ok=True)
                    (root / path).write_bytes(data)
            indexer, _ = rebuild(Vault(root))
            try:
                moment = datetime.fromtimestamp(commit.time, UTC) + timedelta(seconds=1)
                result = find(indexer, query, scope, k, moment)
                # marked and ranked as a search of that day would: corrections come first
                hits = with_corrections(indexer, result.hits, k, scope)
                return replace(result, hits=tuple(hits))
            finally:
                indexer.close()
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def revert_session(self, session: str) -> tuple[str, list[str], list[str]]:
        """Undo every change one agent session made, in one commit; later work by others stays.

        Returns (commit, paths changed, paths kept because others edited them since).
        """
        store = self.store
        commits = [c for c in store.git.history() if c.trailer("Session") == session]
        if not commits:
            raise NotFoundError(no_session(session))
        # A sync's merge brings in what other machines wrote: undoing it would delete their
        # memories here, and the next sync everywhere. Revert undoes a session's own writes.
        commits = [c for c in commits if not c.merge]
        if not commits:
            raise InvalidInputError(
                f"session {session} only merged other machines' memories at a sync; revert "
                "undoes an agent's own writes, never a merge (run 'memstore log' to find the "
                "session that wrote what you want undone)"
            )
        with store.transaction(catch_up=False) as tx:
            # A person's uncommitted edit is committed on its own first: the revert then
            # sees it as later work by someone else and keeps it.
            tx.commit_edits({p for c in commits for p in c.paths})
            state: dict[str, bytes | None] = {}
            kept: list[str] = []
            for commit in commits:  # newest first: undo in reverse order
                for path in sorted(commit.paths):
                    current = state[path] if path in state else _read(store.vault.path(path))
                    after = store.git.read_at(commit.id, path)
                    before = store.git.read_at(commit.parent, path)
                    merged = merge_file(path, after, current, before)
                    if merged.note == "kept":
                        kept.append(path)
                    state[path] = merged.data
            changed = [p for p, data in state.items() if data != _read(store.vault.path(p))]
            store.git.check_secrets({p: d for p in changed if (d := state[p]) is not None})
            for path in changed:
                data = state[path]
                if data is None:
                    store.vault.path(path).unlink(missing_ok=True)
                else:
                    store.vault.write_atomic(path, data.decode("utf-8"))
            trailers = tx.trailers
            message = (
                f"revert(session {session}): {_count(len(commits), 'commit')}, "
                f"{_count(len(changed), 'file')}"
            )
            made = ""
            if changed:
                added = tuple(p for p in changed if state[p] is not None)
                removed = tuple(p for p in changed if state[p] is None)
                made = tx.commit(message, trailers=trailers, add=added, remove=removed)
            tx.catch_up()
        return made, changed, sorted(set(kept))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
