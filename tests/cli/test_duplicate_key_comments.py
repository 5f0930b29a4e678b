"""A front matter that states a key twice (YAML keeps the last) is still patched in place
when memstore changes other keys: `confirm` keeps a person's comment and both lines of the
repeated key, where it re-rendered the whole front matter and dropped them."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git, invoke_memstore

FRONT = (
    "---\n"
    "id: pppp6666\n"
    "# why this matters: prod incident 42\n"
    "kind: note\n"
    "owner: alice   # team lead\n"
    "kind: lesson\n"
    "tags: [a, b]  # mine\n"
    "---\n"
    "Dup key with comments jackal\n"
)


def test_confirm_keeps_comments_and_a_repeated_key(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    assert invoke_memstore("init", str(root)).returncode == 0
    path = root / "hand" / "2026-12" / "dupc-pppp6666.md"
    path.parent.mkdir(parents=True)
    path.write_text(FRONT, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "written by hand")
    done = invoke_memstore("confirm", "pppp6666", vault=root)
    assert done.returncode == 0, done.stderr
    after = path.read_text(encoding="utf-8")
    assert after != FRONT  # confirm counted something
    kept = [line for line in FRONT.splitlines() if line != "---"]
    assert [line for line in after.splitlines() if line in kept] == kept, after
    shown = invoke_memstore("show", "pppp6666", "--json", vault=root)
    assert shown.returncode == 0 and '"lesson"' in shown.stdout  # YAML's reading: the last
