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


def test_a_credential_pasted_into_a_file_is_not_taken_for_one_in_its_name(tmp_path: Path) -> None:
    """Found by the fifteenth session's trial: a person's `webshop/aws-creds2.md` holding a
    key (held back by sync) was listed as "its file name holds what looks like …", and
    `doctor --fix` renamed it to `webshop//….md` and failed with a pygit2 message, leaving
    the file renamed and uncommitted; with a valid name it would have committed the key
    sync held back. The same for a credential pasted into a memory an add named."""
    vault = tmp_path / "vault"
    assert invoke_memstore("init", str(vault)).returncode == 0
    added = invoke_memstore("add", "upload 413 is nginx client_max_body_size", "-w", "webshop",
                            "--json", vault=vault)  # fmt: skip
    path = vault / json.loads(added.stdout)["path"]
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("upload 413", f"upload 413 (token {TOKEN})"), encoding="utf-8")
    hand = vault / "webshop" / "aws-creds2.md"
    hand.write_text(f"the ci bot pushes with {TOKEN}\n", encoding="utf-8")
    assert invoke_memstore("sync", vault=vault).returncode in (0, 1)  # no remote: edits only
    head = git(vault, "rev-parse", "HEAD")

    doctor = invoke_memstore("doctor", "--json", vault=vault)
    assert json.loads(doctor.stdout)["named_secrets"] == [], doctor.stdout
    fixed = invoke_memstore("doctor", "--fix", vault=vault)

    assert "file name holds" not in fixed.stdout, fixed.stdout
    assert git(vault, "rev-parse", "HEAD") == head  # nothing committed: the token stays local
    assert hand.read_text(encoding="utf-8") == f"the ci bot pushes with {TOKEN}\n"
    assert TOKEN in path.read_text(encoding="utf-8")
