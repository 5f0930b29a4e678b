"""Sharing personal memories with a team vault: a proposal built on the team's main, pushed.

`plan_proposal` reads the memories (a credential refuses the share before anything else
is read), and decides per memory what the team tier gets: a new file (same id, same
name), a fold into the team memory that already says it, an update of the team's copy
of the same id, or nothing (already there). `push_proposal` makes one commit of those
files on the team remote's main (fetched first) and pushes it to a proposal branch, or,
where the team's review is "none", to main itself. No local branch or commit is made:
a push the host refuses leaves the team clone exactly as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from memstore.core.codec import (
    content_hash,
    merged_ids,
    parse_memory,
    render_changes,
    render_memory,
)
from memstore.core.contradictions import disagreement
from memstore.core.errors import InvalidInputError, NotFoundError, SecretError, SyncError
from memstore.core.forge import branch_user, parse_remote, proposal_branch, proposal_url
from memstore.core.model import Memory, check_workspace, summary
from memstore.core.secrets import find_secrets
from memstore.core.similar import containment, term_sets
from memstore.core.vault_config import read_vault_config
from memstore.service.curation import NEAR_DUPLICATE, fold
from memstore.service.following import record_push
from memstore.service.hints import CONTRADICTION_CANDIDATES
from memstore.service.store import Store
from memstore.vault import remote
from memstore.vault.git import Trailers
from memstore.vault.team_remote import (
    forge_setting,
    git_identity,
    push_ref,
    remote_branch_exists,
)

# newer: the team's copy is a later edit of this very text (a correction made on the host):
# sharing the personal copy as it stands would undo it, so it is skipped and said
Action = Literal["add", "fold", "update", "unchanged", "newer"]
SHARED_KEY = "shared"  # the personal copy's mark: the teams that hold it (shared_marks.py)
ATTEMPTS = 3  # review "none": a main that moved while pushing is fetched and built on again


@dataclass(frozen=True)
class Change:
    """What one shared memory does to the team tier."""

    id: str  # the personal memory's id (the team file keeps it, or names it under merged:)
    path: str  # the team file written ('' when unchanged)
    action: Action
    into: str = ""  # fold, update, unchanged: the team memory that holds it


@dataclass(frozen=True)
class Proposal:
    """The files a share puts in the team tier, built on the team commit `base`."""

    team: str
    base: str
    files: dict[str, bytes]
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class Shared:
    """What `share` did: the branch (or main) it pushed, the commit, the proposal."""

    proposal: Proposal
    branch: str  # the branch pushed ('' when nothing needed pushing)
    target: str  # the team's main branch
    commit: str
    direct: bool  # review "none": committed to main and synced
    url: str = ""  # the page that opens the pull request ('' unknown host, or direct)


def team_copy(memory: Memory, workspace: str) -> Memory:
    """The memory as the team tier gets it: the same id, text and kind; usage starts anew
    (counters are each person's own) and the personal `shared` mark stays home."""
    return replace(
        memory,
        workspace=workspace,
        seen=1,
        recalled=0,
        last_recalled="",
        confirmed=0,
        archived="",
        seen_by=(),
        recalled_by=(),
        confirmed_by=(),
        extra=tuple((k, raw) for k, raw in memory.extra if k != SHARED_KEY),
    )


def check_shareable(personal: Store, ids: Sequence[str]) -> list[tuple[str, Memory]]:
    """Return (path, memory) for each id; a memory holding a credential, or one that cannot
    be read cleanly, refuses the whole share before anything leaves the machine.

    Raises:
        SecretError: a memory's file holds what looks like a credential.
        InvalidInputError: a memory's file cannot be read cleanly.
    """
    found: dict[str, tuple[str, Memory]] = {}
    for id_prefix in ids:
        entry = personal.resolve(id_prefix)
        found.setdefault(entry.id, (entry.path, personal.vault.read(entry.path)))
    for memory_id, (path, memory) in found.items():
        data = personal.vault.path(path).read_bytes().decode("utf-8", errors="replace")
        kinds = find_secrets(data)
        if kinds:
            raise SecretError(
                f"memory {memory_id} holds what looks like {kinds[0]}; it stays on this "
                f"machine: remove the credential (memstore edit {memory_id}) and share again"
            )
        if memory.problem or not memory.has_front_matter:
            raise InvalidInputError(
                f"memory {memory_id} ({path}) cannot be shared as it is "
                f"({memory.problem or 'no front matter'}); fix it (memstore doctor) first"
            )
    return list(found.values())


def plan_proposal(
    personal: Store, team: Store, name: str, ids: Sequence[str], workspace: str | None = None
) -> Proposal:
    """Decide what sharing `ids` puts in team `name`'s tier (as its clone stands: pull it
    first); writes nothing."""
    memories = check_shareable(personal, ids)
    if workspace is not None:
        check_workspace(workspace, for_add=True)
    team.catch_up()
    base = team.git.head()
    files: dict[str, bytes] = {}
    changes = []
    for path, memory in memories:
        where = workspace or memory.workspace
        copy = team_copy(memory, where)
        team_path = f"{where}/{path.split('/', 1)[1]}"
        change, data = _place(team, files, copy, team_path)
        changes.append(change)
        if data is not None:
            files[change.path] = data
    return Proposal(name, base, files, tuple(changes))


def _place(
    team: Store, files: dict[str, bytes], copy: Memory, team_path: str
) -> tuple[Change, bytes | None]:
    """Decide where one memory goes in the team tier and the bytes of the file it writes."""
    indexer = team.indexer
    same = [e for e in indexer.by_id_prefix(copy.id) if e.id == copy.id]
    if same:
        current, text = _read(team, files, same[0].path)
        if current.body == copy.body and set(copy.keywords) <= set(current.keywords):
            return Change(copy.id, "", "unchanged", current.id), None
        if current.body != copy.body and _held_before(team, same[0].path, copy.body):
            return Change(copy.id, same[0].path, "newer", current.id), None
        keywords = tuple(dict.fromkeys((*current.keywords, *copy.keywords)))
        updated = replace(current, body=copy.body, keywords=keywords)
        return Change(copy.id, same[0].path, "update", current.id), _render(text, current, updated)
    # A fold of this id shared before is found as its duplicate below (the team memory
    # names it under merged:): never by reading every team file that might.
    target = _duplicate_of(team, copy)
    if target:
        current, text = _read(team, files, target)
        if copy.id in (current.id, *merged_ids(current)):
            return Change(copy.id, "", "unchanged", current.id), None
        return Change(copy.id, target, "fold", current.id), _render(
            text, current, fold(current, copy)
        )
    if team_path in files:  # two memories of one proposal folded into each other: rare
        raise InvalidInputError(f"two memories shared together both go to {team_path}")
    return Change(copy.id, team_path, "add"), render_memory(copy).encode("utf-8")


def _held_before(team: Store, path: str, body: str) -> bool:
    """Say whether an earlier commit of the team tier held the file at `path` with `body`
    (the personal copy is a version the team has since edited)."""
    found = remote.run_git(
        team.vault.root, ["log", "--format=%H", "--", path], team.settings.env
    ).stdout.split()
    for commit in found[1:]:  # the first is the team's copy as it stands
        data = team.git.read_at(commit, path)
        if (
            data is not None
            and parse_memory(data.decode("utf-8", "replace"), path=path).body == body
        ):
            return True
    return False


def _read(team: Store, files: dict[str, bytes], path: str) -> tuple[Memory, str]:
    """The team file as this proposal has it so far (its own change first, else the clone)."""
    data = files.get(path)
    text = data.decode("utf-8") if data is not None else team.vault.path(path).read_text("utf-8")
    return parse_memory(text, path=path), text


def _render(text: str, before: Memory, after: Memory) -> bytes:
    return render_changes(text, before, after).encode("utf-8")


def folded_into(team: Store, memory_id: str) -> str:
    """Return the team memory whose `merged:` names `memory_id` ('' none)."""
    try:
        entry = team.resolve(memory_id)
    except (NotFoundError, InvalidInputError):
        return ""
    return entry.id if memory_id in merged_ids(team.vault.read(entry.path)) else ""


def _duplicate_of(team: Store, copy: Memory) -> str:
    """Return the path of the team memory `copy` duplicates (the same text in its workspace,
    or a near-duplicate that does not disagree with it, as dedupe folds), '' none."""
    indexer = team.indexer
    exact = indexer.by_hash(copy.workspace, content_hash(copy.body))
    if exact:
        return exact[0].path
    hits = indexer.search.search(
        copy.body, workspaces={copy.workspace}, limit=CONTRADICTION_CANDIDATES, any_term=True
    )
    docs = [hit.document for hit in hits]
    mine, *theirs = term_sets([copy.body, *(doc.content for doc in docs)])
    best = ("", 0.0)
    for doc, terms in zip(docs, theirs, strict=True):
        share = containment(mine, terms)
        if (
            share >= NEAR_DUPLICATE
            and share > best[1]
            and disagreement(copy.body, doc.content) is None
        ):
            best = (doc.key, share)
    return best[0]


def refresh_team(team: Store) -> str:
    """Fetch the team's remote and bring the clone to its main (a team tier only pulls);
    return the remote main's commit. A clone that cannot fast-forward (commits of its own)
    keeps them: the proposal is still built on the remote's main.

    Raises:
        SyncError: the team's remote cannot be reached.
    """
    name = team.remote_name()
    env = team.settings.env
    remote.fetch(team.vault.root, name, env)
    theirs = team.git.resolve(f"refs/remotes/{name}/{team.git.branch()}")
    with team.transaction(catch_up=False) as tx:
        ours = team.git.head()
        if theirs and theirs != ours and (not ours or team.git.contains(theirs, ours)):
            team.git.move_to(theirs)
        tx.catch_up()
    return theirs or team.git.head()


def push_proposal(
    personal: Store,
    team: Store,
    name: str,
    ids: Sequence[str],
    workspace: str | None = None,
) -> Shared:
    """Share `ids` with team `name`: fetch its main, build the proposal on it, push it to
    `memstore/<user>/<id>` (or, where the team's memstore.toml says review = "none", to
    main, then bring the clone to it).

    Raises:
        SecretError: a memory holds a credential (nothing was read from the team).
        SyncError: the team's host refused the push (the message says how to propose
            instead) or cannot be reached.
    """
    check_shareable(personal, ids)  # before the network: a credential never travels
    target = team.git.branch()
    for _ in range(ATTEMPTS):
        base = refresh_team(team)
        direct = read_vault_config(team.vault.root).review == "none"
        proposal = replace(plan_proposal(personal, team, name, ids, workspace), base=base)
        if not proposal.files:
            return Shared(proposal, "", target, "", direct)
        branch = target if direct else _branch_for(personal, team, proposal)
        parent = base
        if not direct:
            # An open proposal of the same memories is built on, never replaced.
            parent = (
                remote_branch_exists(team.vault.root, team.remote_name(), branch, team.settings.env)
                or base
            )
            if parent != base and not _fetched(team, parent):
                parent = base
        commit = _commit(personal, team, proposal, parent)
        if team.git.tree_of(commit) == team.git.tree_of(parent):  # proposed just so before
            return Shared(proposal, branch, target, parent, direct, _page(team, branch, target))
        pushed = push_ref(team.vault.root, team.remote_name(), commit, branch, team.settings.env)
        record_push(team.vault.root, pushed.status != "refused")  # `team list`: can push
        if pushed.status == "pushed":
            if direct:
                refresh_team(team)
                return Shared(proposal, branch, target, commit, direct)
            return Shared(proposal, branch, target, commit, direct, _page(team, branch, target))
        if pushed.status == "refused":
            raise SyncError(_refused(name, team, branch, target, direct, pushed.reason))
    raise SyncError(
        f"team {name}'s {target} kept moving while sharing ({ATTEMPTS} tries); nothing was "
        "changed here: run the share again"
    )


def _page(team: Store, branch: str, target: str) -> str:
    """The page that opens the pull request of `branch` on the team's host ('' unknown)."""
    root, env = team.vault.root, team.settings.env
    url = remote.remote_url(root, team.remote_name(), env)
    repository = parse_remote(url)
    named = forge_setting(root, repository.hostname, env) if repository else ""
    return proposal_url(url, branch, target, named)


def _fetched(team: Store, commit: str) -> bool:
    """Fetch the proposal branch's commit when this clone lacks it; say whether it is here."""
    if team.git.contains(commit, commit):
        return True
    done = remote.fetch_git(team.vault.root, [team.remote_name(), commit], team.settings.env)
    return done.returncode == 0 and team.git.contains(commit, commit)


def _branch_for(personal: Store, team: Store, proposal: Proposal) -> str:
    email, full_name = git_identity(team.vault.root, team.settings.env)
    user = branch_user(email, full_name, personal.settings.host)
    return proposal_branch(user, [change.id for change in proposal.changes])


def _commit(personal: Store, team: Store, proposal: Proposal, parent: str) -> str:
    """One commit of the proposal's files on `parent` (no ref moves), with the trailers
    every memstore write has."""
    git = team.git
    blobs = {path: git.write_blob(data) for path, data in proposal.files.items()}
    tree = git.edit_tree(git.tree(parent), blobs)
    memories = [parse_memory(data.decode("utf-8"), path=p) for p, data in proposal.files.items()]
    if len(memories) == 1:
        message = f"share({memories[0].workspace}): {summary(memories[0].body)}"
    else:
        message = f"share: {len(memories)} memories"
    caller = personal.caller
    trailers = Trailers(caller.source, caller.session, caller.host)
    return git.commit_tree(str(tree.id), [parent], message, trailers)


def _refused(name: str, team: Store, branch: str, target: str, direct: bool, reason: str) -> str:
    url = remote.remote_url(team.vault.root, team.remote_name(), team.settings.env)
    where = f"{target} of team {name}" if direct else f"a branch to team {name}"
    fix = (
        f'team {name} commits shares to {target} (review = "none"), which the host '
        'protects: ask a maintainer to allow it, or to set review = "pull-request"'
        if direct
        else "fork the team repository and push the branch there, or ask a maintainer "
        "to share it (memstore share --dry-run prints the proposal for them)"
    )
    return f"you cannot push {where} ({url}: {reason}); nothing was changed here: {fix}"
