"""`memstore doctor` finds memory files whose names hold a credential (stored with
--allow-secret before the slug left it out) and `doctor --fix` renames them, one commit."""

from __future__ import annotations

import json
from pathlib import Path

from memstore.core.secrets import find_secrets
from tests.conftest import git, invoke_memstore

TOKEN = "ghp_" + "Zq8rT2mWx9LkP4vB7nC1dF6hJ3sY5aE0uG8i"  # split: no scanner flags this file


def _old_style_memory(vault: Path) -> tuple[str, str]:
    """A memory as an add before the slug fix named it: the token lowercased in its name."""
    done = invoke_memstore(
        "add", f"deploy token {TOKEN} for the ci bot", "-w", "ci", "--allow-secret", "--json",
        vault=vault,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    memory_id = json.loads(done.stdout)["id"]
    [path] = [p for p in vault.rglob(f"*-{memory_id}.md")]
    old = path.with_name(f"deploy-token-{TOKEN.lower().replace('_', '-')}-{memory_id}.md")
    git(vault, "mv", str(path.relative_to(vault)), str(old.relative_to(vault)))
    git(vault, "commit", "-qm", f"add(ci): {old.name}")
    return memory_id, str(old.relative_to(vault))


def test_doctor_names_the_memory_by_id_and_fix_renames_it(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    assert invoke_memstore("init", str(vault)).returncode == 0
    memory_id, old = _old_style_memory(vault)
    clean = invoke_memstore("add", "the ci bot runs on ubuntu 24.04", "-w", "ci", vault=vault)
    assert clean.returncode == 0

    found = invoke_memstore("doctor", vault=vault)

    assert found.returncode == 1
    assert f"memory {memory_id}: its file name holds what looks like a GitHub token" in found.stdout
    assert "doctor --fix" in found.stdout
    assert TOKEN.lower() not in found.stdout and TOKEN not in found.stdout

    fixed = invoke_memstore("doctor", "--fix", vault=vault)

    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert not (vault / old).exists()
    [new] = [p for p in vault.rglob(f"*-{memory_id}.md")]
    assert not find_secrets(new.name.replace("-", " ")) and TOKEN.lower()[4:] not in new.name
    assert TOKEN in new.read_text(encoding="utf-8")  # the text stays as it was stored
    subject = git(vault, "log", "-1", "--format=%s").strip()
    assert subject == "rename: 1 memory whose file names held a credential"
    assert git(vault, "status", "--porcelain") == ""
    assert invoke_memstore("doctor", vault=vault).returncode == 0
    shown = invoke_memstore("show", memory_id, vault=vault)
    assert shown.returncode == 0 and TOKEN in shown.stdout
