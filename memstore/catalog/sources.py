"""Decide which files of a source tree are ingested: git's own list, or a walk honouring .gitignore.

Inside a git work tree git lists the files (tracked ones, plus untracked ones it does not
ignore), so nested .gitignore files, negations, `**`, .git/info/exclude and
core.excludesFile mean exactly what they mean to git. Elsewhere the tree is walked and its
.gitignore files are applied the way git applies them, one folder at a time. Either way,
folders that never hold code worth recalling, symlinks, binaries and oversized files are
left out and counted.

Outside a repository there is no .git/info/exclude, and core.excludesFile (a personal
setting) is not read; matching is case-sensitive, as git's is unless core.ignoreCase is set.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import stat
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstore.core.codec import escape_name, is_utf8_name
from memstore.core.errors import InvalidInputError

# A hand-written source file is rarely over a few hundred kB (CPython's largest, _pydecimal.py,
# is 230 kB); what lies beyond 1 MB is generated or data: parser tables, amalgamations
# (sqlite3.c is 9 MB), minified bundles, fixtures. Chunking those would flood recall.
MAX_BYTES = 1_000_000

# git's own text/binary heuristic: a NUL in the first 8,000 bytes (FIRST_FEW_BYTES, xdiff-interface.c)
BINARY_PROBE = 8_000

# Skipped at any depth, even when committed: VCS metadata, memstore's own data, and folders
# that tools fill with installed packages, bytecode or caches, never with code someone wrote.
# Not here, on purpose: `venv`, `env`, `build`, `dist`, `target`, `lib`, `vendor`: those are
# ordinary package names too (the stdlib has a `venv` package, pypa/build lives in src/build),
# and a project that generates into them says so in its .gitignore, which is honoured.
EXCLUDED_FOLDERS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".memstore",
        "node_modules",
        "__pycache__",
        ".venv",
        ".tox",
        ".nox",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
    }
)

# Files that hold credentials by their purpose: an agent's MCP config (its servers' tokens in
# `env`), dotenv files, package managers' and git's login files, keys and certificates,
# cloud and cluster logins, Terraform state. Chunked, a token would come back in search,
# recall and the hooks' context. Matched on the file's name, lowercased (fnmatch).
CREDENTIAL_NAMES: tuple[str, ...] = (
    ".mcp.json", "mcp.json", "claude_desktop_config.json", "settings.local.json",
    ".env", ".env.*", "*.env", ".envrc", ".netrc", "_netrc", ".npmrc", ".yarnrc.yml", ".pypirc",
    ".git-credentials", ".pgpass", ".my.cnf", ".dockercfg", ".htpasswd", ".s3cfg", ".boto",
    "credentials", "*credentials.json", "credentials.y*ml", "credentials.csv", "credentials.toml",
    "secrets.json", "secrets.y*ml", "secrets.toml", "secrets.env", "*.secrets.*", ".secrets",
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.ppk", "*.kdbx", "*.ovpn", "kubeconfig", "*.tfstate", "*.tfstate.*",
    "*.tfvars", ".terraformrc", "terraform.rc", "auth.json", "hosts.yml",
)  # fmt: skip
# ... and config files (by suffix) whose text holds what looks like a credential: a token
# pasted into config.yml or settings.json. Only these are read whole and scanned (small,
# and where keys are put); source code is not: scanning every file would double an ingest.
CONFIG_SUFFIXES = frozenset(
    {".json", ".jsonc", ".yml", ".yaml", ".toml", ".ini", ".cfg", ".conf", ".properties",
     ".xml", ".plist", ".env", ".rc"}
)  # fmt: skip
CONFIG_SCAN_BYTES = 256_000  # a larger config file is data, scanned by its first part only

BINARY = "binary"
CREDENTIALS = "may hold credentials"
TOO_LARGE = "too large"
EXCLUDED = "excluded folder"  # counts folders, not the files inside (a pruned folder is not read)
NOT_REGULAR = "not a regular file"
UNREADABLE = "unreadable"
NOT_UTF8 = "name not UTF-8"

log = logging.getLogger(__name__)
_warned: set[str] = set()  # names said not UTF-8 in this process (a search walks again and again)
# Never follow a symlink swapped in after lstat, never block on a FIFO (both absent on Windows).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True)
class SourceFile:
    """One file to ingest."""

    path: str  # relative to the root, POSIX separators
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Walk:
    """The files under a root worth ingesting, and how many were left out for which reason."""

    root: Path  # resolved
    files: tuple[SourceFile, ...]  # sorted by path
    skipped: Mapping[str, int]  # reason -> count; reasons with no count are absent
    git: bool  # True when git listed the files


def is_binary(head: bytes) -> bool:
    """Tell whether a file whose first bytes are `head` is binary, as git decides it."""
    return b"\0" in head[:BINARY_PROBE]


def walk_sources(
    root: Path,
    *,
    max_bytes: int = MAX_BYTES,
    known: Mapping[str, tuple[int, int]] | None = None,
) -> Walk:
    """List the files under `root` to ingest, the ones git would list, minus the skipped.

    A file `known` holds with its (size, mtime_ns) unchanged is not opened: it was found
    text when it was last read (an unchanged tree is walked with stats alone).

    Raises:
        InvalidInputError: `root` is not a folder.
    """
    root = root.resolve()
    if not root.is_dir():
        raise InvalidInputError(f"no folder at '{root}'; pass the root of a source tree")
    skipped: Counter[str] = Counter()
    listed = _list_with_git(root)
    paths = _walk_plain(root, skipped) if listed is None else _drop_excluded(listed, skipped)
    files = []
    prefix = os.path.join(root, "")
    linked: dict[str, bool] = {}
    for path in sorted(set(paths)):
        if _is_beyond_link(prefix, path, linked):
            continue  # git's index may still hold it, but git sees it as deleted: so do we
        if not path.isascii() and not is_utf8_name(path):
            # the index and the chunk table hold text: such a path cannot be stored or shown
            name = escape_name(str(root / path))
            if name not in _warned:
                _warned.add(name)
                log.warning("skipped %s: its name is not UTF-8", name)
            skipped[NOT_UTF8] += 1
            continue
        found = _inspect(prefix, path, max_bytes, known or {})
        if isinstance(found, SourceFile):
            files.append(found)
        elif found is not None:
            skipped[found] += 1
    counts = {reason: count for reason, count in skipped.items() if count}
    return Walk(root=root, files=tuple(files), skipped=counts, git=listed is not None)


def read_source(root: Path, path: str, *, max_bytes: int = MAX_BYTES) -> str | None:
    """Read the text of `path` under `root`, or None if it is binary, too large, gone or unreadable.

    Undecodable bytes become U+FFFD; line endings are kept as they are on disk.
    """
    parts = path.split("/")
    if path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        return None  # not a path walk_sources lists: nothing outside the tree is read
    prefix = os.path.join(root.resolve(), "")
    if _is_beyond_link(prefix, path, {}):
        return None
    try:
        with open(os.open(prefix + path, _OPEN_FLAGS), "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                return None
            data = file.read(max_bytes + 1)  # it may have grown since fstat
    except OSError:
        return None
    if len(data) > max_bytes or is_binary(data):
        return None
    return data.decode("utf-8", errors="replace")


def _list_with_git(root: Path) -> list[str] | None:
    """Ask git for the files under `root`, or None when git cannot answer for it."""
    # With -C and "-- .", git prints the paths relative to root, even when root is a subfolder.
    listing = _run_git(
        root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."
    )
    if listing is None or listing.returncode != 0:
        # No git on PATH, not a work tree, or one git refuses (dubious ownership, inside .git):
        # the plain walk reads the .gitignore files itself.
        return None
    ignored = _run_git(root, "check-ignore", "-q", ".")
    if ignored is None or ignored.returncode == 0:
        # The enclosing repository ignores the root itself (a dotfiles repository in $HOME
        # ignoring "*", pyenv's versions/): the root is no part of it, but a tree of its own.
        return None
    # A nested repository comes back as "name/"; unmerged paths come once per stage.
    return [os.fsdecode(item).rstrip("/") for item in listing.stdout.split(b"\0") if item]


def _run_git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except OSError:
        return None


def _drop_excluded(paths: Iterable[str], skipped: Counter[str]) -> list[str]:
    kept = []
    tops: dict[str, str | None] = {}  # folder -> the outermost excluded folder it is in
    for path in paths:
        top = _excluded_top(path.rpartition("/")[0], tops)
        if top is None:
            kept.append(path)
    skipped[EXCLUDED] += len({top for top in tops.values() if top is not None})
    return kept


def _excluded_top(folder: str, tops: dict[str, str | None]) -> str | None:
    if not folder:
        return None
    if folder not in tops:
        parent, _, name = folder.rpartition("/")
        outer = _excluded_top(parent, tops)
        tops[folder] = outer or (folder if name in EXCLUDED_FOLDERS else None)
    return tops[folder]


def _is_beyond_link(prefix: str, path: str, linked: dict[str, bool]) -> bool:
    """Whether a folder on the way to `path` is a symlink (which may lead out of the tree)."""
    folder = path.rpartition("/")[0]
    if not folder:
        return False
    if folder not in linked:
        linked[folder] = os.path.islink(prefix + folder) or _is_beyond_link(prefix, folder, linked)
    return linked[folder]


def _inspect(
    prefix: str, path: str, max_bytes: int, known: Mapping[str, tuple[int, int]]
) -> SourceFile | str | None:
    """The file at `path`, or why it is skipped, or None when it is not there at all."""
    full = prefix + path
    if holds_credentials_by_name(path):
        return CREDENTIALS
    try:
        info = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return None  # tracked but deleted from the work tree, or gone since it was listed
    except OSError:
        return UNREADABLE
    if not stat.S_ISREG(info.st_mode):
        return NOT_REGULAR  # symlinks, submodules, nested repositories, FIFOs
    if info.st_size > max_bytes:
        return TOO_LARGE
    if known.get(path) == (info.st_size, info.st_mtime_ns):
        return SourceFile(path=path, size=info.st_size, mtime_ns=info.st_mtime_ns)
    try:
        fd = os.open(full, _OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return UNREADABLE
    is_config = os.path.splitext(path)[1].lower() in CONFIG_SUFFIXES
    try:
        head = os.read(fd, CONFIG_SCAN_BYTES if is_config else BINARY_PROBE)
    except OSError:
        return UNREADABLE
    finally:
        os.close(fd)
    if is_binary(head):
        return BINARY
    if is_config and _holds_secret(head):
        return CREDENTIALS
    return SourceFile(path=path, size=info.st_size, mtime_ns=info.st_mtime_ns)


def holds_credentials_by_name(path: str) -> bool:
    """Return whether the file at `path` (relative, `/`-separated) is one whose purpose is to
    hold credentials (`CREDENTIAL_NAMES`), or lies in a folder of them (`.ssh`, `.aws` …)."""
    parts = path.lower().split("/")
    if any(part in _CREDENTIAL_FOLDERS for part in parts[:-1]):
        return True
    name = parts[-1]
    if name in _PLACEHOLDERS or name.rsplit(".", 1)[-1] in _PLACEHOLDER_SUFFIXES:
        return False  # .env.example, secrets.yaml.template: placeholders, meant to be read
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in CREDENTIAL_NAMES)


_CREDENTIAL_FOLDERS = frozenset({".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure"})
_PLACEHOLDERS = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})
_PLACEHOLDER_SUFFIXES = frozenset({"example", "sample", "template", "dist", "tmpl"})


def _holds_secret(head: bytes) -> bool:
    from memstore.core.secrets import find_secrets  # only for config files

    return bool(find_secrets(head.decode("utf-8", errors="replace")))


# --- the plain walk: .gitignore applied as git applies it --------------------------------


@dataclass(frozen=True)
class _Rule:
    """One .gitignore line: what it matches as a file path, and as a folder path ending in '/'."""

    ignores: bool  # False for a negation ("!pattern")
    file: re.Pattern[str]
    folder: re.Pattern[str] | None  # None: it matches a folder only as it matches a file


@dataclass(frozen=True)
class _Layer:
    """The rules of one .gitignore, which apply to paths below its folder, relative to it."""

    prefix: str  # the folder, "" or ending in "/"
    rules: tuple[_Rule, ...]


# pathspec matches whole paths: its group marks "a folder ends here", and a match through
# it is a match of a folder above the path. git never tests a path that way: it tests each
# folder on the way down (not entering an ignored one), then the path itself against the
# deepest .gitignore with a matching line, its last such line. So each rule is split in two:
# the pattern matching a file path exactly, and the one matching a folder path exactly.
# Known difference: in "a**/b" git (dir.c, match_pathname) reads "**/" after the literal
# "a" as any folders, where its documentation and pathspec read "a**" as "a*".
_DIR_MARK = "(?P<ps_d>/)"


def _parse_rules(text: str) -> tuple[_Rule, ...]:
    import pathspec  # only the plain walk needs it

    rules = []
    # git splits at "\n" alone, drops a CR before it and a UTF-8 BOM (dir.c)
    for line in text.removeprefix("\ufeff").split("\n"):
        line = line.removesuffix("\r")
        try:
            rule = _compile_rule(pathspec.GitIgnoreSpec.from_lines([line]).patterns)
        except (ValueError, re.error):
            # pathspec refuses a few lines: "a\\" (git matches nothing with it either) and
            # a reversed range "[z-a]" (which git reads as "z"): skip them, keep the file
            continue
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _compile_rule(patterns: Sequence[Any]) -> _Rule | None:
    if not patterns or patterns[0].include is None or patterns[0].regex is None:
        return None  # a blank line or a comment
    pattern = patterns[0]
    source: str = pattern.regex.pattern
    folder = source.replace(_DIR_MARK, "/$")
    if _is_below_a_folder(str(pattern.pattern)):
        folder = source.replace(_DIR_MARK, "/.+/$")  # pathspec matches "a/**/" to a itself
    return _Rule(
        ignores=pattern.include,
        file=re.compile(source.replace(_DIR_MARK, "(?!)")),
        folder=re.compile(folder) if _DIR_MARK in source else None,
    )


def _is_below_a_folder(line: str) -> bool:
    """Whether a line reads "a/**/": it matches the folders below a, never a itself."""
    line = line.strip().removeprefix("!")
    if not line.endswith("/**/"):
        return False
    return any(part not in ("", "**") for part in line.removesuffix("/**/").split("/"))


def _is_ignored(layers: Sequence[_Layer], path: str, is_folder: bool) -> bool:
    for layer in reversed(layers):
        relative = path[len(layer.prefix) :]
        for rule in reversed(layer.rules):
            if rule.file.search(relative) or (
                is_folder and rule.folder is not None and rule.folder.search(relative + "/")
            ):
                return rule.ignores
    return False


def _read_layer(folder: Path, prefix: str) -> _Layer | None:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None  # git, too, only warns about a .gitignore it cannot read
    rules = _parse_rules(text)
    return _Layer(prefix, rules) if rules else None


def _walk_plain(root: Path, skipped: Counter[str]) -> list[str]:
    """The paths git would list if `root` were a fresh repository, with excluded folders pruned."""
    found = []
    pending: list[tuple[str, tuple[_Layer, ...]]] = [("", ())]
    while pending:
        prefix, layers = pending.pop()
        try:
            with os.scandir(root / prefix) as listing:
                entries = list(listing)
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed while we walked
        except OSError:
            skipped[UNREADABLE] += 1
            continue
        # git does not follow a symlinked .gitignore either (since 2.32)
        if any(e.name == ".gitignore" and e.is_file(follow_symlinks=False) for e in entries):
            layer = _read_layer(root / prefix, prefix)
            if layer is not None:
                layers = (*layers, layer)
        for entry in entries:
            path = prefix + entry.name
            is_folder = entry.is_dir(follow_symlinks=False)
            if _is_ignored(layers, path, is_folder):
                continue
            if not is_folder:
                found.append(path)
            elif entry.name in EXCLUDED_FOLDERS:
                skipped[EXCLUDED] += 1
            else:
                pending.append((path + "/", layers))
    return found
