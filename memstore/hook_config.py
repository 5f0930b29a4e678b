"""Memstore's entries in an agent's hook settings (settings.json, hooks.json): plan adding or removing them.

Pure: text in, text out. Both Claude Code and Codex keep hooks as
`{"hooks": {EVENT: [{"matcher": …, "hooks": [{"type": "command", "command": …}]}]}}`; an entry is
memstore's when its command runs `memstore hook …` (or one of the hooks/claude-code scripts).
Everything else in the file is the person's and is kept as it is.
"""

from __future__ import annotations

import copy
import json
import shlex
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any


@dataclass(frozen=True)
class HookSpec:
    """One hook memstore installs: the agent event and the `memstore hook` arguments it runs."""

    event: str
    args: str  # after "memstore hook": "prompt", "capture --if-novel" …
    matcher: str | None = None
    timeout: int | None = None
    also_in: tuple[str, ...] = ()  # other events where an existing entry of ours counts


CLAUDE_CODE_HOOKS = (
    HookSpec("SessionStart", "briefing"),
    HookSpec("UserPromptSubmit", "prompt"),
    # the README offers SessionEnd as the once-per-session place for capture: keep it there
    HookSpec("Stop", "capture --if-novel", also_in=("SessionEnd",)),
)
# Codex adds no matcher on its own and needs a timeout below its default for a prompt hook.
CODEX_HOOKS = (
    HookSpec("SessionStart", "briefing", matcher="startup|resume", timeout=10),
    HookSpec("UserPromptSubmit", "prompt", timeout=10),
    HookSpec("Stop", "capture --if-novel", timeout=30),
)
HOOKS = {"claude-code": CLAUDE_CODE_HOOKS, "codex": CODEX_HOOKS}
# The scripts in hooks/claude-code/ that a person may have copied in by hand, and what they run.
SCRIPTS = {"briefing.sh": "briefing", "recall.sh": "prompt", "capture.sh": "capture"}


@dataclass(frozen=True)
class HooksPlan:
    """What adding (or removing) memstore's hooks would do to one settings file."""

    path: PurePath
    block: str  # the hooks to add by hand
    new_text: str | None  # None: nothing to write
    status: str  # "write" | "unchanged" | "refused"
    reason: str = ""


def hook_command(exe: str, spec: HookSpec, source: str, vault: str = "") -> str:
    """Return the shell command a hook runs (`source`: the agent's name; claude-code is the default)."""
    parts = [shlex.quote(exe), "hook", spec.args]
    if source != "claude-code":
        parts += ["--source", source]
    if vault:
        parts += ["--vault", shlex.quote(vault)]
    return " ".join(parts)


def render_hooks(
    specs: tuple[HookSpec, ...], exe: str, source: str, vault: str = ""
) -> dict[str, Any]:
    """Return memstore's hooks as a settings object: `{"hooks": {EVENT: [group]}}`."""
    events: dict[str, list[dict[str, Any]]] = {}
    for spec in specs:
        events.setdefault(spec.event, []).append(
            _group(spec, hook_command(exe, spec, source, vault))
        )
    return {"hooks": events}


def _group(spec: HookSpec, command: str) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": command}
    if spec.timeout is not None:
        hook["timeout"] = spec.timeout
    return {**({"matcher": spec.matcher} if spec.matcher is not None else {}), "hooks": [hook]}


def memstore_hook_event(command: object) -> str | None:
    """Return which memstore hook a command runs ('prompt', 'capture' …), or None if not ours."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and "=" in words[0] and not words[0].startswith(("/", ".")):
        words = words[1:]  # VAR=value prefixes
    if not words:
        return None
    program = PurePath(words[0])
    if program.name in SCRIPTS and program.parent.name == "claude-code":
        return SCRIPTS[program.name]
    if program.name in ("memstore", "memstore.exe") and words[1:2] == ["hook"] and len(words) > 2:
        return words[2]
    return None


def _event_name(spec: HookSpec) -> str:
    return spec.args.split()[0]


def json_refusal(path: PurePath | None, text: str | None, err: json.JSONDecodeError) -> str:
    """Say, in one line, why a JSON config will not be rewritten."""
    commented = "//" in (text or "") or "/*" in (text or "")
    why = (
        "holds comments or trailing commas (JSONC), which memstore will not rewrite"
        if commented
        else "is not valid JSON"
    )
    return f"{path} {why} ({err.msg} at line {err.lineno})"


def _parse(path: PurePath, current: str | None) -> tuple[dict[str, Any] | None, str]:
    """Return the settings object and its 'hooks' object, or None and why it was refused."""
    try:
        data = json.loads(current) if current and current.strip() else {}
    except json.JSONDecodeError as err:
        return None, json_refusal(path, current, err)
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        return None, f"{path} does not hold a 'hooks' object"
    hooks = data.get("hooks", {})
    if any(not isinstance(groups, list) for groups in hooks.values()):
        return None, f"{path} has a hook event that is not a list"
    return data, ""


def _our_hooks(hooks: dict[str, Any], events: tuple[str, ...], name: str) -> list[dict[str, Any]]:
    """Return memstore's hook entries running `name`, in these events (live objects, to edit)."""
    found = []
    for event in events:
        for group in hooks.get(event, []):
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else []:
                if isinstance(hook, dict) and memstore_hook_event(hook.get("command")) == name:
                    found.append(hook)
    return found


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def plan_add_hooks(
    path: PurePath,
    current: str | None,
    specs: tuple[HookSpec, ...],
    exe: str,
    source: str,
    vault: str = "",
) -> HooksPlan:
    """Decide how to merge memstore's hooks into a settings file (`current`: None, no file).

    An entry of ours already there is updated in place (keys the person added to it stay);
    a missing one is appended to its event; nothing else changes.
    """
    block = json.dumps(render_hooks(specs, exe, source, vault), indent=2)
    data, reason = _parse(path, current)
    if data is None:
        return HooksPlan(path, block, None, "refused", reason)
    hooks = copy.deepcopy(data.get("hooks", {}))
    for spec in specs:
        command = hook_command(exe, spec, source, vault)
        existing = _our_hooks(hooks, (spec.event, *spec.also_in), _event_name(spec))
        for hook in existing:
            hook["command"] = command
        if not existing:
            hooks.setdefault(spec.event, []).append(_group(spec, command))
    if hooks == data.get("hooks", {}) and "hooks" in data:
        return HooksPlan(path, block, None, "unchanged")
    return HooksPlan(path, block, _dump({**data, "hooks": hooks}), "write")


def plan_remove_hooks(path: PurePath, current: str | None) -> HooksPlan:
    """Decide how to take every memstore hook out of a settings file, keeping all the rest.

    A group or event left empty by the removal goes too, so an install then an uninstall gives
    back the settings the person had.
    """
    data, reason = _parse(path, current)
    if data is None:
        return HooksPlan(path, "", None, "refused", reason)
    hooks = data.get("hooks", {})
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        left = [g for g in (_without_ours(g) for g in groups) if g is not None]
        if left or not groups:
            kept[event] = left
    if kept == hooks:
        return HooksPlan(path, "", None, "unchanged")
    rest = {k: v for k, v in data.items() if k != "hooks"}
    return HooksPlan(path, "", _dump({**data, "hooks": kept} if kept else rest), "write")


def _without_ours(group: object) -> object | None:
    """Return the group without memstore's entries; None when only ours were in it."""
    inner = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(group, dict) or not isinstance(inner, list):
        return group
    left = [h for h in inner if not (isinstance(h, dict) and memstore_hook_event(h.get("command")))]
    if len(left) == len(inner):
        return group
    return {**group, "hooks": left} if left else None


def hooks_state(current: str | None, specs: tuple[HookSpec, ...]) -> str:
    """Say whether a settings text holds memstore's hooks: 'yes', 'some' or 'no'."""
    try:
        data = json.loads(current) if current and current.strip() else {}
    except json.JSONDecodeError:
        return "no"
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return "no"
    hooks = {k: v for k, v in hooks.items() if isinstance(v, list)}
    have = [bool(_our_hooks(hooks, (s.event, *s.also_in), _event_name(s))) for s in specs]
    return "yes" if all(have) else ("some" if any(have) else "no")
