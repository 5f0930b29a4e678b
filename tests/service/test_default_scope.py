"""Where search, memory_recall and the prompt hook read when not told a workspace: one rule.

The workspace of the git repository they run in (plus `global`); inside the vault, the
workspace folder they run in; outside any repository, or at the vault's top, every workspace. Writes not told a workspace go to that repository's
workspace, else `global`. When a workspace holds nothing for the query but others do, the
answer says how many, to the agent as to a person.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from memstore.core.repo_name import workspace_at
from memstore.service.store import Store
from tests.conftest import EXE, git, invoke_memstore, run_memstore, settings_at
from tests.daemon.test_daemon import env as daemons_allowed  # noqa: F401 (a fixture)

NGINX = "Uploads over 1 MB fail with 413: raise nginx client_max_body_size in the server block"


@pytest.fixture
def stored(vault: Path) -> str:
    """The id of a memory of workspace webshop (not global)."""
    with Store.open(settings_at(vault)) as store:
        return store.add(NGINX, workspace="webshop", keywords=("nginx", "413")).id


@pytest.fixture(params=["in process", "daemon"])
def env(request: pytest.FixtureRequest, vault: Path) -> dict[str, str]:
    """The shell's environment: commands answered in their own process, or by the daemon."""
    if request.param == "daemon":
        base = request.getfixturevalue("daemons_allowed")
    else:
        base = dict(os.environ)
    return {**base, "MEMSTORE_VAULT": str(vault), "PATH": f"{EXE.parent}:/usr/bin:/bin"}


def run(env: dict[str, str], cwd: Path, *args: str, stdin: str = "") -> str:
    """Run a command in `env`: where no daemon may answer, the executable's `main` in this
    process (the same code path, without a process); else the executable, which asks one."""
    if env.get("MEMSTORE_NO_DAEMON") == "1":
        done = invoke_memstore(*args, env=env, cwd=cwd, stdin=stdin)
    else:
        done = run_memstore(*args, base_env=env, cwd=cwd, stdin=stdin, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def prompt_hook(env: dict[str, str], cwd: Path, prompt: str) -> str:
    return run(env, cwd, "hook", "prompt", stdin=json.dumps({"prompt": prompt, "cwd": str(cwd)}))


def mcp_call(env: dict[str, str], cwd: Path, tool: str, arguments: dict[str, Any]) -> Any:
    server = StdioServerParameters(command=str(EXE), args=["serve"], env=env, cwd=str(cwd))

    async def go() -> Any:
        async with Client(server) as client:
            return (await client.call_tool(tool, arguments)).structured_content

    return asyncio.run(go())


def test_workspace_at_is_the_repository_s_none_outside_any_or_inside_the_vault(
    vault: Path, tmp_path: Path
) -> None:
    project = tmp_path / "shop"
    (project / "src").mkdir(parents=True)
    git(project, "init", "-q")
    assert workspace_at(vault, project / "src") == "shop"
    assert workspace_at(vault, tmp_path) is None  # no repository
    assert workspace_at(vault, vault) is None  # the vault's top: every workspace
    assert workspace_at(vault, vault / "global") == "global"  # a workspace's folder: its own
    assert workspace_at(vault, vault / ".memstore") is None  # no workspace is named so
    linked = tmp_path / "linked-vault"
    linked.symlink_to(vault)
    assert workspace_at(linked, vault) is None


def test_a_repository_named_with_accents_keeps_the_workspace_an_older_memstore_made(
    vault: Path, tmp_path: Path
) -> None:
    # Before issue 36 'Café' became workspace 'caf' (the é dropped); now it becomes 'cafe'.
    project = tmp_path / "Café"
    project.mkdir()
    git(project, "init", "-q")
    assert workspace_at(vault, project) == "cafe"  # a vault with neither: the new name
    with Store.open(settings_at(vault)) as store:
        old = store.add(NGINX, workspace="caf", keywords=("nginx", "413")).id
    env = {**os.environ, "MEMSTORE_VAULT": str(vault), "MEMSTORE_NO_DAEMON": "1"}
    assert workspace_at(vault, project) == "caf"  # only the old folder: still read there
    assert old in run(env, project, "search", "nginx", "upload", "limit")
    added = json.loads(run(env, project, "add", "--json", "Staging deploys need approval"))
    assert added["workspace"] == "caf"  # and written there, so the folder stays one
    (vault / "cafe").mkdir()  # both folders: the name as it is made now wins
    assert workspace_at(vault, project) == "cafe"


@pytest.mark.parametrize("where", ["outside any repository", "at the vault's top"])
def test_search_recall_and_the_prompt_hook_read_every_workspace_there(
    vault: Path, tmp_path: Path, stored: str, env: dict[str, str], where: str
) -> None:
    cwd = vault if where == "at the vault's top" else tmp_path / "notes"
    cwd.mkdir(exist_ok=True)
    assert stored in run(env, cwd, "search", "nginx", "upload", "limit")
    assert stored in run(env, cwd, "search", "--context", "nginx", "upload", "limit")
    assert stored in prompt_hook(env, cwd, "why does the nginx upload fail with 413?")
    recalled = mcp_call(env, cwd, "memory_recall", {"query": "nginx upload 413"})
    assert [hit["id"] for hit in recalled["results"]] == [stored]
    # what is written there, untold, goes to global (the rule's other half)
    added = mcp_call(env, cwd, "memory_add", {"content": "Staging deploys need approval"})
    assert added["workspace"] == "global"


def test_in_a_workspace_s_folder_of_the_vault_add_and_memory_add_write_to_that_workspace(
    vault: Path, stored: str, env: dict[str, str]
) -> None:
    """`cd ~/memstore/webshop && memstore add …` wrote to global (trial 14): the folder a
    person stands in names the workspace, as the file would be there; search reads it."""
    month = vault / "webshop" / "2026-12"
    month.mkdir(parents=True, exist_ok=True)
    for cwd in (vault / "webshop", month):
        added = json.loads(run(env, cwd, "add", "--json", f"Deploys from {cwd.name} need a tag"))
        assert added["workspace"] == "webshop"
    assert stored in run(env, month, "search", "nginx", "upload", "limit")
    with Store.open(settings_at(vault)) as store:
        other = store.add("Kafka consumers lag behind at night", workspace="infra").id
    assert other not in run(env, month, "search", "kafka", "consumers")  # webshop + global
    recalled = mcp_call(env, month, "memory_add", {"content": "Staging deploys need approval"})
    assert recalled["workspace"] == "webshop"
    assert not list(vault.glob("global/**/*.md"))  # nothing landed in global


def test_nothing_in_this_workspace_names_the_matches_in_others_to_the_agent_too(
    vault: Path, tmp_path: Path, stored: str, env: dict[str, str]
) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    git(project, "init", "-q")
    searched = run(env, project, "search", "nginx", "413")
    assert "1 match in other workspaces: memstore search 'nginx 413' --all" in searched
    recalled = mcp_call(env, project, "memory_recall", {"query": "nginx 413"})
    assert recalled["results"] == []
    assert recalled["message"] == (
        "No memory matches 'nginx 413' in shop or global. "
        '1 match in other workspaces: memory_recall with workspace "all" shows them.'
    )
    context = prompt_hook(env, project, "the nginx 413 again")
    assert context == (
        "(memstore: no memory of shop or global matches; "
        '1 match in other workspaces: memory_recall with workspace "all" shows them)\n'
    )
    # what the hook says unasked is only what recall is confident in: a partial match is not
    assert prompt_hook(env, project, "nginx kubernetes ingress annotations") == ""
    # and a confident hit here says nothing of elsewhere
    with Store.open(settings_at(vault)) as store:
        here = store.add("nginx 413 in shop: the ingress sets the body size", workspace="shop")
    context = prompt_hook(env, project, "the nginx 413 again")
    assert here.id in context and "other workspaces" not in context


def test_memory_add_from_inside_another_vault_is_refused_naming_both(
    vault: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    """As the CLI's add (tests/cli/test_vault_option.py): an agent working in another
    vault's folder meant that vault; memory_add told no workspace wrote into the vault in
    use, in a workspace named after the other vault. It names both and the fix, and changes
    nothing; a `workspace` argument (the vault in use, on purpose) still adds there."""
    other = tmp_path / "work-vault"
    assert run(env, tmp_path, "init", str(other)) != ""
    where = other / "notes"
    where.mkdir()
    before = {folder: git(folder, "rev-parse", "HEAD").strip() for folder in (vault, other)}
    server = StdioServerParameters(command=str(EXE), args=["serve"], env=env, cwd=str(where))
    fact = {"content": "the terraform state lock lives in dynamodb"}

    async def go() -> tuple[Any, Any]:
        async with Client(server) as client:
            refused = await client.call_tool("memory_add", fact)
            chosen = await client.call_tool("memory_add", {**fact, "workspace": "infra"})
            return refused, chosen

    refused, chosen = asyncio.run(go())

    assert refused.is_error
    said = refused.content[0].text
    assert said == (
        f"Error executing tool memory_add: this folder is in the vault {other}, but this MCP server uses {vault}; pass "
        f'"workspace" to add to {vault}, or start the server with --vault {other} to add there'
    ), said
    assert not chosen.is_error and chosen.structured_content["workspace"] == "infra"
    assert git(other, "rev-parse", "HEAD").strip() == before[other]
    written = git(vault, "diff", "--name-only", f"{before[vault]}..HEAD").split()
    assert [path.split("/")[0] for path in written] == ["infra"]  # only the chosen add


def test_memory_recall_of_a_workspace_the_vault_lacks_says_so_and_names_the_ones_there_are(
    vault: Path, tmp_path: Path, stored: str, env: dict[str, str]
) -> None:
    """The CLI notes a `-w` typo (docs/cli.md); an agent's `workspace` typo read as "nothing
    there" and the agent had no way to tell."""
    recalled = mcp_call(env, tmp_path, "memory_recall", {"query": "nginx", "workspace": "webshhop"})
    assert recalled["results"] == []
    assert recalled["message"].endswith(
        " No workspace 'webshhop' in this vault (searched it and global); known: global, webshop."
    ), recalled["message"]
    known = mcp_call(env, tmp_path, "memory_recall", {"query": "kafka", "workspace": "webshop"})
    assert "No workspace" not in known["message"]
