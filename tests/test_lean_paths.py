"""A session's first `memstore search` and a no-daemon `memstore add` import only what they
use (issue 39, part 4): no writer, sync, code catalog or credential rules for a search; no
PyYAML or numpy for either; never typer, click, rich or pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memstore.service.store import Store
from memstore.vault.index_staging import CLAIMED, INDEX_LAG
from tests.conftest import git, settings_at, wait_until

# The launcher in a fresh interpreter (no daemon), then the modules it imported on stderr.
RUN = """
import json, sys
argv = json.loads(sys.argv[1])
exec(sys.argv[2])  # a prelude: a large vault's threshold, say
sys.argv = ["memstore", *argv]
from memstore.launcher import main
try:
    main()
except SystemExit:
    pass
import gc
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
print(json.dumps([gc.isenabled(), gc.get_freeze_count()]), file=sys.stderr)
"""

# numpy: a one-shot process scores in plain Python (index/plain.py) and groups an add's
# postings without it (index/bulk.py); a daemon still imports it.
NEVER = {
    *("typer", "click", "rich", "pydantic", "yaml", "asyncio", "ssl", "urllib.request"),
    "numpy",
}
# What only writing, syncing, ingested code, the MCP tools or a credential scan needs.
NOT_FOR_A_SEARCH = {
    "pygit2",
    "memstore.service.writer",
    "memstore.service.transaction",
    "memstore.service.sync",
    "memstore.core.merge",
    "memstore.core.contradictions",
    "memstore.core.secrets",
    "memstore.core.secret_values",
    "memstore.catalog.codebase",
    "memstore.catalog.chunking",
    "memstore.catalog.semantic",  # the semantic view, off by default
    "memstore.ops.tools",
    "memstore.vault.remote",
    "zipfile",
    "configparser",
    # a one-shot search's searcher is index/lean_searcher.py's
    *("whoosh.searching", "whoosh.highlight", "whoosh.classify", "whoosh.scoring"),
}


def _run(vault: Path, *argv: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """Run the command in a fresh interpreter without a daemon (RUN reports on stderr)."""
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1"}
    return subprocess.run(
        [sys.executable, "-c", RUN, json.dumps([*argv, "--vault", str(vault)]), prelude],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )


def _imported_by(vault: Path, *argv: str, prelude: str = "") -> tuple[set[str], str]:
    done = _run(vault, *argv, prelude=prelude)
    return set(json.loads(done.stderr.strip().splitlines()[-2])), done.stdout


def _collector_after(vault: Path, *argv: str) -> tuple[bool, int]:
    done = _run(vault, *argv)
    enabled, frozen = json.loads(done.stderr.strip().splitlines()[-1])
    return bool(enabled), int(frozen)


def _vault_with_a_memory(vault: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        store.add("the upload limit is 10 MB behind nginx", workspace="global")


def test_a_search_without_a_daemon_imports_no_writer_sync_code_catalog_or_yaml(vault: Path):
    _vault_with_a_memory(vault)
    modules, out = _imported_by(vault, "search", "upload limit")
    assert "upload limit is 10 MB" in out  # it did search, in this process
    assert "memstore.service.reader" in modules and "whoosh.reading" in modules
    assert not modules & NEVER
    assert not modules & NOT_FOR_A_SEARCH, modules & NOT_FOR_A_SEARCH


def test_a_search_that_finds_nothing_in_its_workspace_still_looks_elsewhere(vault: Path):
    _vault_with_a_memory(vault)
    with Store.open(settings_at(vault)) as store:
        store.add("the staging cluster drains nodes on friday", workspace="infra")
    modules, out = _imported_by(vault, "search", "drains nodes", "-w", "webshop")
    assert "infra" in out or "--all" in out  # the other workspace's hit is pointed at
    assert not modules & NEVER


def test_an_add_without_a_daemon_imports_no_yaml_typer_or_code_catalog(vault: Path):
    _vault_with_a_memory(vault)
    modules, out = _imported_by(vault, "add", "the worker pool holds 8 threads", "-w", "infra")
    assert out.startswith("added ")  # written and committed in this process
    assert "pygit2" in modules and "memstore.service.writer" in modules
    assert not modules & (NEVER - {"ssl"})  # pygit2 reads the default certificate paths
    assert not modules & {"memstore.catalog.codebase", "memstore.service.sync", "zipfile"}


def test_an_add_to_a_large_vault_commits_without_pygit2s_package(vault: Path):
    # A large vault's add leaves git's index to a staging process (vault/index_staging.py):
    # the commit is all it needs of libgit2, and pygit2's C extension alone makes it.
    _vault_with_a_memory(vault)
    large = "import memstore.vault.git as g; g.DEFER_INDEX_BYTES = 0"
    modules, out = _imported_by(vault, "add", "the worker pool holds 8 threads", prelude=large)
    assert out.startswith("added ")
    assert "pygit2._pygit2" in modules
    assert not modules & {"pygit2", "pygit2.enums", "pygit2.repository", "ssl"}
    assert "the worker pool holds 8 threads" in git(vault, "show", "HEAD")
    lag = [vault / ".git" / INDEX_LAG, vault / ".git" / CLAIMED]
    wait_until(lambda: not any(p.exists() for p in lag), 60, "git's index staged after")
    assert git(vault, "status", "--porcelain") == ""


def test_the_imports_run_with_the_collector_paused_and_it_runs_again_after(vault: Path):
    _vault_with_a_memory(vault)
    enabled, frozen = _collector_after(vault, "search", "upload limit")
    assert enabled  # paused only while importing
    assert frozen > 0  # what the imports made is kept out of later collections (main: 0)


def test_a_hook_without_a_daemon_answers_as_a_one_shot_command(vault: Path, tmp_path: Path):
    # The hook's work runs in a child: as a search or add, with the machine's caches and
    # plain scoring (no numpy), printing what the full path prints.
    from memstore.ops.client import Request
    from memstore.ops.hooks import answer
    from memstore.ops.lean import open_in_process
    from tests.conftest import run_memstore

    _vault_with_a_memory(vault)
    with Store.open(settings_at(vault)) as store:
        store.add("nginx rejects uploads over the limit with 413", workspace="global")
    payload = json.dumps({"prompt": "what is the upload limit behind nginx?", "cwd": str(vault)})
    cache = tmp_path / "cache"
    done = run_memstore(
        "hook", "prompt", vault=vault, stdin=payload, env={"XDG_CACHE_HOME": str(cache)}
    )
    assert done.returncode == 0, done.stderr
    assert "upload limit is 10 MB" in done.stdout
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert (cache / "memstore" / f"generated-{version}-v2.marshal").is_file()  # the child's
    env = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    full = answer(Request("hook", ["prompt"], str(vault), env, payload.encode()), open_in_process)
    assert done.stdout == full.stdout
