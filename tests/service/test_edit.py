"""`memstore edit`: a person's editor on a copy; only a valid file reaches the vault.

The editor is a real program: a small Python script the test writes, run through
$EDITOR / $VISUAL exactly as a person's editor would be.
"""

from __future__ import annotations

import os
import pty
import select
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memstore.core.errors import InvalidInputError
from memstore.service.editing import choose_editor, edit_memory, run_editor
from memstore.service.store import Store
from tests.conftest import (
    EXE,
    commit_count,
    git,
    head,
    invoke_memstore,
    run_memstore,
    settings_at,
    vault_bytes,
)


def editor(tmp_path: Path, body: str, name: str = "editor.py") -> str:
    """Write an editor script whose `body` edits `text` (the file's text); return $EDITOR."""
    script = tmp_path / name
    script.write_text(
        "import sys, pathlib\n"
        "path = pathlib.Path(sys.argv[1])\n"
        "text = path.read_text(encoding='utf-8')\n"
        f"{body}\n"
        "path.write_text(text, encoding='utf-8')\n",
        encoding="utf-8",
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def run(vault: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the executable's `main` in this process with no terminal (stdin empty); the
    editor it starts is still a process of its own."""
    return invoke_memstore(*args, vault=vault, env=env)


def add(vault: Path, text: str) -> tuple[str, Path]:
    with Store.open(settings_at(vault)) as store:
        result = store.add(text, workspace="global", keywords=("nginx",))
    return result.id, vault / result.path


def test_a_valid_edit_is_one_edit_commit_by_a_person_and_search_sees_it_at_once(
    vault: Path, tmp_path: Path
) -> None:
    memory_id, path = add(vault, "nginx upload limit is client_max_body_size")
    commits = commit_count(vault)
    ed = editor(tmp_path, "text = text.replace('client_max_body_size', 'client_max_body_size 50m')")
    done = run(vault, "edit", memory_id[:4], EDITOR=ed)
    assert done.returncode == 0, done.stderr
    assert f"saved {memory_id}" in done.stdout
    assert "client_max_body_size 50m\n" in path.read_text(encoding="utf-8")
    assert commit_count(vault) == commits + 1
    message = git(vault, "log", "-1", "--format=%B")
    assert message.startswith("edit(global): nginx upload limit is client_max_body_size 50m")
    assert "Memstore-Source: editor" in message and "Memstore-Session" not in message
    assert git(vault, "status", "--porcelain") == ""
    found = run(vault, "search", "50m", "--json")
    assert found.returncode == 0 and memory_id in found.stdout and "50m" in found.stdout


def test_an_edit_that_changes_nothing_saves_nothing(vault: Path, tmp_path: Path) -> None:
    memory_id, _ = add(vault, "nginx upload limit is client_max_body_size")
    before = head(vault), vault_bytes(vault)
    done = run(vault, "edit", memory_id, EDITOR=editor(tmp_path, "pass"))
    assert done.returncode == 0 and "no change; nothing saved" in done.stdout
    assert (head(vault), vault_bytes(vault)) == before


def test_visual_wins_over_editor(vault: Path, tmp_path: Path) -> None:
    memory_id, path = add(vault, "nginx upload limit is client_max_body_size")
    visual = editor(tmp_path, "text = text.replace('limit', 'cap')")
    done = run(vault, "edit", memory_id, VISUAL=visual, EDITOR="false")
    assert done.returncode == 0, done.stderr
    assert "nginx upload cap" in path.read_text(encoding="utf-8")


BROKEN = [
    ("text = text.replace('kind: note', 'kind: nope')", "unknown kind 'nope'"),
    ("import re; text = re.sub(r'id: (\\w+)', 'id: zzzzzzzz', text)", "the id changed"),
    ("text = text.split('---\\n', 2)[2]", "the front matter is gone"),
    ("text = text.replace('keywords:', 'keywords: [unclosed')", "malformed YAML"),
    ("text = text.replace('---\\nnginx', 'nginx')", "never closed"),
    (
        "text = text.split('---\\n', 2)[0] + '---\\n' + text.split('---\\n', 2)[1] + '---\\n'",
        "empty",
    ),
    ("text = text.replace('seen: 1', 'seen: many')", "seen"),
]


@pytest.mark.parametrize(("change", "problem"), BROKEN)
def test_a_broken_file_is_named_in_one_line_and_never_saved(
    vault: Path, tmp_path: Path, change: str, problem: str
) -> None:
    memory_id, _ = add(vault, "nginx upload limit is client_max_body_size")
    before = head(vault), vault_bytes(vault)
    command = shlex.split(editor(tmp_path, change))
    asked: list[str] = []

    def retry(reason: str) -> bool:
        asked.append(reason)
        return False

    with pytest.raises(InvalidInputError) as raised:
        edit_memory(
            lambda: Store.open(settings_at(vault)),
            memory_id,
            lambda copy: run_editor(command, "$EDITOR", copy),
            retry,
        )
    message = str(raised.value)
    assert problem in message and "nothing was saved" in message and "\n" not in message
    assert message.count("front matter") <= 1  # not "front matter: malformed … front matter"
    assert len(asked) == 1 and problem in asked[0]
    assert (head(vault), vault_bytes(vault)) == before
    kept = Path(message.rsplit("your text is in ", 1)[1].rstrip(")"))
    assert not kept.is_relative_to(vault) and kept.is_file()  # the person's text is not lost


def test_without_a_terminal_a_broken_edit_fails_and_saves_nothing(
    vault: Path, tmp_path: Path
) -> None:
    memory_id, _ = add(vault, "nginx upload limit is client_max_body_size")
    before = head(vault), vault_bytes(vault)
    ed = editor(tmp_path, "text = text.replace('kind: note', 'kind: nope')")
    done = run(vault, "edit", memory_id, EDITOR=ed)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "unknown kind 'nope'" in done.stderr
    assert (head(vault), vault_bytes(vault)) == before


def test_the_text_a_failed_edit_keeps_lands_in_the_tests_own_folder(
    vault: Path, tmp_path: Path
) -> None:
    """memstore keeps a failed edit's text in the temporary folder on purpose; the test
    environment points that at the test's folder, so no run leaves memstore-edit-* in /tmp."""
    assert Path(tempfile.gettempdir()).is_relative_to(tmp_path)
    memory_id, _ = add(vault, "nginx upload limit is client_max_body_size")
    ed = editor(tmp_path, "text = text.replace('kind: note', 'kind: nope') + 'new words'")
    done = run(vault, "edit", memory_id, EDITOR=ed)
    assert done.returncode == 1 and "your text is in" in done.stderr
    kept = done.stderr.split("your text is in ")[1].rstrip(")\n")
    assert Path(kept).is_relative_to(tmp_path) and Path(kept).is_file()


def on_a_terminal(vault: Path, answers: list[bytes], *args: str, **env: str) -> tuple[int, str]:
    """Run memstore with stdin, stdout and stderr on a pseudo-terminal; send an answer each
    time it asks 're-open?'. Returns its exit code and everything the terminal showed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(EXE), *args],
        env={**os.environ, "MEMSTORE_VAULT": str(vault), **env},
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    shown, asked = b"", 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            shown += chunk
            if shown.count(b"re-open?") > asked:
                os.write(leader, answers[asked])
                asked += 1
        elif process.poll() is not None:
            break
    os.close(leader)
    return process.wait(timeout=30), shown.decode("utf-8", errors="replace")


def test_on_a_terminal_a_mistake_reopens_the_editor_on_the_same_text(
    vault: Path, tmp_path: Path
) -> None:
    memory_id, path = add(vault, "nginx upload limit is client_max_body_size")
    # First save: a new text but a broken kind. Second: the same text, the kind put back.
    ed = editor(
        tmp_path,
        "first = 'client_max_body_size 50m' not in text\n"
        "text = text.replace('client_max_body_size', 'client_max_body_size 50m') if first "
        "else text.replace('kind: nope', 'kind: lesson')\n"
        "text = text.replace('kind: note', 'kind: nope')\n"
        "runs = pathlib.Path(sys.argv[0]).parent / 'runs.txt'\n"
        "with runs.open('a', encoding='utf-8') as log:\n"
        "    log.write(str(path) + '\\n')",
    )
    code, shown = on_a_terminal(vault, [b"\n"], "edit", memory_id, EDITOR=ed)
    assert code == 0, shown
    assert "unknown kind 'nope'" in shown and "re-open? [Y/n]" in shown
    assert f"saved {memory_id}" in shown
    text = path.read_text(encoding="utf-8")
    assert "kind: lesson" in text and "client_max_body_size 50m" in text
    runs = (tmp_path / "runs.txt").read_text(encoding="utf-8").split()
    assert len(runs) == 2 and runs[0] == runs[1]  # the same copy, opened again
    assert git(vault, "log", "-1", "--format=%s").startswith("edit(global): ")


def test_on_a_terminal_declining_to_reopen_saves_nothing(vault: Path, tmp_path: Path) -> None:
    memory_id, _ = add(vault, "nginx upload limit is client_max_body_size")
    before = head(vault), vault_bytes(vault)
    ed = editor(tmp_path, "text = text.replace('kind: note', 'kind: nope')")
    code, shown = on_a_terminal(vault, [b"n\n"], "edit", memory_id, EDITOR=ed)
    assert code == 1 and "nothing was saved" in shown
    assert (head(vault), vault_bytes(vault)) == before


def test_a_change_made_while_the_editor_was_open_is_merged_not_overwritten(
    vault: Path, tmp_path: Path
) -> None:
    memory_id, path = add(vault, "nginx upload limit is client_max_body_size")
    # While the editor is open an agent stores the same memory again: seen 1 -> 2.
    ed = editor(
        tmp_path,
        "import subprocess\n"
        f"subprocess.run([{str(EXE)!r}, 'add', 'nginx upload limit is client_max_body_size',"
        " '-w', 'global', '-K', 'proxy'], check=True, capture_output=True)\n"
        "text = text.replace('client_max_body_size', 'client_max_body_size 50m')",
    )
    done = run(vault, "edit", memory_id, EDITOR=ed)
    assert done.returncode == 0, done.stderr
    assert "merged with a change made while you edited" in done.stdout
    text = path.read_text(encoding="utf-8")
    assert "seen: 2" in text and "proxy" in text and "client_max_body_size 50m" in text
    subjects = git(vault, "log", "-3", "--format=%s").splitlines()
    assert subjects[0].startswith("edit(global): ") and subjects[1].startswith("seen(global): ")


def test_a_hand_written_file_stays_without_front_matter(vault: Path, tmp_path: Path) -> None:
    path = vault / "global" / "notes.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text("redis runs on port 6380 here\n", encoding="utf-8")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "a note by hand")
    with Store.open(settings_at(vault)) as store:
        memory_id = store.search("redis").hits[0].id
    done = run(
        vault, "edit", memory_id, EDITOR=editor(tmp_path, "text = text.replace('6380', '6381')")
    )
    assert done.returncode == 0, done.stderr
    assert path.read_text(encoding="utf-8") == "redis runs on port 6381 here\n"


def test_an_editor_that_cannot_run_or_fails_is_one_line_and_changes_nothing(
    vault: Path, tmp_path: Path
) -> None:
    memory_id, _ = add(vault, "nginx upload limit is client_max_body_size")
    before = head(vault), vault_bytes(vault)
    missing = run(vault, "edit", memory_id, EDITOR="no-such-editor-here")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    assert "cannot run the editor 'no-such-editor-here' (from $EDITOR)" in missing.stderr
    failed = run(vault, "edit", memory_id, EDITOR="false")
    assert failed.returncode == 1 and "exited with status 1" in failed.stderr
    assert (head(vault), vault_bytes(vault)) == before


def test_with_no_editor_set_a_default_is_used_or_the_error_says_how_to_set_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(InvalidInputError, match=r"export EDITOR=nano"):
        choose_editor("", "", terminal=True)
    vi = bin_dir / "vi"
    vi.write_text("#!/bin/sh\n", encoding="utf-8")
    vi.chmod(0o755)
    assert choose_editor("", " ", terminal=True) == (["vi"], "the default editor")
    assert choose_editor("", "code --wait", terminal=False) == (["code", "--wait"], "$EDITOR")
    with pytest.raises(InvalidInputError, match=r"no terminal"):
        choose_editor("", "", terminal=False)  # a script or an agent: vi would wait forever


def test_edit_without_an_editor_or_a_terminal_refuses_instead_of_starting_vi(
    vault: Path, tmp_path: Path
) -> None:
    memory_id, _ = add(vault, "nginx upload limit is client_max_body_size")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    vi = bin_dir / "vi"
    vi.write_text(f"#!/bin/sh\ntouch {tmp_path / 'vi-ran'}\n", encoding="utf-8")
    vi.chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    before = head(vault), vault_bytes(vault)
    done = run(vault, "edit", memory_id, EDITOR="", VISUAL="", PATH=path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "$VISUAL and $EDITOR are unset and there is no terminal" in done.stderr
    assert not (tmp_path / "vi-ran").exists()
    assert (head(vault), vault_bytes(vault)) == before


@pytest.mark.parametrize("point", ["memory-written", "git-commit"])
def test_an_edit_killed_before_its_commit_is_undone_by_the_next_command(
    tmp_path: Path, point: str
) -> None:
    from tests.service.test_crash_points import (
        TEXTS,
        assert_healthy,
        killed,
        make_vault,
        memory_texts,
    )

    vault = tmp_path / "vault"
    ids = make_vault(vault)
    ed = editor(tmp_path, "text = text.replace('maria', 'maria or tom')")
    env = {"MEMSTORE_CRASH_AT": point, "EDITOR": ed, "TMPDIR": str(tmp_path)}
    assert killed(run_memstore("edit", ids[1], vault=vault, env=env))
    assert_healthy(vault, list(TEXTS))
    if point == "memory-written":  # before the commit, never reported: undone
        assert "maria or tom" not in memory_texts(vault)
    else:  # after it: the commit stands
        assert "maria or tom" in memory_texts(vault)
        assert "edit(webshop): " in git(vault, "log", "--format=%s")
    copies = list(tmp_path.glob("memstore-edit-*/*.md"))  # the person's text outlives the kill
    assert len(copies) == 1 and "maria or tom" in copies[0].read_text(encoding="utf-8")
