"""Registering memstore with coding agents: find their MCP configs, plan a merge, apply it.

`plan_install` is pure (text in, text out); `apply_install` backs up and writes. Nothing here
ever writes ~/.claude.json; a config that does not parse is refused and the block to add by
hand is returned instead.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
import tomllib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from memstore.errors import InvalidInputError, VaultError

SERVER_NAME = "memstore"


@dataclass(frozen=True)
class Agent:
    """One agent's MCP configuration file and how memstore is registered in it."""

    name: str
    title: str
    path: Path | None  # None: memstore cannot write it (instructions are printed instead)
    key: str  # the table of servers: mcpServers, servers or mcp_servers
    detected: bool
    note: str = ""


@dataclass(frozen=True)
class InstallPlan:
    """What installing into one agent would do."""

    agent: Agent
    block: str  # the snippet a person could add by hand
    new_text: str | None  # None: nothing to write (refused, unchanged, or not writable)
    status: str  # "write" | "unchanged" | "refused" | "manual"
    reason: str = ""


def find_agents(home: Path, cwd: Path, repo_root: Path | None, path_dirs: list[str]) -> list[Agent]:
    """Return the agents memstore knows, where their config lives, and whether they are here."""

    def on_path(command: str) -> bool:
        return any((Path(d) / command).exists() for d in path_dirs)

    project = repo_root or cwd
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    mac_desktop = home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if mac_desktop.parent.exists():
        desktop = mac_desktop
    cursor_project = project / ".cursor" / "mcp.json"
    return [
        Agent(
            "claude-code",
            "Claude Code",
            project / ".mcp.json" if repo_root else None,
            "mcpServers",
            on_path("claude") or (home / ".claude").exists(),
            "" if repo_root else "not in a git repository: use the printed 'claude mcp add' line",
        ),
        Agent(
            "codex",
            "Codex CLI",
            home / ".codex" / "config.toml",
            "mcp_servers",
            on_path("codex") or (home / ".codex").exists(),
        ),
        Agent(
            "cursor",
            "Cursor",
            cursor_project if repo_root else home / ".cursor" / "mcp.json",
            "mcpServers",
            on_path("cursor") or (home / ".cursor").exists(),
        ),
        Agent("claude-desktop", "Claude Desktop", desktop, "mcpServers", desktop.parent.exists()),
        Agent(
            "vscode",
            "VS Code",
            project / ".vscode" / "mcp.json" if repo_root else None,
            "servers",
            on_path("code") or (home / ".vscode").exists(),
            ""
            if repo_root
            else "not in a git repository: VS Code reads .vscode/mcp.json in a project; run "
            "this inside one, or add this with 'MCP: Add Server' (user settings)",
        ),
    ]


def server_entry(agent: Agent, exe: str, vault: str = "") -> dict[str, object]:
    """Return the server definition for one agent's config (`vault`: '' for the default)."""
    args = ["serve", *(["--vault", vault] if vault else []), "--source", agent.name]
    if agent.key == "servers":  # VS Code
        return {"type": "stdio", "command": exe, "args": args}
    if agent.name == "claude-code":
        return {"type": "stdio", "command": exe, "args": args, "env": {}}
    return {"command": exe, "args": args}


def render_block(agent: Agent, exe: str, vault: str = "") -> str:
    """Return the snippet to add by hand."""
    entry = server_entry(agent, exe, vault)
    if agent.key == "mcp_servers":
        return _toml_table(entry)
    return json.dumps({agent.key: {SERVER_NAME: entry}}, indent=2)


def claude_add_line(exe: str, vault: str = "") -> str:
    where = f" --vault {shlex.quote(vault)}" if vault else ""
    return f"claude mcp add --scope user {SERVER_NAME} -- {exe} serve{where} --source claude-code"


def plan_install(agent: Agent, current: str | None, exe: str, vault: str = "") -> InstallPlan:
    """Decide what to write into `agent`'s config, given its current text (None: no file).

    `vault` is written into the server's arguments unless it is '' (the default vault).
    """
    block = render_block(agent, exe, vault)
    if agent.path is None:
        by_hand = claude_add_line(exe, vault) if agent.name == "claude-code" else block
        return InstallPlan(agent, by_hand, None, "manual", agent.note)
    if agent.key == "mcp_servers":
        return _plan_toml(agent, current, server_entry(agent, exe, vault), block)
    try:
        data = json.loads(current) if current and current.strip() else {}
    except json.JSONDecodeError as err:
        commented = "//" in (current or "") or "/*" in (current or "")
        why = (
            "holds comments or trailing commas (JSONC), which memstore will not rewrite"
            if commented
            else "is not valid JSON"
        )
        return InstallPlan(
            agent, block, None, "refused", f"{agent.path} {why} ({err.msg} at line {err.lineno})"
        )
    if not isinstance(data, dict) or not isinstance(data.get(agent.key, {}), dict):
        return InstallPlan(
            agent, block, None, "refused", f"{agent.path} does not hold a '{agent.key}' object"
        )
    servers = dict(data.get(agent.key, {}))
    entry = server_entry(agent, exe, vault)
    registered = servers.get(SERVER_NAME)
    if isinstance(registered, dict):
        # keys the person added (env values, timeout …) stay; only how to start memstore changes
        entry = {
            **registered,
            **entry,
            **({"env": registered["env"]} if "env" in registered else {}),
        }
    if registered == entry:
        return InstallPlan(agent, block, None, "unchanged")
    servers[SERVER_NAME] = entry
    merged = {**data, agent.key: servers}
    return InstallPlan(agent, block, json.dumps(merged, indent=2) + "\n", "write")


def _toml_table(entry: dict[str, object], skip: Collection[str] = ()) -> str:
    """Render memstore's [mcp_servers.memstore] table (`skip`: keys kept as sub-tables)."""
    lines = [f"[mcp_servers.{SERVER_NAME}]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in entry.items() if k not in skip]
    return "\n".join(lines) + "\n"


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
        )
    return json.dumps(str(value))  # a JSON string is a TOML basic string


_TABLE = re.compile(rf"^\[mcp_servers\.{SERVER_NAME}\][^\n]*\n(?:(?!\[)[^\n]*\n?)*", re.MULTILINE)


def _plan_toml(
    agent: Agent, current: str | None, entry: dict[str, object], block: str
) -> InstallPlan:
    text = current or ""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        return InstallPlan(agent, block, None, "refused", f"{agent.path} is not valid TOML ({err})")
    registered = before.get("mcp_servers", {}).get(SERVER_NAME)
    if isinstance(registered, dict):
        if all(registered.get(k) == v for k, v in entry.items()):
            return InstallPlan(agent, block, None, "unchanged")  # other keys are the person's
        entry = {**registered, **entry}  # keys the person added (timeouts, env) stay
        subtables = set(
            re.findall(rf"^\[mcp_servers\.{SERVER_NAME}\.([A-Za-z0-9_-]+)\]", text, re.M)
        )
        block = _toml_table(entry, skip=subtables)
    if _TABLE.search(text):
        new_text = _TABLE.sub(lambda _: block + "\n", text, count=1)
    else:
        glue = (
            "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        )
        new_text = text + glue + block
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        after = {}
    expected = {**before, "mcp_servers": {**before.get("mcp_servers", {}), SERVER_NAME: entry}}
    if after != expected:  # e.g. an inline mcp_servers table: do not guess, ask for a hand edit
        return InstallPlan(
            agent,
            block,
            None,
            "refused",
            f"{agent.path} defines mcp_servers in a form memstore will not edit",
        )
    return InstallPlan(agent, block, new_text, "write")


def is_registered(agent: Agent) -> bool:
    """Say whether the agent's config file already names a memstore server."""
    if agent.path is None or not agent.path.is_file():
        return False
    try:
        text = agent.path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if agent.key == "mcp_servers" else json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError):
        return False  # unreadable or malformed: --install says why
    servers = data.get(agent.key) if isinstance(data, dict) else None
    return isinstance(servers, dict) and SERVER_NAME in servers


def apply_install(plan: InstallPlan, backups: Path | None = None) -> Path | None:
    """Write the plan's new text (after backing up the original); return the backup path.

    `backups` is the folder for the backup (default: beside the file). For a file inside a
    project, the shell passes the repository's .git folder, where no commit can pick it up.
    """
    path = plan.agent.path
    if plan.status != "write" or plan.new_text is None or path is None:
        raise InvalidInputError(f"nothing to write for {plan.agent.title}")
    backup = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            folder = backups or path.parent
            folder.mkdir(parents=True, exist_ok=True)
            backup = folder / f"{path.name}.bak-{time.strftime('%Y%m%dT%H%M%S')}"
            shutil.copy2(path, backup)
        tmp = path.with_name(f".{path.name}.memstore-tmp")
        tmp.write_text(plan.new_text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as err:
        raise VaultError(f"cannot write {path}: {err.strerror}; add the block by hand") from err
    return backup
