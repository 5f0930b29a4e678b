"""The plugin route for Claude Code and Codex: the marketplace at the top of the repository, the
two manifests in hooks/, and the commands they name, run for real.

What a manifest names is checked against the source `agents --install` writes from (the hook
specs of memstore.agents.hook_config, the server entry of memstore.agents.install, the pointer snippet that
`init` prints), so the plugin and the install cannot drift apart.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from mcp import Client, StdioServerParameters

import memstore
from memstore.agents.hook_config import HOOKS, memstore_hook_event, render_hooks
from memstore.agents.install import SERVER_NAME, find_agents, server_entry
from memstore.ops.output import POINTER_SNIPPET
from memstore.service.store import Store
from tests.conftest import EXE, REPO_ROOT, settings_at

MARKETPLACE = REPO_ROOT / ".claude-plugin" / "marketplace.json"
MANIFESTS = {"claude-code": ".claude-plugin/plugin.json", "codex": ".codex-plugin/plugin.json"}
KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def plugin_root() -> Path:
    """The folder the marketplace's one plugin comes from (both agents read the same entry)."""
    (entry,) = read_json(MARKETPLACE)["plugins"]
    source = entry["source"]
    # Codex takes a local source only as "./" and a path inside the marketplace's root
    assert source.startswith("./") and source != "./"
    parts = PurePosixPath(source[2:]).parts
    assert parts and all(part not in ("", ".", "..") for part in parts)
    return REPO_ROOT.joinpath(*parts)


def inside(root: Path, relative: str) -> Path:
    """A path a manifest names: './'-relative and inside the plugin's folder (which is copied)."""
    assert relative.startswith("./"), relative
    path = (root / relative).resolve()
    assert path.is_relative_to(root.resolve()) and path.exists(), relative
    return path


def expected_server(agent_name: str, tmp_path: Path) -> dict[str, object]:
    agents = find_agents(tmp_path, tmp_path, tmp_path, [])
    agent = next(a for a in agents if a.name == agent_name)
    return server_entry(agent, "memstore")


def test_the_marketplace_offers_one_memstore_plugin_to_both_agents() -> None:
    market = read_json(MARKETPLACE)
    assert KEBAB.match(market["name"]) and market["owner"]["name"]
    (entry,) = market["plugins"]
    assert entry["name"] == "memstore" and entry["description"]
    root = plugin_root()
    assert root == REPO_ROOT / "hooks"
    for manifest in MANIFESTS.values():
        assert (root / manifest).is_file()
    # nothing else plugin-related at the top of the repository
    assert sorted(p.name for p in (REPO_ROOT / ".claude-plugin").iterdir()) == ["marketplace.json"]


@pytest.mark.parametrize("agent", sorted(MANIFESTS))
def test_each_manifest_names_what_agents_install_writes(agent: str, tmp_path: Path) -> None:
    root = plugin_root()
    manifest = read_json(root / MANIFESTS[agent])
    assert manifest["name"] == "memstore" and KEBAB.match(manifest["name"])
    assert manifest["version"] == memstore.__version__
    assert "pipx install memstore-agents" in manifest["description"]
    # the server: the same entry `agents --install` writes, with `memstore` from PATH
    assert manifest["mcpServers"] == {SERVER_NAME: expected_server(agent, tmp_path)}
    # the hooks: the file `agents --install` merges into the agent's settings
    hooks = read_json(inside(root, manifest["hooks"]))
    assert hooks == render_hooks(HOOKS[agent], "memstore", agent)
    for groups in hooks["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                assert memstore_hook_event(hook["command"]) is not None  # uninstall knows it
    # nothing it runs reaches the network (only `memstore sync`, run by a person, does)
    assert manifest.get("network", {"hosts": []}) == {"hosts": []}
    # the skill (Claude Code finds skills/ by itself; Codex is told)
    skills = inside(root, manifest.get("skills", "./skills/"))
    assert (skills / "memstore" / "SKILL.md").is_file()


def test_the_skill_carries_the_snippet_init_prints() -> None:
    text = (plugin_root() / "skills" / "memstore" / "SKILL.md").read_text(encoding="utf-8")
    front, body = re.fullmatch(r"---\n(.*?)\n---\n(.*)", text, re.S).groups()  # type: ignore[union-attr]
    meta = yaml.safe_load(front)
    assert meta["name"] == "memstore"  # the folder's name, as the skills format asks
    assert 0 < len(meta["description"]) <= 1024
    assert "memory_recall" in meta["description"] and "memory_add" in meta["description"]
    assert POINTER_SNIPPET in body


def plugin_env(vault: Path) -> dict[str, str]:
    """The agent's environment: `memstore` on PATH (as pipx puts it), the person's vault."""
    return {**os.environ, "MEMSTORE_VAULT": str(vault), "PATH": f"{EXE.parent}:/usr/bin:/bin"}


def payload(agent: str, event: str, cwd: Path) -> dict[str, object]:
    common = {"session_id": f"{agent}-session", "cwd": str(cwd), "hook_event_name": event}
    if event == "UserPromptSubmit":
        return {**common, "prompt": "why does the upload fail with 413 behind nginx"}
    if event == "Stop":
        return {**common, "last_assistant_message": "ok", "stop_hook_active": False}
    return {**common, "source": "startup"}


@pytest.mark.parametrize("agent", sorted(MANIFESTS))
def test_every_hook_command_the_plugin_names_runs(agent: str, vault: Path, tmp_path: Path) -> None:
    root = plugin_root()
    manifest = read_json(root / MANIFESTS[agent])
    hooks = read_json(inside(root, manifest["hooks"]))["hooks"]
    with Store.open(settings_at(vault)) as store:
        lesson = store.add(
            "Upload 413 is nginx client_max_body_size, not the app", workspace="global"
        )
    ran = set()
    for event, groups in hooks.items():
        command = groups[0]["hooks"][0]["command"]
        words = [w for w in shlex.split(command) if "=" not in w.split("/")[0]]  # VAR=value
        assert words[0] == "memstore"  # found on PATH, as the manifest says
        done = subprocess.run(
            ["bash", "-c", command],
            input=json.dumps(payload(agent, event, tmp_path)),
            env=plugin_env(vault),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, (command, done.stderr)
        assert "Traceback" not in done.stderr and "Usage:" not in done.stderr, done.stderr
        if event == "UserPromptSubmit":
            assert lesson.id in done.stdout  # the prompt hook recalled the memory
        ran.add(event)
    assert ran == {"SessionStart", "UserPromptSubmit", "Stop"}


@pytest.mark.parametrize("agent", sorted(MANIFESTS))
def test_the_server_the_plugin_names_answers_over_stdio(agent: str, vault: Path) -> None:
    server = read_json(plugin_root() / MANIFESTS[agent])["mcpServers"][SERVER_NAME]
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env=plugin_env(vault), cwd=str(vault.parent)
    )

    async def go() -> set[str]:
        async with Client(params) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert asyncio.run(go()) == {"memory_recall", "memory_add", "memory_confirm"}
