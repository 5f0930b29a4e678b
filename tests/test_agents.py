"""Registering memstore with agents, against fixture configs in temporary homes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from memstore.agents import apply_install, find_agents, plan_install
from tests.conftest import git

EXE = Path(sys.executable).with_name("memstore")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    git(path, "init", "-q")
    return path


def agents_run(
    *args: str, home: Path, cwd: Path, stdin: str | None = None, vault: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "PATH": f"{EXE.parent}:/usr/bin:/bin"}
    env.pop("MEMSTORE_VAULT", None)
    if vault is not None:
        env["MEMSTORE_VAULT"] = str(vault)
    return subprocess.run(
        [str(EXE), "agents", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_lists_every_agent_with_its_config_path(hermetic: Path, project: Path) -> None:
    (hermetic / ".codex").mkdir()
    found = {a.name: a for a in find_agents(hermetic, project, project, [])}
    assert set(found) == {"claude-code", "codex", "cursor", "claude-desktop", "vscode"}
    assert found["claude-code"].path == project / ".mcp.json"
    assert found["codex"].path == hermetic / ".codex" / "config.toml" and found["codex"].configured
    assert (
        found["vscode"].path == project / ".vscode" / "mcp.json" and not found["vscode"].installed
    )
    out = agents_run(home=hermetic, cwd=project).stdout.splitlines()
    assert out[0].split()[:2] == ["agent", "on"]  # a header names the columns
    codex = next(line for line in out if line.startswith("codex"))
    assert codex.split()[1:4] == ["configured", "no", "no"]  # no program; nothing registered
    assert any(str(project / ".mcp.json") in line for line in out)


def test_install_names_the_vault_in_effect_and_the_list_shows_it_registered(
    hermetic: Path, project: Path, tmp_path: Path
) -> None:
    vault = tmp_path / "team-vault"
    result = agents_run("--install", "codex", "--yes", home=hermetic, cwd=project, vault=vault)
    assert result.returncode == 0, result.stderr
    data = tomllib.loads((hermetic / ".codex" / "config.toml").read_text(encoding="utf-8"))
    # without it, the agent's server would open ~/memstore while the person uses team-vault
    assert data["mcp_servers"]["memstore"]["args"] == [
        "serve",
        "--vault",
        str(vault.resolve()),
        "--source",
        "codex",
    ]
    # the hooks open the same vault as the server
    hooks = json.loads((hermetic / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    prompt = hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert prompt.endswith(f"hook prompt --source codex --vault {vault.resolve()}")
    listed = agents_run(home=hermetic, cwd=project).stdout.splitlines()
    codex = next(line for line in listed if line.startswith("codex")).split()
    assert codex[1:4] == ["configured", "yes", "yes"]  # memstore wrote ~/.codex, not Codex
    outside = tmp_path / "plain"
    outside.mkdir()
    line = agents_run("--install", "claude-code", home=hermetic, cwd=outside, vault=vault).stdout
    assert f"serve --vault {vault.resolve()} --source claude-code" in line


def test_claude_code_merges_into_project_mcp_json_with_backup(
    hermetic: Path, project: Path
) -> None:
    config = project / ".mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"other": {"command": "x"}}, "keep": 1}), encoding="utf-8"
    )
    result = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project)
    assert result.returncode == 0, result.stderr
    data = json.loads(config.read_text(encoding="utf-8"))
    assert data["keep"] == 1 and data["mcpServers"]["other"] == {"command": "x"}
    entry = data["mcpServers"]["memstore"]
    assert (
        entry["args"] == ["serve", "--source", "claude-code"]
        and Path(entry["command"]).is_absolute()
    )
    # the backup goes where no commit of the project can pick it up
    backups = project / ".git" / "memstore-backups"
    assert len(list(backups.glob(".mcp.json.bak-*"))) == 1 and not list(project.glob("*.bak-*"))
    assert git(project, "status", "--porcelain").split() == ["??", ".claude/", "??", ".mcp.json"]
    again = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project)
    assert "already registered" in again.stdout and len(list(backups.glob(".mcp.json.bak-*"))) == 1
    assert "hooks are already in" in again.stdout
    assert not (hermetic / ".claude.json").exists()


def test_codex_toml_keeps_other_settings(hermetic: Path, project: Path) -> None:
    config = hermetic / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o4"\n\n[mcp_servers.other]\ncommand = "other"\n', encoding="utf-8")
    assert agents_run("--install", "codex", "--yes", home=hermetic, cwd=project).returncode == 0
    data = tomllib.loads(config.read_text(encoding="utf-8"))
    assert data["model"] == "o4" and data["mcp_servers"]["other"] == {"command": "other"}
    assert data["mcp_servers"]["memstore"]["args"] == ["serve", "--source", "codex"]
    before = config.read_text(encoding="utf-8")
    assert (
        "already registered"
        in agents_run("--install", "codex", "--yes", home=hermetic, cwd=project).stdout
    )
    assert config.read_text(encoding="utf-8") == before


def test_codex_stale_entry_is_replaced_in_place() -> None:
    agent = next(
        a for a in find_agents(Path("/h"), Path("/p"), Path("/p"), []) if a.name == "codex"
    )
    current = (
        '[mcp_servers.memstore]\ncommand = "/old/memstore"\nargs = ["serve"]\n\n[profile]\nx = 1\n'
    )
    plan = plan_install(agent, current, "/new/memstore")
    assert plan.status == "write" and plan.new_text is not None
    data = tomllib.loads(plan.new_text)
    assert data["mcp_servers"]["memstore"]["command"] == "/new/memstore" and data["profile"] == {
        "x": 1
    }


@pytest.mark.parametrize("name", ["cursor", "vscode", "claude-desktop"])
def test_json_agents_are_created_and_merged(hermetic: Path, project: Path, name: str) -> None:
    agent = next(a for a in find_agents(hermetic, project, project, []) if a.name == name)
    assert agent.path is not None
    agent.path.parent.mkdir(parents=True, exist_ok=True)
    agent.path.write_text(json.dumps({agent.key: {"keep": {"command": "k"}}}), encoding="utf-8")
    plan = plan_install(agent, agent.path.read_text(encoding="utf-8"), "/bin/memstore")
    backup = apply_install(plan)
    data = json.loads(agent.path.read_text(encoding="utf-8"))
    assert set(data[agent.key]) == {"keep", "memstore"} and backup is not None and backup.exists()
    if name == "vscode":
        assert data["servers"]["memstore"]["type"] == "stdio"


def test_malformed_config_is_refused_and_left_alone(hermetic: Path, project: Path) -> None:
    config = project / ".mcp.json"
    config.write_text('{"mcpServers": {', encoding="utf-8")
    result = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project)
    assert (
        result.returncode == 1
        and "not valid JSON" in result.stderr
        and '"memstore"' in result.stderr
    )
    assert config.read_text(encoding="utf-8") == '{"mcpServers": {' and not list(
        project.glob("*.bak-*")
    )
    bad_toml = hermetic / ".codex" / "config.toml"
    bad_toml.parent.mkdir()
    bad_toml.write_text("model = = 1\n", encoding="utf-8")
    result = agents_run("--install", "codex", "--yes", home=hermetic, cwd=project)
    assert result.returncode == 1 and "not valid TOML" in result.stderr
    assert bad_toml.read_text(encoding="utf-8") == "model = = 1\n"


def test_without_a_terminal_and_without_yes_nothing_is_written(
    hermetic: Path, project: Path
) -> None:
    result = agents_run("--install", "cursor", home=hermetic, cwd=project, stdin="")
    assert result.returncode == 1 and "nothing was written" in result.stderr
    assert not (project / ".cursor").exists()


def test_unknown_agent_is_an_error(hermetic: Path, project: Path) -> None:
    result = agents_run("--install", "emacs", home=hermetic, cwd=project)
    assert result.returncode == 1 and "unknown agent 'emacs'" in result.stderr


def test_reinstall_keeps_what_the_person_added_to_the_entry(hermetic: Path, project: Path) -> None:
    assert (
        agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project).returncode == 0
    )
    config = project / ".mcp.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["mcpServers"]["memstore"]["env"] = {"MEMSTORE_SOURCE": "cc"}
    data["mcpServers"]["memstore"]["timeout"] = 20000
    config.write_text(json.dumps(data), encoding="utf-8")
    again = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project)
    assert "already registered" in again.stdout
    entry = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]["memstore"]
    assert entry["env"] == {"MEMSTORE_SOURCE": "cc"} and entry["timeout"] == 20000
    codex = hermetic / ".codex" / "config.toml"
    assert agents_run("--install", "codex", "--yes", home=hermetic, cwd=project).returncode == 0
    codex.write_text(
        codex.read_text(encoding="utf-8")
        + 'startup_timeout_sec = 20\n\n[mcp_servers.memstore.env]\nMEMSTORE_SOURCE = "cx"\n',
        encoding="utf-8",
    )
    before = codex.read_text(encoding="utf-8")
    assert (
        "already registered"
        in agents_run("--install", "codex", "--yes", home=hermetic, cwd=project).stdout
    )
    assert codex.read_text(encoding="utf-8") == before
    # a new vault changes how memstore starts; the person's keys and sub-table stay
    moved = agents_run(
        "--install", "codex", "--yes", home=hermetic, cwd=project, vault=project / "v"
    )
    assert moved.returncode == 0, moved.stderr
    entry = tomllib.loads(codex.read_text(encoding="utf-8"))["mcp_servers"]["memstore"]
    assert entry["startup_timeout_sec"] == 20 and entry["env"] == {"MEMSTORE_SOURCE": "cx"}
    assert entry["args"][:2] == ["serve", "--vault"]


@pytest.mark.parametrize(
    ("name", "printed"),
    [
        ("claude-code", ["claude mcp add --scope user memstore --"]),
        ("vscode", ['"servers"', "MCP: Add Server"]),  # the block, and where it goes
    ],
)
def test_outside_a_repository_the_block_is_printed_and_nothing_written(
    hermetic: Path, tmp_path: Path, name: str, printed: list[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    result = agents_run("--install", name, "--yes", home=hermetic, cwd=plain)
    assert result.returncode == 0 and all(text in result.stdout for text in printed)
    assert not list(plain.iterdir()) and not (hermetic / ".claude.json").exists()
    assert not (hermetic / ".vscode").exists()
