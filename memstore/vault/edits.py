"""Outside edits: files a person changed by hand, committed on their own before memstore's.

A change memstore did not make never rides inside an agent's add, a usage flush, a merge
or a revert: each writer first commits the files it is about to touch if they differ from
HEAD, as `edit(<workspace>): …` with `Memstore-Source: editor` and no session (so
`revert --session` never undoes it). Sync and the watcher commit every outside edit, except
a file whose new lines hold a credential: it stays uncommitted, with one warning naming it;
and neither ever commits an editor's backup or temporary file (`is_persons_file`), nor a
file over LARGE_FILE_BYTES that is no memory (a video dropped in the vault): one warning names
it (`held_large_files` lists them for doctor).
While a person's git command is committing in the vault (`git commit` waiting in its
editor), no edit is committed: their staged files are theirs to commit; and a writer of
memstore's waits for it (`wait_for_git_commit`), since moving HEAD under it fails their commit.
"""

from __future__ import annotations

import fnmatch
import logging
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from memstore.core.errors import VaultError
from memstore.core.model import summary
from memstore.vault.files import Vault
from memstore.vault.git import GitRepo, Trailers, secret_message
from memstore.vault.git_processes import git_committing_in

# Edits among at most this many named paths are looked for by hashing them (~6 µs each);
# more, and git's status of every file is cheaper (~3 µs a file: 20,000 ≈ a 40k vault).
NAMED_EDITS_MAX = 20_000
EDITOR = "editor"
# Editors' backups and temporaries (Emacs `x.md~`, `#x.md#`, `.#x.md`; Vim `.x.md.swp`;
# merge tools' `.orig`/`.rej`; `.tmp`): never a person's edit, never committed by memstore.
EDITOR_SCRATCH = ("*~", "#*#", ".#*", "*.swp", "*.orig", "*.rej", "*.tmp")
# A file larger than this that is not a memory (`.md`) is never committed by memstore: once
# pushed, every clone fetches it for good (git keeps history), and a 2 GB video would be.
LARGE_FILE_BYTES = 10 << 20

log = logging.getLogger(__name__)


def wait_for_git_commit(root: Path, seconds: float) -> None:
    """Wait up to `seconds` while a person's git command is committing in the vault.

    Raises:
        VaultError: it is still under way (a `git commit` with its editor open): memstore's
            commit would move HEAD under it and git would refuse the person's commit.
    """
    deadline = time.monotonic() + seconds
    while (pid := git_committing_in(root)) is not None:
        if time.monotonic() >= deadline:
            who = f" (git, pid {pid})" if pid else ""
            raise VaultError(
                f"a git commit is under way in {root}{who}: memstore waited {seconds:g} s and "
                "wrote nothing, so as not to fail that commit; run the command again once it "
                "has finished"
            )
        time.sleep(0.05)


def commit_edits(vault: Vault, git: GitRepo, host: str, paths: Iterable[str] | None) -> list[str]:
    """Commit outside edits among `paths` (None: anywhere), one commit per workspace.

    Returns the commits made (none when nothing differs from HEAD).
    """
    if paths is not None:
        paths = _leave_large(vault, git, paths)  # before hashing a 2 GB file
        # a watcher names what changed: what .gitignore leaves out stays out, as in sync's status
        paths = sorted(set(paths) - git.ignored_untracked(paths, git.head()))
    changed = _leave_large(vault, git, [p for p in git.changed_paths(paths) if is_persons_file(p)])
    if changed and (pid := git_committing_in(vault.root)) is not None:
        # The person's `git commit` (editor open, their files staged) would fail if HEAD moved
        # under it, and their staged files must not become an edit(...) commit of ours.
        who = f" (pid {pid})" if pid else ""
        raise VaultError(
            f"a git commit is under way in {vault.root}{who}: memstore leaves the files "
            "changed by hand to it; run the command again once it has finished"
        )
    # A file whose new lines hold a credential stays uncommitted, said in one line each.
    for path, kind in git.secrets_among(p for p in changed if vault.path(p).is_file()).items():
        if (path, kind) not in git.told_held:
            git.told_held.add((path, kind))
            log.warning("%s", secret_message(path, kind))
        changed.remove(path)
    by_workspace: dict[str, list[str]] = {}
    for path in changed:
        workspace = path.split("/", 1)[0] if "/" in path else "vault"
        by_workspace.setdefault(workspace, []).append(path)
    trailers = Trailers(EDITOR, "", host)
    commits = []
    for workspace, group in sorted(by_workspace.items()):
        present = tuple(p for p in group if vault.path(p).is_file() or _is_link(vault, p))
        gone = tuple(p for p in group if p not in present)
        message = _one_line(f"edit({workspace}): {_describe(vault, present, gone)}")
        commits.append(git.commit(message, trailers, add=present, remove=gone))
    return commits


def is_persons_file(path: str) -> bool:
    """Return whether memstore commits the file at `path` (relative to the vault, `/`-separated)
    as a person's edit: the one rule of sync, the writers and the watcher.

    Never a dotfile or anything in a dot folder (`.git/`, `.memstore/`, memstore's own
    `.name.tmp` scratch files) but the vault's `.gitignore` and `.gitattributes`, and never an
    editor's backup or temporary file (`EDITOR_SCRATCH`).
    """
    if path in (".gitignore", ".gitattributes"):
        return True
    parts = path.split("/")
    if any(part.startswith(".") for part in parts):
        return False
    return not any(fnmatch.fnmatchcase(parts[-1], pattern) for pattern in EDITOR_SCRATCH)


def large_size(vault: Vault, path: str) -> int:
    """Return the size of the file at `path` if memstore leaves it uncommitted for its size
    (over LARGE_FILE_BYTES and not a memory), else 0. A link is committed as the path it holds."""
    if path.endswith(".md"):
        return 0
    try:
        found = vault.path(path).lstat()
    except OSError:
        return 0
    return found.st_size if stat.S_ISREG(found.st_mode) and found.st_size > LARGE_FILE_BYTES else 0


def held_large_files(vault: Vault, git: GitRepo) -> dict[str, int]:
    """Return the files changed by hand that memstore leaves uncommitted for their size
    (path → bytes); one git status of the vault (doctor's)."""
    head = git.head()
    found = {p: large_size(vault, p) for p in git.changed_paths() if is_persons_file(p)}
    return {p: size for p, size in found.items() if size and not git.holds_at(head, p)}


def large_file_message(path: str, size: int) -> str:
    """The one line that says a file was left uncommitted for its size."""
    shown = f"{size / (1 << 30):.1f} GiB" if size >= 1 << 30 else f"{size / (1 << 20):.0f} MiB"
    return (
        f"{path} is {shown}, over memstore's {LARGE_FILE_BYTES >> 20} MiB for a file that is "
        "not a memory; memstore did not commit it (every clone would fetch it for good): add "
        "it to .gitignore, or commit it yourself with git (git lfs keeps large files apart)"
    )


def _leave_large(vault: Vault, git: GitRepo, paths: Iterable[str]) -> list[str]:
    """Return `paths` but the files too large to commit, naming each once a process (not one
    the person committed themselves: theirs to manage, with git lfs, say)."""
    kept, head = [], ""
    for path in paths:
        size = large_size(vault, path)
        if not size:
            kept.append(path)
            continue
        head = head or git.head()
        if (path, "large") not in git.told_held and not git.holds_at(head, path):
            git.told_held.add((path, "large"))
            log.warning("%s", large_file_message(path, size))
    return kept


def secret_only_on_disk(git: GitRepo, path: str) -> bool:
    """Return whether a credential found in the file at `path` is only on disk: HEAD's version
    holds none (never committed: memstore held it back), so editing or deleting the file
    removes it and no history needs rewriting (`forget --purge`)."""
    from memstore.core.secrets import find_secrets

    committed = git.read_at(git.head(), path)
    return committed is None or not find_secrets(committed.decode("utf-8", errors="replace"))


def _is_link(vault: Vault, path: str) -> bool:
    return vault.path(path).is_symlink()


def _one_line(subject: str) -> str:
    """Return `subject` with control characters written as escapes (a newline or tab in a file
    name as \\n, \\t): a commit's subject stays one line, and `git log --oneline` shows it whole."""
    return "".join(repr(ch)[1:-1] if ord(ch) < 32 or ord(ch) == 127 else ch for ch in subject)


def _describe(vault: Vault, present: tuple[str, ...], gone: tuple[str, ...]) -> str:
    if len(present) == 1 and not gone:
        # a link's commit holds the path it names: its target's text stays out of git
        readable = present[0].endswith(".md") and not _is_link(vault, present[0])
        memory = vault.read(present[0]) if readable else None
        text = summary(memory.body) if memory is not None else ""
        return text or present[0]
    if len(gone) == 1 and not present:
        return f"removed {gone[0].rsplit('/', 1)[-1]}"
    names = [p.rsplit("/", 1)[-1] for p in (*present, *gone)]
    shown = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
    return f"{len(names)} files ({shown})"
