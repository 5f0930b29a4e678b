"""The view's health queues, each item with the exact command that settles it.

Contradictions and near-duplicates are audit's (Curator.audit_alike: the same pairs, a
supersede chain settling its own, and the same supersede command), looked for among the
newest ALIKE_MEMORIES memories: audit reads every pair closely (~10 s at 10,000 memories
of a templated corpus), more than the whole page may cost. Conflicts and credentials come from the files the view reads anyway;
stale and never-recalled memories from the manifest's counters, by audit's rules.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memstore.catalog.indexer import Entry
from memstore.core.codec import normalize_text
from memstore.core.ranking import CORE_BUDGET_TOKENS, days_between, estimate_tokens, strength
from memstore.index import Document
from memstore.service.citations import check_citations
from memstore.service.curation import NEVER_RECALLED_DAYS, RECALL_FLOOR, Curator, candidate
from memstore.service.store import Store

ALIKE_MEMORIES = 2000  # the newest memories compared for near-duplicates and contradictions
QUEUE_ITEMS = 500  # items a queue lists; the page says how many more there are

Queue = list[dict[str, Any]]


def with_vault(command: str, vault: str | None) -> str:
    """`command` acting on the vault the person named with --vault (if they named one)."""
    return f"{command} --vault {shlex.quote(vault)}" if vault else command


def supersede_command(text: str, workspace: str, old_id: str, vault: str | None) -> str:
    """The command that records the newer memory's text as correcting `old_id`: audit's
    (ops/output.py's, which this layer cannot import; a test keeps the two the same)."""
    line = " ".join(text.split())
    if normalize_text(line) != normalize_text(text):  # a bullet list: its line starts matter
        line = text.strip()
    options = with_vault(f"-w {workspace} --supersedes {old_id}", vault)
    if line.startswith("-"):
        return f"memstore add {options} -- {_quote(line)}"
    return f"memstore add {_quote(line)} {options}"


def _quote(text: str) -> str:
    """Quote `text` for a POSIX shell: "don't" in double quotes rather than 'don'"'"'t'."""
    if "'" in text and not any(c in text for c in '"$`\\!\n'):
        return f'"{text}"'
    return shlex.quote(text)


def alike_queues(
    store: Store,
    documents: Sequence[Document],
    entries: Sequence[Entry],
    vault: str | None,
    now: datetime,
    everything: Sequence[Entry],
) -> tuple[Queue, Queue, int]:
    """(contradictions, near-duplicates, memories compared): audit's (Curator.audit_alike,
    the same pairs and the same supersede command) among the newest memories. Their texts
    are not masked here: collect_view masks every queue item's `why` and `command` once.
    `everything`: the vault's entries (supersedes elsewhere settle a pair too)."""
    by_path = {e.path: e for e in entries}
    newest = sorted(
        (d for d in documents if d.key in by_path),
        key=lambda d: (by_path[d.key].created, d.key),
        reverse=True,
    )[:ALIKE_MEMORIES]
    alike = Curator(store, now).audit_alike(newest, list(everything))
    text_of = {by_path[d.key].id: d.content for d in newest}
    created = {by_path[d.key].id: by_path[d.key].created for d in newest}
    contradictions = [
        {
            "ids": [c.new, c.old],
            "why": f"{c.new} disagrees with the older {c.old}: {c.detail}",
            "command": supersede_command(text_of.get(c.new, ""), c.workspace, c.old, vault),
        }
        for c in alike.contradictions
    ]
    duplicates = [
        {
            "ids": [a, b],
            "why": f"{share:.0%} of the shorter one's terms are in the other",
            "command": with_vault(
                f"memstore dedupe --merge {a if created[a] >= created[b] else b}", vault
            ),
        }
        for a, b, share in alike.duplicates
    ]
    return contradictions, duplicates, len(newest)


def usage_queues(entries: Sequence[Entry], now: datetime, vault: str | None) -> tuple[Queue, Queue]:
    """(stale, never recalled): audit's decayed and never-recalled memories, not archived."""
    stale, never = [], []
    for entry in entries:
        if entry.archived:
            continue
        archive = with_vault(f"memstore archive {entry.id}", vault)
        age = _days(entry.created, now)
        if entry.recalled == 0 and age >= NEVER_RECALLED_DAYS:
            never.append(
                {
                    "id": entry.id,
                    "why": f"never recalled in {age} days",
                    "command": archive,
                }
            )
        level = strength(candidate(entry), now)
        if level < RECALL_FLOOR:
            stale.append(
                {
                    "id": entry.id,
                    "why": f"strength {level:.3f} is below the recall floor {RECALL_FLOOR}",
                    "command": archive,
                }
            )
    return stale, never


def core_queue(
    core: Sequence[tuple[Entry, str]], vault: str | None, cap: int = CORE_BUDGET_TOKENS
) -> Queue:
    """One item when the core memories (always injected) outgrow their token budget."""
    sized = sorted(((estimate_tokens(text) + 10, e) for e, text in core), key=lambda p: -p[0])
    total = sum(size for size, _ in sized)
    if total <= cap or not sized:
        return []
    largest = sized[0][1]
    return [
        {
            "ids": [e.id for _, e in sized],
            "why": f"core memories take ~{total} tokens of a {cap}-token budget; the largest is "
            f"{largest.id} (~{sized[0][0]} tokens)",
            "command": with_vault(f"memstore promote {largest.id} --kind note", vault),
        }
    ]


def _days(stamp: str, now: datetime) -> int:
    return int(days_between(stamp, now))  # a date without a time counts from UTC midnight


def cited_queue(
    store: Store,
    cwd: Path | None,
    workspace: str | None,
    vault: str | None,
    sampled: dict[str, str],
) -> Queue:
    """Memories whose cited code changed or went away (audit's citations check), each with
    `memstore confirm` (still true: re-anchors) — a supersede or forget settles it too."""
    found = check_citations(store, cwd, workspace, catch_up=False)  # collect_view caught up
    if found.not_found:
        sampled["queue stale_citations"] = "not checked: " + ", ".join(
            f"repository {name} not found here ({count} citations)"
            for name, count in found.not_found.items()
        )
    return [
        {
            "id": memory.id,
            "why": "; ".join(s.reason for s in memory.stale),
            "command": with_vault(f"memstore confirm {memory.id}", vault),
        }
        for memory in found.stale
    ][:QUEUE_ITEMS]
