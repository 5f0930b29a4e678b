"""How stale citations are shown: `memstore audit`'s section and `memstore list --stale`, text and JSON."""

from __future__ import annotations

from dataclasses import asdict
from shlex import quote
from typing import TYPE_CHECKING, Any

from memstore.ops.output import count

if TYPE_CHECKING:
    from memstore.service.citations import CitationCheck, StaleMemory

STALE_TITLE = "stale citations (the cited code changed: check the memory, then settle it)"


def settle_commands(memory: StaleMemory, vault: str | None = None) -> list[str]:
    """Return the commands that settle a stale memory: re-anchor it to today's code when it
    still holds, replace it when it does not, or forget it."""
    flag = f" --vault {quote(vault)}" if vault else ""
    return [
        f"memstore confirm {memory.id}{flag}",
        f"memstore add 'WHAT IS TRUE NOW' -w {memory.workspace} --supersedes {memory.id}{flag}",
        f"memstore forget {memory.id}{flag}",
    ]


def stale_lines(check: CitationCheck, vault: str | None = None, limit: int = 0) -> list[str]:
    """Return the stale memories, one block each (what changed, then how to settle it), and
    a line for each repository whose citations could not be checked here."""
    lines = []
    shown = check.stale[:limit] if limit else check.stale
    for memory in shown:
        confirm, supersede, forget = settle_commands(memory, vault)
        lines.append(f"{memory.id}  {memory.workspace}  {memory.path}")
        lines.extend(f"    {stale.reason}" for stale in memory.stale)
        lines.append(f"    still true: {confirm}  (re-anchors its citations)")
        lines.append(f"    no longer true: {supersede}  (or {forget})")
    if len(shown) < len(check.stale):
        lines.append(f"… {len(check.stale) - len(shown)} more (--limit 0 lists all)")
    lines.extend(not_checked_lines(check))
    return lines


def not_checked_lines(check: CitationCheck) -> list[str]:
    """Return one line per repository whose citations were left unchecked (not found here)."""
    return [
        f"not checked: repository {name} not found here ({count(n, 'citation')}; run"
        " this inside its checkout, or register it with memstore ingest PATH)"
        for name, n in check.not_found.items()
    ]


def summary_line(check: CitationCheck) -> str:
    """Return the one line that counts what was checked: '2 of 40 citing memories stale'."""
    if not check.checked:
        return f"{count(check.citing, 'citing memory', 'citing memories')}, none checked here"
    where = ", ".join(f"{name} at {root}" for name, root in check.repositories.items())
    checked = f"{count(check.checked, 'citation')} checked" + (f" in {where}" if where else "")
    return f"{len(check.stale)} of {count(check.citing, 'citing memory', 'citing memories')} stale ({checked})"


def stale_json(check: CitationCheck, vault: str | None = None) -> dict[str, Any]:
    """Return the check as JSON: each stale memory with its citations and settle commands."""
    return {
        "citing": check.citing,
        "checked": check.checked,
        "repositories": check.repositories,
        "not_found": check.not_found,
        "stale": [
            {**asdict(memory), "commands": settle_commands(memory, vault)} for memory in check.stale
        ],
    }
