"""Memories that cite code, recalled after the code changed: the stale marks, their rank,
the shells that show them, audit and `list --stale`, and an index rebuilt from the files.

A real git repository (`shop`) with Python and JavaScript sources, a real vault, memory files
whose `cites:` were anchored with catalog/citing.py; every edit is made to the working tree as
a person would make it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from mcp import Client

from memstore.catalog.citing import anchor
from memstore.core.citations import cites_yaml
from memstore.service.store import Store
from tests.conftest import git, invoke_memstore, settings_at
from tests.mcp.test_mcp import stdio

UPLOAD = '''"""Uploads."""

import os


def handle_upload(request):
    """Store an upload, refusing bodies over the limit."""
    limit = int(os.environ.get("UPLOAD_LIMIT", "1048576"))
    if len(request.body) > limit:
        raise ValueError("413: body over the upload limit")
    return save(request.body)


def save(body):
    with open("/tmp/upload", "wb") as out:
        out.write(body)
    return len(body)


class Uploader:
    def retry(self, times):
        for _ in range(times):
            self.send()
'''

CART = """export function cartTotal(items) {
  return items.reduce((sum, item) => sum + item.price * item.quantity, 0);
}

export function emptyCart(cart) {
  cart.items = [];
}
"""

NOW = "2026-12-01T10:00:00Z"
# (memory id, spec it cites, its text): each about the code it cites
MEMORIES = [
    ("upld0001", "src/upload.py:handle_upload", "upload size limit is read from UPLOAD_LIMIT env"),
    ("save0002", "src/upload.py:save", "upload save writes the body to /tmp/upload"),
    ("cart0003", "web/cart.js:cartTotal", "cart total multiplies price by quantity"),
    ("retr0004", "src/upload.py:Uploader.retry", "upload retry sends again each time"),
    ("head0005", "src/upload.py:1-3", "upload module docstring says Uploads"),
]


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A git repository named shop: sources committed, nothing changed yet."""
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "web").mkdir()
    (root / "src" / "upload.py").write_text(UPLOAD, encoding="utf-8")
    (root / "web" / "cart.js").write_text(CART, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "sources")
    return root


def write_memory(vault: Path, memory_id: str, text: str, cites: str) -> None:
    folder = vault / "shop"
    folder.mkdir(exist_ok=True)
    # the memory about handle_upload names its subject in keywords: it ranks first while fresh
    keywords = "keywords: [upload, size, limit]\n" if memory_id == "upld0001" else ""
    front = f"---\nid: {memory_id}\nkind: lesson\n{keywords}created: {NOW}\n{cites}\n---\n"
    (folder / f"{memory_id}.md").write_text(front + text + "\n", encoding="utf-8")


@pytest.fixture
def cited(vault: Path, shop: Path) -> Path:
    """The vault with one memory per MEMORIES entry citing shop's code, and one that cites
    nothing (fresh by definition)."""
    for memory_id, spec, text in MEMORIES:
        write_memory(vault, memory_id, text, cites_yaml([anchor(shop, "shop", spec, NOW)]))
    write_memory(
        vault, "free0006", "nginx client_max_body_size also caps the upload size limit", ""
    )
    return vault


def recall_marks(vault: Path, query: str, cwd: Path | None) -> dict[str, str]:
    """Return each hit's stale reason ('' when fresh) for `query` asked from `cwd`."""
    with Store.open(settings_at(vault)) as store:
        result = store.search(query, workspace="shop", k=10, cwd=cwd)
    return {hit.id: "; ".join(s.reason for s in hit.stale) for hit in result.hits}


def edit(shop: Path, path: str, old: str, new: str) -> None:
    file = shop / path
    text = file.read_text(encoding="utf-8")
    assert old in text
    file.write_text(text.replace(old, new, 1), encoding="utf-8")


def stale_ids(marks: dict[str, str]) -> set[str]:
    return {memory_id for memory_id, reason in marks.items() if reason}


def test_nothing_is_stale_before_the_code_changes(cited: Path, shop: Path) -> None:
    marks = recall_marks(cited, "upload", shop)
    assert {"upld0001", "save0002", "free0006"} <= set(marks)
    assert stale_ids(marks) == set()


def test_a_changed_body_marks_exactly_the_memories_citing_it(cited: Path, shop: Path) -> None:
    edit(shop, "src/upload.py", '"1048576"', '"2097152"')
    marks = recall_marks(cited, "upload", shop)
    assert stale_ids(marks) == {"upld0001"}
    assert marks["upld0001"].startswith("src/upload.py:handle_upload changed")
    edit(shop, "web/cart.js", "item.price * item.quantity", "item.price")
    assert stale_ids(recall_marks(cited, "cart total", shop)) == {"cart0003"}


def test_moved_lines_are_no_change(cited: Path, shop: Path) -> None:
    edit(
        shop, "src/upload.py", "import os\n", "import os\nimport sys\n\n\ndef first():\n    pass\n"
    )
    edit(shop, "web/cart.js", "export function cartTotal", "// totals\n\nexport function cartTotal")
    assert stale_ids(recall_marks(cited, "upload", shop)) == set()
    assert stale_ids(recall_marks(cited, "cart total", shop)) == set()


def test_a_rename_or_a_deletion_is_gone(cited: Path, shop: Path) -> None:
    edit(shop, "src/upload.py", "def save(body):", "def persist(body):")
    marks = recall_marks(cited, "upload", shop)
    assert stale_ids(marks) == {"save0002"}
    assert "save" in marks["save0002"] and "changed" not in marks["save0002"]
    (shop / "web" / "cart.js").unlink()
    assert stale_ids(recall_marks(cited, "cart total", shop)) == {"cart0003"}


def test_a_revert_makes_it_fresh_again(cited: Path, shop: Path) -> None:
    edit(shop, "src/upload.py", "raise ValueError", "raise RuntimeError")
    assert stale_ids(recall_marks(cited, "upload size limit", shop)) == {"upld0001"}
    git(shop, "checkout", "--", "src/upload.py")
    assert stale_ids(recall_marks(cited, "upload size limit", shop)) == set()


def test_a_changed_line_range_is_stale(cited: Path, shop: Path) -> None:
    edit(shop, "src/upload.py", '"""Uploads."""', '"""Uploads, checked."""')
    assert "head0005" in stale_ids(recall_marks(cited, "upload module docstring", shop))


def test_a_stale_hit_ranks_below_a_fresh_one_of_its_tier(cited: Path, shop: Path) -> None:
    query = "upload size limit"
    with Store.open(settings_at(cited)) as store:
        before = store.search(query, workspace="shop", k=10, cwd=shop).hits
    assert [h.id for h in before][:2] == ["upld0001", "free0006"]
    assert not before[0].weak and not before[1].weak  # both confident
    edit(shop, "src/upload.py", '"1048576"', '"2097152"')
    edit(shop, "src/upload.py", "self.send()", "self.send(times)")  # a weak hit goes stale
    with Store.open(settings_at(cited)) as store:
        after = store.search(query, workspace="shop", k=10, cwd=shop).hits
    assert [h.id for h in after][:2] == ["free0006", "upld0001"]
    assert after[1].stale and not after[1].weak  # still confident, below the fresh one
    tiers = [(h.weak, bool(h.stale)) for h in after]
    assert tiers == sorted(tiers)  # confident fresh, confident stale, weak fresh, weak stale


def test_citations_of_another_repository_or_outside_it_are_not_checked(
    cited: Path, shop: Path, tmp_path: Path
) -> None:
    edit(shop, "src/upload.py", '"1048576"', '"2097152"')
    assert stale_ids(recall_marks(cited, "upload", None)) == set()
    assert stale_ids(recall_marks(cited, "upload", tmp_path)) == set()
    other = tmp_path / "other"
    (other / "src").mkdir(parents=True)
    (other / "src" / "upload.py").write_text("def handle_upload(r):\n    return 1\n")
    git(other, "init", "-q")
    assert stale_ids(recall_marks(cited, "upload", other)) == set()  # cites name shop


def test_cli_search_shows_the_mark_in_text_json_and_context(cited: Path, shop: Path) -> None:
    edit(shop, "src/upload.py", '"1048576"', '"2097152"')
    text = invoke_memstore("search", "upload size limit", vault=cited, cwd=shop).stdout
    assert "src/upload.py:handle_upload changed" in text and "memstore confirm upld0001" in text
    data = json.loads(
        invoke_memstore("search", "upload size limit", "--json", vault=cited, cwd=shop).stdout
    )
    by_id = {hit["id"]: hit for hit in data["results"]}
    assert by_id["upld0001"]["stale"]["cites"][0]["cite"] == "src/upload.py:handle_upload"
    assert by_id["upld0001"]["stale"]["cites"][0]["state"] == "changed"
    assert by_id["free0006"]["stale"] is None
    context = invoke_memstore(
        "search", "upload size limit", "--context", vault=cited, cwd=shop
    ).stdout
    line = next(line for line in context.splitlines() if "upld0001" in line)
    assert "(stale: src/upload.py:handle_upload changed" in line
    assert line.endswith("- verify before acting)")


def test_prompt_hook_marks_the_stale_memory(cited: Path, shop: Path) -> None:
    (shop / "src" / "upload.py").unlink()
    # "env", "nginx": each memory holds a word of the prompt the other lacks. Asked only
    # "where is the upload size limit set?", the nginx note holds just the stale memory's
    # words, for fewer units (no keywords), and is not injected beside it (core.ranking.echoes)
    prompt = "where is the upload size limit set, in the env or by nginx?"
    payload = {"session_id": "s", "cwd": str(shop), "prompt": prompt}
    out = invoke_memstore("hook", "prompt", vault=cited, stdin=json.dumps(payload)).stdout
    line = next(line for line in out.splitlines() if "upld0001" in line)
    assert "(stale: " in line and "deleted" in line and "verify before acting" in line
    fresh = next(line for line in out.splitlines() if "free0006" in line)
    assert "stale" not in fresh


def test_mcp_recall_over_stdio_carries_the_mark(cited: Path, shop: Path) -> None:
    edit(shop, "src/upload.py", "def save(body):", "def persist(body):")

    async def go() -> list[dict[str, object]]:
        async with Client(stdio(cited, cwd=shop)) as client:
            found = await client.call_tool("memory_recall", {"query": "upload save body"})
            return list(found.structured_content["results"])

    results = {hit["id"]: hit for hit in asyncio.run(go())}
    assert results["save0002"]["stale"]["cites"][0]["state"] == "gone"  # type: ignore[index]
    assert all("stale" not in hit for memory_id, hit in results.items() if memory_id != "save0002")


def test_audit_and_list_stale_name_what_changed_and_how_to_settle_it(
    cited: Path, shop: Path, tmp_path: Path
) -> None:
    edit(shop, "src/upload.py", '"1048576"', '"2097152"')
    (shop / "web" / "cart.js").unlink()
    audit = invoke_memstore("audit", vault=cited, cwd=shop).stdout
    assert "stale citations" in audit and "src/upload.py:handle_upload changed" in audit
    assert "memstore confirm upld0001" in audit and "--supersedes cart0003" in audit
    listed = json.loads(invoke_memstore("list", "--stale", "--json", vault=cited, cwd=shop).stdout)
    assert {m["id"] for m in listed["stale"]} == {"upld0001", "cart0003"}
    assert listed["citing"] == 5 and listed["not_found"] == {}
    text = invoke_memstore("list", "--stale", vault=cited, cwd=shop).stdout
    assert "2 of 5 citing memories stale" in text
    elsewhere = invoke_memstore("list", "--stale", vault=cited, cwd=tmp_path).stdout
    assert "not checked: repository shop not found here (5 citations" in elsewhere
    assert "5 citing memories, none checked here" in elsewhere


def test_list_stale_finds_a_repository_registered_for_the_code_index(
    cited: Path, shop: Path, tmp_path: Path
) -> None:
    assert invoke_memstore("ingest", str(shop), vault=cited).returncode == 0
    edit(shop, "src/upload.py", '"1048576"', '"2097152"')
    listed = json.loads(
        invoke_memstore("list", "--stale", "--json", vault=cited, cwd=tmp_path).stdout
    )
    assert [m["id"] for m in listed["stale"]] == ["upld0001"]
    assert listed["repositories"] == {"shop": str(shop.resolve())}


def test_a_rebuilt_index_marks_the_same_hits(cited: Path, shop: Path) -> None:
    edit(shop, "src/upload.py", "def save(body):", "def persist(body):")
    edit(shop, "src/upload.py", '"1048576"', '"2097152"')
    queries = ["upload", "upload size limit", "cart total", "retry"]
    before = [recall_marks(cited, q, shop) for q in queries]
    with Store.open(settings_at(cited)) as store:
        rows = sorted((e.path, e.cites) for e in store.indexer.entries())
    shutil.rmtree(cited / ".memstore")
    after = [recall_marks(cited, q, shop) for q in queries]
    assert after == before and stale_ids(before[0]) == {"upld0001", "save0002"}
    with Store.open(settings_at(cited)) as store:
        assert sorted((e.path, e.cites) for e in store.indexer.entries()) == rows
    assert sum(1 for _, cites in rows if cites) == 5


def test_confirm_from_the_repository_settles_a_stale_memory(cited: Path, shop: Path) -> None:
    edit(shop, "src/upload.py", '"1048576"', '"2097152"')
    assert stale_ids(recall_marks(cited, "upload size limit", shop)) == {"upld0001"}
    assert invoke_memstore("confirm", "upld0001", vault=cited, cwd=shop).returncode == 0
    assert stale_ids(recall_marks(cited, "upload size limit", shop)) == set()
    listed = invoke_memstore("list", "--stale", "--json", vault=cited, cwd=shop).stdout
    assert json.loads(listed)["stale"] == []


def test_the_view_queues_memories_whose_cited_code_changed(
    cited: Path, shop: Path, tmp_path: Path
) -> None:
    edit(shop, "src/upload.py", '"1048576"', '"2097152"')
    (shop / "web" / "cart.js").unlink()
    data = json.loads(invoke_memstore("view", "--json", vault=cited, cwd=shop).stdout)
    queue = {item["id"]: item for item in data["queues"]["stale_citations"]}
    assert set(queue) == {"upld0001", "cart0003"}
    assert queue["upld0001"]["why"].startswith("src/upload.py:handle_upload changed")
    assert queue["upld0001"]["command"] == "memstore confirm upld0001"
    away = json.loads(invoke_memstore("view", "--json", vault=cited, cwd=tmp_path).stdout)
    assert away["queues"]["stale_citations"] == []
    assert "repository shop not found here" in away["vault"]["sampled"]["queue stale_citations"]
