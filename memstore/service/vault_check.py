"""`memstore check`: a vault checkout validated for a team repository's CI, with no index.

Reads the files and nothing else: no `.memstore/` folder is needed or made, no git is
asked, nothing is written, so it runs on a plain CI checkout. Each finding names a file
and a line: a file that does not parse, an id two files use, a memory sync kept in two
versions (or git's own conflict markers), what looks like a credential, a workspace
folder or file name memstore would not write or read, a memstore.toml it cannot read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memstore.core.codec import parse_memory
from memstore.core.conflicts import is_conflicted
from memstore.core.errors import InvalidInputError, NotFoundError, VaultError
from memstore.core.model import FileProblem, check_workspace
from memstore.core.secrets import find_secrets
from memstore.core.vault_config import VAULT_CONFIG_NAME, read_vault_config
from memstore.vault.files import MAX_FILE_BYTES, Vault

_GIT_MARKER = re.compile(r"^(<{7}|>{7})( |$)|^={7}$")


@dataclass(frozen=True)
class Finding:
    """One thing wrong in a vault checkout: where (vault-relative path, 1-based line), what."""

    path: str
    line: int
    message: str


@dataclass(frozen=True)
class Checked:
    """What `check_vault` read and found."""

    files: int
    findings: list[Finding]


def check_vault(root: Path) -> Checked:
    """Check every memory file under `root`; return how many, and the findings by path
    and line.

    Raises:
        NotFoundError: `root` is not a folder.
    """
    if not root.is_dir():
        raise NotFoundError(f"{root} is not a folder; give the vault checkout's path")
    vault = Vault(root)
    if not vault.has_vault_mark():
        raise NotFoundError(
            f"{root} is not a memstore vault (its .gitattributes does not name memstore's "
            "merge driver); give the vault checkout's path"
        )
    skipped: list[FileProblem] = []
    try:
        files = sorted(vault.scan(skipped))
    except VaultError as err:
        raise NotFoundError(str(err)) from err
    findings = [Finding(p.path, 1, p.reason) for p in skipped]
    findings += _check_folders(root)
    findings += _check_config(root)
    owners: dict[str, str] = {}
    for path in files:
        findings += _check_file(root, path, owners)
    return Checked(len(files), sorted(findings, key=lambda f: (f.path, f.line, f.message)))


def _check_folders(root: Path) -> Iterator[Finding]:
    """Workspace folders must be names memstore accepts; files in them must be memories."""
    for top in sorted(root.iterdir()):
        if top.name.startswith(".") or not top.is_dir() or top.is_symlink():
            continue
        try:
            check_workspace(top.name)
        except InvalidInputError:
            yield Finding(
                f"{top.name}/",
                1,
                f"folder {top.name!r} is not a workspace name: use lowercase letters, "
                "digits, '.', '_' and '-' (memstore does not read it as workspace "
                f"{top.name.lower()!r})",
            )
        for path in sorted(top.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if any(part.startswith(".") for part in relative.split("/")):
                continue
            if path.is_file() and not path.name.endswith(".md"):
                yield Finding(relative, 1, "not a memory file: memories are .md files")


def _check_config(root: Path) -> Iterator[Finding]:
    """The vault's memstore.toml, when there is one, must be one memstore reads."""
    try:
        read_vault_config(root)
    except InvalidInputError as err:
        line = re.search(r"at line (\d+)", str(err))
        message = str(err).replace(f"{root / VAULT_CONFIG_NAME}: ", "")
        yield Finding(VAULT_CONFIG_NAME, int(line.group(1)) if line else 1, message)


def _check_file(root: Path, path: str, owners: dict[str, str]) -> Iterator[Finding]:
    try:
        data = (root / path).read_bytes()
    except OSError as err:
        yield Finding(path, 1, f"cannot be read: {err.strerror}")
        return
    if len(data) > MAX_FILE_BYTES:
        yield Finding(
            path, 1, f"file is {len(data):,} bytes; memstore reads at most {MAX_FILE_BYTES:,}"
        )
        return
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        yield Finding(path, _line_at(data, err.start), "not valid UTF-8")
        return
    lines = text.splitlines()
    memory = parse_memory(text, path=path)
    if memory.problem:
        yield Finding(path, _line_of_key(lines, memory.problem), memory.problem)
    first = owners.setdefault(memory.id, path)
    if first != path:
        yield Finding(path, _line_of_key(lines, "id"), f"id {memory.id} is also used by {first}")
    conflict = any(k == "conflict" and "true" in raw.lower() for k, raw in memory.extra)
    if conflict or is_conflicted(memory.body):
        yield Finding(
            path,
            _first_line(
                lines, lambda line: "<!-- memstore:" in line or line.startswith("conflict:")
            ),
            f"holds versions sync kept apart; settle them: memstore conflicts resolve {memory.id}",
        )
    marker = _first_line(lines, lambda line: bool(_GIT_MARKER.match(line)), default=0)
    if marker:
        yield Finding(path, marker, "git conflict markers: finish the merge by hand")
    kinds = find_secrets(text)
    if kinds:
        where = _first_line(lines, lambda line: bool(find_secrets(line)))
        yield Finding(
            path, where, f"holds what looks like {kinds[0]}: remove it and rotate the credential"
        )


def _line_of_key(lines: list[str], problem: str) -> int:
    """The line of the front matter key a problem starts with ("seen is not …"), else 1."""
    key = re.match(r"[a-z_]+", problem)
    if key is not None:
        for number, line in enumerate(lines, 1):
            if line.startswith(f"{key.group(0)}:"):
                return number
    return 1


def _first_line(lines: list[str], test: Callable[[str], bool], default: int = 1) -> int:
    return next((number for number, line in enumerate(lines, 1) if test(line)), default)


def _line_at(data: bytes, offset: int) -> int:
    return data[:offset].count(b"\n") + 1
