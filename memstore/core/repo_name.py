"""Which repository a folder belongs to, read from .git directly (no pygit2): its workspace name."""

from __future__ import annotations

import re
from pathlib import Path

from memstore.core.errors import InvalidInputError
from memstore.core.model import ALL, GLOBAL, check_workspace, to_workspace_name

_REMOTE_NAME = re.compile(r"([^/:]+?)(?:\.git)?/*$")


def find_enclosing_repository(path: Path) -> Path | None:
    """Return the work tree root of the git repository containing `path`, if any."""
    for folder in [path, *path.parents]:
        if (folder / ".git").exists():
            return folder
    return None


def has_vault_mark(gitattributes: bytes) -> bool:
    """Say whether a .gitattributes names memstore's merge driver (outside a comment)."""
    lines = gitattributes.decode("utf-8", errors="replace").splitlines()
    return any("merge=memstore" in line.split("#", 1)[0].split() for line in lines)


def other_vault_at(vault: Path, cwd: Path) -> Path | None:
    """Return the root of the memstore vault `cwd` is in when it is not `vault` (another
    vault, or a team vault's checkout), else None: an add from there meant that vault."""
    return _other_vault(vault.resolve(), find_enclosing_repository(cwd.resolve()))


def _other_vault(vault: Path, root: Path | None) -> Path | None:
    """Return `root` when it is a memstore vault other than the resolved `vault`."""
    if root is None or root == vault:
        return None
    try:
        with open(root / ".gitattributes", "rb") as attributes:
            marked = has_vault_mark(attributes.read(4096))
    except OSError:
        return None
    return root if marked else None


def add_target_at(vault: Path, cwd: Path) -> tuple[Path | None, str | None]:
    """Return what an add from `cwd` needs from one walk up: the other vault `cwd` is in
    (`other_vault_at`), and the workspace of work there (`workspace_at`)."""
    where, vault = cwd.resolve(), vault.resolve()
    root = find_enclosing_repository(where)
    if where == vault or vault in where.parents:
        return _other_vault(vault, root), vault_folder_workspace(vault, where)
    return _other_vault(vault, root), _root_workspace(vault, root)


def trace_workspace(vault: Path, cwd: Path) -> str | None:
    """Return the workspace a hook keeps an agent's trace from `cwd` in (`workspace_at`).

    Raises:
        InvalidInputError: `cwd` is in another vault: the trace was that vault's, as an
            `add` from there would be (it was kept in `vault`, in a workspace named after it).
    """
    other, workspace = add_target_at(vault, cwd)
    if other is not None:
        raise InvalidInputError(
            f"kept nothing: the agent works in the vault {other}, but memstore uses {vault}; "
            f"give the hooks --vault {other} (memstore agents --install NAME --vault {other})"
        )
    return workspace


def detect_workspace(cwd: Path) -> str | None:
    """Return the workspace for work in `cwd`: the repository's remote name, else its folder.

    Reads .git/config directly (no pygit2) because it runs on every search.
    """
    return _repository_name(find_enclosing_repository(cwd))


def _repository_name(root: Path | None) -> str | None:
    if root is None:
        return None
    remote = _remote_url(root / ".git")
    if remote:
        match = _REMOTE_NAME.search(remote.strip())
        if match:
            return match.group(1)
    return root.name


def workspace_at(vault: Path, cwd: Path) -> str | None:
    """Return the workspace of work in `cwd`: its git repository's; inside the vault, the
    workspace folder `cwd` is in; None at the vault's top or outside any repository.

    The one rule for everything not told a workspace: `search`, `memory_recall` and the
    prompt hook read this workspace plus `global`, or every workspace when None; `add`,
    `memory_add` and the capture hook write to it, or to `global` when None.
    """
    where = cwd.resolve()
    vault = vault.resolve()  # a symlinked vault (or cwd) is still the vault
    if where == vault or vault in where.parents:
        return vault_folder_workspace(vault, where)
    return _root_workspace(vault, find_enclosing_repository(where))


def vault_folder_workspace(vault: Path, where: Path) -> str | None:
    """Return the workspace whose folder `where` (resolved, inside the resolved `vault`) is
    in: `cd ~/memstore/webshop && memstore add …` adds to webshop, as the file would be
    there. None at the vault's top, in a dot folder, or in a folder no workspace could be
    named (read every workspace, add to global)."""
    parts = where.relative_to(vault).parts
    if not parts:
        return None
    try:
        return check_workspace(parts[0], for_add=True)
    except InvalidInputError:
        return None


def _root_workspace(vault: Path, root: Path | None) -> str | None:
    name = _repository_name(root)
    return None if name is None else _kept_workspace_name(vault, name)


def _kept_workspace_name(vault: Path, name: str) -> str:
    """Return the workspace for repository `name`, keeping the folder an older memstore made.

    Names were once made without decoding escapes or dropping accents ('Café' → 'caf',
    now 'cafe'); a vault holding only the old folder keeps being read and written there,
    so memories added before the change are still recalled.
    """
    current = to_workspace_name(name)
    legacy = _legacy_workspace_name(name)
    if legacy != current and (vault / legacy).is_dir() and not (vault / current).exists():
        return legacy
    return current


def _legacy_workspace_name(name: str) -> str:
    """The workspace name memstore made from `name` before issue 36 (used only by the check above)."""
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")[:64]
    cleaned = cleaned.replace("..", ".")
    return cleaned if cleaned and cleaned != ALL else GLOBAL


def _remote_url(git_dir: Path) -> str:
    if git_dir.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = git_dir.read_text(encoding="utf-8", errors="replace").strip()
        if not text.startswith("gitdir:"):
            return ""
        git_dir = (git_dir.parent / text.removeprefix("gitdir:").strip()).resolve()
        common = git_dir / "commondir"
        if common.exists():
            git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    return _config_remote(git_dir / "config")


# config path -> ((mtime_ns, size, inode), remote url): a daemon or MCP server asks for the
# workspace on every add and search, and the file rarely changes (git rewrites it by rename).
_REMOTES: dict[Path, tuple[tuple[int, int, int], str]] = {}


def _config_remote(config: Path) -> str:
    """Return the first remote URL in git config file `config` ("origin" first), read once
    per version of the file."""
    try:
        status = config.stat()
    except OSError:
        return ""
    version = (status.st_mtime_ns, status.st_size, status.st_ino)
    known = _REMOTES.get(config)
    if known is not None and known[0] == version:
        return known[1]
    url = _read_config_remote(config)
    if len(_REMOTES) > 256:  # a long-lived process that has seen many repositories
        _REMOTES.clear()
    _REMOTES[config] = (version, url)
    return url


def _read_config_remote(config: Path) -> str:
    import configparser  # only when a repository's remote is read

    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(config, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return ""
    sections = [s for s in parser.sections() if s.startswith("remote ")]
    sections.sort(key=lambda s: (s != 'remote "origin"', s))
    for section in sections:
        url = parser.get(section, "url", fallback="")
        if url:
            return url
    return ""
