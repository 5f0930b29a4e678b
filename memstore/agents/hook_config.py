"""Memstore's entries in an agent's hook settings (settings.json, hooks.json): plan adding or removing them.

Pure: text in, text out. Both Claude Code and Codex keep hooks as
`{"hooks": {EVENT: [{"matcher": …, "hooks": [{"type": "command", "command": …}]}]}}`. An entry is
memstore's only when its command is exactly what `agents --install` writes (`hook_command`: an
absolute path to memstore, `hook`, the hook's arguments, the agent's `--source`, an optional
`--vault`); a hook a person wrote that runs memstore too (`memstore hook prompt --source mybot`)
is theirs and is never changed or removed. Everything else in the file is kept as it is.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Literal

# What a plan would do to a settings file: write it, leave it as it is, refuse (it is not
# ours to change), leave it to a person ("manual"), or delete it.
PlanStatus = Literal["write", "unchanged", "refused", "manual", "delete"]


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
    status: PlanStatus  # not "manual"; "delete": nothing but ours was in it
    reason: str = ""
    notes: tuple[str, ...] = ()  # hooks of the person's left alone, one line each
    events: tuple[str, ...] = ()  # the events memstore's hooks are in once it is written


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
    """Return which memstore hook a command runs ('prompt', 'capture' …), or None if none.

    Anyone's: a hook a person wrote counts too (see `is_ours` for the ones memstore wrote).
    """
    words = _words(command)
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


def is_ours(command: object, spec: HookSpec, source: str) -> bool:
    """Say whether a hook command is exactly the one `agents --install` writes for `spec`.

    Any absolute path to memstore and any vault count (memstore moved, another vault); any other
    difference (a bare `memstore`, another `--source`, an extra argument) makes it the person's.
    """
    words = _words(command)
    if not words or not PurePath(words[0]).is_absolute():
        return False
    if PurePath(words[0]).name not in ("memstore", "memstore.exe"):
        return False
    vault = words[-1] if len(words) > 2 and words[-2] == "--vault" else ""
    return command == hook_command(words[0], spec, source, vault)


def _words(command: object) -> list[str]:
    if not isinstance(command, str):
        return []
    try:
        return shlex.split(command)
    except ValueError:
        return []


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


def _entries(hooks: dict[str, Any], events: tuple[str, ...]) -> list[dict[str, Any]]:
    """Return every hook entry in these events (live objects, to edit)."""
    found = []
    for event in events:
        for group in hooks.get(event, []):
            inner = group.get("hooks") if isinstance(group, dict) else None
            found += [h for h in (inner if isinstance(inner, list) else []) if isinstance(h, dict)]
    return found


def _our_hooks(hooks: dict[str, Any], spec: HookSpec, source: str) -> list[dict[str, Any]]:
    """Return the entries memstore wrote for `spec` (in its event or the ones it may move to)."""
    return [
        h
        for h in _entries(hooks, (spec.event, *spec.also_in))
        if is_ours(h.get("command"), spec, source)
    ]


def _their_hooks(hooks: dict[str, Any], spec: HookSpec) -> list[str]:
    """Return the person's own commands running the same memstore hook as `spec`."""
    return [
        h["command"]
        for h in _entries(hooks, (spec.event, *spec.also_in))
        if memstore_hook_event(h.get("command")) == _event_name(spec)
    ]


def _dump(data: dict[str, Any], like: str | None = None) -> str:
    """Render settings as JSON, indented the way the file it replaces was (2 spaces if new)."""
    indent: int | str = 2
    found = re.search(r"^[{\[][^\n]*\n([ \t]+)\S", like or "")
    if found:
        width = found.group(1)
        indent = len(width) if set(width) == {" "} else width
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def plan_add_hooks(
    path: PurePath,
    current: str | None,
    specs: tuple[HookSpec, ...],
    exe: str,
    source: str,
    vault: str = "",
    elsewhere: tuple[tuple[PurePath, str | None], ...] = (),
) -> HooksPlan:
    """Decide how to merge memstore's hooks into a settings file (`current`: None, no file).

    An entry memstore wrote is updated in place (keys the person added to it stay); where
    that memstore hook already runs, from this file or from one of `elsewhere` (the other
    settings files the agent merges with this one: their paths and texts), it is left as it
    is and ours is not added (it would run twice), with a note; otherwise ours is appended.
    """
    block = json.dumps(render_hooks(specs, exe, source, vault), indent=2)
    data, reason = _parse(path, current)
    if data is None:
        return HooksPlan(path, block, None, "refused", reason)
    hooks = copy.deepcopy(data.get("hooks", {}))
    others = [(where, _hooks_of(text)) for where, text in elsewhere]
    notes, events = [], []
    for spec in specs:
        command = hook_command(exe, spec, source, vault)
        existing = _our_hooks(hooks, spec, source)
        for hook in existing:
            hook["command"] = command
        theirs = [(c, "") for c in _their_hooks(hooks, spec)]
        there = [(c, f" in {w}") for w, found in others for c in _their_hooks(found, spec)]
        if existing and there:  # an older install added ours beside it: it ran twice
            hooks = _drop_ours(hooks, spec, source)
            notes.append(
                f"{spec.event} already runs {there[0][0]!r}{there[0][1]}: memstore's "
                f"{_event_name(spec)} hook taken out of {path} (it ran twice)"
            )
            continue
        theirs += there
        if not existing and theirs:
            command_there, where = theirs[0]
            whose = "memstore's" if is_ours(command_there, spec, source) else "your own"
            notes.append(
                f"{spec.event} already runs {whose} {command_there!r}{where}: left as it is, "
                f"memstore's {_event_name(spec)} hook not added"
            )
            continue
        if not existing:
            hooks.setdefault(spec.event, []).append(_group(spec, command))
        events.append(spec.event)
    done = tuple(dict.fromkeys(events))
    if hooks == data.get("hooks", {}):
        return HooksPlan(path, block, None, "unchanged", notes=tuple(notes), events=done)
    new_text = _dump({**data, "hooks": hooks}, like=current)
    return HooksPlan(path, block, new_text, "write", notes=tuple(notes), events=done)


def _drop_ours(hooks: dict[str, Any], spec: HookSpec, source: str) -> dict[str, Any]:
    """Return `hooks` without memstore's entries for `spec`; a group or event left empty goes."""
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if event not in (spec.event, *spec.also_in):
            kept[event] = groups
            continue
        left = [g for g in (_without_ours(g, (spec,), source) for g in groups) if g is not None]
        if left or not groups:
            kept[event] = left
    return kept


def _hooks_of(text: str | None) -> dict[str, Any]:
    """Return a settings text's hooks object; {} when it has none or does not parse."""
    data, _ = _parse(PurePath(), text)
    return {} if data is None else data.get("hooks", {})


def plan_remove_hooks(
    path: PurePath,
    current: str | None,
    specs: tuple[HookSpec, ...],
    source: str,
    originals: tuple[str, ...] = (),
) -> HooksPlan:
    """Decide how to take the hooks memstore wrote out of a settings file, keeping all the rest.

    A group or event left empty by the removal goes too. When what is left is what one of
    `originals` (the file's texts before memstore wrote it, newest first) held, that text comes
    back byte for byte; when nothing is left and no original had the file, it is deleted.
    """
    data, reason = _parse(path, current)
    if data is None:
        return HooksPlan(path, "", None, "refused", reason)
    hooks = data.get("hooks", {})
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        left = [g for g in (_without_ours(g, specs, source) for g in groups) if g is not None]
        if left or not groups:
            kept[event] = left
    if kept == hooks:
        return HooksPlan(path, "", None, "unchanged")
    rest = {k: v for k, v in data.items() if k != "hooks"}
    after = {**data, "hooks": kept} if kept else rest
    return plan_restore(path, current, after, originals)


def plan_restore(
    path: PurePath, current: str | None, after: dict[str, Any], originals: tuple[str, ...]
) -> HooksPlan:
    """Return the plan writing `after`: an original text that holds it, else JSON, or delete."""
    text = render_restored(after, current, originals)
    return HooksPlan(path, "", text, "write" if text is not None else "delete")


def render_restored(
    after: dict[str, Any], current: str | None, originals: tuple[str, ...]
) -> str | None:
    """Return the text holding `after`: an original's, byte for byte, if one holds exactly that;
    None (delete the file) when `after` is empty and no original had it; else JSON like `current`.
    """
    for text in originals:
        try:
            if _without_empty_hooks(json.loads(text)) == _without_empty_hooks(after):
                return text
        except json.JSONDecodeError:
            continue
    if not after:
        return None  # memstore made the file and nothing of anyone's is left in it
    return _dump(after, like=current)


def _without_empty_hooks(data: object) -> object:
    if isinstance(data, dict) and data.get("hooks") == {}:
        return {k: v for k, v in data.items() if k != "hooks"}
    return data


def _without_ours(group: object, specs: tuple[HookSpec, ...], source: str) -> object | None:
    """Return the group without memstore's entries; None when only ours were in it."""
    inner = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(group, dict) or not isinstance(inner, list):
        return group
    left = [
        h
        for h in inner
        if not (isinstance(h, dict) and any(is_ours(h.get("command"), s, source) for s in specs))
    ]
    if len(left) == len(inner):
        return group
    return {**group, "hooks": left} if left else None


def hooks_state(current: str | None, specs: tuple[HookSpec, ...], source: str) -> str:
    """Say whether a settings text runs memstore's hooks (its own or the person's): 'yes', 'some', 'no'."""
    try:
        data = json.loads(current) if current and current.strip() else {}
    except json.JSONDecodeError:
        return "no"
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return "no"
    hooks = {k: v for k, v in hooks.items() if isinstance(v, list)}
    have = [bool(_our_hooks(hooks, s, source) or _their_hooks(hooks, s)) for s in specs]
    return "yes" if all(have) else ("some" if any(have) else "no")
