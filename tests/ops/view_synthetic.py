"""A synthetic view dict of any size, shaped as service/view_data.collect_view returns it.

The page's tests and its 100k responsiveness check use it: building a real 100k vault takes
minutes, while the page only ever sees this dict. Deterministic for a given size and seed.
"""

from __future__ import annotations

import random
from typing import Any

_WORDS = [
    "deploy",
    "staging",
    "upload",
    "nginx",
    "postgres",
    "migration",
    "cache",
    "redis",
    "token",
    "rotate",
    "cron",
    "backup",
    "webhook",
    "retry",
    "queue",
    "worker",
    "timeout",
    "header",
    "proxy",
    "certificate",
    "build",
    "flaky",
    "test",
    "lint",
    "release",
    "branch",
    "review",
    "schema",
    "index",
    "vacuum",
    "replica",
    "latency",
    "budget",
    "alert",
    "oncall",
]
_ENTITIES = [f"{w}-{k}" for w in ("svc", "repo", "team", "host", "lib") for k in range(60)]
_KINDS = ("fact", "decision", "preference", "procedure", "core")
_SOURCES = ("claude-code", "codex", "cursor", "person")
_HOSTS = ("laptop", "ci-runner", "desk")
_CHANGE_KINDS = ("seen", "confirm", "edit", "archive", "recall", "merge", "conflict")


def _month(i: int, n: int) -> str:
    month = 24 * i // max(n, 1)
    return f"{2025 + month // 12}-{month % 12 + 1:02d}"


def synthetic_view(n: int, *, seed: int = 0, graph_nodes: int = 1500) -> dict[str, Any]:
    """Return a view dict with `n` memories, about 1.3 n changes and the queues filled."""
    rnd = random.Random(seed)
    workspaces = [f"ws{k}" for k in range(max(1, min(12, n // 50)))]
    sessions = [f"s{k:05d}" for k in range(max(1, n // 40))]
    session_of = {s: (rnd.choice(_SOURCES), rnd.choice(_HOSTS)) for s in sessions}
    memories: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []

    def change(kind: str, ids: list[str], when: str, session: str, subject: str) -> int:
        source, host = session_of[session]
        diff = "\n".join(f"+{rnd.choice(_WORDS)} {rnd.choice(_WORDS)}" for _ in range(4))
        changes.append(
            {
                "commit": f"{len(changes):07x}",
                "time": when,
                "kind": kind,
                "subject": subject,
                "author": "memstore" if source != "person" else "Maria <maria@example.org>",
                "session": session,
                "source": source,
                "host": host,
                "ids": ids,
                # the collector keeps full diffs only for the newest changes: most carry none
                "diff": f"--- a/x.md\n+++ b/x.md\n@@ -1 +1,4 @@\n{diff}"
                if rnd.random() < 0.2
                else "",
            }
        )
        return len(changes) - 1

    for i in range(n):
        mid = f"m{i:06d}"
        ws = rnd.choice(workspaces)
        session = sessions[i * len(sessions) // n]
        when = f"{_month(i, n)}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z"
        text = " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(6, 30)))
        entities = sorted(set(rnd.sample(_ENTITIES, rnd.randint(1, 4))))
        added = change("add", [mid], when, session, f"add({ws}): {text[:60]}")
        history = [added]
        if rnd.random() < 0.3:
            kind = rnd.choice(_CHANGE_KINDS)
            history.append(change(kind, [mid], when, rnd.choice(sessions), f"{kind}: {mid}"))
        memories.append(
            {
                "id": mid,
                "workspace": ws,
                "kind": rnd.choice(_KINDS),
                "created": when,
                "source": session_of[session][0],
                "host": session_of[session][1],
                "text": text,
                "front": f"id: {mid}\nworkspace: {ws}\ncreated: {when}\n",
                "keywords": rnd.sample(_WORDS, 2),
                "seen": rnd.randint(1, 5),
                "recalled": rnd.randint(0, 40),
                "confirmed": rnd.randint(0, 3),
                "last_recalled": when if rnd.random() < 0.5 else None,
                "archived": rnd.random() < 0.05,
                "path": f"{ws}/{mid}.md",
                "supersedes": [],
                "superseded_by": [],
                "entities": entities,
                "history": history,
                "neighbours": [],
            }
        )
    # supersede chains of three: m[k] <- m[k+1] <- m[k+2]
    for k in range(0, n - 2, 97):
        for older, newer in ((k, k + 1), (k + 1, k + 2)):
            memories[older]["superseded_by"].append(memories[newer]["id"])
            memories[newer]["supersedes"].append(memories[older]["id"])
    by_entity: dict[str, list[int]] = {}
    for i, m in enumerate(memories):
        for e in m["entities"]:
            by_entity.setdefault(e, []).append(i)
    for i, m in enumerate(memories):
        near = {j for e in m["entities"] for j in by_entity[e][:20] if j != i}
        m["neighbours"] = [memories[j]["id"] for j in sorted(near)[:8]]
    by_session: dict[str, list[int]] = {}
    for i, c in enumerate(changes):
        by_session.setdefault(c["session"], []).append(i)
    session_rows = [
        {
            "session": s,
            "source": session_of[s][0],
            "host": session_of[s][1],
            "first": changes[idx[0]]["time"],
            "last": changes[idx[-1]]["time"],
            "changes": len(idx),
            "ids": sorted({i for c in idx for i in changes[c]["ids"]}),
            "undo": f"memstore revert --session {s}",
        }
        for s, idx in by_session.items()
    ]
    ids = [m["id"] for m in memories]
    pick = rnd.sample(ids, min(len(ids), 60)) if ids else []
    queues: dict[str, list[dict[str, Any]]] = {
        "contradictions": [
            {
                "ids": [a, b],
                "why": "says on where the other says off",
                "command": f"memstore supersede {a} {b}",
            }
            for a, b in zip(pick[0:10:2], pick[1:10:2], strict=False)
        ],
        "duplicates": [
            {"ids": [a, b], "why": "0.93 similar", "command": f"memstore dedupe --merge {a} {b}"}
            for a, b in zip(pick[10:20:2], pick[11:20:2], strict=False)
        ],
        "conflicts": [
            {
                "id": a,
                "why": "kept both ways by a sync",
                "command": f"memstore conflicts resolve {a}",
            }
            for a in pick[20:23]
        ],
        "stale": [
            {"id": a, "why": "not seen in 200 days", "command": f"memstore archive {a}"}
            for a in pick[23:35]
        ],
        "never_recalled": [
            {"id": a, "why": "never recalled in 90 days", "command": f"memstore archive {a}"}
            for a in pick[35:55]
        ],
        "stale_citations": [
            {
                "id": a,
                "why": "src/upload.py:handle_upload changed in 3f2a1c9, 2 days ago",
                "command": f"memstore confirm {a}",
            }
            for a in pick[58:61]
        ],
        "secrets": [
            {
                "path": "notes/keys.md",
                "line": 3,
                "kind": "github token",
                "command": "memstore forget notes/keys.md",
            }
        ],
        "core_over_budget": [
            {
                "ids": pick[55:58],
                "why": "core memories take 2400 of 2000 tokens",
                "command": "memstore core --trim",
            }
        ],
    }
    by_workspace: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    months: dict[str, int] = {}
    for m in memories:
        by_workspace[m["workspace"]] = by_workspace.get(m["workspace"], 0) + 1
        by_kind[m["kind"]] = by_kind.get(m["kind"], 0) + 1
        months[m["created"][:7]] = months.get(m["created"][:7], 0) + 1
    growth, total = [], 0
    for month in sorted(months):
        total += months[month]
        growth.append([month, months[month], total])
    return {
        "schema": 1,
        "vault": {
            "path": "/home/maria/memstore",
            "generated": "2026-12-06T12:00:00Z",
            "memories": n,
            "workspaces": workspaces,
            "since": None,
            "workspace": None,
            "sampled": {"graph": f"the {graph_nodes} best-linked nodes"} if n > graph_nodes else {},
        },
        "memories": memories,
        "changes": changes,
        "sessions": session_rows,
        "queues": queues,
        "stats": {"by_workspace": by_workspace, "by_kind": by_kind, "growth": growth},
        "graph": _graph(memories, by_entity, graph_nodes),
    }


def _graph(
    memories: list[dict[str, Any]], by_entity: dict[str, list[int]], limit: int
) -> dict[str, Any]:
    """Memories and entities as nodes, a memory naming an entity as an edge; capped at `limit`."""
    entities = sorted(by_entity, key=lambda e: -len(by_entity[e]))[: max(1, limit // 10)]
    nodes: list[dict[str, Any]] = [
        {"id": e, "label": e, "type": "entity", "size": len(by_entity[e])} for e in entities
    ]
    index = {e: i for i, e in enumerate(entities)}
    edges: list[list[int]] = []
    room = limit - len(nodes)
    for m in memories[:room]:
        named = [index[e] for e in m["entities"] if e in index]
        if not named:
            continue
        nodes.append({"id": m["id"], "label": m["text"][:40], "type": "memory", "size": 1})
        edges.extend([len(nodes) - 1, j] for j in named)
    sampled = len(memories) > room
    note = (
        f"the {len(entities)} most named entities and {len(nodes) - len(entities)} of "
        f"{len(memories)} memories"
        if sampled
        else "every memory and entity"
    )
    return {"nodes": nodes, "edges": edges, "sampled": sampled, "note": note}
