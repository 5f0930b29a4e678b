"""Make a vault: a new folder, or the git repository already there when it may be one."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from memstore.core.config import Settings
from memstore.core.errors import NotFoundError, VaultError, no_vault_at
from memstore.vault.files import Vault, first_stranger, has_vault_mark
from memstore.vault.git import (
    GitRepo,
    Trailers,
    find_enclosing_repository,
    parent_repository_message,
)


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
    if (path / ".git").is_file():  # memstore keeps its locks and counts in .git/ itself
        raise VaultError(
            f"{path} is a git worktree or has its git folder elsewhere (its .git is a file); "
            "a vault needs a .git folder of its own: pick an empty folder, e.g. "
            "'memstore init ~/memstore', or clone the vault there"
        )
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


def is_unmade(root: Path) -> bool:
    """Say whether `root` is no folder yet, or an empty one: where a vault may be made."""
    return not root.exists() or (root.is_dir() and not any(root.iterdir()))


def require_vault(settings: Settings) -> None:
    """Raise as `Store.open(settings)` does when its folder holds no vault (creating none).

    Raises:
        NotFoundError: there is no vault there.
        VaultError: the folder is a file, or a folder of other things.
    """
    root = settings.vault
    if root.exists() and not root.is_dir():
        raise VaultError(
            f"vault path {root} is a file, not a folder; set MEMSTORE_VAULT or --vault"
        )
    if (root / ".git").exists():
        return
    if is_unmade(root) and not settings.may_create_vault:  # made only at the default path
        raise NotFoundError(no_vault_at(root))
    if not root.exists():
        raise NotFoundError(
            f"no vault at {root}; run 'memstore init' (or 'memstore add' to start one)"
        )
    raise VaultError(f"{root} is not a memstore vault; run: memstore init {root}")
