"""What the README says of the vault, the commands and the make targets matches memstore."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from typer.testing import CliRunner

from memstore.launcher import typer_app
from memstore.mcp.server import build_server
from memstore.service.store import Store
from tests.conftest import REPO_ROOT, settings_at

app = typer_app()  # every shell's commands, as the executable has them

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def vault_diagram() -> list[str]:
    """The memory files the README's vault diagram shows, as paths inside the vault."""
    block = README.split("**The vault**", 1)[1].split("```", 2)[1]
    paths: list[str] = []
    folders: list[str] = []
    for line in block.splitlines():
        if not line.startswith("  ") or line.strip().startswith("."):
            continue  # the vault's own line, and its dotfiles
        level = (len(line) - len(line.lstrip())) // 2 - 1
        name = line.split()[0].rstrip("/")
        folders[level:] = [name]
        if name.endswith(".md"):
            paths.append("/".join(folders))
    return paths


def test_the_vault_diagram_shows_the_paths_add_writes(vault: Path) -> None:
    shown = vault_diagram()
    assert len(shown) == 2
    with Store.open(settings_at(vault)) as store:
        for path in shown:
            workspace, month, day, name = path.split("/")
            assert re.fullmatch(r"\d{4}-\d{2}", month) and re.fullmatch(r"\d{2}", day), path
            slug, _id = name.removesuffix(".md").rsplit("-", 1)
            text = slug.replace("-", " ").replace("from maria", "from @maria")
            memory = store.add(text, workspace=workspace)
            file = next(vault.rglob(f"*-{memory.id}.md"))
            created = re.search(r"^created: (\S+)$", file.read_text(encoding="utf-8"), re.M)
            assert created, file
            # the same layout: workspace, the month and day it was created, slug-id
            stamp = created.group(1)
            expected = f"{workspace}/{stamp[:7]}/{stamp[8:10]}/{slug}-{memory.id}.md"
            assert file.relative_to(vault).as_posix() == expected, path


def test_the_serve_row_names_every_tool_the_server_has(vault: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        server = build_server(store, workspace="global", source="test")
        tools = {tool.name for tool in asyncio.run(server.list_tools())}
    row = next(line for line in README.splitlines() if line.startswith("| `serve` |"))
    assert set(re.findall(r"`(memory_\w+)`", row)) == tools


def test_sync_help_names_the_command_that_lists_conflicts() -> None:
    shown = CliRunner().invoke(app, ["sync", "--help"], terminal_width=200).output
    assert "memstore conflicts" in shown and "doctor" not in shown


def test_the_readme_says_how_long_make_demo_takes() -> None:
    section = README.split("## Try it: two commands", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"`make demo` copies.*? takes \d+ s[^.]* the first time", section, re.S)


def test_the_readme_states_the_limit_add_keeps() -> None:
    """A new user learnt the limit on a memory's text only from a refused 5 MB add."""
    from memstore.service.checks import MAX_TEXT_BYTES

    row = next(line for line in README.splitlines() if line.startswith("| `add TEXT` |"))
    assert f"A text over {MAX_TEXT_BYTES:,} bytes" in row, row


def test_the_tool_cost_the_docs_give_is_what_the_server_costs(vault: Path) -> None:
    """docs/agents.md gives the tools' per-session tokens exactly, the README roughly
    (a fresh reader's `memstore benchmark` said 363 beside the docs' 347 and "about 350")."""
    from memstore.mcp.server import tool_cost_tokens

    with Store.open(settings_at(vault)) as store:
        cost = tool_cost_tokens(build_server(store, workspace="global", source="test"))
    agents = (REPO_ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    row = next(line for line in agents.splitlines() if line.startswith("| MCP tool names"))
    exact = re.search(r"\| (\d+) ", row)
    assert exact and exact[1] == str(cost), row
    about = re.search(r"descriptions cost about (\d+) tokens per session", README)
    assert about and abs(int(about[1]) - cost) <= 10, (about, cost)


def test_every_environment_variable_the_docs_name_is_read_by_memstore() -> None:
    """A variable the docs tell a person to set (MEMSTORE_VAULT, MEMSTORE_NO_DAEMON, …) that
    nothing reads would be silently ignored."""
    docs = [REPO_ROOT / "README.md", REPO_ROOT / "hooks" / "README.md"]
    docs += sorted((REPO_ROOT / "docs").glob("*.md"))
    named = {
        v for doc in docs for v in re.findall(r"MEMSTORE_[A-Z_]*[A-Z]", doc.read_text("utf-8"))
    }
    code = [*(REPO_ROOT / "memstore").rglob("*.py"), *(REPO_ROOT / "hooks").rglob("*.sh")]
    read = {
        v for path in code for v in re.findall(r"MEMSTORE_[A-Z_]*[A-Z]", path.read_text("utf-8"))
    }
    assert {"MEMSTORE_VAULT", "MEMSTORE_NO_DAEMON"} <= named
    assert named <= read, sorted(named - read)


def test_every_file_the_docs_point_at_is_there() -> None:
    """A reader told "tests/test_secrets_corpus.py holds them" found no such file (it moved
    to tests/core/). benchmarks.md is a record of past runs and keeps the paths of its day."""
    docs = [REPO_ROOT / "README.md", REPO_ROOT / "hooks" / "README.md"]
    docs += [p for p in sorted((REPO_ROOT / "docs").glob("*.md")) if p.name != "benchmarks.md"]
    pattern = (
        r"(?<![\w./-])(?:tests|memstore|index|hooks)/[\w./-]+\.(?:py|json|jsonl|md|sh|toml|js)\b"
    )
    missing = [
        f"{doc.name}: {path}"
        for doc in docs
        for path in sorted(set(re.findall(pattern, doc.read_text("utf-8"))))
        if not (REPO_ROOT / path).exists()
    ]
    assert not missing, missing


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a markdown file's headings (fenced blocks left out); a heading
    that repeats an earlier one gets `-1`, `-2`, … as GitHub numbers them."""
    prose = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)
    headings = re.findall(r"^#+ (.*)$", prose, flags=re.M)
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for heading in headings:
        anchor = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        anchors.add(anchor if count == 0 else f"{anchor}-{count}")
    return anchors


def test_a_repeated_heading_is_reached_by_its_numbered_anchor() -> None:
    """benchmarks.md holds a few headings twice (a merge repeated them); GitHub numbers the
    second `-1`, and a link to the later text uses that."""
    text = "# Reindex\n```\n# Reindex\n```\n## Reindex\n### Reindex!\n"
    assert heading_anchors(text) == {"reindex", "reindex-1", "reindex-2"}


def test_every_link_between_the_docs_reaches_its_file_and_heading() -> None:
    """architecture.md's link to benchmarks.md's recall counters section, and retrieval.md's
    to its LoCoMo one, led to the top of a 6,800-line page (the headings had grown)."""
    docs = [REPO_ROOT / "README.md", REPO_ROOT / "hooks" / "README.md"]
    docs += sorted((REPO_ROOT / "docs").glob("*.md"))
    anchors = {doc.resolve(): heading_anchors(doc.read_text("utf-8")) for doc in docs}
    broken = []
    for doc in docs:
        for target, anchor in re.findall(
            r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)", doc.read_text("utf-8")
        ):
            if target.startswith(("http:", "https:", "mailto:")):
                continue
            path = (doc.parent / target).resolve() if target else doc.resolve()
            if not path.exists():
                broken.append(f"{doc.name}: {target}")
            elif anchor and path in anchors and anchor not in anchors[path]:
                broken.append(f"{doc.name}: {target}#{anchor}")
    assert not broken, broken
