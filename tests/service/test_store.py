"""The service: add, dedup, search, show, catch-up, reindex, damage and bad input."""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstore.core.errors import InvalidInputError, NotFoundError
from memstore.service.checks import MAX_TEXT_BYTES
from memstore.service.store import Store
from tests.conftest import commit_count, git, head, settings_at, vault_bytes


def fixed_clock() -> datetime:
    return datetime(2026, 11, 29, 14, 12, 23, tzinfo=UTC)


def test_add_writes_one_file_and_one_commit_with_trailers(store: Store, vault: Path) -> None:
    before = commit_count(vault)
    result = store.add(
        "Upload 413 is nginx client_max_body_size",
        workspace="webshop",
        kind="lesson",
        keywords=("nginx", "413"),
    )
    assert result.status == "added" and result.seen == 1
    text = (vault / result.path).read_text(encoding="utf-8")
    created = re.search(r"^created: (\d{4}-\d\d)-(\d\d)T", text, re.MULTILINE)
    month, day = created.groups()  # type: ignore[union-attr]
    assert result.path == f"webshop/{month}/{day}/upload-413-is-nginx-client-max-{result.id}.md"
    assert text.startswith(
        f'---\nid: {result.id}\nkind: lesson\nkeywords: [nginx, "413"]\nsource: test\n'
    )
    assert commit_count(vault) == before + 1
    message = git(vault, "log", "-1", "--format=%B")
    assert message.startswith("add(webshop): Upload 413 is nginx client_max_body_size\n")
    assert (
        "Memstore-Source: test\nMemstore-Session: test-session\nMemstore-Host: test-host" in message
    )
    assert git(vault, "status", "--porcelain") == ""


def test_recall_right_after_add_sees_it(store: Store) -> None:
    added = store.add("Staging deploys need approval from maria", workspace="webshop")
    assert [h.id for h in store.search("staging approval", workspace="webshop").hits] == [added.id]


def test_duplicate_add_bumps_seen_instead_of_new_file(store: Store, vault: Path) -> None:
    first = store.add("Use pnpm, not npm", workspace="global", keywords=("pnpm",))
    second = store.add("- use  PNPM, not npm ", workspace="global", keywords=("npm", "pnpm"))
    assert second.status == "duplicate_merged" and second.id == first.id and second.seen == 2
    files = list((vault / "global").rglob("*.md"))
    assert len(files) == 1
    memory = store.show(first.id)[1]
    assert memory.seen == 2 and memory.keywords == ("pnpm", "npm")
    assert git(vault, "log", "-1", "--format=%s").startswith("seen(global): ")


def test_same_text_in_two_workspaces_is_two_memories(store: Store) -> None:
    a = store.add("Run make test before pushing", workspace="webshop")
    b = store.add("Run make test before pushing", workspace="infra")
    assert a.status == b.status == "added" and a.id != b.id


def test_ids_are_stable_across_vaults(tmp_path: Path) -> None:
    ids = []
    for name in ("one", "two"):
        with Store.open(settings_at(tmp_path / name), create=True) as opened:
            ids.append(opened.add("Prefer ripgrep over grep", workspace="global").id)
    assert ids[0] == ids[1]


def test_supersedes_records_the_correction(store: Store) -> None:
    old = store.add("Deploy staging with make deploy", workspace="webshop")
    new = store.add(
        "Deploy staging with ./scripts/deploy.sh", workspace="webshop", supersedes=(old.id[:5],)
    )
    assert store.show(new.id)[1].supersedes == (old.id,)


def test_unknown_supersedes_id_stores_nothing(store: Store, vault: Path) -> None:
    before = (head(vault), vault_bytes(vault))
    with pytest.raises(NotFoundError, match="supersedes 'zzzzzzzz': no memory has that id"):
        store.add("something new", workspace="global", supersedes=("zzzzzzzz",))
    assert (head(vault), vault_bytes(vault)) == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": ""}, "empty"),
        ({"text": "   \n\t"}, "empty"),
        ({"text": "x" * (MAX_TEXT_BYTES + 1)}, "limit is"),
        ({"text": "a\0b"}, "NUL"),
        ({"text": "ok", "workspace": "../x"}, "invalid workspace"),
        ({"text": "ok", "workspace": "a/b"}, "invalid workspace"),
        ({"text": "ok", "workspace": "ALL"}, "invalid workspace"),
        ({"text": "ok", "workspace": "all"}, "reserved"),
        ({"text": "ok", "kind": "imported"}, "set by memstore import"),
        ({"text": "ok", "source": "bad source!"}, "invalid --source"),
        ({"text": "ok", "keywords": ("k" * 80,)}, "too long"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    store: Store, vault: Path, kwargs: dict, message: str
) -> None:
    before = (head(vault), vault_bytes(vault))
    arguments = {"workspace": "global", **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        store.add(arguments.pop("text"), **arguments)
    assert (head(vault), vault_bytes(vault)) == before


def test_ten_megabyte_text_is_refused_in_one_line(store: Store) -> None:
    with pytest.raises(InvalidInputError) as err:
        store.add("y" * 10_000_000, workspace="global")
    assert "\n" not in str(err.value) and "10,000,000 bytes" in str(err.value)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"text": "token ghp_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ"}, "memory text contains"),
        (
            {"keywords": ("ghp_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ",)},
            "the memory's keywords contain",
        ),
        ({"source": "ghp_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ"}, "the memory's source contains"),
    ],
)
def test_a_secret_is_refused_naming_where_it_is(
    store: Store, vault: Path, fields: dict[str, object], said: str
) -> None:
    before = commit_count(vault)
    text = str(fields.pop("text", "the deploy token lives in the vault"))
    with pytest.raises(InvalidInputError, match=f"^{said} what looks like a GitHub token;"):
        store.add(text, workspace="webshop", **fields)  # type: ignore[arg-type]
    assert commit_count(vault) == before


def test_search_prefers_all_terms_then_falls_back_to_weak(sample_vault: Path) -> None:
    with Store.open(settings_at(sample_vault)) as opened:
        strict = opened.search("nginx client_max_body_size")
        assert strict.hits and not strict.weak and strict.hits[0].view.startswith("lexical")
        tiers = [h.weak for h in strict.hits]
        assert tiers == sorted(tiers)  # all-words matches first, any-word fills after, weak
        assert all(h.weak for h in strict.hits if h.view == "any-word")
        fallback = opened.search("nginx xylophone")
        assert fallback.weak and fallback.hits and all(h.weak for h in fallback.hits)
        assert opened.search("xylophone zebra").hits == ()


def test_named_workspace_reads_itself_plus_global(sample_vault: Path) -> None:
    with Store.open(settings_at(sample_vault)) as opened:
        spaces = {h.workspace for h in opened.search("the", workspace="webshop", k=50).hits}
        spaces |= {h.workspace for h in opened.search("npm pnpm", workspace="webshop", k=50).hits}
        assert spaces <= {"webshop", "global"} and "global" in spaces
        assert len({h.workspace for h in opened.search("deploy", k=50).hits}) > 2


@pytest.mark.parametrize(
    "query", ['"unbalanced', "a AND (b OR", "NOT", "*", "~", "-", "x:y", "[", "c++", "🙂", "\\"]
)
def test_hostile_queries_never_raise(sample_vault: Path, query: str) -> None:
    with Store.open(settings_at(sample_vault)) as opened:
        opened.search(query)


def test_show_by_unique_prefix_and_errors_for_unknown_or_ambiguous(store: Store) -> None:
    added = store.add("Redis runs on port 6380 in dev", workspace="global")
    assert store.show(added.id[:3])[1].body == "Redis runs on port 6380 in dev\n"
    with pytest.raises(NotFoundError, match="no memory with id"):
        store.show("zzzz9999")
    with pytest.raises(InvalidInputError, match="not a memory id"):
        store.show("../etc")
    for n in range(40):
        store.add(f"memory number {n}", workspace="global")
    prefixes = {}
    for entry in store.indexer.entries():
        prefixes.setdefault(entry.id[0], []).append(entry.id)
    letter = next(k for k, v in prefixes.items() if len(v) > 1)
    with pytest.raises(InvalidInputError, match="matches"):
        store.show(letter)


def test_reindex_gives_the_same_results(sample_vault: Path) -> None:
    queries = [
        "deploy",
        "nginx upload",
        "pnpm",
        "postgres timeout",
        "kafka consumer lag",
        "ios signing",
        "the",
    ]
    with Store.open(settings_at(sample_vault)) as opened:
        opened.add("Kafka consumer lag alerts fire at 10k messages", workspace="data-pipeline")
        opened.add("Use pnpm, never npm, in every JS repo", workspace="global")  # may merge
        before = [[(h.id, h.score) for h in opened.search(q, k=10).hits] for q in queries]
        opened.reindex()
        after = [[(h.id, h.score) for h in opened.search(q, k=10).hits] for q in queries]
    assert before == after
    with Store.open(settings_at(sample_vault)) as fresh:
        assert [[(h.id, h.score) for h in fresh.search(q, k=10).hits] for q in queries] == before


def test_deleting_the_index_loses_nothing(sample_vault: Path) -> None:
    import shutil

    with Store.open(settings_at(sample_vault)) as opened:
        before = [h.id for h in opened.search("deploy", k=20).hits]
    shutil.rmtree(sample_vault / ".memstore")
    with Store.open(settings_at(sample_vault)) as opened:
        assert [h.id for h in opened.search("deploy", k=20).hits] == before


def test_catch_up_after_a_commit_made_with_the_git_cli(store: Store, vault: Path) -> None:
    store.add("seed memory", workspace="global")
    path = vault / "infra" / "hand-made-abcdefgh.md"
    path.parent.mkdir()
    path.write_text(
        "---\nid: abcdefgh\nkind: lesson\nkeywords: [helm]\n---\nhelm rollback needs --wait\n",
        encoding="utf-8",
    )
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "by hand")
    assert [h.id for h in store.search("helm rollback").hits] == ["abcdefgh"]


def test_catch_up_after_an_editor_save_delete_and_rename(store: Store, vault: Path) -> None:
    added = store.add("Postgres listens on 5433 locally", workspace="infra")
    path = vault / added.path
    text = path.read_text(encoding="utf-8").replace("5433", "5434 since the upgrade")
    tmp = path.with_name(".edit.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # an editor's atomic save
    assert [h.id for h in store.search("5434 upgrade").hits] == [added.id]
    assert store.search("5433").hits == ()
    moved = vault / "webshop" / path.name
    moved.parent.mkdir()
    path.rename(moved)  # moving a file moves the memory
    assert [h.workspace for h in store.search("5434").hits] == ["webshop"]
    moved.unlink()
    assert store.search("5434").hits == ()


def test_hand_written_and_malformed_files_are_found_and_never_rewritten(
    store: Store, vault: Path
) -> None:
    notes = vault / "global"
    notes.mkdir()
    plain = notes / "contacts.md"
    plain.write_text("Ask maria about deploys\n", encoding="utf-8")
    broken = notes / "broken.md"
    broken.write_text("---\nid: [oops\n---\nnginx teapot error\n", encoding="utf-8")
    before = vault_bytes(vault)
    assert store.search("maria deploys").hits and store.search("teapot").hits
    result = store.add("Ask maria about deploys", workspace="global")
    assert result.status == "duplicate_uncounted"
    assert vault_bytes(vault) == before
    assert ("global/broken.md", store.problems()[0][1]) == store.problems()[
        0
    ] and "malformed" in store.problems()[0][1]


def test_damaged_index_is_quarantined_and_rebuilt(
    sample_vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with Store.open(settings_at(sample_vault)) as opened:
        before = [h.id for h in opened.search("deploy").hits]
    for toc in (sample_vault / ".memstore" / "index" / "search" / "whoosh").glob("*.toc"):
        toc.write_bytes(b"\x00garbage")
    with Store.open(settings_at(sample_vault)) as opened:
        assert [h.id for h in opened.search("deploy").hits] == before
    kept = list((sample_vault / ".memstore").glob("index.damaged-*"))
    assert kept and f"{kept[0].name} (`memstore gc` removes it)" in caplog.text


def _add_many(vault: str, prefix: str, count: int) -> None:
    with Store.open(settings_at(Path(vault), source=prefix)) as opened:
        for n in range(count):
            opened.add(f"{prefix} wrote memory {n}", workspace="global")


def test_two_processes_adding_at_once_both_land(vault: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_add_many, args=(str(vault), name, 8)) for name in ("alpha", "beta")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    assert commit_count(vault) == 1 + 16
    assert git(vault, "status", "--porcelain") == ""
    with Store.open(settings_at(vault)) as opened:
        assert len(opened.indexer.entries()) == 16
        for name in ("alpha", "beta"):
            found = opened.search(f"{name} wrote", k=50).hits
            every_word = [h for h in found if h.view.startswith("lexical")]
            assert len(every_word) == 8 and all(h.content.startswith(name) for h in every_word)


def test_clock_sets_created(vault: Path) -> None:
    with Store.open(settings_at(vault), clock=fixed_clock) as opened:
        added = opened.add("pinned time", workspace="global")
        assert opened.show(added.id)[1].created == "2026-11-29T14:12:23Z"


def test_flushing_many_recall_counters_is_one_commit_and_one_index_write(
    sample_vault: Path,
) -> None:
    with Store.open(settings_at(sample_vault)) as opened:
        recalled = {
            h.id
            for q in ("deploy", "nginx", "postgres", "ios")
            for h in opened.recall(q, workspace=None, k=5, record_usage=True).hits
        }
        commits, version = commit_count(sample_vault), opened.indexer.search.version()
        flushed = opened.flush_usage()
        assert flushed > 5
        assert commit_count(sample_vault) == commits + 1
        # One index write for all of them (a write each cost ~40 s at 100,000 memories).
        assert opened.indexer.search.version() == version + 1
        counted = {e.id: e.recalled for e in opened.indexer.entries() if e.id in recalled}
        assert sum(1 for n in counted.values() if n >= 1) == flushed
        found = [[(h.id, h.score) for h in opened.search(q, k=10).hits] for q in ("deploy", "ios")]
    shutil.rmtree(sample_vault / ".memstore")
    with Store.open(settings_at(sample_vault)) as fresh:
        again = [[(h.id, h.score) for h in fresh.search(q, k=10).hits] for q in ("deploy", "ios")]
        assert {e.id: e.recalled for e in fresh.indexer.entries() if e.id in recalled} == counted
    assert again == found
