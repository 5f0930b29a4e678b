"""What a proposal adds to a team tier, for its reviewer: duplicates, contradictions, secrets.

The same reading for `memstore share --dry-run` (a proposal not pushed yet) and `memstore
review BRANCH` (one pushed by anyone, fetched from the team's remote). Each memory the
proposal writes is compared with the team tier as its clone stands, with the rules an
add and `dedupe` use: the same text or a near-duplicate that agrees (it would fold), a
close memory it disagrees with (a contradiction, as the add's hint finds one), and any
credential in the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memstore.core.codec import content_hash, merged_ids, parse_memory
from memstore.core.contradictions import disagreement
from memstore.core.errors import InvalidInputError, NotFoundError
from memstore.core.model import Memory
from memstore.core.secrets import find_secrets
from memstore.core.similar import containment, term_sets
from memstore.service.curation import NEAR_DUPLICATE
from memstore.service.hints import CONTRADICTION_CANDIDATES, CONTRADICTION_CLOSE
from memstore.service.proposals import Proposal, refresh_team
from memstore.service.store import Store
from memstore.vault.team_remote import fetch_branch

Effect = Literal["add", "fold", "update", "remove"]


@dataclass(frozen=True)
class Alike:
    """A team memory close to a proposed one: its id, the share of words, and its text."""

    id: str
    share: float
    text: str


@dataclass(frozen=True)
class Disputed:
    """A team memory a proposed one disagrees with, and how ('port 8443 vs 8080')."""

    id: str
    kind: str
    detail: str
    text: str


@dataclass(frozen=True)
class Assessed:
    """One memory file a proposal writes, read against the team tier."""

    path: str
    id: str
    workspace: str
    text: str
    effect: Effect
    folded: tuple[str, ...] = ()  # fold: the ids the team memory takes in
    duplicates: tuple[Alike, ...] = ()
    contradictions: tuple[Disputed, ...] = ()
    secrets: tuple[str, ...] = ()
    problem: str = ""


@dataclass(frozen=True)
class Review:
    """A proposal to team `team` read for its reviewer."""

    team: str
    branch: str  # '' for a dry run
    base: str  # the team commit it is compared with
    head: str  # the proposal's commit ('' for a dry run)
    memories: tuple[Assessed, ...]

    @property
    def is_clean(self) -> bool:
        return not any(
            m.duplicates or m.contradictions or m.secrets or m.problem or m.effect == "remove"
            for m in self.memories
        )


def assess(team: Store, files: dict[str, bytes | None], base: str) -> tuple[Assessed, ...]:
    """Read each proposed file (None: the proposal deletes it) against the team tier."""
    found = []
    for path, data in sorted(files.items()):
        before = team.git.read_at(base, path) if base else None
        if data is None:
            old = parse_memory((before or b"").decode("utf-8", "replace"), path=path)
            found.append(Assessed(path, old.id, old.workspace, old.body, "remove"))
            continue
        text = data.decode("utf-8", errors="replace")
        memory = parse_memory(text, path=path)
        folded: tuple[str, ...] = ()
        effect: Effect = "add"
        if before is not None:
            old = parse_memory(before.decode("utf-8", "replace"), path=path)
            folded = tuple(i for i in merged_ids(memory) if i not in merged_ids(old))
            effect = "fold" if folded else "update"
        alike, disputed = _neighbours(team, memory, path, base)
        secrets = tuple(find_secrets(text))
        # a review is pasted as a comment (mailed, notified): never the credential itself
        body = WITHHELD if secrets else memory.body
        found.append(
            Assessed(
                path,
                memory.id,
                memory.workspace,
                body,
                effect,
                folded,
                alike,
                disputed,
                secrets,
                memory.problem,
            )
        )
    return tuple(found)


WITHHELD = "(text withheld: it looks like a credential)"


def _neighbours(
    team: Store, memory: Memory, path: str, base: str
) -> tuple[tuple[Alike, ...], tuple[Disputed, ...]]:
    """The team memories of the memory's workspace that say the same (and agree) or
    disagree, as the team's main `base` holds them: the clone's index finds the candidates,
    but its work tree may differ from main (a hand edit, commits of its own)."""
    body, workspace = memory.body, memory.workspace
    hits = team.indexer.search.search(
        body, workspaces={workspace}, limit=CONTRADICTION_CANDIDATES, any_term=True
    )
    found = [h.document for h in hits if h.document.key != path and h.document.id != memory.id]
    docs = [(doc.id, _text_at(team, base, doc.key, doc.content)) for doc in found]
    texts = [(doc_id, text) for doc_id, text in docs if text is not None]
    mine, *theirs = term_sets([body, *(text for _, text in texts)])
    alike: list[Alike] = []
    disputed: list[Disputed] = []
    for (doc_id, text), terms in zip(texts, theirs, strict=True):
        same = content_hash(text) == content_hash(body)
        share = 1.0 if same else containment(mine, terms)
        how = disagreement(body, text) if share >= CONTRADICTION_CLOSE else None
        if how is not None:
            disputed.append(Disputed(doc_id, how.kind, how.detail, text))
        elif share >= NEAR_DUPLICATE:
            alike.append(Alike(doc_id, round(share, 2), text))
    return tuple(alike), tuple(disputed)


def _text_at(team: Store, base: str, path: str, indexed: str) -> str | None:
    """A team memory's text at commit `base` (None: not there), else as indexed."""
    if not base:
        return indexed
    data = team.git.read_at(base, path)
    return parse_memory(data.decode("utf-8", "replace"), path=path).body if data else None


def review_proposal(team: Store, proposal: Proposal) -> Review:
    """Read a proposal not pushed yet (`share --dry-run`)."""
    files: dict[str, bytes | None] = dict(proposal.files)
    return Review(proposal.team, "", proposal.base, "", assess(team, files, proposal.base))


def review_branch(team: Store, name: str, branch: str) -> Review:
    """Fetch proposal `branch` from team `name`'s remote and read what it changes against
    the team's main (the clone is brought to it first).

    Raises:
        NotFoundError: the remote has no such branch.
        SyncError: the team's remote cannot be reached.
    """
    remote_name = team.remote_name()
    wanted = branch.removeprefix("refs/heads/").removeprefix(f"{remote_name}/")
    if not wanted or wanted.startswith("-"):
        raise InvalidInputError(
            f"{branch!r} is not a branch name; give one such as memstore/alice/k3xq9v2m"
        )
    main = refresh_team(team)
    head = fetch_branch(team.vault.root, remote_name, wanted, team.settings.env)
    if not head:
        raise NotFoundError(
            f"team {name} has no branch {wanted!r}; the share printed its name "
            f"(git ls-remote --heads in {team.vault.root} lists them)"
        )
    base = team.git.merge_base(head, main) if main else ""
    files: dict[str, bytes | None] = {
        path: team.git.read_at(head, path)
        for path in team.git.paths_between(base, head)
        if path.endswith(".md") and "/" in path and not path.startswith(".")
    }
    return Review(name, wanted, base, head, assess(team, files, base))
