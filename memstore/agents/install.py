"""Registering memstore with coding agents: find them, plan adding or removing memstore's MCP server, apply it.

`plan_install` and `plan_uninstall` are pure (text in, text out); `write_config` backs up and
writes. Nothing here ever writes ~/.claude.json; a config that does not parse is refused and
the block to add by hand is returned instead. Hooks are memstore.agents.hook_config's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
import tomllib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from memstore.agents.hook_config import PlanStatus, json_refusal, render_restored
from memstore.core.errors import InvalidInputError, VaultError

SERVER_NAME = "memstore"


@dataclass(frozen=True)
class Agent:
    """One agent's MCP configuration file and how memstore is registered in it."""

    name: str
    title: str
    path: Path | None  # None: memstore cannot write it (instructions are printed instead)
    key: str  # the table of servers: mcpServers, servers or mcp_servers
    installed: bool  # the agent's program (or app) is on this machine
    note: str = ""
    configured: bool = False  # the agent's config folder exists (memstore may have made it)
    hooks_path: Path | None = None  # where memstore's hooks go; None: no hooks for this agent
    old_hooks_path: Path | None = None  # where an older install put them: moved out on install
    # the other settings files the agent runs hooks from, with those of hooks_path
    merged_hooks_paths: tuple[Path, ...] = ()


@dataclass(frozen=True)
class InstallPlan:
    """What installing into one agent would do."""

    agent: Agent
    block: str  # the snippet a person could add by hand
    new_text: str | None  # None: nothing to write (refused, unchanged, or not writable)
    status: PlanStatus
    reason: str = ""

    @property
    def path(self) -> Path | None:
        return self.agent.path


def _program_finder(path_dirs: list[str]) -> Callable[..., bool]:
    """Return a test: is one of these programs on PATH or at one of these paths?"""
    search = os.pathsep.join(d for d in path_dirs if d)

    def found(*commands: str, at: tuple[Path, ...] = ()) -> bool:
        on_path = bool(search) and any(shutil.which(c, path=search) for c in commands)
        return on_path or any(p.is_dir() if p.suffix == ".app" else _runnable(p) for p in at)

    return found


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _mac_apps(home: Path, apps: Path, name: str) -> tuple[Path, ...]:
    return (apps / "Applications" / name, home / "Applications" / name)


def find_agents(
    home: Path,
    cwd: Path,
    repo_root: Path | None,
    path_dirs: list[str],
    apps: Path = Path("/"),
) -> list[Agent]:
    """Return the agents memstore knows, where their config lives, and whether they are here.

    An agent is installed when its program is found (on `path_dirs`, or where its installer
    puts it; `apps` is the root holding /Applications); a config folder alone only makes it
    configured, since memstore itself may have written that config.
    """
    found = _program_finder(path_dirs)
    project = repo_root or cwd
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    mac_desktop = home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if mac_desktop.parent.exists():
        desktop = mac_desktop
    cursor_project = project / ".cursor" / "mcp.json"
    claude_bins = (home / ".local" / "bin" / "claude", home / ".claude" / "local" / "claude")
    return [
        Agent(
            "claude-code",
            "Claude Code",
            project / ".mcp.json" if repo_root else None,
            "mcpServers",
            found("claude", at=claude_bins),
            "" if repo_root else "not in a git repository: use the printed 'claude mcp add' line",
            (home / ".claude").exists() or (home / ".claude.json").exists(),
            # the hooks hold this machine's paths: in a project, the personal settings file
            # (Claude Code keeps settings.local.json out of git), never the shared one
            repo_root / ".claude" / "settings.local.json"
            if repo_root
            else home / ".claude" / "settings.json",
            repo_root / ".claude" / "settings.json" if repo_root else None,
            # Claude Code runs the hooks of user, project and project-local settings alike
            (home / ".claude" / "settings.json", repo_root / ".claude" / "settings.json")
            if repo_root
            else (),
        ),
        Agent(
            "codex",
            "Codex CLI",
            home / ".codex" / "config.toml",
            "mcp_servers",
            found("codex"),
            configured=(home / ".codex").exists(),
            hooks_path=home / ".codex" / "hooks.json",
        ),
        Agent(
            "cursor",
            "Cursor",
            cursor_project if repo_root else home / ".cursor" / "mcp.json",
            "mcpServers",
            found("cursor", at=_mac_apps(home, apps, "Cursor.app")),
            configured=(home / ".cursor").exists(),
        ),
        Agent(
            "claude-desktop",
            "Claude Desktop",
            desktop,
            "mcpServers",
            found("claude-desktop", at=_mac_apps(home, apps, "Claude.app")),
            configured=desktop.parent.exists(),
        ),
        Agent(
            "vscode",
            "VS Code",
            project / ".vscode" / "mcp.json" if repo_root else None,
            "servers",
            found("code", at=_mac_apps(home, apps, "Visual Studio Code.app")),
            ""
            if repo_root
            else "not in a git repository: VS Code reads .vscode/mcp.json in a project; run "
            "this inside one, or add this with 'MCP: Add Server' (user settings)",
            (home / ".vscode").exists(),
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
        return InstallPlan(agent, block, None, "refused", json_refusal(agent.path, current, err))
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


def claude_remove_line() -> str:
    return f"claude mcp remove --scope user {SERVER_NAME}"


def plan_uninstall(
    agent: Agent, current: str | None, originals: tuple[str, ...] = ()
) -> InstallPlan:
    """Decide how to take memstore's server out of `agent`'s config, keeping everything else.

    `originals` are the file's texts before memstore wrote it (its backups, newest first): when
    what is left is what one held, that text comes back byte for byte; a file left empty that no
    original had (memstore made it) is deleted.
    """
    if agent.path is None:
        by_hand = claude_remove_line() if agent.name == "claude-code" else ""
        return InstallPlan(agent, by_hand, None, "manual", agent.note)
    if current is None or not current.strip():
        return InstallPlan(agent, "", None, "unchanged")
    if agent.key == "mcp_servers":
        return _unplan_toml(agent, current, originals)
    try:
        data = json.loads(current)
    except json.JSONDecodeError as err:
        return InstallPlan(agent, "", None, "refused", json_refusal(agent.path, current, err))
    servers = data.get(agent.key) if isinstance(data, dict) else None
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return InstallPlan(agent, "", None, "unchanged")
    rest = {k: v for k, v in servers.items() if k != SERVER_NAME}
    # a table memstore emptied goes too: install then uninstall gives back what was there
    merged = (
        {**data, agent.key: rest} if rest else {k: v for k, v in data.items() if k != agent.key}
    )
    text = render_restored(merged, current, originals)
    return InstallPlan(agent, "", text, "write" if text is not None else "delete")


_SUBTABLE = re.compile(
    rf"^\[mcp_servers\.{SERVER_NAME}\.[^\]\n]+\][^\n]*\n(?:(?!\[)[^\n]*\n?)*", re.MULTILINE
)


def _unplan_toml(agent: Agent, current: str, originals: tuple[str, ...]) -> InstallPlan:
    try:
        before = tomllib.loads(current)
    except tomllib.TOMLDecodeError as err:
        return InstallPlan(agent, "", None, "refused", f"{agent.path} is not valid TOML ({err})")
    servers = before.get("mcp_servers", {})
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return InstallPlan(agent, "", None, "unchanged")
    new_text = _SUBTABLE.sub("", _TABLE.sub("", current))
    new_text = new_text.rstrip("\n") + "\n" if new_text.strip() else ""
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        after = None
    rest = {k: v for k, v in servers.items() if k != SERVER_NAME}
    expected = {k: v for k, v in before.items() if k != "mcp_servers"}
    if rest or "mcp_servers" in (after or {}):
        expected["mcp_servers"] = rest
    if after != expected:
        return InstallPlan(
            agent,
            "",
            None,
            "refused",
            f"{agent.path} defines mcp_servers in a form memstore will not edit",
        )
    for text in originals:  # the text it had before memstore wrote it, byte for byte
        try:
            if tomllib.loads(text) == after:
                return InstallPlan(agent, "", text, "write")
        except tomllib.TOMLDecodeError:
            continue
    if not new_text:
        return InstallPlan(agent, "", None, "delete")  # memstore made it; nothing else is in it
    return InstallPlan(agent, "", new_text, "write")


def runs_codex_notify(config_text: str | None) -> bool:
    """Say whether a Codex config.toml runs memstore's notify capture (a second capture path)."""
    try:
        notify = tomllib.loads(config_text or "").get("notify")
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(notify, list) and "codex-notify" in notify


def apply_install(plan: InstallPlan, backups: Path | None = None) -> Path | None:
    """Write the plan's new text (after backing up the original); return the backup path.

    `backups` is the folder for the backup (default: beside the file). For a file inside a
    project, the shell passes the repository's .git folder, where no commit can pick it up.
    """
    path = plan.agent.path
    if plan.status != "write" or plan.new_text is None or path is None:
        raise InvalidInputError(f"nothing to write for {plan.agent.title}")
    return write_config(path, plan.new_text, backups)


def write_config(path: Path, text: str, backups: Path | None = None) -> Path | None:
    """Replace an agent's config file atomically, keeping a copy of the old one; return the copy."""
    backup = None
    try:
        made = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
        path.parent.mkdir(parents=True, exist_ok=True)
        if backups is not None and made:  # uninstall removes them again, if left empty
            _record_made(backups, made)
        if path.exists():
            folder = backups or path.parent
            folder.mkdir(parents=True, exist_ok=True)
            backup = _free_name(folder / f"{path.name}.bak-{time.strftime('%Y%m%dT%H%M%S')}")
            shutil.copy2(path, backup)
        tmp = path.with_name(f".{path.name}.memstore-tmp")
        tmp.write_text(text, encoding="utf-8")
        if backup is not None:
            shutil.copymode(backup, tmp)  # the person's file keeps its permissions
        os.replace(tmp, path)
    except OSError as err:
        raise VaultError(f"cannot write {path}: {err.strerror}; add the block by hand") from err
    return backup


def remove_config(path: Path, backups: Path | None = None) -> Path | None:
    """Delete a config file memstore made and emptied, keeping a copy of it; return the copy."""
    try:
        folder = backups or path.parent
        folder.mkdir(parents=True, exist_ok=True)
        backup = _free_name(folder / f"{path.name}.bak-{time.strftime('%Y%m%dT%H%M%S')}")
        shutil.copy2(path, backup)
        path.unlink()
        if backups is not None:
            _remove_made(backups)
    except OSError as err:
        raise VaultError(f"cannot remove {path}: {err.strerror}") from err
    return backup


MADE_FOLDERS = "made-folders"  # in the backups folder: the folders write_config created


def _record_made(backups: Path, made: list[Path]) -> None:
    """Note the folders memstore created for a config (a project's `.claude/`), one a line."""
    backups.mkdir(parents=True, exist_ok=True)
    with (backups / MADE_FOLDERS).open("a", encoding="utf-8") as record:
        record.writelines(f"{folder}\n" for folder in made)


def _remove_made(backups: Path) -> None:
    """Remove each folder memstore created that is empty now, deepest first; a folder of a
    person's own (never recorded) or one holding anything stays."""
    record = backups / MADE_FOLDERS
    try:
        made = record.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return
    kept = []
    for line in sorted(set(made), key=lambda folder: folder.count(os.sep), reverse=True):
        folder = Path(line)
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        elif folder.is_dir():
            kept.append(line)
    if kept:
        record.write_text("".join(f"{line}\n" for line in sorted(kept)), encoding="utf-8")
    else:
        record.unlink()


def read_backups(path: Path, backups: Path | None = None) -> tuple[str, ...]:
    """Return the texts of the copies write_config kept of `path`, newest first."""
    folder = backups or path.parent
    copies = sorted(folder.glob(f"{path.name}.bak-*"), key=_backup_order)
    texts = []
    for copy in reversed(copies):
        try:
            texts.append(copy.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue  # a copy it cannot read is not an original to give back
    return tuple(texts)


def _backup_order(copy: Path) -> tuple[str, int]:
    """Order backups by the time in their name, then the -2, -3 … of one second."""
    stamp, _, n = copy.name.rpartition(".bak-")[2].partition("-")
    return stamp, int(n) if n.isdigit() else 1


def _free_name(path: Path) -> Path:
    """Return `path`, or `path-2`, `path-3` … : a second write in the same second keeps both copies."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate
