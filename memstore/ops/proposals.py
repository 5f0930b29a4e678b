"""How team proposals read: share's lines, a review as markdown a reviewer pastes, check's findings.

No typer, no I/O: values in, text out (the CLI prints it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Literal

from memstore.core.model import summary
from memstore.ops.output import count
from memstore.service.proposal_review import Assessed, Review
from memstore.service.proposals import Shared
from memstore.service.vault_check import Finding

CheckFormat = Literal["text", "github"]
CHECK_FORMATS: tuple[CheckFormat, ...] = ("text", "github")
_EFFECTS = {
    "add": "new",
    "fold": "folds into the team's memory",
    "update": "updates the team's copy",
    "remove": "removes the team's memory",
}


def share_lines(shared: Shared, team: str) -> list[str]:
    """What `memstore share` says: each memory's fate, then where the proposal is."""
    lines = []
    for change in shared.proposal.changes:
        if change.action == "unchanged":
            lines.append(f"{change.id}: team {team} holds it already (as {change.into})")
        elif change.action == "fold":
            lines.append(f"{change.id}: folds into team memory {change.into} ({change.path})")
        elif change.action == "update":
            lines.append(f"{change.id}: updates the team's copy ({change.path})")
        elif change.action == "newer":
            lines.append(
                f"{change.id}: skipped: team {team} edited it since you shared it; see "
                f"'memstore show {team}:{change.id}' (edit yours and share again to propose "
                "a change to the team's text)"
            )
        else:
            lines.append(f"{change.id}: added as {change.path}")
    if not shared.commit:
        lines.append(f"nothing to propose to team {team}")
    elif shared.direct:
        lines.append(f"committed to {team}'s {shared.target} ({shared.commit[:8]}) and synced")
    elif shared.url:
        lines.append(f"pushed branch {shared.branch}; open the pull request: {shared.url}")
    else:
        lines.append(
            f"pushed branch {shared.branch}; open a pull request from it into "
            f"{shared.target} on the team's host"
        )
    return lines


def share_json(shared: Shared) -> dict[str, Any]:
    """What `memstore share --json` prints: where the proposal went and what it does."""
    proposal = shared.proposal
    return {
        "team": proposal.team,
        "branch": shared.branch,
        "target": shared.target,
        "direct": shared.direct,
        "commit": shared.commit,
        "base": proposal.base,
        "url": shared.url,
        "changes": [asdict(change) for change in proposal.changes],
        "files": sorted(proposal.files),
    }


def review_markdown(review: Review) -> str:
    """The review as markdown a reviewer can paste as a comment on the pull request."""
    where = f"`{review.branch}`" if review.branch else "a share not pushed yet"
    head = [
        f"### memstore review: {count(len(review.memories), 'memory', 'memories')} "
        f"for team {review.team} ({where})",
        "",
    ]
    if not review.memories:
        return "\n".join([*head, "The proposal changes no memory."]) + "\n"
    verdict = (
        "No duplicates, contradictions or secrets found."
        if review.is_clean
        else "**Needs a look:** " + _tally(review.memories) + "."
    )
    head += [verdict, ""]
    for memory in review.memories:
        head += _memory_block(memory)
    return "\n".join(head).rstrip() + "\n"


def _tally(memories: Sequence[Assessed]) -> str:
    parts = []
    duplicates = sum(len(m.duplicates) for m in memories)
    contradictions = sum(len(m.contradictions) for m in memories)
    secrets = sum(1 for m in memories if m.secrets)
    broken = sum(1 for m in memories if m.problem)
    removed = sum(1 for m in memories if m.effect == "remove")
    if removed:  # a share never removes: a branch made by hand does
        parts.append(count(removed, "removed team memory", "removed team memories"))
    if duplicates:
        parts.append(count(duplicates, "duplicate"))
    if contradictions:
        parts.append(count(contradictions, "contradiction"))
    if secrets:
        parts.append(count(secrets, "memory", "memories") + " with a secret")
    if broken:
        parts.append(count(broken, "unreadable file"))
    return ", ".join(parts)


def _memory_block(memory: Assessed) -> list[str]:
    effect = _EFFECTS[memory.effect]
    lines = [f"#### `{memory.id}` ({memory.workspace}): {effect}", "", f"`{memory.path}`", ""]
    lines += [_quoted(memory.text), ""]
    if memory.folded:
        lines.append(f"- takes in {', '.join(f'`{i}`' for i in memory.folded)} (same text)")
    for alike in memory.duplicates:
        share = f"{round(alike.share * 100)}% of the words"
        lines.append(f"- **duplicate** of `{alike.id}` ({share}), fold it: {_inline(alike.text)}")
    for disputed in memory.contradictions:
        lines.append(
            f"- **contradicts** `{disputed.id}` ({disputed.kind}: {disputed.detail}): "
            f"{_inline(disputed.text)}"
        )
    for kind in memory.secrets:
        lines.append(f"- **secret**: holds what looks like {kind}; do not merge")
    if memory.problem:
        lines.append(f"- **unreadable**: {memory.problem}")
    return [*lines, ""] if lines[-1] else lines


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines())


def _inline(text: str) -> str:
    return f"“{summary(text)}”"


def check_lines(findings: Sequence[Finding], fmt: CheckFormat = "text") -> list[str]:
    """`memstore check`'s findings: `file:line: message`, or GitHub workflow annotations."""
    if fmt == "github":
        return [
            f"::error file={_escape_property(f.path)},line={f.line}::{_escape_data(f.message)}"
            for f in findings
        ]
    return [f"{f.path}:{f.line}: {f.message}" for f in findings]


def _escape_data(text: str) -> str:
    """GitHub's workflow command escaping of a message (%, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """...and of a property value (also ':' and ',')."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
