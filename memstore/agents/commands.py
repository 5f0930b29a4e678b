"""The agents' commands: `memstore agents` lists coding agents and registers memstore (MCP server and hooks) with one, or takes it out; `memstore hook` runs a hook.

A thin shell over memstore.agents.install (MCP configs), memstore.agents.hook_config (hook
settings) and memstore.ops.hooks (what a hook prints).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from memstore.agents.hook_config import (
    HOOKS,
    HooksPlan,
    hooks_state,
    plan_add_hooks,
    plan_remove_hooks,
)
from memstore.agents.install import (
    Agent,
    InstallPlan,
    find_agents,
    is_registered,
    plan_install,
    plan_uninstall,
    read_backups,
    remove_config,
    runs_codex_notify,
    write_config,
)
from memstore.core.errors import InvalidInputError
from memstore.core.repo_name import find_enclosing_repository
from memstore.ops.cli_help import choices
from memstore.ops.output import render_json
from memstore.ops.parameters import JsonOption, VaultOption

Plan = InstallPlan | HooksPlan


commands = typer.Typer()


@commands.command()
def agents(
    install: Annotated[
        str | None,
        typer.Option(
            "--install",
            help="Register memstore with this agent (a name from the list), with its hooks.",
            show_default=False,
        ),
    ] = None,
    uninstall: Annotated[
        str | None,
        typer.Option(
            "--uninstall",
            help="Take memstore's MCP server and hooks out of this agent's config.",
            show_default=False,
        ),
    ] = None,
    no_hooks: Annotated[
        bool, typer.Option("--no-hooks", help="Only the MCP server: leave the hooks alone.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Write without asking.")] = False,
    as_json: JsonOption = False,
    vault: VaultOption = None,
) -> None:
    """List coding agents and their MCP config files, or register memstore with one.

    --install also adds memstore's hooks (Claude Code: .claude/settings.local.json of the project,
    kept out of git, or ~/.claude/settings.json outside one; Codex: ~/.codex/hooks.json) unless
    --no-hooks; hooks of your own, even ones running memstore, are never changed. The
    server is registered with the vault in effect: --vault, else $MEMSTORE_VAULT (written into
    the agent's config), else the default ~/memstore.

    Example:  memstore agents --install claude-code
    """
    if install and uninstall:
        raise typer.BadParameter("use --install or --uninstall, not both")
    cwd = Path.cwd()
    found = find_agents(
        Path.home(),
        cwd,
        find_enclosing_repository(cwd),
        os.environ.get("PATH", "").split(os.pathsep),
    )
    if install is None and uninstall is None:
        _list(found, as_json)
        return
    agent = _named(found, install or uninstall or "", "--install" if install else "--uninstall")
    if install:
        _install(agent, _vault_in_effect(vault), yes, no_hooks)
    else:
        _uninstall(agent, yes, no_hooks)


HOOK_EVENTS = ("prompt", "capture", "briefing", "codex-notify")


@commands.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def hook(
    ctx: typer.Context,
    event: Annotated[
        str,
        typer.Argument(
            metavar="EVENT", help=" | ".join(HOOK_EVENTS), autocompletion=choices(*HOOK_EVENTS)
        ),
    ],
    source: Annotated[
        str | None,
        typer.Option("--source", help="The agent (default claude-code; codex-notify: codex)."),
    ] = None,
    if_novel: Annotated[
        bool, typer.Option("--if-novel", help="capture: only what the vault does not hold yet.")
    ] = False,
    min_chars: Annotated[
        int | None,
        typer.Option("--min-chars", help="capture: skip messages shorter than this."),
    ] = None,
    vault: VaultOption = None,
) -> None:
    """Run an agent hook: reads the agent's hook JSON on stdin, prints context, never fails.

    prompt: the memories that match a UserPromptSubmit's prompt.

    capture [--if-novel] [--min-chars N]: keep the final assistant message (Stop) as a trace.

    briefing: memory changes since this agent's last session (SessionStart).

    codex-notify: Codex's notify program (Codex versions without hooks).

    --source AGENT names the agent (default claude-code; Codex's hooks pass codex).

    Example:  memstore hook prompt --source codex < payload.json
    """
    from memstore.ops.hooks import main as hook_main

    # The launcher runs hooks without typer; this path serves --help, completion and tests.
    argv = [event, *ctx.args, *(["--source", source] if source else [])]
    argv += [*(["--if-novel"] if if_novel else []), *(["--vault", str(vault)] if vault else [])]
    argv += ["--min-chars", str(min_chars)] if min_chars is not None else []
    raise typer.Exit(hook_main(argv))


def _named(found: list[Agent], name: str, option: str) -> Agent:
    agent = next((a for a in found if a.name == name), None)
    if agent is None:  # the command line's fault: a usage error (exit 2)
        raise typer.BadParameter(
            f"unknown agent {name!r}; use one of: {', '.join(a.name for a in found)}",
            param_hint=option,
        )
    return agent


def _vault_in_effect(vault: Path | None) -> str:
    """The vault to write into the agent's config: '' for the default one."""
    chosen = vault or (
        Path(os.environ["MEMSTORE_VAULT"]) if os.environ.get("MEMSTORE_VAULT") else None
    )
    return str(chosen.expanduser().resolve()) if chosen else ""


def _read(path: Path | None) -> str | None:
    """Return a config file's text, None when there is none (a file it cannot read stops here)."""
    if path is None or not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        # never plan from "no file" over a file that is there: it would be replaced
        why = err.strerror if isinstance(err, OSError) else "it is not UTF-8 text"
        raise InvalidInputError(f"cannot read {path} ({why}); nothing written") from err


def _hooks_column(agent: Agent) -> str:
    if agent.hooks_path is None:
        return "-"
    # every settings file the agent runs hooks from, as one: a hook of yours in one counts
    paths = dict.fromkeys((agent.hooks_path, agent.old_hooks_path, *agent.merged_hooks_paths))
    events: dict[str, list[object]] = {}
    try:
        for path in (p for p in paths if p is not None):
            try:
                data = json.loads(_read(path) or "{}")
            except json.JSONDecodeError:
                continue
            hooks = data.get("hooks") if isinstance(data, dict) else None
            for event, groups in (hooks if isinstance(hooks, dict) else {}).items():
                events.setdefault(event, []).extend(groups if isinstance(groups, list) else [])
    except InvalidInputError:
        return "?"
    return hooks_state(json.dumps({"hooks": events}), HOOKS[agent.name], agent.name)


def _list(found: list[Agent], as_json: bool) -> None:
    if as_json:
        rows = [
            {
                **asdict(a),
                "path": str(a.path) if a.path else None,
                "hooks_path": str(a.hooks_path) if a.hooks_path else None,
                "registered": is_registered(a),
                "hooks": _hooks_column(a),
            }
            for a in found
        ]
        typer.echo(render_json(rows))
        return
    typer.echo(f"{'agent':15} {'on this machine':16} {'mcp server':11} {'hooks':6} config")
    for each in found:
        where = str(each.path) if each.path else each.note
        # a config folder alone is not the agent: memstore may have written it
        here = "installed" if each.installed else ("configured" if each.configured else "no")
        registered = "yes" if is_registered(each) else "no"
        typer.echo(f"{each.name:15} {here:16} {registered:11} {_hooks_column(each):6} {where}")
    typer.echo("\nRegister with:  memstore agents --install NAME   (remove: --uninstall NAME)")


def _memstore_exe() -> str:
    exe = shutil.which("memstore") or str(Path(sys.argv[0]).resolve())
    return str(Path(exe).resolve())


def _install(agent: Agent, where: str, yes: bool, no_hooks: bool) -> None:
    exe = _memstore_exe()
    server = plan_install(agent, _read(agent.path), exe, where)
    plans: list[Plan] = [server]
    if agent.hooks_path is not None and not no_hooks:
        moved = _moved_out(agent)
        plans.append(
            plan_add_hooks(
                agent.hooks_path,
                _read(agent.hooks_path),
                HOOKS[agent.name],
                exe,
                agent.name,
                where,
                _merged_settings(agent, moved),
            )
        )
        plans += moved
    _refuse_if_any(plans, no_hooks)
    for plan in plans:
        for note in plan.notes if isinstance(plan, HooksPlan) else ():
            typer.echo(f"{agent.title}: {note}")
    if server.status == "manual":
        what = "Run" if agent.name == "claude-code" else "Add"
        block = textwrap.indent(server.block, "  ")
        typer.echo(f"{agent.title}: {server.reason}. {what}:\n\n{block}\n")
    for plan in plans:
        if plan.status == "unchanged" and plan.path != agent.old_hooks_path and _adds(plan):
            typer.echo(f"{agent.title}: {_done_already(agent, plan)}")
    pending = [p for p in plans if p.status in ("write", "delete")]
    if not pending:
        return
    question = " and ".join(_install_phrase(agent, p) for p in pending)
    _confirm(question[0].upper() + question[1:] + "?", pending, yes)
    for plan in pending:
        backup = _write(plan)
        typer.echo(
            f"{agent.title}: {_install_done(agent, plan)}"
            + (f" (backup: {backup})" if backup else "")
        )
        _keep_personal(agent, plan)
    if any(isinstance(p, HooksPlan) for p in pending) and agent.name == "codex":
        typer.echo("Codex runs a new hook only once you approve it: start codex and open /hooks.")
        if runs_codex_notify(_read(agent.path)):
            typer.echo(
                f"Note: {agent.path} also runs 'memstore hook codex-notify' as notify; keep one "
                "of the two (remove that notify line, or uninstall and rerun with --no-hooks)."
            )


def _merged_settings(agent: Agent, moved: list[Plan]) -> tuple[tuple[Path, str | None], ...]:
    """The other settings files the agent runs hooks from, as they will be once `moved` is done."""
    after = {Path(p.path): p.new_text for p in moved if p.path is not None}
    texts = []
    for path in agent.merged_hooks_paths:
        try:
            texts.append((path, after[path] if path in after else _read(path)))
        except InvalidInputError:
            continue  # unreadable: the agent cannot run hooks from it either
    return tuple(texts)


def _moved_out(agent: Agent) -> list[Plan]:
    """Plan taking memstore's hooks out of where an older install put them (a shared file)."""
    path = agent.old_hooks_path
    if path is None or not path.is_file():
        return []
    plan = plan_remove_hooks(
        path, _read(path), HOOKS[agent.name], agent.name, read_backups(path, _backups_for(path))
    )
    return [plan] if plan.status != "unchanged" else []


def _keep_personal(agent: Agent, plan: Plan) -> None:
    """Keep a project file holding this machine's paths out of git, or say loudly that it is not."""
    path = Path(plan.path) if plan.path is not None else None
    project = find_enclosing_repository(path.parent) if path else None
    if path is None or project is None or plan.status != "write" or _is_ignored(project, path):
        return
    exclude = project / ".git" / "info" / "exclude"
    if (
        isinstance(plan, HooksPlan)
        and path.name == "settings.local.json"
        and exclude.parent.is_dir()
    ):
        entry = "/" + path.relative_to(project).as_posix()
        before = exclude.read_text(encoding="utf-8") if exclude.is_file() else ""
        glue = "" if not before or before.endswith("\n") else "\n"
        exclude.write_text(f"{before}{glue}{_exclusion(entry)}", encoding="utf-8")
        typer.echo(f"{agent.title}: {path} holds this machine's paths: added {entry} to {exclude}")
        return
    typer.echo(
        f"Warning: {path} now holds this machine's paths (memstore, your vault) and git does "
        "not ignore it: keep it out of the project's commits (add it to .gitignore), or "
        "register per user instead (docs/agents.md)",
        err=True,
    )


def _exclusion(entry: str) -> str:
    """The lines memstore adds to .git/info/exclude: its own comment marks them as its."""
    return f"{EXCLUDE_MARK}\n{entry}\n"


EXCLUDE_MARK = "# added by memstore agents --install (--uninstall takes it out)"


def _forget_personal(agent: Agent) -> None:
    """Take out of .git/info/exclude the lines `_keep_personal` added, and only those."""
    path = agent.hooks_path
    project = find_enclosing_repository(path.parent) if path else None
    if path is None or project is None or path.name != "settings.local.json":
        return
    exclude = project / ".git" / "info" / "exclude"
    lines = _exclusion("/" + path.relative_to(project).as_posix())
    try:
        before = exclude.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return  # none, or not one memstore can read: nothing of memstore's to take out
    at = before.find(lines)
    if at < 0 or (at > 0 and before[at - 1] != "\n"):
        return
    exclude.write_text(before[:at] + before[at + len(lines) :], encoding="utf-8")
    typer.echo(f"{agent.title}: took {lines.splitlines()[1]} out of {exclude}")


def _is_ignored(project: Path, path: Path) -> bool:
    try:
        found = subprocess.run(
            ["git", "-C", str(project), "check-ignore", "-q", str(path)],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return found.returncode == 0


def _adds(plan: Plan) -> bool:
    """Say whether a plan puts anything of memstore's in (hooks it skips all are no news)."""
    return not isinstance(plan, HooksPlan) or bool(plan.events)


def _done_already(agent: Agent, plan: Plan) -> str:
    if isinstance(plan, HooksPlan):
        return f"memstore's hooks are already in {plan.path}"
    return f"memstore is already registered in {agent.path}"


def _install_phrase(agent: Agent, plan: Plan) -> str:
    if isinstance(plan, HooksPlan) and plan.path == agent.old_hooks_path:
        return f"move memstore's hooks out of {plan.path}"
    if isinstance(plan, HooksPlan):
        return f"add memstore's hooks ({', '.join(plan.events)}) to {plan.path}"
    return f"register memstore in {agent.path}"


def _install_done(agent: Agent, plan: Plan) -> str:
    if isinstance(plan, HooksPlan) and plan.path == agent.old_hooks_path:
        return f"took memstore's hooks out of {plan.path} (they belong in {agent.hooks_path})"
    if isinstance(plan, HooksPlan):
        return f"added memstore's hooks ({', '.join(plan.events)}) to {plan.path}"
    return f"registered memstore in {agent.path}"


def _uninstall(agent: Agent, yes: bool, no_hooks: bool) -> None:
    server = plan_uninstall(agent, _read(agent.path), _originals(agent.path))
    plans: list[Plan] = [server]
    if agent.hooks_path is not None and not no_hooks:
        plans.append(
            plan_remove_hooks(
                agent.hooks_path,
                _read(agent.hooks_path),
                HOOKS[agent.name],
                agent.name,
                _originals(agent.hooks_path),
            )
        )
        plans += _moved_out(agent)
    _refuse_if_any(plans, no_hooks)
    if server.status == "manual":
        typer.echo(
            f"{agent.title}: {server.reason.split(':')[0]}; no project config to change here"
            + (f". Run:\n\n{textwrap.indent(server.block, '  ')}\n" if server.block else "")
        )
    for plan in plans:
        if plan.status == "unchanged":
            what = "no memstore hooks in" if isinstance(plan, HooksPlan) else "memstore is not in"
            typer.echo(f"{agent.title}: {what} {plan.path}")
    pending = [p for p in plans if p.status in ("write", "delete")]
    if pending:
        paths = " and ".join(str(p.path) for p in pending)
        _confirm(f"Remove memstore from {paths}?", pending, yes)
    for plan in pending:
        backup = _write(plan)
        what = "memstore's hooks" if isinstance(plan, HooksPlan) else "memstore"
        gone = " (memstore had made it; nothing else was in it: removed)"
        typer.echo(
            f"{agent.title}: removed {what} from {plan.path}"
            + (gone if plan.status == "delete" else "")
            + (f" (backup: {backup})" if backup else "")
        )
    if not no_hooks:
        _forget_personal(agent)


def _refuse_if_any(plans: list[Plan], no_hooks: bool) -> None:
    """A file memstore will not rewrite stops the whole command before anything is written."""
    refused = [p for p in plans if p.status == "refused"]
    for plan in refused:
        by_hand = f" Add this by hand:\n\n{plan.block}" if plan.block else ""
        typer.echo(f"Error: {plan.reason}; nothing written.{by_hand}", err=True)
        if isinstance(plan, HooksPlan) and not no_hooks:
            typer.echo("(--no-hooks leaves the hooks file alone)", err=True)
    if refused:
        raise typer.Exit(1)


def _confirm(question: str, pending: list[Plan], yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        typer.echo("Error: no terminal to ask, so nothing was written; rerun with --yes", err=True)
        for plan in (p for p in pending if p.block):
            typer.echo(f"or add this to {plan.path}:\n\n{plan.block}", err=True)
        raise typer.Exit(1)
    typer.confirm(question, abort=True)


def _write(plan: Plan) -> Path | None:
    path = Path(plan.path) if plan.path is not None else None
    if path is not None and plan.status == "delete":
        return remove_config(path, _backups_for(path))
    if path is None or plan.new_text is None:  # only "write" plans get here
        raise InvalidInputError("nothing to write")
    return write_config(path, plan.new_text, _backups_for(path))


def _backups_for(path: Path) -> Path | None:
    """Where a config's backups go: .git/memstore-backups for a project's file, else beside it."""
    project = find_enclosing_repository(path.parent)
    git_dir = project / ".git" if project else None
    # in a worktree or submodule .git is a file: the backup then stays beside the config
    return git_dir / "memstore-backups" if git_dir and git_dir.is_dir() else None


def _originals(path: Path | None) -> tuple[str, ...]:
    """The texts a config had before memstore wrote it (its backups), newest first."""
    return read_backups(path, _backups_for(path)) if path is not None else ()
