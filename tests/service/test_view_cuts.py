"""What a first `memstore view` no longer does twice (issue 41's speed), and that the page
shows the same: diffs drawn from the memory they added, files read once, and the growth
chart's hand-written files with --since."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.core.secret_mask import mask_secrets
from memstore.core.secrets import find_secrets
from memstore.service.store import Store, init_vault
from memstore.service.view_data import _read_bytes
from memstore.service.view_masking import SEPARATOR, Masker
from tests.conftest import git
from tests.service import test_view_data as base

TOKEN = base.TOKEN


def commit_at(vault: Path, message: str, when: str) -> None:
    """Commit everything as a person would, dated `when` (ISO)."""
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "add", "-A"], cwd=vault, check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=Maria",
            "-c",
            "user.email=m@example.org",
            "commit",
            "-qm",
            message,
        ],
        cwd=vault,
        check=True,
        env=env,
    )


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    settings = base.machine(tmp_path / "v", "host-a", "claude-code", "s-one")
    init_vault(settings.vault, settings)
    with Store.open(settings) as store:
        store.add("run make check before every push", workspace="webshop")
        store.add(f"the registry token is {TOKEN}", workspace="webshop", allow_secret=True)
        changed = store.add("the cache lives for ten minutes", workspace="api").id
        store.confirm(changed)
    return settings.vault


def test_a_change_only_adding_a_file_shown_as_it_is_carries_the_memory_not_a_diff(
    vault: Path,
) -> None:
    (vault / "webshop" / "crlf.md").write_bytes(b"written on Windows\r\nsecond line\r\n")
    (vault / "webshop" / "bom.md").write_bytes(b"\xef\xbb\xbfa note with a byte order mark\n")
    (vault / "webshop" / "plain.md").write_bytes(b"a plain note by hand\n")
    for name in ("crlf", "bom", "plain"):
        git(vault, "add", f"webshop/{name}.md")
        git(vault, "-c", "user.name=M", "-c", "user.email=m@e.org", "commit", "-qm", name)
    data = base.view_of(vault)
    by_id = {m["id"]: m for m in data["memories"]}
    drawn = {by_id[c["added"]]["path"]: c for c in data["changes"] if c.get("added")}
    assert "webshop/plain.md" in drawn
    assert not {"webshop/crlf.md", "webshop/bom.md"} & set(drawn)  # front/body alter them
    adds = [c for c in data["changes"] if c["subject"].startswith("add(")]
    assert len(adds) == 3
    for change in adds:
        memory = by_id[change["ids"][0]]
        if "cache" in memory["text"]:  # confirmed since: its file is not what was added
            assert "added" not in change and "+id: " in change["diff"]
        else:
            assert change["added"] == memory["id"] and change["diff"] == ""
    # the token's memory is drawn from its masked text: nothing the scanner flags in the data
    assert not any(find_secrets(s) for s in base.strings(data))


def test_read_bytes_reads_a_file_up_to_its_limit(tmp_path: Path) -> None:
    file = tmp_path / "f"
    for data in (b"", b"x", b"0123456789", b"a" * 70_000):
        file.write_bytes(data)
        assert _read_bytes(str(file), 10) == data[:10]
        assert _read_bytes(str(file), 100_000) == data
    with pytest.raises(OSError):
        _read_bytes(str(tmp_path / "missing"), 10)


def test_a_short_text_remembered_by_itself_keeps_its_verdict(vault: Path) -> None:
    with Store.open(base.machine(vault, "host-a", "t", "s")) as store:
        masker = Masker(store.vault)
        flagged = f"token {TOKEN}"
        for _ in range(3):
            assert masker.kinds(flagged) and TOKEN not in masker.text(flagged)
            assert masker.kinds("port 8080") == [] and masker.text("port 8080") == "port 8080"
        assert masker.scanned == len(flagged) + len("port 8080")  # each scanned once


def test_growth_with_since_counts_a_hand_written_file_when_it_was_added(vault: Path) -> None:
    notes = vault / "webshop" / "runbook.md"
    notes.write_text("restart the api with systemctl restart api\n", encoding="utf-8")
    commit_at(vault, "runbook by hand", "2024-03-05T10:00:00Z")
    notes.write_text("restart the api with systemctl restart api-v2\n", encoding="utf-8")
    commit_at(vault, "runbook updated", "2024-03-20T10:00:00Z")  # before the window too
    notes.write_text("restart the api with systemctl restart api-v3\n", encoding="utf-8")
    git(vault, "-c", "user.name=M", "-c", "user.email=m@e.org", "commit", "-qam", "in the window")
    (vault / "webshop" / "scratch.md").write_text("not committed yet\n", encoding="utf-8")
    data = base.view_of(vault, since="7d")
    memory = next(m for m in data["memories"] if m["path"] == "webshop/runbook.md")
    assert memory["created"] == "" and len(memory["history"]) == 1  # one change in the window
    growth = {month: added for month, added, _ in data["stats"]["growth"]}
    assert growth.get("2024-03") == 1  # its add, before the window: not the window's month
    assert data["stats"]["growth"][-1][2] == len(data["memories"])  # every memory counted once
    everything = base.view_of(vault)
    assert {m: a for m, a, _ in everything["stats"]["growth"]}.get("2024-03") == 1


def test_the_clean_memory_is_tied_to_every_module_of_the_scanner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text found clean is remembered under a digest of the scanner's source: a change to
    any of core/secret*.py (the scan's joins and gates live in modules of their own) must
    make every text scanned again."""
    import shutil

    from memstore.core import secrets
    from memstore.service import view_masking

    source = Path(str(secrets.__file__)).parent
    copy = tmp_path / "core"
    copy.mkdir()
    for path in source.glob("secret*.py"):
        shutil.copy(path, copy / path.name)
    monkeypatch.setattr(secrets, "__file__", str(copy / "secrets.py"))
    before = view_masking.scanner_digest()
    assert before == view_masking.scanner_digest()
    for path in sorted(copy.glob("secret*.py")):
        path.write_text(path.read_text(encoding="utf-8") + "\n# a new rule\n", encoding="utf-8")
        after = view_masking.scanner_digest()
        assert after != before, path.name
        before = after


MORE_FRAGMENTS = [
    *base.FRAGMENTS,
    "Xk29!fLq",
    "cache key:",
    "with",
    "as admin:",
    "Bearer",
    "eyJhbGciOiJIUzI1NiJ9",
    "aws_secret_access_key =",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    "mysql -u root -p",
    "sk-",
    "live_",
    "İ",
    "\t",
    "SG9pIQ==",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(MORE_FRAGMENTS), max_size=5).map(" ".join), max_size=12))
def test_texts_scanned_in_a_batch_lose_no_finding_of_one_text(texts: list[str]) -> None:
    """What `Masker.prefetch` relies on (as `parts` does): a batch found clean has no text
    the scanner would flag alone."""
    if any(find_secrets(text) for text in texts):
        assert find_secrets(SEPARATOR.join(texts))


def test_prefetch_gives_each_text_the_verdict_it_has_alone(vault: Path) -> None:
    texts = [
        "add(webshop): run make check before every push",
        f"the registry token is {TOKEN}",
        "cache key:",
        "Xk29!fLqzP",  # flagged alone? whatever it is alone, it stays
        "password: Xk29!fLqzP",
        "claude-code",
        "AKIA",
        "Z7QD 4N3X WPL5 KR2M",
        *(f"a subject number {n}" for n in range(100)),
    ]
    with Store.open(base.machine(vault, "host-a", "t", "s")) as store:
        masker = Masker(store.vault)
        masker.prefetch(texts)
        assert masker.short  # the clean batches were learnt
        for text in texts:
            assert masker.kinds(text) == find_secrets(text), text
            assert masker.text(text) == mask_secrets(text)
