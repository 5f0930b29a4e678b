"""Every path that commits a file scans it first: a file holding a credential stays uncommitted.

confirm, promote and archive of a hand-written memory, sync's and the watcher's edit commits,
and the commit subject of an add a person allowed to hold a secret (issue 36, item 7).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memstore.core.config import Settings
from memstore.core.errors import SecretError
from memstore.core.secrets import find_added_secret, withhold_secret
from memstore.service.store import Store
from tests.cli.test_upkeep import cli
from tests.conftest import git, head, settings_at

TOKEN = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # fake, in GitHub's shape


def _subjects(vault: Path) -> str:
    return git(vault, "log", "--all", "--format=%B")


def _hand_written(vault: Path, name: str, text: str, memory_id: str) -> Path:
    path = vault / "global" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"---\nid: {memory_id}\nkind: note\n---\n{text}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["confirm", "deploytok"],
        ["promote", "deploytok", "--kind", "core"],
        ["archive", "deploytok"],
    ],
)
def test_a_command_on_a_hand_written_file_holding_a_token_commits_nothing(
    vault: Path, command: list[str]
) -> None:
    path = _hand_written(vault, "deploy.md", f"deploy with {TOKEN} on ci", "deploytok")
    before_bytes, before_head = path.read_bytes(), head(vault)
    done = cli(vault, *command)
    assert done.returncode == 1, done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "global/deploy.md" in lines[0] and "a GitHub token" in lines[0]
    assert TOKEN not in done.stderr + done.stdout
    assert head(vault) == before_head
    assert path.read_bytes() == before_bytes
    assert TOKEN not in _subjects(vault)


def test_sync_commits_the_clean_edits_and_leaves_the_one_with_a_token(
    vault: Path, tmp_path: Path
) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    assert cli(vault, "remote", "add", str(remote)).returncode == 0
    _hand_written(vault, "clean.md", "use pnpm, not npm", "cleanone")
    _hand_written(vault, "token.md", f"the bot token is {TOKEN}", "tokenone")
    done = cli(vault, "sync")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "global/token.md" in line]
    assert len(warnings) == 1 and "a GitHub token" in warnings[0], done.stderr
    assert TOKEN not in done.stderr + done.stdout
    committed = git(vault, "ls-tree", "-r", "--name-only", "HEAD")
    assert "global/clean.md" in committed and "global/token.md" not in committed
    assert git(vault, "status", "--porcelain", "global/token.md").startswith("??")
    pushed = subprocess.run(
        ["git", "--git-dir", str(remote), "log", "--all", "-p", "--format=%B"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert TOKEN not in pushed and TOKEN not in _subjects(vault)


def test_the_edit_commit_a_watcher_or_writer_makes_skips_the_file_with_a_token(
    vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _hand_written(vault, "clean.md", "staging deploy needs approval", "cleantwo")
    _hand_written(vault, "token.md", f"password: Tr0ub4dor&3x for {TOKEN}", "tokentwo")
    with Store.open(settings_at(vault)) as store, store.transaction(catch_up=False) as tx:
        made = tx.commit_edits(None)  # what the watcher and daemon call
    assert len(made) == 1
    assert [r.getMessage() for r in caplog.records if "token.md" in r.getMessage()] == [
        "global/token.md holds what looks like a GitHub token; memstore did not commit it "
        "(memory is shared through git): remove the credential from the file, or commit it "
        "yourself with git"
    ]
    assert TOKEN not in _subjects(vault)


def test_add_allow_secret_commits_the_file_but_no_subject_shows_the_token(vault: Path) -> None:
    done = cli(vault, "add", f"ci bot token {TOKEN}", "--allow-secret", "--json")
    assert done.returncode == 0, done.stderr
    subject = git(vault, "log", "-1", "--format=%s")
    assert TOKEN not in _subjects(vault)
    assert subject.startswith("add(global): ") and "text withheld" in subject
    # Its counters and kind can still be written: the token's line is already in git.
    memory_id = __import__("json").loads(done.stdout)["id"]
    assert cli(vault, "confirm", memory_id).returncode == 0
    assert TOKEN not in _subjects(vault)


def test_a_memstore_write_refuses_a_new_secret_before_touching_the_file(vault: Path) -> None:
    settings: Settings = settings_at(vault)
    _hand_written(vault, "token.md", f"key {TOKEN}", "tokenthree")
    with Store.open(settings) as store:
        with store.transaction():  # indexes the hand-written file
            pass
        with pytest.raises(SecretError, match=r"global/token\.md.*a GitHub token"):
            store.confirm("tokenthree")
    assert TOKEN not in _subjects(vault)


def test_only_the_lines_a_change_adds_are_scanned() -> None:
    old = f"---\nid: x\nseen: 1\n---\nbot token {TOKEN}\n".encode()
    assert find_added_secret(old.replace(b"seen: 1", b"seen: 2"), old) is None
    assert find_added_secret(old, None) == "a GitHub token"
    assert find_added_secret(old + b"AKIAQ3EGRJ5LTMWD7XZN\n", old) == "an AWS access key id"


def test_a_subject_showing_a_credential_names_the_files_instead() -> None:
    message = withhold_secret(f"edit(global): bot token {TOKEN}", ["global/bot.md"])
    assert message == "edit(global): bot.md (text withheld: it looks like a credential)"
    assert withhold_secret("add(global): use pnpm", ["global/x.md"]) == "add(global): use pnpm"


def test_memstore_edit_that_pastes_a_token_is_left_uncommitted_in_the_file(
    vault: Path, tmp_path: Path
) -> None:
    from tests.service.test_edit import add, editor, run

    memory_id, path = add(vault, "the ci bot deploys on merge")
    before = head(vault)
    ed = editor(tmp_path, f"text = text.rstrip() + ' with {TOKEN}\\n'")
    done = run(vault, "edit", memory_id, EDITOR=ed)
    assert done.returncode == 1
    assert "a GitHub token" in done.stderr and TOKEN not in done.stderr
    assert head(vault) == before and TOKEN not in _subjects(vault)
    assert TOKEN in path.read_text(encoding="utf-8")  # the person's text stays, uncommitted


# A clone's name in the counters comes from its host's: one shaped like a Slack token makes
# every counter line a usage flush writes look like one (fake, in Slack's shape).
SLACK_HOST = "xoxb-4f9a2c8e1b7d3f6a0c5e9b2d8f1a7c3e"


def test_a_usage_flush_whose_commit_is_refused_leaves_no_file_written(vault: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        added = store.add("upload 413 is nginx client_max_body_size", workspace="global")
    path = vault / added.path
    before_bytes, before_head = path.read_bytes(), head(vault)
    settings = Settings(vault=vault, source="test", session="test-session", host=SLACK_HOST)
    with Store.open(settings) as store:
        store.recall("nginx 413", workspace="global", record_usage=True)
        with pytest.raises(SecretError, match="a Slack token"):
            store.flush_usage()
    assert head(vault) == before_head
    assert path.read_bytes() == before_bytes  # put back, not left written and uncommitted
    assert git(vault, "status", "--porcelain") == ""


def test_an_import_whose_commit_is_refused_leaves_no_file_written(
    vault: Path, tmp_path: Path
) -> None:
    from memstore.service.importing import import_files

    notes = tmp_path / "AGENTS.md"
    notes.write_text("- Run the tests with make test.\n- Deploys need approval.\n", "utf-8")
    before_head = head(vault)
    # the source a memory records is scanned with the rest of its file
    settings = Settings(vault=vault, source=SLACK_HOST, session="test-session", host="h")
    with Store.open(settings) as store, pytest.raises(SecretError, match="a Slack token"):
        import_files(store, [notes], workspace="global", whole_file=False, dry_run=False)
    assert head(vault) == before_head
    assert git(vault, "status", "--porcelain", "--untracked-files=all") == ""


def test_add_allow_secret_never_commits_a_persons_edit_held_back_for_a_credential(
    vault: Path,
) -> None:
    with Store.open(settings_at(vault)) as store:
        added = store.add("staging deploys need approval", workspace="global")
    path = vault / added.path
    # a person's note in the front matter (the body, so the duplicate, unchanged): held back
    path.write_text(
        path.read_text("utf-8").replace("kind: note\n", f"kind: note\n# ci uses {TOKEN}\n"), "utf-8"
    )
    before_head = head(vault)
    done = cli(vault, "add", "staging deploys need approval", "--allow-secret")
    assert done.returncode == 1, done.stdout
    assert "a GitHub token" in done.stderr
    assert head(vault) == before_head
    assert TOKEN not in _subjects(vault) and TOKEN not in git(vault, "show", "HEAD:" + added.path)
    assert TOKEN in path.read_text("utf-8")  # the person's edit is still there


def test_an_add_reads_its_text_once_for_credentials(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The add's own scan of its fields and its commit's guard do not both read the text:
    a 96 KB memory cost two full scans (0.8 s each for 'gizmo ' * 16000)."""
    from memstore.core import secrets

    scanned: list[int] = []
    real = secrets.find_secrets

    def counting(text: str, **options: bool) -> list[str]:
        scanned.append(len(text))  # a spy: the real scan runs
        return real(text, **options)

    text = "\n".join(f"line {n}: the cache warms from the replica at boot" for n in range(400))
    with Store.open(settings_at(vault)) as store:
        monkeypatch.setattr(secrets, "find_secrets", counting)
        added = store.add(text, workspace="global")
    assert added.status == "added"
    assert len(text) <= sum(scanned) < len(text) + 1_000, scanned  # once, plus front matter


def test_the_commit_guard_still_reads_every_line_the_scan_did_not() -> None:
    file = f"---\nid: k1\nnote: {TOKEN}\n---\nthe text\n".encode()
    assert find_added_secret(file, None, clean=frozenset({"the text"})) == "a GitHub token"
    kept = f"---\nid: k1\n---\nuse {TOKEN} there\n".encode()
    assert find_added_secret(kept, None, clean=frozenset({f"use {TOKEN} there"})) is None
