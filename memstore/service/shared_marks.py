"""The personal copy of a shared memory, marked once the team tier holds it: `shared: [team]`.

A share records the ids it proposed and the team commit it built on (local state,
`.memstore/state/proposed`). A sync of the personal vault then asks each followed team
tier which of its memories it holds: the same id, or (a proposal that folded into a team
memory) an id a team memory changed since names under `merged:`. Those personal files get `shared: [<team>, …]` in their front matter, in
one commit. Recall leaves out a personal memory whose `shared` names a team it reads
(the team's copy speaks for it); leave the team and the personal copy shows again.

The mark is derived: it is recomputed from the team tiers at every sync, so the merge
rule of an unknown key (the side that changed it; both: the greater text) is enough. A
race that drops one team's name is written back by the next sync.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from memstore.catalog.codebase import KIND as CODE_KIND
from memstore.core.codec import merged_ids, parse_memory, render_changes
from memstore.core.errors import SecretError, VaultError
from memstore.core.model import Hit
from memstore.core.yaml_values import render_list
from memstore.service.proposals import SHARED_KEY, Proposal, folded_into
from memstore.service.store import Store

PROPOSED = "proposed"  # state: {team: {"base": commit shared on, "ids": [ids not seen there]}}


@dataclass(frozen=True)
class Pending:
    """Ids proposed to one team and not yet seen in it, and the team commit the first of
    them was built on (a fold that took them in came after it)."""

    base: str
    ids: tuple[str, ...]


def note_proposed(personal: Store, team: str, proposal: Proposal) -> None:
    """Remember the ids `proposal` put to `team`, so the syncs to come look for them."""
    records = _proposed(personal)
    known = records.get(team)
    ids = sorted({*(known.ids if known else ()), *(c.id for c in proposal.changes)})
    records[team] = Pending(known.base if known else proposal.base, tuple(ids))
    _write_proposed(personal, records)


def _proposed(personal: Store) -> dict[str, Pending]:
    try:
        data = json.loads(personal.vault.read_state(PROPOSED) or "{}")
    except ValueError:
        return {}  # local state: a garbled record only costs the marks of folds
    if not isinstance(data, dict):
        return {}
    found = {}
    for team, value in data.items():
        if isinstance(value, dict) and isinstance(value.get("ids"), list):
            found[str(team)] = Pending(str(value.get("base", "")), tuple(map(str, value["ids"])))
    return found


def _write_proposed(personal: Store, records: dict[str, Pending]) -> None:
    data = {team: {"base": p.base, "ids": list(p.ids)} for team, p in records.items() if p.ids}
    personal.vault.write_state(PROPOSED, json.dumps(data))


def shared_teams(extra: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The teams a personal memory's `shared:` names (from its raw front matter entry)."""
    raw = dict(extra).get(SHARED_KEY, "")
    value = raw.partition(":")[2].strip().strip("[]")
    return tuple(t.strip().strip("'\"") for t in value.split(",") if t.strip())


def held_by_team(team: Store, ids: set[str], pending: Pending | None) -> set[str]:
    """Return which of `ids` team tier `team` holds: as a memory's id, or, for the ids
    proposed to it, named under the `merged:` of a team memory changed since the proposal's
    base (a fold arrives as a change: only those files are read, not the whole tier)."""
    team.catch_up()
    with team.reading():  # the ids asked, not every row of a tier of 100,000
        held = team.indexer.manifest.held_ids(ids)
    rest = set(pending.ids if pending else ()) & ids - held
    if not rest or pending is None:
        return held
    git, head = team.git, team.git.head()
    if pending.base and git.contains(head, pending.base):
        for path in git.paths_between(pending.base, head):
            data = git.read_work_file(path) if path.endswith(".md") else None
            if data and b"merged:" in data:
                memory = parse_memory(data.decode("utf-8", "replace"), path=path)
                held |= rest & set(merged_ids(memory))
    else:  # the history was rewritten since: ask the tier for each id
        held |= {memory_id for memory_id in rest if folded_into(team, memory_id)}
    return held


def mark_shared(personal: Store, teams: Mapping[str, Store]) -> dict[str, list[str]]:
    """Mark the personal memories each team tier now holds, in one commit of the personal
    vault (none when nothing changed); return the ids newly marked, by team."""
    personal.catch_up()
    entries = {entry.id: entry for entry in personal.indexer.entries()}
    proposed = _proposed(personal)
    wanted: dict[str, set[str]] = {}
    for name, team in sorted(teams.items()):
        for memory_id in held_by_team(team, set(entries), proposed.get(name)):
            wanted.setdefault(memory_id, set()).add(name)
    written = {}
    marked: dict[str, list[str]] = {}
    for memory_id, names in sorted(wanted.items()):
        path = entries[memory_id].path
        text = personal.vault.path(path).read_text(encoding="utf-8")
        current = parse_memory(text, path=path)
        have = set(shared_teams(current.extra))
        if names <= have or current.problem or not current.has_front_matter:
            continue
        for name in sorted(names - have):
            marked.setdefault(name, []).append(memory_id)
        value = render_list(tuple(sorted(have | names)))
        extra = [(k, raw) for k, raw in current.extra if k != SHARED_KEY]
        after = replace(current, extra=(*extra, (SHARED_KEY, f"{SHARED_KEY}: {value}")))
        written[path] = render_changes(text, current, after).encode("utf-8")
    if written:
        _commit(personal, written, sorted(marked))
    _forget_seen(personal, proposed, wanted)
    return marked


def _commit(personal: Store, files: dict[str, bytes], teams: list[str]) -> None:
    """Write the marked files and commit them once (a refused commit puts them back)."""
    count = len(files)
    message = f"shared: {count} {'memory' if count == 1 else 'memories'} now in {', '.join(teams)}"
    with personal.transaction(catch_up=False) as tx:
        tx.commit_edits(list(files))
        befores = {path: tx.git.read_work_file(path) for path in files}
        with tx.writing(files):
            for path, data in files.items():
                tx.vault.write_bytes_atomic(path, data)
            try:
                tx.commit(message, add=tuple(files))
            except (VaultError, SecretError):
                for path, old in befores.items():
                    tx.put_back(path, old)
                raise
        tx.indexer.record_all(
            {p: parse_memory(d.decode("utf-8"), path=p) for p, d in files.items()}
        )


def _forget_seen(
    personal: Store, proposed: dict[str, Pending], wanted: dict[str, set[str]]
) -> None:
    """Drop from the proposed record the ids their team now holds."""
    left = {
        team: replace(p, ids=tuple(i for i in p.ids if team not in wanted.get(i, set())))
        for team, p in proposed.items()
    }
    if left != proposed:
        _write_proposed(personal, left)


def without_shared(personal: Store, hits: Sequence[Hit], teams: Collection[str]) -> list[Hit]:
    """Leave out the personal hits whose memory is marked shared with one of `teams` (the
    tiers read beside it: the team's copy speaks for it). Reads only the hits' files, and
    only those naming `shared:`."""
    if not teams:
        return list(hits)
    kept = []
    for hit in hits:
        try:
            mine = not hit.tier and hit.kind != CODE_KIND
            data = personal.vault.path(hit.path).read_bytes() if mine else b""
        except OSError:
            data = b""
        if b"\nshared:" in data:
            memory = parse_memory(data.decode("utf-8", "replace"), path=hit.path)
            if set(shared_teams(memory.extra)) & set(teams):
                continue
        kept.append(hit)
    return kept
