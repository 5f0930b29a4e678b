"""`Vault.read` reads a file without a stat first: a file of any size up to the limit is
read whole (one read for most, more for long ones), a file over it is reported with its
own size and not parsed, and a file that is missing or not a file says why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memstore.core.codec import render_memory
from memstore.core.errors import VaultError
from memstore.core.model import Memory
from memstore.vault import files
from memstore.vault.files import MAX_FILE_BYTES, READ_FIRST, Vault


def _write(root: Path, body: str) -> str:
    memory = Memory(id="size0001", workspace="webshop", body=body, created="2026-12-06T10:00:00Z")
    folder = root / "webshop" / "2026-12"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "m.md").write_text(render_memory(memory), encoding="utf-8")
    return "webshop/2026-12/m.md"


@pytest.mark.parametrize(
    "length", [1, READ_FIRST - 200, READ_FIRST, READ_FIRST + 1, 3 * (1 << 16) + 7]
)
def test_a_file_up_to_the_limit_is_read_whole(tmp_path: Path, length: int) -> None:
    body = ("deploy nginx upload " * (length // 20 + 1))[:length].strip() + " end"
    path = _write(tmp_path, body)
    memory = Vault(tmp_path).read(path)
    assert memory.body == body
    assert memory.problem == ""


def test_a_file_over_the_limit_is_reported_with_its_size(tmp_path: Path) -> None:
    path = _write(tmp_path, "x" * (MAX_FILE_BYTES + 10))
    size = os.path.getsize(tmp_path / path)
    memory = Vault(tmp_path).read(path)
    assert memory.problem == f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}"
    assert memory.body == ""


def test_a_file_at_the_limit_is_read(tmp_path: Path) -> None:
    path = _write(tmp_path, "")
    text = (tmp_path / path).read_bytes()
    padded = text + b"y" * (MAX_FILE_BYTES - len(text))
    (tmp_path / path).write_bytes(padded)
    data, size = files._read_bytes(str(tmp_path / path))
    assert (data, size) == (padded, MAX_FILE_BYTES)
    assert Vault(tmp_path).read(path).problem == ""


def test_a_missing_file_or_a_folder_says_why(tmp_path: Path) -> None:
    (tmp_path / "webshop" / "2026-12" / "folder.md").mkdir(parents=True)
    with pytest.raises(VaultError, match=r"cannot read webshop/2026-12/gone\.md: No such file"):
        Vault(tmp_path).read("webshop/2026-12/gone.md")
    with pytest.raises(VaultError, match=r"cannot read webshop/2026-12/folder\.md: Is a directory"):
        Vault(tmp_path).read("webshop/2026-12/folder.md")
