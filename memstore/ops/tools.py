"""The MCP tools' logic without mcp: a tool call's arguments in, the JSON the tool returns out.

`memstore serve` runs it in-process (no daemon) or forwards each call to the vault's
daemon, which answers with `answer`; both give the agent the same JSON. Importing this
module imports neither mcp, Whoosh nor pygit2: the lean serve shell uses it too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, MutableMapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired

from typing_extensions import TypedDict

from memstore.core.config import Settings
from memstore.core.errors import InvalidInputError, MemstoreError, NotFoundError
from memstore.core.model import (
    ALL,
    GLOBAL,
    AddStatus,
    CoreMemory,
    Hit,
    Recall,
    SearchResult,
    check_new_text,
    check_workspace,
    summary,
)
from memstore.core.repo_name import add_target_at

if TYPE_CHECKING:
    from memstore.ops.client import Reply, Request
    from memstore.ops.output import Elsewhere
    from memstore.service.store import Store

OpenStore = Callable[[Settings, bool], AbstractContextManager["Store"]]  # as memstore.ops.lean's

AGENT_KINDS = ("note", "trace", "lesson")  # core and imported are for people to set


class Tool(StrEnum):
    """The MCP tools memstore serves (the value is the tool's name)."""

    RECALL = "memory_recall"
    ADD = "memory_add"
    CONFIRM = "memory_confirm"


TOOLS = tuple(Tool)


class HitOut(TypedDict):
    id: str
    ref: NotRequired[str]  # a code chunk's path:start-end (kind "code"), to open just that
    code: NotRequired[list[str]]  # a memory's: where the code it names is (path:start-end)
    content: str
    workspace: str
    kind: str
    keywords: list[str]
    source: str
    created: str
    score: float
    weak: bool
    neighbors: list[str]
    superseded_by: list[str]
    tier: NotRequired[str]  # the team vault it comes from (absent: the personal vault)
    stale: NotRequired[StaleOut]  # its cited code changed since (absent: fresh or unchecked)


class StaleCiteOut(TypedDict):
    cite: str  # "src/upload.py:handle_upload"
    state: str  # "changed" or "gone"
    reason: str


class StaleOut(TypedDict):
    reason: str  # every stale citation's reason, joined: what the agent should verify
    cites: list[StaleCiteOut]


def stale_out(hit: Hit) -> StaleOut | None:
    """Return what a stale hit says about its changed citations (None when fresh)."""
    if not hit.stale:
        return None
    return {
        "reason": "; ".join(s.reason for s in hit.stale),
        "cites": [{"cite": s.cite, "state": s.state, "reason": s.reason} for s in hit.stale],
    }


class CoreOut(TypedDict):
    id: str
    workspace: str
    content: str
    tier: NotRequired[str]


class RecallOut(TypedDict):
    results: list[HitOut]
    core_memory: list[CoreOut]
    message: str


class ContradictionOut(TypedDict):
    id: str
    detail: str


class AddOut(TypedDict):
    status: AddStatus
    id: str
    seen: int
    workspace: str
    # Only when the new memory disagrees with one already stored (no tokens otherwise).
    contradicts: NotRequired[list[ContradictionOut]]
    message: NotRequired[str]
    cites: NotRequired[list[str]]  # the code it cites: path, path:function, path:12-40


class ConfirmOut(TypedDict):
    id: str
    confirmed: int
    workspace: str
    dropped_cites: NotRequired[list[str]]  # citations of code that is gone, with why
    kept_cites: NotRequired[list[str]]  # gone here, kept: this repository never held them


SentCore = MutableMapping[str, tuple[tuple[str, str, str], ...]]


# What a recall with weak hits tells the agent to do with them (the confirm loop).
CONFIRM_HINT = (
    " Weak hits may not apply: ask the person whether one still holds; if they say yes,"
    " call memory_confirm with its id."
)


def recall_output(recall: Recall) -> RecallOut:
    """Return a recall as the JSON object memory_recall answers with."""
    weak = any(h.weak and h.kind != "code" for h in recall.hits)
    return {
        "results": [_hit_output(h) for h in recall.hits],
        "core_memory": [_core_output(c) for c in recall.core],
        "message": recall.message + (CONFIRM_HINT if weak else ""),
    }


def _hit_output(hit: Hit) -> HitOut:
    out: HitOut = {
        "id": hit.id,
        "content": hit.content,
        "workspace": hit.workspace,
        "kind": hit.kind,
        "keywords": list(hit.keywords),
        "source": hit.source,
        "created": hit.created,
        "score": hit.score,
        "weak": hit.weak,
        "neighbors": list(hit.neighbors),
        "superseded_by": list(hit.superseded_by),
    }
    if hit.kind == "code":
        out["ref"] = hit.path
    if hit.code:
        out["code"] = list(hit.code)
    if hit.tier:
        out["tier"] = hit.tier
    if (stale := stale_out(hit)) is not None:
        out["stale"] = stale
    return out


def _core_output(core: CoreMemory) -> CoreOut:
    out: CoreOut = {"id": core.id, "workspace": core.workspace, "content": core.content}
    if core.tier:
        out["tier"] = core.tier
    return out


def _workspace_argument(arguments: Mapping[str, Any], *, for_add: bool) -> str:
    """Return the `workspace` an agent passed ("": none), refused in the agent's terms: the
    store's message names `-w`, the command line's option, which an agent cannot pass."""
    given = str(arguments.get("workspace") or "")
    try:
        return check_workspace(given, for_add=for_add) if given else ""
    except InvalidInputError as err:
        said = str(err).replace("e.g. -w my-project", 'e.g. "workspace": "webshop"')
        raise InvalidInputError(said.replace("with -w", 'as "workspace": "webshop"')) from err


def recall(
    store: Store,
    arguments: Mapping[str, Any],
    *,
    workspace: str | None,
    live: bool,
    cwd: Path | None = None,
) -> RecallOut:
    """Run memory_recall (`workspace`: the session's default, None for every workspace;
    `live`: a watcher keeps the index current, so skip the scan for changed files; `cwd`:
    where the agent works, whose repository's citations are checked).

    Nothing found in a workspace while others hold matches: the message says how many and
    how to see them, as `memstore search` does.
    """
    chosen = _workspace_argument(arguments, for_add=False) or workspace or ALL
    scope = None if chosen == ALL else chosen
    query = str(arguments.get("query", ""))
    if not query.strip():
        raise InvalidInputError('query is empty; pass the key words to look for, e.g. "nginx 413"')
    k = int(arguments.get("k", 5))
    if k < 1:
        raise InvalidInputError(f"k is {k}; ask for 1 to 50 memories (more are cut to 50)")
    found = store.recall(
        query,
        workspace=scope,
        k=min(k, 50),
        max_tokens=int(arguments.get("max_tokens", 0)) or None,
        catch_up=not live,
        record_usage=True,
        tiers=True,
        cwd=cwd,
    )
    if not found.hits and not found.dropped and scope is not None:
        elsewhere = look_elsewhere(store, None, query, scope, command=RECALL_ALL)
        if elsewhere is not None and elsewhere.matches:
            found = replace(found, message=elsewhere_message(query, scope, elsewhere))
    if scope is not None and scope == _workspace_argument(arguments, for_add=False):
        from memstore.ops.lean import unknown_workspace

        # a typo in the argument should not pass for "nothing there", as on the CLI
        note = unknown_workspace(store, scope).removeprefix("note: ").strip()
        found = replace(found, message=f"{found.message} N{note[1:]}.") if note else found
    return recall_output(found)


ELSEWHERE_LIMIT = 30  # memories counted in other workspaces; more show as "30+"
RECALL_ALL = 'memory_recall with workspace "all" shows them'


def look_elsewhere(
    store: Store,
    result: SearchResult | None,
    query: str,
    scope: str | None,
    *,
    command: str,
    archived: bool = False,
    confident: bool = False,
) -> Elsewhere | None:
    """Return what other workspaces hold for `query` when its search in `scope` found
    nothing (one more search, capped); None when there was no scope or it found something.

    `command` is what shows them; `confident` counts only hits recall is sure of (what an
    agent is told unasked).
    """
    from memstore.ops.output import Elsewhere

    if scope is None or (result is not None and result.hits):
        return None
    found = store.search(
        query, workspace=None, k=ELSEWHERE_LIMIT, catch_up=False, archived=archived, tiers=True
    )
    hits = [hit for hit in found.hits if hit.workspace not in (scope, GLOBAL)]
    if confident:
        hits = [hit for hit in hits if not hit.weak]
    weak = all(hit.weak for hit in hits)
    return Elsewhere(len(hits), weak, len(found.hits) >= ELSEWHERE_LIMIT, command)


def elsewhere_message(query: str, scope: str, elsewhere: Elsewhere) -> str:
    """Return what an agent is told when nothing in `scope` matched but other workspaces do."""
    from memstore.ops.output import elsewhere_line

    where = GLOBAL if scope == GLOBAL else f"{scope} or {GLOBAL}"
    return f"No memory matches {summary(query, 80)!r} in {where}. {elsewhere_line(elsewhere)}."


def add(
    store: Store,
    arguments: Mapping[str, Any],
    *,
    workspace: str | None,
    source: str,
    cwd: str = "",
    elsewhere: str = "",
) -> AddOut:
    """Run memory_add (`workspace`, `source`: the session's defaults; no workspace: global;
    `cwd`: the agent's folder, whose repository its `cites` paths are in).

    Raises:
        InvalidInputError: no `workspace` argument, and the agent's folder is in another
            vault (`elsewhere`): the fact was meant for that vault, as the CLI's add says.
    """
    content = str(arguments.get("content") or "")
    if not content.strip():  # store.add's message is for a person at a shell
        raise InvalidInputError(
            "content is empty; pass the fact to remember as `content`, one self-contained "
            "sentence or two (e.g. symptom — cause — fix)"
        )
    check_new_text(content)
    chosen = _workspace_argument(arguments, for_add=True)
    if elsewhere and not chosen:
        vault = store.settings.vault
        raise InvalidInputError(
            f"this folder is in the vault {elsewhere}, but this MCP server uses {vault}; "
            f'pass "workspace" to add to {vault}, or start the server with --vault {elsewhere} '
            "to add there"
        )
    from memstore.ops.add_cites import add_cites

    specs = [str(spec) for spec in arguments.get("cites") or ()]
    result = store.add(
        content,
        workspace=chosen or workspace or GLOBAL,
        kind=str(arguments.get("kind") or "note"),
        keywords=tuple(arguments.get("keywords") or ()),
        source=str(arguments.get("source") or source) or None,
        supersedes=tuple(arguments.get("supersedes") or ()),
        allowed_kinds=AGENT_KINDS,
        cites=add_cites(store.settings.vault, cwd, specs, content),
    )
    result = store.hint(result, content)  # the add returned: its vault lock is released
    out: AddOut = {
        "status": result.status,
        "id": result.id,
        "seen": result.seen,
        "workspace": result.workspace,
    }
    if result.cites:
        out["cites"] = [cite.label for cite in result.cites]
    if result.contradicts:
        out["contradicts"] = [{"id": c.id, "detail": c.detail} for c in result.contradicts]
        out["message"] = contradiction_message([c.id for c in result.contradicts])
    return out


def contradiction_message(ids: list[str]) -> str:
    """Return what memory_add tells the agent when the new memory contradicts stored ones."""
    named = json.dumps(ids)
    return (
        f"Stored, but it contradicts {', '.join(ids)} (see contradicts). Ask the person which "
        "is right; if the new memory is, call memory_add again with the same content and "
        f"supersedes={named}."
    )


def confirm(store: Store, arguments: Mapping[str, Any], cwd: str = "") -> ConfirmOut:
    """Run memory_confirm: the person vouched for a recalled memory (`id`, or a prefix);
    its citations of the code in `cwd`'s repository are anchored to today's version."""
    memory_id = str(arguments.get("id") or "").strip()
    if not memory_id:
        raise InvalidInputError(
            "id is empty; pass the id of the recalled memory the person confirmed (e.g. k3xq9p2a)"
        )
    try:
        from memstore.ops.add_cites import checkout_at

        checkout = checkout_at(store.settings.vault, cwd) if cwd else None
        memory, dropped, unsure = store.confirm_cited(memory_id, checkout)
    except NotFoundError as err:  # its advice is for a person at a shell
        raise NotFoundError(
            f"no memory with id {memory_id!r}; call memory_recall to find ids"
        ) from err
    out: ConfirmOut = {
        "id": memory.id,
        "confirmed": memory.confirmed,
        "workspace": memory.workspace,
    }
    if dropped:
        out["dropped_cites"] = [f"{cite.label}: {reason}" for cite, reason in dropped]
    if unsure:
        out["kept_cites"] = [f"{cite.label}: {reason}" for cite, reason in unsure]
    return out


def without_repeated_core(out: RecallOut, asked: str, sent_core: SentCore) -> RecallOut:
    """Leave out the core block this session was already sent for workspace `asked`.

    One server is one agent session: the core block comes once (and again when it
    changes), not with every answer (~400 tokens each time).
    """
    block = tuple((c["id"], c["workspace"], c["content"]) for c in out["core_memory"])
    if block and block == sent_core.get(asked):
        message = out["message"] + " Core memory: unchanged since this session's first recall."
        return {**out, "core_memory": [], "message": message}
    if block:
        sent_core[asked] = block
    return out


@dataclass(frozen=True)
class ToolSession:
    """What a tool call runs with beside its arguments: the session's default workspace
    (None: recall reads every workspace, add writes to global) and source, and whether a
    watcher keeps the index current (then a recall skips its own scan for changed files)."""

    workspace: str | None
    source: str
    is_live: Callable[[], bool]
    cwd: str = ""  # the agent's folder: memory_add cites code of its repository
    elsewhere: str = ""  # the other vault that folder is in (memory_add refuses it)


def session_default(vault: Path, cwd: str, given: str | None) -> tuple[str | None, str]:
    """Return a session's default workspace (the one given, else that of the agent's folder
    `cwd`, else None) and the other vault that folder is in when none was given ("": none)."""
    if given or not cwd:
        return given or None, ""
    other, workspace = add_target_at(vault, Path(cwd))
    return workspace, str(other or "")


ToolRun = Callable[["Store", Mapping[str, Any], ToolSession], Mapping[str, Any]]

# tool → how it runs: the daemon (`answer`) and `memstore serve` in-process both call `run`.
HANDLERS: dict[Tool, ToolRun] = {
    Tool.RECALL: lambda store, arguments, session: recall(
        store,
        arguments,
        workspace=session.workspace,
        live=session.is_live(),
        cwd=Path(session.cwd) if session.cwd else None,
    ),
    Tool.ADD: lambda store, arguments, session: add(
        store,
        arguments,
        workspace=session.workspace,
        source=session.source,
        cwd=session.cwd,
        elsewhere=session.elsewhere,
    ),
    Tool.CONFIRM: lambda store, arguments, session: confirm(store, arguments, session.cwd),
}


def run(
    name: str, store: Store, arguments: Mapping[str, Any], session: ToolSession
) -> Mapping[str, Any]:
    """Run tool `name` (one of TOOLS) over `store`; raises MemstoreError for the agent."""
    return HANDLERS[Tool(name)](store, arguments, session)


def answer(request: Request, open_store: OpenStore) -> Reply:
    """Answer one tool call `memstore serve` forwarded: status 0 with the tool's JSON, or 1
    with the one-line message the agent gets as a tool error.

    `request.argv` is [tool name]; `request.stdin` the JSON `call_payload` made.
    """
    from memstore.ops.client import Reply

    if len(request.argv) != 1 or request.argv[0] not in TOOLS:
        return Reply(2, "", f"unknown tool {request.argv!r}; memstore serves {', '.join(TOOLS)}\n")
    try:
        call = json.loads(request.stdin or b"{}")
        arguments = dict(call["arguments"])
        settings = Settings.from_env(
            request.env, home=Path(request.env.get("HOME") or "/"), vault=Path(call["vault"])
        )
        settings = replace(settings, source=str(call["source"]), session=str(call["session"]))
        workspace, elsewhere = session_default(
            settings.vault, request.cwd or "", str(call.get("workspace") or "")
        )
        with open_store(settings, False) as store:
            session = ToolSession(
                workspace, settings.source, store.vault.is_watched, request.cwd or "", elsewhere
            )
            out = run(request.argv[0], store, arguments, session)
    except MemstoreError as err:
        return Reply(1, "", str(err))
    except (KeyError, ValueError, TypeError) as err:  # not what the serve shell sends
        return Reply(2, "", f"malformed tool call: {err!r}\n")
    # ASCII: the reply crosses a socket; the shell decodes it and writes the agent's copy
    return Reply(0, json.dumps(out, separators=(",", ":")), "")


def call_payload(
    arguments: Mapping[str, Any], *, vault: Path, workspace: str, source: str, session: str
) -> bytes:
    """Return a forwarded tool call's stdin: the arguments and the session they come from.

    `workspace` is the session's default ("": the daemon detects it from the caller's cwd).
    """
    call = {
        "arguments": dict(arguments),
        "vault": str(vault),
        "workspace": workspace,
        "source": source,
        "session": session,
    }
    return json.dumps(call).encode("ascii")  # \\u escapes keep lone surrogates for the checks
