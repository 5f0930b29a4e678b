"""Importing instruction files (fenced code blocks, one commit per import) and dedupe leaving
a correction and the memory it corrects apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memstore.core.codec import parse_memory
from memstore.service.importing import Piece, split_instructions
from tests.cli.test_upkeep import added_id, cli
from tests.conftest import commit_count, git, head

FENCED = """\
# Build

- Build with make before pushing:
  ```
  # a code block
  make build
  ```
- Never commit generated files

Set up a fresh checkout with:

~~~bash
# install deps
- not a bullet
pip install -e .
~~~

## Release
```sh
./release.sh --dry-run
```
"""

FENCED_PIECES = [
    Piece("Build with make before pushing:\n```\n# a code block\nmake build\n```", ("build",)),
    Piece("Never commit generated files", ("build",)),
    Piece(
        "Set up a fresh checkout with:\n~~~bash\n# install deps\n- not a bullet\npip install -e .\n~~~",
        ("build",),
    ),
    Piece("```sh\n./release.sh --dry-run\n```", ("build", "release")),
]


def imported(vault: Path, workspace: str) -> dict[str, tuple[str, ...]]:
    """Every memory of `workspace`: its body and keywords."""
    exported = json.loads(cli(vault, "export", "-w", workspace).stdout)["memories"]
    memories = [parse_memory(m["text"], path=m["path"]) for m in exported]
    return {m.body.strip(): m.keywords for m in memories}


def test_a_fenced_block_stays_verbatim_in_the_piece_it_follows() -> None:
    assert split_instructions(FENCED) == FENCED_PIECES


def test_an_unclosed_fence_runs_to_the_end_and_a_longer_fence_holds_a_shorter_one() -> None:
    text = "- Example of a nested fence:\n````md\n```\n# not a heading\n```\n````\n\n- Tail:\n```\n# open\n- still code"
    assert split_instructions(text) == [
        Piece("Example of a nested fence:\n````md\n```\n# not a heading\n```\n````", ()),
        Piece("Tail:\n```\n# open\n- still code", ()),
    ]


_FENCE_CLOSER = re.compile(r"^\s*`{3,}\s*$")
code_lines = st.lists(
    st.text(
        st.characters(exclude_characters="\r\n", exclude_categories=("Cs",)), max_size=30
    ).filter(lambda line: not _FENCE_CLOSER.match(line)),
    max_size=8,
)


@given(code_lines)
def test_no_line_inside_a_fence_is_read_as_a_heading_or_bullet(lines: list[str]) -> None:
    text = "\n".join(["# Title", "", "- intro bullet here", "```", *lines, "```", "- after bullet"])
    assert split_instructions(text) == [
        Piece("\n".join(["intro bullet here", "```", *lines, "```"]), ("title",)),
        Piece("after bullet", ("title",)),
    ]


def test_import_stores_fenced_blocks_verbatim(vault: Path, tmp_path: Path) -> None:
    source = tmp_path / "CLAUDE.md"
    source.write_text(FENCED, encoding="utf-8")
    done = cli(vault, "import", str(source), "-w", "webshop")
    assert done.returncode == 0, done.stderr
    assert imported(vault, "webshop") == {p.text: p.keywords for p in FENCED_PIECES}


def test_import_makes_one_commit_that_one_git_revert_undoes(vault: Path, tmp_path: Path) -> None:
    source = tmp_path / "CLAUDE.md"
    text = "# Rules\n\n" + "".join(f"- Rule number {i} of the webshop\n" for i in range(300))
    source.write_text(text, encoding="utf-8")
    before = commit_count(vault)
    done = cli(vault, "import", str(source), "-w", "webshop")
    assert "created 300 memories" in done.stdout, done.stderr
    assert commit_count(vault) == before + 1
    assert git(vault, "log", "-1", "--format=%s").strip() == (
        "import(webshop): 300 memories from CLAUDE.md"
    )
    assert "Memstore-Session: test-session" in git(vault, "log", "-1", "--format=%b")
    assert len(imported(vault, "webshop")) == 300 and git(vault, "status", "--porcelain") == ""
    # importing again creates nothing and commits nothing; a dry run says so too
    assert (
        "would create 0 memories"
        in cli(vault, "import", str(source), "-w", "webshop", "--dry-run").stdout
    )
    assert "created 0 memories" in cli(vault, "import", str(source), "-w", "webshop").stdout
    assert commit_count(vault) == before + 1 and source.read_text(encoding="utf-8") == text
    git(vault, "revert", "--no-edit", "HEAD")
    assert imported(vault, "webshop") == {}


def test_two_pieces_whose_ids_collide_get_distinct_ids(vault: Path, tmp_path: Path) -> None:
    # both texts derive the id k4sn5s77 in workspace webshop (found by search)
    texts = ["Rule number 511462 of the webshop", "Rule number 1415308 of the webshop"]
    source = tmp_path / "CLAUDE.md"
    source.write_text("".join(f"- {text}\n" for text in texts), encoding="utf-8")
    assert "created 2 memories" in cli(vault, "import", str(source), "-w", "webshop").stdout
    exported = json.loads(cli(vault, "export", "-w", "webshop").stdout)["memories"]
    assert sorted(len(m["id"]) for m in exported) == [8, 10]
    assert all(m["id"].startswith("k4sn5s77") for m in exported)


def test_import_skips_and_reports_a_secret_and_commits_the_rest(
    vault: Path, tmp_path: Path
) -> None:
    token = "ghp_Zk4mQ8vR2tY7uP1oL9aS3dF6gH0jK5lX2cV8"
    source = tmp_path / "AGENTS.md"
    source.write_text(
        f"- Deploy with ./scripts/deploy.sh\n- The bot token is {token}\n- Rule twice over\n"
        "- Rule twice over\n",
        encoding="utf-8",
    )
    dry = cli(vault, "import", str(source), "-w", "infra", "--dry-run")
    assert "would create 2 memories" in dry.stdout and token not in dry.stdout
    done = cli(vault, "import", str(source), "-w", "infra")
    assert "created 2 memories in infra; 1 already there" in done.stdout
    assert "refused" in done.stderr and "looks like a GitHub token" in done.stderr
    # the refusal names the line, never the credential in it (it printed the token)
    assert "The bot token is [secret: a GitHub token]" in done.stderr, done.stderr
    assert token not in done.stderr and token not in done.stdout
    assert (
        git(vault, "log", "-1", "--format=%s").strip() == "import(infra): 2 memories from AGENTS.md"
    )
    assert set(imported(vault, "infra")) == {"Deploy with ./scripts/deploy.sh", "Rule twice over"}
    assert token not in git(vault, "log", "-p", "--format=%B")


def test_a_secret_alone_makes_no_commit(vault: Path, tmp_path: Path) -> None:
    source = tmp_path / "CLAUDE.md"
    source.write_text("- aws key AKIAQ3EGRJ5LTMWD7XZN for the build bot\n", encoding="utf-8")
    before = head(vault)
    done = cli(vault, "import", str(source), "-w", "infra")
    assert done.returncode == 0 and "created 0 memories" in done.stdout
    assert "AWS access key" in done.stderr and head(vault) == before


def test_dedupe_leaves_a_correction_and_the_memory_it_corrects_apart(vault: Path) -> None:
    old = added_id(
        vault, "Staging deploys need an approval from Maria before merging the release branch"
    )
    correction = added_id(
        vault,
        "Staging deploys need an approval from Maria or Tom before merging the release branch",
        "--supersedes",
        old,
    )
    assert "no near-duplicates" in cli(vault, "dedupe", "--list").stdout
    commits = commit_count(vault)
    refused = cli(vault, "dedupe", "--merge", correction)
    assert refused.returncode == 1 and "no near-duplicate" in refused.stderr
    assert commit_count(vault) == commits
    # a real near-duplicate of either is still listed
    twin = added_id(
        vault, "Staging deploys need an approval from Maria before merging the release branch now"
    )
    pairs = {
        (a, b) for a, b, _ in json.loads(cli(vault, "audit", "--json").stdout)["near_duplicates"]
    }
    assert tuple(sorted((old, twin))) in pairs and tuple(sorted((old, correction))) not in pairs
    listed = cli(vault, "dedupe", "--list").stdout
    assert "{} ~ {}".format(*sorted((old, twin))) in listed
    assert "{} ~ {}".format(*sorted((old, correction))) not in listed


def test_dedupe_merge_keeps_the_memory_named_never_downgrades_and_the_folded_id_resolves(
    vault: Path,
) -> None:
    lesson = added_id(
        vault,
        "Staging deploys need an approval from Maria before merging the release branch",
        "--kind",
        "lesson",
        "-K",
        "deploy",
    )
    note = added_id(  # newer, and only a note
        vault,
        "Staging deploys need an approval from Maria before merging the release branch today",
        "-K",
        "approval",
    )
    follower = added_id(vault, "Approvals moved to the #release channel", "--supersedes", note)
    commits = commit_count(vault)
    done = cli(vault, "dedupe", "--merge", lesson)
    assert done.returncode == 0, done.stderr
    assert f"merged {note} into {lesson}" in done.stdout and commit_count(vault) == commits + 1
    kept = json.loads(cli(vault, "show", lesson, "--json").stdout)
    assert kept["id"] == lesson and kept["kind"] == "lesson" and kept["seen"] == 2
    assert kept["body"].strip().endswith("release branch")  # the named memory's own text
    assert set(kept["keywords"]) == {"deploy", "approval"}
    # The folded id still names the memory: show, links and new links find it.
    assert f"merged: [{note}]" in cli(vault, "show", lesson).stdout
    shown = cli(vault, "show", note)
    assert shown.returncode == 0 and f"id: {lesson}" in shown.stdout
    assert cli(vault, "show", note[:5]).returncode == 0
    assert json.loads(cli(vault, "show", follower, "--json").stdout)["supersedes"] == [lesson]
    later = added_id(vault, "Approvals moved again, to #deploys", "--supersedes", note)
    assert json.loads(cli(vault, "show", later, "--json").stdout)["supersedes"] == [lesson]


def test_dedupe_merge_into_a_note_keeps_the_lesson_kind_of_its_duplicate(vault: Path) -> None:
    lesson = added_id(
        vault, "Kafka consumer lag alert on orders fires at 10k messages", "--kind", "lesson"
    )
    note = added_id(vault, "Kafka consumer lag alert on orders fires at 10k messages daily")
    assert cli(vault, "dedupe", "--merge", note).returncode == 0
    kept = json.loads(cli(vault, "show", note, "--json").stdout)
    assert kept["kind"] == "lesson" and kept["body"].strip().endswith("daily")
    assert f"id: {note}" in cli(vault, "show", lesson).stdout


def test_import_says_which_short_pieces_it_left_out(vault: Path, tmp_path: Path) -> None:
    """A piece under 12 characters is taken for a heading ("TODO"); "Use pnpm." was left out
    without a word: `created 2 memories`, and the person never knew a line was not kept."""
    source = tmp_path / "CLAUDE.md"
    source.write_text(
        "- always run migrations with --lock-timeout 5s\n- TODO\n\n## Notes\nUse pnpm.\n",
        encoding="utf-8",
    )
    for args in (["--dry-run"], []):
        done = cli(vault, "import", str(source), "-w", "infra", *args)
        assert done.returncode == 0, done.stderr
        assert (
            "left out 2 pieces under 12 characters (headings, not memories?): 'TODO', "
            "'Use pnpm.'; memstore add keeps one\n"
        ) in done.stderr, done.stderr
    again = json.loads(cli(vault, "import", str(source), "-w", "infra", "--json").stdout)
    assert again["too_short"] == ["TODO", "Use pnpm."] and again["unchanged"] == 1
