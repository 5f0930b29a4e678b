"""`memstore confirm` re-anchors a memory's citations to today's code, in its one commit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memstore.catalog.citing import CiteChecker, anchor
from memstore.core.codec import parse_memory
from memstore.service.store import Store
from memstore.service.vault_init import init_vault
from tests.conftest import EXE, commit_count, git, invoke_memstore, settings_at

UPLOAD = """def handle_upload(request):
    if len(request.body) > LIMIT:
        raise TooLarge()
    return save(request.body)


def reject(request):
    return 413
"""
THEN = "2026-12-01T09:00:00Z"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "webshop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "upload.py").write_text(UPLOAD, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    return root


def _edit(root: Path, text: str) -> None:
    path = root / "src" / "upload.py"
    stamp = path.stat().st_mtime_ns + 10**9
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(stamp, stamp))


def _stored(store: Store, memory_id: str) -> tuple:
    (path,) = store.vault.root.rglob(f"*{memory_id}.md")
    return parse_memory(path.read_text(encoding="utf-8"), path="webshop/x.md").cites


def test_confirm_reanchors_changed_and_moved_citations_and_drops_gone_ones(
    store: Store, repo: Path
) -> None:
    cites = tuple(
        anchor(repo, "webshop", spec, THEN)
        for spec in ("src/upload.py:handle_upload", "src/upload.py:3-4", "src/upload.py:reject")
    )
    other = anchor(repo, "elsewhere", "src/upload.py:reject", THEN)  # another repository's
    added = store.add("uploads past LIMIT get 413", workspace="webshop", cites=(*cites, other))
    changed = UPLOAD.replace("> LIMIT", ">= LIMIT").replace(
        "def reject(request):", "def refuse(request):"
    )
    _edit(repo, "import os\n\n" + changed)
    checker = CiteChecker(repo)
    assert [checker.check(c).state for c in cites] == ["changed", "fresh", "gone"]
    before = commit_count(store.vault.root)

    memory, dropped = store.confirm_cited(added.id, (repo, "webshop"))

    assert commit_count(store.vault.root) == before + 1
    assert memory.confirmed == 1
    assert [(c.label, reason) for c, reason in dropped] == [
        ("src/upload.py:reject", "reject no longer in src/upload.py")
    ]
    kept = _stored(store, added.id)
    assert kept == memory.cites
    assert [c.label for c in kept] == [
        "src/upload.py:handle_upload",
        "src/upload.py:5-6",  # the range followed its lines down
        "src/upload.py:reject",  # of the other repository: untouched
    ]
    assert kept[2] == other
    assert all(c.at > THEN and c.blob != cites[0].blob for c in kept[:2])
    assert kept[0].digest != cites[0].digest and kept[1].digest == cites[1].digest
    assert [CiteChecker(repo).check(c).state for c in kept[:2]] == ["fresh", "fresh"]


def test_a_range_whose_text_changed_keeps_its_lines_when_confirmed(
    store: Store, repo: Path
) -> None:
    cite = anchor(repo, "webshop", "src/upload.py:2-3", THEN)
    added = store.add("the limit check", workspace="webshop", cites=(cite,))
    _edit(repo, UPLOAD.replace("> LIMIT", ">= LIMIT"))
    memory, dropped = store.confirm_cited(added.id, (repo, "webshop"))
    assert dropped == () and memory.cites[0].lines == (2, 3)
    assert CiteChecker(repo).check(memory.cites[0]).state == "fresh"


def test_confirm_outside_the_repository_leaves_citations_alone(store: Store, repo: Path) -> None:
    cite = anchor(repo, "webshop", "src/upload.py:handle_upload", THEN)
    added = store.add("uploads are checked", workspace="webshop", cites=(cite,))
    memory, dropped = store.confirm_cited(added.id, None)
    assert memory.cites == (cite,) and dropped == () and memory.confirmed == 1


def test_the_confirm_command_says_which_citation_it_dropped(vault: Path, repo: Path) -> None:
    cite = anchor(repo, "webshop", "src/upload.py:reject", THEN)
    with Store.open(settings_at(vault)) as store:
        added = store.add("413 comes from reject", workspace="webshop", cites=(cite,))
    _edit(repo, UPLOAD.replace("def reject", "def refuse"))
    done = invoke_memstore("confirm", added.id, vault=vault, cwd=repo / "src")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"confirmed {added.id} (1 time)",
        "dropped citation src/upload.py:reject: reject no longer in src/upload.py",
    ]
    assert git(vault, "log", "-1", "--format=%s").startswith("confirm(webshop): ")


def test_two_clones_reanchoring_one_function_merge_through_the_git_driver(
    tmp_path: Path, repo: Path
) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    first, second = tmp_path / "a", tmp_path / "b"
    init_vault(first, settings_at(first))
    git(first, "remote", "add", "origin", str(remote))
    cite = anchor(repo, "webshop", "src/upload.py:handle_upload", THEN)
    with Store.open(settings_at(first)) as a:
        added = a.add("uploads past LIMIT get 413", workspace="webshop", cites=(cite,))
    git(first, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", str(remote), str(second))
    init_vault(second, settings_at(second))  # registers the merge driver in the clone
    _edit(repo, UPLOAD.replace("> LIMIT", ">= LIMIT"))
    with Store.open(settings_at(first)) as a:  # A re-anchors today
        reanchored, _ = a.confirm_cited(added.id, (repo, "webshop"))
    git(first, "push", "-q", "origin", "main")
    older = anchor(repo, "webshop", "src/upload.py:handle_upload", "2026-12-02T00:00:00Z")
    more = anchor(repo, "webshop", "src/upload.py:reject", "2026-12-02T00:00:00Z")
    with Store.open(settings_at(second)) as b:  # B re-anchors earlier and cites one more
        b.add("uploads past LIMIT get 413", workspace="webshop", cites=(older, more))

    pulled = subprocess.run(  # by hand: git runs the merge driver
        ["git", "pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        cwd=second,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{EXE.parent}{os.pathsep}{os.environ['PATH']}"},
    )
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr

    assert "<<<<<<<" not in (second / added.path).read_text(encoding="utf-8")
    merged = parse_memory((second / added.path).read_text(encoding="utf-8"), path=added.path)
    assert merged.cites == (reanchored.cites[0], more)  # the newer anchor won; B's new cite kept
    assert merged.confirmed == 1 and merged.seen == 2
    assert git(second, "status", "--porcelain") == ""


def test_an_agent_cites_and_confirms_through_the_mcp_server(store: Store, repo: Path) -> None:
    import json

    from memstore.mcp.server import build_server
    from tests.mcp.test_mcp import call, text_of

    server = build_server(store, workspace="webshop", source="claude-code", cwd=str(repo / "src"))
    added = call(
        server,
        "memory_add",
        {"content": "reject answers 413", "keywords": ["413"], "cites": ["upload.py:reject"]},
    )
    out = json.loads(text_of(added))
    assert out["cites"] == ["src/upload.py:reject"]
    _edit(repo, UPLOAD.replace("def reject", "def refuse"))
    confirmed = json.loads(text_of(call(server, "memory_confirm", {"id": out["id"]})))
    assert confirmed["dropped_cites"] == ["src/upload.py:reject: reject no longer in src/upload.py"]
    assert _stored(store, out["id"]) == ()
