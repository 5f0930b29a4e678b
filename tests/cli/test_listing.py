"""`memstore list` / `ls` and `memstore stats -w`: what the vault holds, from the index."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstore.cli.listing import parse_since
from memstore.core.errors import InvalidInputError
from memstore.launcher import typer_app
from memstore.service.store import Store
from tests.conftest import git, invoke_memstore, settings_at

app = typer_app()  # every shell's commands, as the executable has them

runner = CliRunner()
NOW = datetime.now(UTC)

MEMORIES = [  # id, workspace, kind, source, created, text
    ("aaaa1111", "webshop", "lesson", "claude-code", "2026-11-02T09:00:00Z", "nginx 413 upload"),
    ("bbbb2222", "webshop", "note", "cli", "2026-11-20T09:00:00Z", "staging deploys need approval"),
    ("cccc3333", "infra", "note", "codex", "2026-10-01T09:00:00Z", "terraform state lives in s3"),
    ("dddd4444", "global", "core", "cli", "2026-11-25T09:00:00Z", "use pnpm, not npm"),
]


def memory_file(memory_id: str, kind: str, source: str, created: str, text: str) -> str:
    return (
        f"---\nid: {memory_id}\nkind: {kind}\nkeywords: []\nsource: {source}\n"
        f"created: {created}\nseen: 1\n---\n{text}\n\nmore lines after the first\n"
    )


@pytest.fixture
def listed(vault: Path) -> Path:
    """A vault holding MEMORIES, written by hand and committed."""
    for memory_id, workspace, kind, source, created, text in MEMORIES:
        folder = vault / workspace / created[:7]
        folder.mkdir(parents=True, exist_ok=True)
        body = memory_file(memory_id, kind, source, created, text)
        (folder / f"{memory_id}.md").write_text(body, encoding="utf-8")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "memories by hand")
    return vault


def cli(vault: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"MEMSTORE_VAULT": str(vault)})
    return result.exit_code, result.output


def ids(output: str) -> list[str]:
    return [line.split()[0] for line in output.splitlines() if line[:8].isalnum()]


def test_list_shows_every_memory_newest_first_with_counts(listed: Path) -> None:
    status, output = cli(listed, "list")
    assert status == 0, output
    assert ids(output) == ["dddd4444", "bbbb2222", "aaaa1111", "cccc3333"]
    assert "bbbb2222  2026-11-20  webshop · note · cli  staging deploys need approval" in output
    assert "4 of 4 memories, newest first" in output
    assert "workspaces  global 1, infra 1, webshop 2" in output
    assert "kinds       core 1, lesson 1, note 2" in output
    assert cli(listed, "ls") == (status, output)  # the alias


def test_list_summary_skips_a_rule_the_text_starts_with(vault: Path) -> None:
    # Before (issue 36), `ls` showed "---" for a body starting with a markdown rule.
    folder = vault / "webshop"
    folder.mkdir()
    (folder / "ruled.md").write_text(
        memory_file("eeee5555", "note", "cli", "2026-11-03T09:00:00Z", "---\nthe cart is in redis"),
        encoding="utf-8",
    )
    (folder / "hand.md").write_text("***\n\n  ---  \nno front matter here\n", "utf-8")
    (folder / "rules-only.md").write_text("---\n\n***\n", "utf-8")
    code, out = cli(vault, "ls", "-w", "webshop", "--json")
    assert code == 0, out
    summaries = {row["path"].split("/")[-1]: row["summary"] for row in json.loads(out)["memories"]}
    assert summaries == {
        "ruled.md": "the cart is in redis",
        "hand.md": "no front matter here",
        "rules-only.md": "---",
    }
    with Store.open(settings_at(vault)) as store:
        store.add("---\nthe session cookie is httponly", workspace="webshop")
    assert (
        git(vault, "log", "-1", "--format=%s") == "add(webshop): the session cookie is httponly\n"
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-w", "webshop"], ["bbbb2222", "aaaa1111"]),
        (["--kind", "note"], ["bbbb2222", "cccc3333"]),
        (["--source", "cli"], ["dddd4444", "bbbb2222"]),
        (["--source", "cli", "-w", "webshop"], ["bbbb2222"]),
        (["--since", "2026-11-02"], ["dddd4444", "bbbb2222", "aaaa1111"]),
        (["--since", "2026-11-03", "--kind", "note"], ["bbbb2222"]),
        (["-w", "nowhere"], []),
    ],
)
def test_list_filters(listed: Path, args: list[str], expected: list[str]) -> None:
    status, output = cli(listed, "list", *args)
    assert status == 0, output
    assert ids(output) == expected
    if not expected:  # an unknown workspace is named, as search names it (issue 36)
        assert output == (
            "note: no workspace 'nowhere' in this vault (listed nothing); "
            "known: global, infra, webshop\nNo memories match.\n"
        )


def test_list_limit_says_how_to_see_the_rest(listed: Path) -> None:
    _, output = cli(listed, "list", "--limit", "2")
    assert ids(output) == ["dddd4444", "bbbb2222"]
    assert "2 of 4 memories, newest first (--limit 0 lists all 4)" in output
    assert "workspaces  global 1, infra 1, webshop 2" in output  # counts cover all matches
    assert len(ids(cli(listed, "list", "-n", "0")[1])) == 4


def test_list_since_an_age_and_archived_memories(listed: Path) -> None:
    added = runner.invoke(
        app, ["add", "fresh today", "-w", "infra"], env={"MEMSTORE_VAULT": str(listed)}
    )
    fresh = added.output.split()[1]
    assert ids(cli(listed, "list", "--since", "12h")[1]) == [fresh]  # the others: days before
    assert (
        runner.invoke(app, ["archive", fresh], env={"MEMSTORE_VAULT": str(listed)}).exit_code == 0
    )
    assert fresh not in ids(cli(listed, "list")[1])
    assert ids(cli(listed, "list", "--archived")[1])[0] == fresh


def test_list_json_has_rows_and_counts(listed: Path) -> None:
    status, output = cli(listed, "list", "-w", "webshop", "--json", "--limit", "1")
    data = json.loads(output)
    assert status == 0 and data["total"] == 2 and data["shown"] == 1
    assert data["by_kind"] == {"lesson": 1, "note": 1}
    assert data["memories"] == [
        {
            "id": "bbbb2222",
            "workspace": "webshop",
            "kind": "note",
            "source": "cli",
            "created": "2026-11-20T09:00:00Z",
            "path": "webshop/2026-11/bbbb2222.md",
            "summary": "staging deploys need approval",
        }
    ]


def test_list_json_summary_of_a_one_line_memory_of_100_kb_is_cut(vault: Path) -> None:
    """Found by h-trial13: `list --json` carried a 96,004-character summary."""
    folder = vault / "webshop"
    folder.mkdir()
    line = "gizmo " * 16_000
    (folder / "long.md").write_text(
        memory_file("ffff6666", "note", "cli", "2026-11-03T09:00:00Z", line), encoding="utf-8"
    )
    status, output = cli(vault, "list", "--json")
    (row,) = json.loads(output)["memories"]
    assert status == 0 and len(row["summary"]) == 300 and row["summary"].endswith("gizmo…")
    status, output = cli(vault, "list")
    assert status == 0 and "gizmo gizmo" in output and max(map(len, output.splitlines())) < 200


def test_list_refuses_bad_filters_in_one_line(listed: Path) -> None:
    for args, message in (
        (["--kind", "lessons"], "unknown kind 'lessons'"),
        (["-w", "Not A Workspace"], "invalid workspace name"),
    ):
        result = runner.invoke(app, ["list", *args], env={"MEMSTORE_VAULT": str(listed)})
        assert result.exit_code == 2 and message in result.output, args
    # each a usage error (tests/cli/test_usage_errors.py), as --since (tests/cli/test_log_since.py)
    result = runner.invoke(
        app, ["list", "--since", "yesterday"], env={"MEMSTORE_VAULT": str(listed)}
    )
    assert (
        result.exit_code == 2
        and "use e.g. 2026-11-01, 2026-11-01T14:30, 7d, 12h or 30m" in result.output
    )


def test_since_reads_dates_and_ages() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert parse_since("7d", now) == "2026-11-24T12:00:00Z"
    assert parse_since("2w", now) == "2026-11-17T12:00:00Z"
    assert parse_since("12h", now) == "2026-12-01T00:00:00Z"
    assert parse_since("2026-11-03", now) == "2026-11-03"
    with pytest.raises(InvalidInputError):
        parse_since("last week", now)


def test_stats_of_one_workspace(listed: Path) -> None:
    status, output = cli(listed, "stats", "-w", "webshop")
    assert status == 0, output
    assert "workspace  webshop" in output and "memories   2" in output
    assert "kinds      lesson 1, note 1" in output
    assert "sources    claude-code 1, cli 1" in output
    assert "created    2026-11-02 … 2026-11-20" in output
    data = json.loads(cli(listed, "stats", "-w", "webshop", "--json")[1])
    assert data["memories"] == 2 and data["by_source"] == {"claude-code": 1, "cli": 1}
    assert cli(listed, "stats")[1].startswith(f"vault      {listed}\nmemories   4\n")


def test_audit_and_stats_name_who_wrote_a_memory_with_no_source_from_its_commit(
    vault: Path,
) -> None:
    """A memory written by hand has no `source:`; audit said "written by: unknown" and
    stats "?" though its commit says who (trial 14): memstore's edit commit names the
    editor, a person's own `git commit` its author; a file not committed yet says so."""
    invoke_memstore("add", "Deploys need a tag", "-w", "webshop", vault=vault)
    (vault / "webshop" / "by-hand.md").write_text("Redis evicts with allkeys-lru\n", "utf-8")
    with Store.open(settings_at(vault)) as store, store.transaction() as tx:
        tx.commit_edits(["webshop/by-hand.md"])  # as the watcher and sync commit it
    (vault / "webshop" / "by-git.md").write_text("Kafka lag peaks at night\n", "utf-8")
    git(vault, "add", "webshop/by-git.md")
    git(vault, "-c", "user.name=Ada Lovelace", "commit", "-qm", "note by git")
    (vault / "webshop" / "not-yet.md").write_text("Grafana lives on port 3001\n", "utf-8")
    audit = json.loads(invoke_memstore("audit", "--json", vault=vault).stdout)
    assert audit["by_source"] == {"Ada Lovelace": 1, "cli": 1, "editor": 1, "uncommitted": 1}
    text = invoke_memstore("audit", vault=vault).stdout
    assert "written by: Ada Lovelace 1, cli 1, editor 1, uncommitted 1\n" in text
    stats = json.loads(invoke_memstore("stats", "-w", "webshop", "--json", vault=vault).stdout)
    assert stats["by_source"] == audit["by_source"]


def test_stats_of_an_unknown_workspace_names_the_ones_there_are(listed: Path) -> None:
    result = invoke_memstore("stats", "-w", "shop", "--json", vault=listed)
    assert result.returncode == 0  # as every read command (docs/cli.md)
    assert result.stderr == (
        "note: no workspace 'shop' in this vault (counted nothing); known: global, infra, webshop\n"
    )
    assert json.loads(result.stdout)["memories"] == 0
