"""Registering memstore with agents, against fixture configs in temporary homes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

from memstore.agents.hook_config import (
    CLAUDE_CODE_HOOKS,
    HookSpec,
    hook_command,
    is_ours,
    memstore_hook_event,
    plan_add_hooks,
    plan_remove_hooks,
    render_hooks,
)
from memstore.agents.hook_config import CODEX_HOOKS as CODEX_HOOKS_SPECS
from memstore.agents.install import apply_install, find_agents, plan_install
from tests.conftest import EXE, git, invoke_memstore


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    git(path, "init", "-q")
    return path


def agents_run(
    *args: str,
    home: Path,
    cwd: Path,
    stdin: str | None = None,
    vault: Path | None = None,
    path_first: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `memstore agents` (the executable's main, in-process) with this HOME (and
    `path_first` ahead on PATH)."""
    first = f"{path_first}:" if path_first else ""
    env = {"HOME": str(home), "PATH": f"{first}{EXE.parent}:/usr/bin:/bin"}
    return invoke_memstore(
        "agents", *args, vault=vault, cwd=cwd, stdin=stdin, env={"MEMSTORE_VAULT": None, **env}
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
    # the hooks (machine paths) went to the personal settings.local.json, kept out of git
    assert git(project, "status", "--porcelain").split() == ["??", ".mcp.json"]
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


def test_unknown_agent_is_a_usage_error(hermetic: Path, project: Path) -> None:
    result = agents_run("--install", "emacs", home=hermetic, cwd=project)
    assert result.returncode == 2 and "unknown agent 'emacs'" in result.stderr


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
    # The block is indented as a whole, so it reads (and pastes) as printed: only its first
    # line was indented, the JSON's others were not.
    block = result.stdout.split(":\n\n", 1)[1].split("\n\n", 1)[0]
    lines = block.splitlines()
    assert lines and all(line.startswith("  ") for line in lines), block
    if name == "vscode":
        assert "memstore" in json.loads(block)["servers"]


# --- item 7: installed means the program is found ------------------------------------------


def fake_program(folder: Path, name: str) -> Path:
    """Put a small real executable called `name` into `folder` (a stand-in for the agent)."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f'#!/bin/sh\necho "{name} (fake) 1.0"\n', encoding="utf-8")
    program.chmod(0o755)
    return program


def test_a_config_folder_alone_is_configured_not_installed(hermetic: Path, tmp_path: Path) -> None:
    for folder in (".codex", ".claude", ".cursor", ".vscode", ".config/Claude"):
        (hermetic / folder).mkdir(parents=True)
    (hermetic / ".codex" / "config.toml").write_text(
        '[mcp_servers.memstore]\ncommand = "memstore"\nargs = ["serve"]\n', encoding="utf-8"
    )
    apps = tmp_path / "root"  # stands for "/" (where /Applications lives)
    found = {a.name: a for a in find_agents(hermetic, tmp_path, None, [], apps=apps)}
    assert {n for n, a in found.items() if a.installed} == set()
    assert {n for n, a in found.items() if a.configured} == set(found)
    bin_dir = tmp_path / "bin"
    fake_program(bin_dir, "codex")
    (bin_dir / "cursor").write_text("not a program\n", encoding="utf-8")  # not executable
    fake_program(hermetic / ".local" / "bin", "claude")  # Claude Code's installer puts it here
    (apps / "Applications" / "Claude.app").mkdir(parents=True)  # macOS app bundle
    found = {a.name: a for a in find_agents(hermetic, tmp_path, None, [str(bin_dir)], apps=apps)}
    assert {n for n, a in found.items() if a.installed} == {
        "codex",
        "claude-code",
        "claude-desktop",
    }
    listed = agents_run(home=hermetic, cwd=tmp_path).stdout.splitlines()
    assert next(line for line in listed if line.startswith("codex")).split()[1:3] == [
        "configured",
        "yes",
    ]


def test_the_list_says_installed_when_the_program_is_on_path(
    hermetic: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    fake_program(bin_dir, "codex")
    listed = agents_run(home=hermetic, cwd=tmp_path, path_first=bin_dir).stdout.splitlines()
    assert next(line for line in listed if line.startswith("codex")).split()[1] == "installed"
    assert next(line for line in listed if line.startswith("cursor")).split()[1] == "no"


# --- hooks --------------------------------------------------------------------------------

USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit-bash"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]}],
    },
}


def _commands(settings: dict, event: str) -> list[str]:
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def test_install_claude_code_merges_its_hooks_into_user_settings_backed_up_and_removable(
    hermetic: Path, tmp_path: Path
) -> None:
    settings = hermetic / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps(USER_SETTINGS, indent=4)
    settings.write_text(original, encoding="utf-8")
    bin_dir = tmp_path / "bin"
    fake_program(bin_dir, "claude")
    plain = tmp_path / "plain"  # outside any repository: the user's settings
    plain.mkdir()
    run = agents_run(
        "--install", "claude-code", "--yes", home=hermetic, cwd=plain, path_first=bin_dir
    )
    assert run.returncode == 0, run.stderr
    assert "claude mcp add --scope user memstore" in run.stdout  # the server: by hand, as before
    data = json.loads(settings.read_text(encoding="utf-8"))
    assert {k: v for k, v in data.items() if k != "hooks"} == {
        "model": "opus",
        "permissions": {"allow": ["Bash(npm test)"]},
    }
    assert data["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    exe = str(EXE.resolve())
    assert _commands(data, "Stop") == [
        "notify-send 'Claude is done'",  # the person's hook stays, first
        f"{exe} hook capture --if-novel",
    ]
    assert _commands(data, "SessionStart") == [f"{exe} hook briefing"]
    assert _commands(data, "UserPromptSubmit") == [f"{exe} hook prompt"]
    backups = list(settings.parent.glob("settings.json.bak-*"))
    assert [b.read_text(encoding="utf-8") for b in backups] == [original]
    assert not (hermetic / ".claude.json").exists() and not list(plain.iterdir())

    installed = settings.read_text(encoding="utf-8")
    again = agents_run(
        "--install", "claude-code", "--yes", home=hermetic, cwd=plain, path_first=bin_dir
    )
    assert again.returncode == 0 and "hooks are already in" in again.stdout
    assert settings.read_text(encoding="utf-8") == installed
    assert len(list(settings.parent.glob("settings.json.bak-*"))) == 1
    listed = agents_run(home=hermetic, cwd=plain, path_first=bin_dir).stdout.splitlines()
    claude = next(line for line in listed if line.startswith("claude-code")).split()
    assert claude[1] == "installed" and claude[3] == "yes"

    removed = agents_run("--uninstall", "claude-code", "--yes", home=hermetic, cwd=plain)
    assert removed.returncode == 0, removed.stderr
    assert "claude mcp remove --scope user memstore" in removed.stdout
    assert json.loads(settings.read_text(encoding="utf-8")) == USER_SETTINGS
    # both copies are kept, even within the same second
    copies = sorted(settings.parent.glob("settings.json.bak-*"))
    assert len(copies) == 2 and original in [c.read_text(encoding="utf-8") for c in copies]
    nothing = agents_run("--uninstall", "claude-code", "--yes", home=hermetic, cwd=plain)
    assert "no memstore hooks in" in nothing.stdout


def test_the_installed_prompt_hook_recalls_from_the_vault_the_server_uses(
    hermetic: Path, tmp_path: Path
) -> None:
    vault = tmp_path / "team-vault"
    env = {**os.environ, "HOME": str(hermetic), "MEMSTORE_VAULT": str(vault)}
    subprocess.run([str(EXE), "init", str(vault)], env=env, check=True, capture_output=True)
    text = "upload 413 behind nginx: raise client_max_body_size in the server block"
    subprocess.run(
        [str(EXE), "add", text, "--vault", str(vault)], env=env, check=True, capture_output=True
    )
    plain = tmp_path / "plain"
    plain.mkdir()
    run = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=plain, vault=vault)
    assert run.returncode == 0, run.stderr
    settings = json.loads((hermetic / ".claude" / "settings.json").read_text(encoding="utf-8"))
    (command,) = _commands(settings, "UserPromptSubmit")
    payload = {"prompt": "nginx upload 413 client_max_body_size", "cwd": str(plain)}
    env.pop("MEMSTORE_VAULT")  # the agent's environment does not name the vault
    hook = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload),
        env=env,
        cwd=plain,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert hook.returncode == 0 and "client_max_body_size" in hook.stdout, hook.stderr


def test_install_in_a_project_puts_hooks_in_personal_settings_and_uninstall_restores_every_file(
    hermetic: Path, project: Path
) -> None:
    mcp = project / ".mcp.json"
    mcp_text = json.dumps({"mcpServers": {"other": {"command": "x"}}})
    mcp.write_text(mcp_text, encoding="utf-8")
    settings = project / ".claude" / "settings.json"  # the team's, committed
    settings.parent.mkdir()
    shared = json.dumps(USER_SETTINGS)
    settings.write_text(shared, encoding="utf-8")
    run = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project)
    assert run.returncode == 0, run.stderr
    assert "memstore" in json.loads(mcp.read_text(encoding="utf-8"))["mcpServers"]
    assert settings.read_text(encoding="utf-8") == shared  # machine paths stay out of it
    local = project / ".claude" / "settings.local.json"
    data = json.loads(local.read_text(encoding="utf-8"))
    assert len(_commands(data, "Stop")) == 1 and len(_commands(data, "SessionStart")) == 1
    assert "settings.local.json" in git(project, "check-ignore", str(local))
    assert "machine's paths" in run.stderr and str(mcp) in run.stderr  # .mcp.json: said loudly
    assert not (hermetic / ".claude").exists()  # the project's scope, like the MCP server
    backups = project / ".git" / "memstore-backups"
    assert {p.name.split(".bak-")[0] for p in backups.iterdir()} == {".mcp.json"}
    removed = agents_run("--uninstall", "claude-code", "--yes", home=hermetic, cwd=project)
    assert removed.returncode == 0, removed.stderr
    assert mcp.read_text(encoding="utf-8") == mcp_text  # byte for byte
    assert settings.read_text(encoding="utf-8") == shared
    assert not local.exists()  # memstore made it and emptied it
    assert not list(project.glob("*.bak-*")) and not list(settings.parent.glob("*.bak-*"))


def test_install_moves_hooks_an_older_install_left_in_the_shared_project_settings(
    hermetic: Path, project: Path
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    shared = json.dumps(USER_SETTINGS, indent=4) + "\n"
    settings.write_text(shared, encoding="utf-8")
    exe = str(EXE.resolve())
    older = plan_add_hooks(settings, shared, CLAUDE_CODE_HOOKS, exe, "claude-code")
    assert older.new_text is not None
    apply_backup = project / ".git" / "memstore-backups"
    apply_backup.mkdir()
    (apply_backup / "settings.json.bak-20260101T000000").write_text(shared, encoding="utf-8")
    settings.write_text(older.new_text, encoding="utf-8")  # what an older memstore wrote
    run = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project)
    assert run.returncode == 0, run.stderr
    assert settings.read_text(encoding="utf-8") == shared  # the person's text, byte for byte
    local = json.loads((project / ".claude" / "settings.local.json").read_text(encoding="utf-8"))
    assert _commands(local, "UserPromptSubmit") == [f"{exe} hook prompt"]


CODEX_HOOKS = {
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}
        ],
        "PostToolUse": [{"hooks": [{"type": "command", "command": "./lint.sh", "timeout": 5}]}],
    }
}
CODEX_CONFIG = 'model = "o4"\nnotify = ["say", "done"]\n\n[mcp_servers.other]\ncommand = "other"\n'


def test_install_codex_merges_hooks_json_idempotently_and_uninstall_restores_the_files(
    hermetic: Path, tmp_path: Path
) -> None:
    codex = hermetic / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(CODEX_CONFIG, encoding="utf-8")
    (codex / "hooks.json").write_text(json.dumps(CODEX_HOOKS), encoding="utf-8")
    bin_dir = tmp_path / "bin"
    fake_program(bin_dir, "codex")
    run = agents_run("--install", "codex", "--yes", home=hermetic, cwd=tmp_path, path_first=bin_dir)
    assert run.returncode == 0, run.stderr
    assert "/hooks" in run.stdout  # Codex runs a new hook only once approved there
    hooks = json.loads((codex / "hooks.json").read_text(encoding="utf-8"))
    assert hooks["hooks"]["PostToolUse"] == CODEX_HOOKS["hooks"]["PostToolUse"]
    start = hooks["hooks"]["SessionStart"]
    assert start[0] == CODEX_HOOKS["hooks"]["SessionStart"][0] and start[1]["matcher"] == (
        "startup|resume"
    )
    exe = str(EXE.resolve())
    assert start[1]["hooks"] == [
        {"type": "command", "command": f"{exe} hook briefing --source codex", "timeout": 10}
    ]
    assert _commands(hooks, "Stop") == [f"{exe} hook capture --if-novel --source codex"]
    first = {p.name: p.read_text(encoding="utf-8") for p in codex.iterdir()}
    again = agents_run("--install", "codex", "--yes", home=hermetic, cwd=tmp_path)
    assert "already registered" in again.stdout and "hooks are already in" in again.stdout
    assert {p.name: p.read_text(encoding="utf-8") for p in codex.iterdir()} == first
    removed = agents_run("--uninstall", "codex", "--yes", home=hermetic, cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert (codex / "config.toml").read_text(encoding="utf-8") == CODEX_CONFIG
    assert json.loads((codex / "hooks.json").read_text(encoding="utf-8")) == CODEX_HOOKS
    assert len(list(codex.glob("*.bak-*"))) == 4


def test_no_hooks_registers_only_the_server_and_uninstall_no_hooks_keeps_them(
    hermetic: Path, tmp_path: Path
) -> None:
    codex = hermetic / ".codex"
    run = agents_run("--install", "codex", "--yes", "--no-hooks", home=hermetic, cwd=tmp_path)
    assert run.returncode == 0 and not (codex / "hooks.json").exists()
    assert agents_run("--install", "codex", "--yes", home=hermetic, cwd=tmp_path).returncode == 0
    hooks = (codex / "hooks.json").read_text(encoding="utf-8")
    out = agents_run("--uninstall", "codex", "--yes", "--no-hooks", home=hermetic, cwd=tmp_path)
    assert out.returncode == 0 and (codex / "hooks.json").read_text(encoding="utf-8") == hooks
    assert not (codex / "config.toml").exists()  # memstore made it; nothing else was in it


def test_a_settings_file_memstore_will_not_rewrite_stops_the_whole_install(
    hermetic: Path, project: Path
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    jsonc = '{\n  // my hooks\n  "hooks": {}\n}\n'
    settings.write_text(jsonc, encoding="utf-8")
    run = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project)
    assert run.returncode == 1 and "JSONC" in run.stderr and "--no-hooks" in run.stderr
    first = run.stderr.splitlines()[0]
    assert first.startswith("Error: ") and str(settings) in first and "nothing written" in first
    assert settings.read_text(encoding="utf-8") == jsonc and not (project / ".mcp.json").exists()
    only_server = agents_run(
        "--install", "claude-code", "--yes", "--no-hooks", home=hermetic, cwd=project
    )
    assert only_server.returncode == 0 and (project / ".mcp.json").exists()
    assert settings.read_text(encoding="utf-8") == jsonc


def test_without_a_terminal_no_hooks_are_written_either(hermetic: Path, tmp_path: Path) -> None:
    result = agents_run("--install", "claude-code", home=hermetic, cwd=tmp_path, stdin="")
    assert result.returncode == 1 and "nothing was written" in result.stderr
    assert '"UserPromptSubmit"' in result.stderr  # what to add by hand
    assert not (hermetic / ".claude").exists()


def test_install_and_uninstall_together_is_a_usage_error(hermetic: Path, tmp_path: Path) -> None:
    both = agents_run("--install", "codex", "--uninstall", "codex", home=hermetic, cwd=tmp_path)
    assert both.returncode == 2 and not (hermetic / ".codex").exists()


def test_hooks_a_person_set_up_are_left_alone_and_not_doubled() -> None:
    by_hand = {
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": "memstore hook prompt --source mybot"}]}
            ],
            # the README's once-per-session choice for capture
            "SessionEnd": [{"hooks": [{"type": "command", "command": "memstore hook capture"}]}],
            "SessionStart": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": "/src/memstore/hooks/claude-code/briefing.sh",
                        }
                    ]
                }
            ],
        }
    }
    text = json.dumps(by_hand)
    plan = plan_add_hooks(Path("s.json"), text, CLAUDE_CODE_HOOKS, "/opt/memstore", "claude-code")
    assert plan.status == "unchanged" and len(plan.notes) == 3
    assert "memstore hook prompt --source mybot" in plan.notes[1]
    removed = plan_remove_hooks(Path("s.json"), text, CLAUDE_CODE_HOOKS, "claude-code")
    assert removed.status == "unchanged"  # none of them is memstore's to remove


def test_only_the_exact_command_install_writes_is_memstores() -> None:
    prompt = CLAUDE_CODE_HOOKS[1]
    assert is_ours("/opt/bin/memstore hook prompt", prompt, "claude-code")
    assert is_ours("/opt/bin/memstore hook prompt --vault /v", prompt, "claude-code")
    for theirs in (
        "memstore hook prompt",  # a bare name: written by hand
        "/opt/bin/memstore hook prompt --source mybot",
        "/opt/bin/memstore hook prompt --limit 3",
        "MEMSTORE_VAULT=/v /opt/bin/memstore hook prompt",
        "/opt/bin/memstore  hook prompt",
    ):
        assert not is_ours(theirs, prompt, "claude-code"), theirs
    assert is_ours("/opt/bin/memstore hook prompt --source codex", prompt, "codex")


def test_a_path_with_spaces_is_quoted_in_the_hook_command() -> None:
    spec = CLAUDE_CODE_HOOKS[1]
    command = hook_command("/Users/A B/bin/memstore", spec, "codex", "/Users/A B/vault")
    assert shlex.split(command) == [
        "/Users/A B/bin/memstore",
        "hook",
        "prompt",
        "--source",
        "codex",
        "--vault",
        "/Users/A B/vault",
    ]
    assert memstore_hook_event(command) == "prompt"
    assert memstore_hook_event("notify-send memstore hook prompt") is None


@pytest.mark.parametrize(
    ("example", "specs", "source"),
    [
        ("claude-code/settings.example.json", CLAUDE_CODE_HOOKS, "claude-code"),
        ("codex/hooks.example.json", CODEX_HOOKS_SPECS, "codex"),
    ],
)
def test_the_example_hook_files_are_what_install_writes(
    example: str, specs: tuple[HookSpec, ...], source: str
) -> None:
    text = (Path(__file__).parents[2] / "hooks" / example).read_text(encoding="utf-8")
    assert json.loads(text) == render_hooks(specs, "memstore", source)


def test_it_asks_before_writing_and_no_leaves_every_file_alone(
    hermetic: Path, project: Path
) -> None:
    def answer(reply: bytes) -> subprocess.CompletedProcess[str]:
        controller, terminal = os.openpty()  # a real terminal on stdin, as a person has
        env = {**os.environ, "HOME": str(hermetic), "PATH": f"{EXE.parent}:/usr/bin:/bin"}
        with subprocess.Popen(
            [str(EXE), "agents", "--install", "claude-code"],
            cwd=project,
            env=env,
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:
            os.close(terminal)
            os.write(controller, reply)
            out, err = proc.communicate(timeout=60)
        os.close(controller)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    declined = answer(b"n\n")
    assert (
        declined.returncode == 1
        and str(project / ".claude" / "settings.local.json") in declined.stdout
    )
    assert str(project / ".mcp.json") in declined.stdout  # one question names both files
    assert not (project / ".mcp.json").exists() and not (project / ".claude").exists()
    accepted = answer(b"y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert (project / ".mcp.json").exists()
    assert (project / ".claude" / "settings.local.json").exists()


def test_a_settings_file_that_is_not_text_is_refused_not_replaced(
    hermetic: Path, tmp_path: Path
) -> None:
    settings = hermetic / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(b'{"hooks": {}, "name": "\xff"}')
    run = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=tmp_path)
    assert run.returncode == 1 and run.stderr.startswith(f"Error: cannot read {settings}")
    assert settings.read_bytes() == b'{"hooks": {}, "name": "\xff"}'
    listed = agents_run(home=hermetic, cwd=tmp_path).stdout
    assert (
        next(line for line in listed.splitlines() if line.startswith("claude-code")).split()[3]
        == "?"
    )


def test_the_json_list_tells_installed_from_configured(hermetic: Path, tmp_path: Path) -> None:
    (hermetic / ".codex").mkdir()
    bin_dir = tmp_path / "bin"
    fake_program(bin_dir, "claude")
    rows = json.loads(agents_run("--json", home=hermetic, cwd=tmp_path, path_first=bin_dir).stdout)
    by_name = {row["name"]: row for row in rows}
    assert (by_name["codex"]["installed"], by_name["codex"]["configured"]) == (False, True)
    assert by_name["claude-code"]["installed"] is True
    assert by_name["claude-code"]["hooks_path"] == str(hermetic / ".claude" / "settings.json")
    assert by_name["claude-code"]["hooks"] == "no" and by_name["cursor"]["hooks"] == "-"


def test_codex_install_warns_when_notify_already_captures(hermetic: Path, tmp_path: Path) -> None:
    config = hermetic / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('notify = ["memstore", "hook", "codex-notify"]\n', encoding="utf-8")
    run = agents_run("--install", "codex", "--yes", home=hermetic, cwd=tmp_path)
    assert run.returncode == 0 and "also runs 'memstore hook codex-notify'" in run.stdout
    assert tomllib.loads(config.read_text(encoding="utf-8"))["notify"][-1] == "codex-notify"


REALISTIC_SETTINGS = {
    # the person's own memstore hook with an argument of theirs, other tools' hooks, other keys,
    # 4-space indent and no final newline
    "own-memstore-hook": json.dumps(
        {
            "$schema": "https://json.schemastore.org/claude-code-settings.json",
            "model": "opus",
            "hooks": {
                "UserPromptSubmit": [
                    {
                        "hooks": [
                            {"type": "command", "command": "memstore hook prompt --source mybot"}
                        ]
                    }
                ],
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit"}]}
                ],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
            },
        },
        indent=4,
    ),
    # one line, non-ASCII kept as it is, an empty event of the person's
    "compact": '{"env": {"GREETING": "grüß dich"}, "hooks": {"Notification": []}}\n',
    # tabs, keys in an unusual order, a hook object with extra keys
    "tabs": '{\n\t"hooks": {\n\t\t"SessionStart": [\n\t\t\t{"matcher": "startup", "hooks": '
    '[{"type": "command", "command": "echo hi", "timeout": 3}]}\n\t\t]\n\t},\n'
    '\t"permissions": {"deny": ["Read(.env)"]}\n}\n',
    "empty-object": "{}",
}


@pytest.mark.parametrize("name", sorted(REALISTIC_SETTINGS))
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_install_then_uninstall_gives_back_the_settings_byte_for_byte(
    hermetic: Path, tmp_path: Path, name: str, agent: str
) -> None:
    settings = hermetic / (
        ".claude/settings.json" if agent == "claude-code" else ".codex/hooks.json"
    )
    settings.parent.mkdir()
    original = REALISTIC_SETTINGS[name]
    settings.write_text(original, encoding="utf-8")
    plain = tmp_path / "plain"  # outside any repository
    plain.mkdir()
    installed = agents_run("--install", agent, "--yes", home=hermetic, cwd=plain)
    assert installed.returncode == 0, installed.stderr
    after = json.loads(settings.read_text(encoding="utf-8"))
    if name == "own-memstore-hook":
        # the person's hook keeps its argument, and memstore's prompt hook is not added twice
        assert _commands(after, "UserPromptSubmit") == ["memstore hook prompt --source mybot"]
        assert "your own 'memstore hook prompt --source mybot'" in installed.stdout
        assert _commands(after, "Stop")[0] == "notify-send done"
    assert any("hook briefing" in c for c in _commands(after, "SessionStart"))
    removed = agents_run("--uninstall", agent, "--yes", home=hermetic, cwd=plain)
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text(encoding="utf-8") == original


def test_a_settings_file_memstore_created_is_removed_by_uninstall(
    hermetic: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert agents_run("--install", "codex", "--yes", home=hermetic, cwd=plain).returncode == 0
    codex = hermetic / ".codex"
    assert (codex / "hooks.json").exists() and (codex / "config.toml").exists()
    removed = agents_run("--uninstall", "codex", "--yes", home=hermetic, cwd=plain)
    assert removed.returncode == 0, removed.stderr
    assert not (codex / "hooks.json").exists() and not (codex / "config.toml").exists()
    assert "removed" in removed.stdout


def test_uninstall_leaves_hooks_memstore_did_not_write(hermetic: Path, tmp_path: Path) -> None:
    settings = hermetic / ".claude" / "settings.json"
    settings.parent.mkdir()
    exe = str(EXE.resolve())
    theirs = {
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": f"{exe} hook prompt --source mybot"}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "memstore hook capture"}]}],
        }
    }
    text = json.dumps(theirs)
    settings.write_text(text, encoding="utf-8")
    removed = agents_run("--uninstall", "claude-code", "--yes", home=hermetic, cwd=tmp_path)
    assert removed.returncode == 0 and "no memstore hooks in" in removed.stdout
    assert settings.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("where", ["project", "user"])
def test_a_prompt_hook_of_the_persons_in_any_settings_claude_code_merges_is_not_doubled(
    hermetic: Path, project: Path, where: str
) -> None:
    theirs = "memstore hook prompt --source mybot"
    folder = project / ".claude" if where == "project" else hermetic / ".claude"
    folder.mkdir()
    settings = folder / "settings.json"
    text = json.dumps(
        {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": theirs}]}]}}
    )
    settings.write_text(text, encoding="utf-8")
    exclude = project / ".git" / "info" / "exclude"
    exclude_text = exclude.read_text(encoding="utf-8")
    run = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project)
    assert run.returncode == 0, run.stderr
    assert (
        f"UserPromptSubmit already runs your own {theirs!r} in {settings}: left as it is, "
        "memstore's prompt hook not added"
    ) in run.stdout
    local = project / ".claude" / "settings.local.json"
    data = json.loads(local.read_text(encoding="utf-8"))
    assert "UserPromptSubmit" not in data["hooks"] and len(_commands(data, "Stop")) == 1
    assert f"added memstore's hooks (SessionStart, Stop) to {local}" in run.stdout
    assert "/.claude/settings.local.json" in exclude.read_text(encoding="utf-8")
    listed = json.loads(agents_run("--json", home=hermetic, cwd=project).stdout)
    assert {a["name"]: a["hooks"] for a in listed}["claude-code"] == "yes"  # theirs counts
    removed = agents_run("--uninstall", "claude-code", "--yes", home=hermetic, cwd=project)
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text(encoding="utf-8") == text and not local.exists()
    assert exclude.read_text(encoding="utf-8") == exclude_text  # memstore's line went too


def test_uninstall_takes_out_only_the_exclude_line_memstore_added(
    hermetic: Path, project: Path
) -> None:
    exclude = project / ".git" / "info" / "exclude"
    run = agents_run("--install", "claude-code", "--yes", home=hermetic, cwd=project)
    assert run.returncode == 0, run.stderr
    # the person's own lines, around memstore's and one just like it of theirs
    exclude.write_text(
        "/scratch\n" + exclude.read_text(encoding="utf-8") + "/.claude/settings.local.json\n",
        encoding="utf-8",
    )
    removed = agents_run("--uninstall", "claude-code", "--yes", home=hermetic, cwd=project)
    assert removed.returncode == 0, removed.stderr
    left = exclude.read_text(encoding="utf-8")
    assert left.startswith("/scratch\n") and left.endswith("\n/.claude/settings.local.json\n")
    assert left.count("/.claude/settings.local.json") == 1 and "memstore" not in left


def test_reinstall_takes_out_a_prompt_hook_an_older_install_added_beside_the_persons() -> None:
    exe = str(EXE.resolve())
    theirs = "memstore hook prompt --source mybot"
    project = Path("/p/.claude/settings.json")
    shared = json.dumps(
        {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": theirs}]}]}}
    )
    local = Path("/p/.claude/settings.local.json")
    older = plan_add_hooks(local, None, CLAUDE_CODE_HOOKS, exe, "claude-code").new_text
    again = plan_add_hooks(
        local, older, CLAUDE_CODE_HOOKS, exe, "claude-code", elsewhere=((project, shared),)
    )
    assert again.status == "write" and again.new_text is not None
    data = json.loads(again.new_text)
    assert "UserPromptSubmit" not in data["hooks"] and len(_commands(data, "Stop")) == 1
    assert again.events == ("SessionStart", "Stop")
    assert again.notes == (
        f"UserPromptSubmit already runs {theirs!r} in {project}: memstore's prompt hook taken "
        f"out of {local} (it ran twice)",
    )


@pytest.mark.parametrize("agent", ["claude-code", "cursor"])
def test_uninstall_removes_the_empty_folders_install_made_and_no_others(
    hermetic: Path, project: Path, agent: str
) -> None:
    # install made .claude/ (settings.local.json) or .cursor/ (mcp.json) in the project;
    # uninstall emptied them and left the folders behind (found by h-fresh10)
    folder = project / (".claude" if agent == "claude-code" else ".cursor")
    installed = agents_run("--install", agent, "--yes", home=hermetic, cwd=project)
    assert installed.returncode == 0 and folder.is_dir(), installed.stderr
    removed = agents_run("--uninstall", agent, "--yes", home=hermetic, cwd=project)
    assert removed.returncode == 0, removed.stderr
    assert not folder.exists()
    # a person's own folder, empty after uninstall, stays: memstore did not make it
    folder.mkdir()
    assert agents_run("--install", agent, "--yes", home=hermetic, cwd=project).returncode == 0
    assert agents_run("--uninstall", agent, "--yes", home=hermetic, cwd=project).returncode == 0
    assert folder.is_dir() and not any(folder.iterdir())
    # one memstore made that holds a file of the person's by then stays, with the file
    folder.rmdir()
    assert agents_run("--install", agent, "--yes", home=hermetic, cwd=project).returncode == 0
    (folder / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert agents_run("--uninstall", agent, "--yes", home=hermetic, cwd=project).returncode == 0
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_without_a_terminal_to_ask_it_fails_as_every_command_does(
    hermetic: Path, tmp_path: Path
) -> None:
    """docs/cli.md: a failure is a line `Error: …` on stderr, exit 1; this one lacked the
    prefix a script or a person scanning stderr looks for."""
    done = agents_run("--install", "codex", home=hermetic, cwd=tmp_path, stdin="")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(
        "Error: no terminal to ask, so nothing was written; rerun with --yes\n"
    ), done.stderr
    assert not (hermetic / ".codex" / "config.toml").exists()
