"""The data of `memstore view` from a real vault: two machines, two agents, a person's edit, a
merge that kept a conflict, a planted credential; the timeline, a memory's history and
links, the queues with their commands, filtering, and no credential anywhere in the data."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.core.config import Settings
from memstore.core.errors import InvalidInputError
from memstore.core.secret_mask import mask_secrets
from memstore.core.secrets import find_secrets
from memstore.ops.output import supersede_command
from memstore.service.curation import Curator
from memstore.service.store import Store, init_vault
from memstore.service.view_data import collect_view
from memstore.service.view_masking import SEPARATOR, Masker
from memstore.service.view_queues import supersede_command as view_supersede_command
from tests.conftest import git
from tests.service.test_sync import environment

TOKEN = "ghp_R8x2Lq9ZtV4mW7nB3cY6pK1sD5fH0jG2aE8u"  # a GitHub token's shape: the scanner flags it
OLD_PORT = "the api service listens on port 8080; set in deploy/api_gateway.yaml"
NEW_PORT = "the api service listens on port 8443; set in deploy/api_gateway.yaml"
NGINX_ONE = "upload 413 is nginx client_max_body_size; raise it in the server block"
NGINX_TWO = "nginx client_max_body_size must match the CDN limit of 100m"
RETRY_THREE = "the billing worker retries stripe_webhook_handler 3 times before giving up"
RETRY_FIVE = "the billing worker retries stripe_webhook_handler 5 times before giving up"
RUFF = "run ruff check and mypy before every commit in the webshop repository"
RUFF_AGAIN = "run ruff check and mypy before every single commit in the webshop repository"
BEFORE = "Postgres listens on 5432 on db-prod-01.internal"


@dataclass
class World:
    a: Path  # the vault the view reads (host-a), after a sync that pulled B's merge
    ids: dict[str, str]


def machine(path: Path, host: str, source: str, session: str) -> Settings:
    return Settings(vault=path, source=source, session=session, host=host, env=environment())


def edit_file(root: Path, relative: str, old: str, new: str) -> None:
    file = root / relative
    file.write_text(file.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    remote, a, b = tmp_path / "remote.git", tmp_path / "a", tmp_path / "b"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    agent = machine(a, "host-a", "claude-code", "s-claude")
    init_vault(a, agent)
    ids: dict[str, str] = {}
    with Store.open(agent) as store:
        store.set_remote(str(remote))
        ids["old"] = store.add(OLD_PORT, workspace="webshop").id
        ids["nginx1"] = store.add(NGINX_ONE, workspace="webshop").id
        ids["nginx2"] = store.add(NGINX_TWO, workspace="webshop").id
        ids["new"] = store.add(NEW_PORT, workspace="webshop").id
        store.add(NEW_PORT, workspace="webshop", supersedes=(ids["old"],))  # supersede(…)
        store.add(NGINX_ONE, workspace="webshop")  # seen(…)
        store.confirm(ids["nginx1"])
        ids["three"] = store.add(RETRY_THREE, workspace="billing").id
        ids["five"] = store.add(RETRY_FIVE, workspace="billing").id
        ids["ruff"] = store.add(RUFF, workspace="webshop").id
        ids["ruff2"] = store.add(RUFF_AGAIN, workspace="webshop").id
        ids["archived"] = store.add("the old staging box was retired", workspace="billing").id
        gone = store.add("a note soon forgotten about the tapir", workspace="billing")
        ids["gone"] = gone.id
        for n in range(3):
            text = f"core rule {n}: " + " ".join(
                f"always check invariant_{n}_{i}" for i in range(60)
            )
            ids[f"core{n}"] = store.add(text, workspace="webshop", kind="core").id
        ids["pg"] = store.add(BEFORE, workspace="infra").id
        curator = Curator(store, datetime.now(UTC))
        curator.archive(ids["archived"])
        curator.forget(store.resolve(gone.id))
        store.sync()
    subprocess.run(["git", "clone", "-q", str(remote), str(b)], check=True)
    other = machine(b, "host-b", "codex", "s-codex")
    init_vault(b, other)
    with Store.open(other) as store:
        ids["codex"] = store.add("the codex agent runs tests with pytest -x", workspace="infra").id
        pg = store.resolve(ids["pg"]).path
        store.sync()
    # a memory edited differently on both machines: B's sync merges and keeps both texts
    edit_file(a, pg, "5432", "5433 now")
    edit_file(b, pg, "5432", "6432 behind pgbouncer")
    with Store.open(agent) as store:
        store.sync()
    with Store.open(other) as store:
        store.sync()
    # a person's edit, committed by hand with git (no memstore trailers)
    with Store.open(agent) as store:
        store.sync()
        nginx2 = store.resolve(ids["nginx2"]).path
    edit_file(a, nginx2, "100m", "200m")
    git(a, "commit", "-qam", "raise the CDN limit by hand")
    # a credential written by hand, in a file and in its commit's subject
    notes = a / "webshop" / "deploy-notes-k7deploy.md"
    notes.write_text(f"deploy with token {TOKEN} from the vault\n", encoding="utf-8")
    git(a, "add", "-A")
    git(a, "commit", "-qm", f"notes: deploy with token {TOKEN}")
    yield World(a, ids)


def view_of(root: Path, *, days: int = 0, **options: Any) -> dict[str, Any]:
    """The view of `root` as collected `days` from now (so memories can age)."""
    later = datetime.now(UTC) + timedelta(days=days)
    settings = Settings(vault=root, source="test", session="s-view", host="host-a")
    with Store.open(settings, clock=lambda: later) as store:
        options = {"workspace": None, "since": None, "progress": None, **options}
        return collect_view(store, **options)


def strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from strings(value)


def test_timeline_has_every_kind_of_change_grouped_by_session(world: World) -> None:
    data = view_of(world.a)
    assert data["schema"] == 1
    kinds = {change["kind"] for change in data["changes"]}
    assert {"add", "seen", "confirm", "supersede", "archive", "forget", "edit"} <= kinds
    assert "conflict" in kinds  # the merge that kept both texts
    assert "merge" in kinds or kinds >= {"conflict"}
    edit = next(c for c in data["changes"] if c["subject"] == "raise the CDN limit by hand")
    assert edit["kind"] == "edit" and edit["session"] == "" and world.ids["nginx2"] in edit["ids"]
    assert "+nginx client_max_body_size must match the CDN limit of 200m" in edit["diff"]
    sessions = {s["session"]: s for s in data["sessions"]}
    claude, codex = sessions["s-claude"], sessions["s-codex"]
    assert (claude["source"], claude["host"]) == ("claude-code", "host-a")
    assert (codex["source"], codex["host"]) == ("codex", "host-b")
    assert claude["undo"] == ""  # its syncs merged: reverting them deletes the other's memories
    assert claude["no_undo"] == "sync merges are not undone by revert"
    assert world.ids["codex"] in codex["ids"] and world.ids["codex"] not in claude["ids"]
    assert claude["changes"] == sum(c["session"] == "s-claude" for c in data["changes"])
    times = [c["time"] for c in data["changes"]]
    assert times == sorted(times, reverse=True)  # newest first


def test_a_memory_has_its_history_its_supersede_chain_and_neighbours(world: World) -> None:
    data = view_of(world.a)
    memories = {m["id"]: m for m in data["memories"]}
    old, new = memories[world.ids["old"]], memories[world.ids["new"]]
    assert new["supersedes"] == [old["id"]] and old["superseded_by"] == [new["id"]]
    changes = [data["changes"][i] for i in new["history"]]
    assert [c["kind"] for c in changes] == ["supersede", "add"]  # newest first
    assert all(new["id"] in c["ids"] for c in changes)
    nginx1 = memories[world.ids["nginx1"]]
    assert nginx1["confirmed"] == 1 and nginx1["seen"] == 2
    assert nginx1["host"] == "host-a" and nginx1["source"] == "claude-code"
    assert "client_max_body_size" in nginx1["entities"]
    assert nginx1["neighbours"][0] == world.ids["nginx2"]
    assert memories[world.ids["codex"]]["host"] == "host-b"
    assert memories[world.ids["archived"]]["archived"]
    assert nginx1["front"].startswith(f"id: {nginx1['id']}\n") and NGINX_ONE in nginx1["text"]


def test_every_queue_lists_its_items_with_the_command_that_settles_them(world: World) -> None:
    data = view_of(world.a, days=400)
    queues = data["queues"]
    for name in (
        "contradictions",
        "duplicates",
        "conflicts",
        "stale",
        "never_recalled",
        "secrets",
        "core_over_budget",
    ):
        assert queues[name], name
        assert all(item["command"].startswith("memstore ") for item in queues[name]), name
    (contradiction,) = queues["contradictions"]
    assert contradiction["ids"] == [world.ids["five"], world.ids["three"]]
    assert contradiction["command"] == supersede_command(RETRY_FIVE, "billing", world.ids["three"])
    duplicates = [set(item["ids"]) for item in queues["duplicates"]]
    assert {world.ids["ruff"], world.ids["ruff2"]} in duplicates
    assert {world.ids["three"], world.ids["five"]} not in duplicates  # they disagree
    assert [c["id"] for c in queues["conflicts"]] == [world.ids["pg"]]
    assert (
        queues["conflicts"][0]["command"] == f"memstore conflicts resolve {world.ids['pg']} --edit"
    )
    secrets = queues["secrets"]  # one item per kind audit finds: the token, and its label
    assert {s["path"] for s in secrets} == {"webshop/deploy-notes-k7deploy.md"}
    assert all(s["line"] == 1 for s in secrets)
    assert "a GitHub token" in [s["kind"] for s in secrets]
    assert all(s["command"].startswith("memstore forget ") for s in secrets)
    never = {item["id"] for item in queues["never_recalled"]}
    assert world.ids["ruff"] in never and world.ids["archived"] not in never
    (core,) = queues["core_over_budget"]
    assert set(core["ids"]) == {world.ids[f"core{n}"] for n in range(3)}
    assert core["command"].startswith("memstore promote ")
    fresh = view_of(world.a)["queues"]
    assert not fresh["never_recalled"] and not fresh["stale"]  # nothing is old yet


def test_commands_name_the_vault_when_the_person_named_one(world: World) -> None:
    data = view_of(world.a, days=400, vault_option=str(world.a))
    where = f"--vault {world.a}"
    for items in data["queues"].values():
        for item in items:
            assert where in item["command"], item
    assert all(s["undo"].endswith(where) for s in data["sessions"] if s["undo"])


def test_the_credential_is_masked_everywhere(world: World) -> None:
    data = view_of(world.a, days=400)
    text = json.dumps(data, ensure_ascii=False)
    assert TOKEN not in text and TOKEN[:20] not in text
    assert "[secret: a GitHub token]" in text
    flagged = [s for s in strings(data) if find_secrets(s)]
    assert flagged == []
    notes = next(m for m in data["memories"] if m["path"].endswith("k7deploy.md"))
    assert notes["text"] == "deploy with token [secret: a GitHub token] from the vault\n"
    subject = next(c["subject"] for c in data["changes"] if c["subject"].startswith("notes:"))
    assert subject == "notes: deploy with token [secret: a GitHub token]"


def test_since_and_workspace_filter_the_view(world: World) -> None:
    everything = view_of(world.a)
    billing = view_of(world.a, workspace="billing")
    assert {m["workspace"] for m in billing["memories"]} == {"billing"}
    assert billing["vault"]["workspace"] == "billing"
    assert billing["stats"]["by_workspace"] == {"billing": len(billing["memories"])}
    assert {c["commit"] for c in billing["changes"]} < {c["commit"] for c in everything["changes"]}
    kept = {world.ids[name] for name in ("three", "five", "archived", "gone")}
    assert billing["changes"] and all(set(c["ids"]) <= kept for c in billing["changes"])
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%d")
    empty = view_of(world.a, since=tomorrow)
    assert empty["changes"] == [] and empty["memories"] == [] and empty["sessions"] == []
    assert empty["vault"]["since"] == f"{tomorrow}T00:00:00Z"
    recent = view_of(world.a, since="1d")
    assert len(recent["changes"]) == len(everything["changes"])
    with pytest.raises(InvalidInputError, match="neither a date nor an age"):
        view_of(world.a, since="last tuesday")
    assert view_of(world.a, workspace="nowhere")["memories"] == []  # the CLI notes it
    with pytest.raises(InvalidInputError, match="invalid workspace name"):
        view_of(world.a, workspace="Not A Name")


def test_stats_and_graph_describe_the_vault(world: World) -> None:
    data = view_of(world.a)
    stats = data["stats"]
    assert sum(stats["by_workspace"].values()) == len(data["memories"]) == data["vault"]["memories"]
    assert stats["by_kind"]["core"] == 3
    dated = [m for m in data["memories"] if m["created"]]  # the hand-written file has none
    assert len(dated) == len(data["memories"]) - 1
    assert stats["growth"][-1][2] == len(data["memories"])  # it counts by its first commit
    graph = data["graph"]
    assert not graph["sampled"]
    nodes = graph["nodes"]
    entity = next(i for i, n in enumerate(nodes) if n["id"] == "client_max_body_size")
    linked = {nodes[m]["id"] for m, e in graph["edges"] if e == entity}
    assert linked == {world.ids["nginx1"], world.ids["nginx2"]}
    assert all(
        nodes[m]["type"] == "memory" and nodes[e]["type"] == "entity" for m, e in graph["edges"]
    )


def test_a_second_view_scans_only_what_changed(world: World) -> None:
    view_of(world.a)
    settings = Settings(vault=world.a, source="test", session="s-view", host="host-a")
    with Store.open(settings) as store:
        masker = Masker(store.vault)
        assert masker.known  # the first view remembered its clean texts
        assert masker.text(NGINX_ONE + " and more") == NGINX_ONE + " and more"
        assert masker.scanned > 0
        scanned = masker.scanned
        assert masker.kinds(f"a token {TOKEN}") and masker.scanned > scanned  # never remembered


def test_progress_runs_up_to_its_total(world: World) -> None:
    steps: list[tuple[int, int]] = []
    view_of(world.a, progress=lambda done, total: steps.append((done, total)))
    assert len(steps) >= 3 and steps[-1][0] == steps[-1][1]
    assert [done for done, _ in steps] == sorted(done for done, _ in steps)


def test_view_supersede_command_is_audits() -> None:
    for text in (RETRY_FIVE, "don't rebase main", "- a bullet\n- another", 'say "hi" $HOME'):
        for vault in (None, "/v w"):
            assert view_supersede_command(text, "ws", "abc", vault) == supersede_command(
                text, "ws", "abc", vault
            )


FRAGMENTS = [
    TOKEN,
    "ghp_R8x2Lq9Z",
    "tV4mW7nB3cY6pK1sD5fH0jG2aE8u",
    "password: Xk29!fLqzP",
    "password:",
    "Xk29!fLqzP",
    "cache",
    "key:",
    "AKIA",
    "Z7QD",
    "4N3X",
    "WPL5",
    "KR2M",
    "AKIAZ7QD4N3XWPL5KR2M",
    "postgres://admin:s3cretPa55w0rd@db.internal:5432/app",
    "curl -u alice:Sup3rS3cret! https://x",
    "the api listens on 8443",
    "token",
    "=",
    "\n",
    " ",
    "log in with admin / Xk29!fLq",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(FRAGMENTS), max_size=6).map(" ".join), max_size=4))
def test_parts_scanned_together_lose_no_finding_of_one_part(parts: list[str]) -> None:
    if any(find_secrets(part) for part in parts):
        assert find_secrets(SEPARATOR.join(parts))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=8).map(" ".join))
def test_masked_text_holds_nothing_the_scanner_finds(text: str) -> None:
    masked = mask_secrets(text)
    assert find_secrets(masked) == []
    assert (masked == text) == (not find_secrets(text))


def test_a_key_block_is_masked_from_its_begin_line_to_its_end() -> None:
    body = "A" * 64
    block = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}\n-----END RSA PRIVATE KEY-----"
    masked = mask_secrets(f"the deploy key:\n{block}\nkeep it safe")
    assert body not in masked and masked.startswith("the deploy key:\n")
    assert masked.endswith("keep it safe") and find_secrets(masked) == []
