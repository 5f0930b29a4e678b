"""`memstore edit`: a person edits one memory in their editor; only a valid file is saved.

The editor works on a copy outside the vault, so a half-saved or broken file never
reaches it. What comes back is checked (front matter readable, id unchanged, kind known,
text not empty); a valid edit is written through the write lane — vault lock, journal,
atomic write, one `edit(<workspace>): …` commit by `editor`, index updated at once.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from memstore.core.codec import parse_memory
from memstore.core.errors import InvalidInputError, NotFoundError, VaultError
from memstore.core.faults import crash_point
from memstore.core.merge import merge_file
from memstore.core.model import KINDS, Memory, summary
from memstore.service.checks import check_keywords, check_text
from memstore.service.store import Store
from memstore.service.transaction import Transaction
from memstore.vault.edits import EDITOR
from memstore.vault.git import Trailers

T = TypeVar("T")

FALLBACK_EDITORS = ("editor", "nano", "vi")  # `editor`: Debian's choice of the system's editor


@dataclass(frozen=True)
class Draft:
    """One memory as it was when the edit began, and the copy the editor works on."""

    id: str
    path: str  # vault-relative
    original: bytes
    before: Memory
    copy: Path


@dataclass(frozen=True)
class Edited:
    """What an edit did: the commit ('' when nothing changed) and whether a change made
    meanwhile by someone else was merged into it."""

    id: str
    path: str
    commit: str
    merged: bool = False


def choose_editor(visual: str, editor: str, *, terminal: bool) -> tuple[list[str], str]:
    """Return the editor's command line and where it came from ($VISUAL, $EDITOR, a default).

    Raises InvalidInputError when neither is set and no default editor is installed, or
    there is no `terminal` for one (vi started from a script or an agent would hang).
    """
    for value, origin in ((visual, "$VISUAL"), (editor, "$EDITOR")):
        if value.strip():
            return shlex.split(value), origin
    if not terminal:
        raise InvalidInputError(
            "no editor to open: $VISUAL and $EDITOR are unset and there is no terminal for "
            "a default one; set one, e.g. EDITOR='code --wait'"
        )
    for name in FALLBACK_EDITORS:
        if shutil.which(name):
            return [name], "the default editor"
    raise InvalidInputError(
        "no editor to open: $VISUAL and $EDITOR are unset and none of "
        f"{', '.join(FALLBACK_EDITORS)} is installed; set one, e.g. export EDITOR=nano"
    )


def run_editor(command: list[str], origin: str, path: Path) -> None:
    """Run the editor on `path` and wait for it; raise InvalidInputError if it cannot run
    or exits with an error (the edit is then given up)."""
    name = command[0] if command else ""
    try:
        done = subprocess.run([*command, str(path)], check=False)
    except (OSError, IndexError) as err:
        reason = getattr(err, "strerror", None) or "empty command"
        raise InvalidInputError(
            f"cannot run the editor {name!r} (from {origin}): {reason}; "
            "set $VISUAL or $EDITOR to an editor on your PATH, e.g. export EDITOR=nano"
        ) from err
    if done.returncode != 0:
        raise InvalidInputError(
            f"the editor {name!r} exited with status {done.returncode}; the edit was given up"
        )


def start_edit(store: Store, id_prefix: str, scratch: Path) -> Draft:
    """Copy a memory's file into `scratch` for the editor; the vault is not touched."""
    entry = store.resolve(id_prefix)
    data = store.git.read_work_file(entry.path)
    if data is None:
        raise NotFoundError(f"{entry.path} is gone; run 'memstore doctor --fix'")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInputError(
            f"{entry.path} is not valid UTF-8; fix its encoding before editing it here"
        ) from err
    copy = scratch / entry.path.rsplit("/", 1)[-1]
    copy.write_bytes(data)
    return Draft(entry.id, entry.path, data, parse_memory(text, path=entry.path), copy)


def check_edit(draft: Draft, data: bytes) -> Memory:
    """Return the edited memory, or raise InvalidInputError saying in one line what is
    wrong with it (nothing is written either way)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInputError(
            f"the file is not valid UTF-8 (byte {err.start + 1}); save it as UTF-8"
        ) from err
    after = parse_memory(text, path=draft.path)
    before = draft.before
    if after.problem:
        kinds = f" (kinds: {', '.join(KINDS)})" if "kind" in after.problem else ""
        named = "front matter" in after.problem  # "malformed YAML front matter: …"
        raise InvalidInputError(f"{'' if named else 'front matter: '}{after.problem}{kinds}")
    if before.has_front_matter and not after.has_front_matter:
        raise InvalidInputError(
            "the front matter is gone; keep the block between the two '---' lines at the top"
        )
    if after.id != before.id and not before.problem:
        raise InvalidInputError(
            f"the id changed from {before.id!r} to {after.id!r}; ids never change: "
            f"put back 'id: {before.id}'"
        )
    check_text(after.body)
    check_keywords(after.keywords)
    return after


def save_edit(store: Store, draft: Draft, data: bytes) -> Edited:
    """Write a checked edit through the write lane: one commit, the index updated at once.

    A change someone else made to the file while the editor was open is merged with
    memstore's rules, never overwritten. Raises NotFoundError if the memory was removed
    meanwhile.
    """
    memory = check_edit(draft, data)
    with store.transaction(catch_up=False) as tx:
        path = _locate(tx, draft)
        tx.commit_edits([path])  # a hand edit made meanwhile gets its own commit first
        current = store.git.read_work_file(path)
        merged = current != draft.original
        if merged:
            data = merge_file(path, draft.original, data, current).data or data
            memory = parse_memory(data.decode("utf-8"), path=path)
        if data == current:
            return Edited(draft.id, path, "", merged)
        message = f"edit({memory.workspace}): {summary(memory.body)}"
        trailers = Trailers(EDITOR, "", store.settings.host)  # a person's: no session
        with tx.writing({path: data}):
            store.vault.write_bytes_atomic(path, data)
            crash_point("memory-written")
            try:
                commit = tx.commit(message, trailers=trailers, add=(path,))
            except VaultError:
                if current is not None:
                    store.vault.write_bytes_atomic(path, current)
                raise
        store.indexer.record(path, memory)
    return Edited(draft.id, path, commit, merged)


def _locate(tx: Transaction, draft: Draft) -> str:
    """Return where the memory is now (it may have moved)."""
    try:
        return tx.resolve(draft.id).path
    except NotFoundError as err:
        raise NotFoundError(
            f"memory {draft.id} was removed while you edited it; nothing was saved "
            f"(your text is in {draft.copy})"
        ) from err


def edit_memory(
    open_store: Callable[[], contextlib.AbstractContextManager[Store]],
    id_prefix: str,
    edit: Callable[[Path], None],
    retry: Callable[[str], bool],
) -> Edited:
    """Let a person edit one memory: `edit(copy)` runs the editor; on a mistake,
    `retry(problem)` says whether to open the same text again.

    Returns what was saved (commit '' when the text came back unchanged). Raises
    InvalidInputError, saving nothing, when the person gives up on an invalid file; their
    text then stays in the copy, which the message names.
    """
    with editing_copy(open_store, id_prefix, "memstore-edit-") as draft:
        edited = edit_until_valid(open_store, draft, edit, retry, check_edit, save_edit)
        return edited or Edited(draft.id, draft.path, "")


@contextlib.contextmanager
def editing_copy(
    open_store: Callable[[], contextlib.AbstractContextManager[Store]], id_prefix: str, prefix: str
) -> Iterator[Draft]:
    """Yield a draft of one memory whose copy lives in a fresh scratch folder.

    The folder goes when the body finishes (saved, or nothing changed) and when the copy
    holds nothing the vault does not; a person's unsaved text is never deleted.
    """
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    draft: Draft | None = None
    finished = False
    try:
        with open_store() as store:
            draft = start_edit(store, id_prefix, scratch)
        yield draft
        finished = True
    finally:
        if finished or not holds_new_text(draft):
            shutil.rmtree(scratch, ignore_errors=True)


def edit_until_valid(
    open_store: Callable[[], contextlib.AbstractContextManager[Store]],
    draft: Draft,
    edit: Callable[[Path], None],
    retry: Callable[[str], bool],
    check: Callable[[Draft, bytes], object],
    save: Callable[[Store, Draft, bytes], T],
) -> T | None:
    """Open the editor on the draft's copy until `check` accepts the text, then `save` it.

    Returns None when the text came back unchanged. On a text `check` refuses,
    `retry(problem)` says whether to open it again; giving up raises InvalidInputError
    naming the copy that keeps the person's text.
    """
    while True:
        try:
            edit(draft.copy)
        except InvalidInputError as err:
            if holds_new_text(draft):
                raise InvalidInputError(f"{err} (your text is in {draft.copy})") from err
            raise
        data = draft.copy.read_bytes()
        if data == draft.original:
            return None
        try:
            check(draft, data)
        except InvalidInputError as err:
            if retry(str(err)):
                continue
            raise InvalidInputError(
                f"{err}; nothing was saved (your text is in {draft.copy})"
            ) from err
        with open_store() as store:
            return save(store, draft, data)


def holds_new_text(draft: Draft | None) -> bool:
    """Say whether the editor's copy holds text the vault does not (kept, never lost)."""
    if draft is None:
        return False
    try:
        return draft.copy.read_bytes() != draft.original
    except OSError:  # the copy is gone: nothing left to keep
        return False
