"""The semantic view in recall: off unless asked for; on, it embeds what is written, fuses
with the lexical views, keeps in step with the files, rebuilds, and answers the same through
the daemon. The model tests need the `semantic` extra (make test installs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from memstore.catalog import semantic
from memstore.catalog.retrieval import fuse_similar
from memstore.core.config import SEMANTIC_ON, Settings, semantic_choice
from memstore.core.errors import InvalidInputError
from memstore.service.store import Store
from tests.cli.test_progress import on_a_terminal
from tests.conftest import EXE, git, invoke_memstore, settings_at, wait_until
from tests.daemon.test_daemon import TIMEOUT, requests_served, start_daemon, status
from tests.daemon.test_daemon import env as daemons_allowed  # noqa: F401 (a fixture)

MEMORIES = {
    "deploy": "Deploy to staging first, check the dashboards for ten minutes, then release "
    "to production.",
    "prices": "Prices are stored as whole cents in integers, never as floating point numbers.",
    "timezones": "Time zones are always saved in UTC on the server.",
}
PARAPHRASE = "how do we publish a new version"  # shares no word with the deploy memory


def fill(store: Store, workspace: str = "web") -> dict[str, str]:
    """Add MEMORIES; return name → path."""
    return {name: store.add(text, workspace=workspace).path for name, text in MEMORIES.items()}


# --- without the model -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ""),
        ({"MEMSTORE_SEMANTIC": "1"}, SEMANTIC_ON),
        ({"MEMSTORE_SEMANTIC": "On"}, SEMANTIC_ON),
        ({"MEMSTORE_SEMANTIC": "off", "MEMSTORE_SEMANTIC_MODEL": "/m"}, ""),
        ({"MEMSTORE_SEMANTIC_MODEL": "/models/potion"}, "/models/potion"),
        ({"MEMSTORE_SEMANTIC": "yes", "MEMSTORE_SEMANTIC_MODEL": "/m"}, "/m"),
    ],
)
def test_the_semantic_view_is_off_unless_the_environment_turns_it_on(
    env: dict[str, str], expected: str
) -> None:
    assert semantic_choice(env, home=Path("/home/ada")) == expected


@pytest.mark.parametrize(
    ("env", "refusal"),
    [
        ({"MEMSTORE_SEMANTIC": "maybe"}, "MEMSTORE_SEMANTIC is 'maybe'; set it to on or off"),
        (
            {"MEMSTORE_SEMANTIC_MODEL": "models/usem"},
            "MEMSTORE_SEMANTIC_MODEL is 'models/usem'; give the model folder's absolute path",
        ),
    ],
)
def test_an_unknown_switch_or_a_relative_model_folder_is_refused_by_name(
    env: dict[str, str], refusal: str
) -> None:
    with pytest.raises(InvalidInputError, match=refusal):
        semantic_choice(env, home=Path("/home/ada"))


def test_fusion_keeps_confident_hits_first_and_marks_what_only_vectors_found(
    store: Store,
) -> None:
    paths = fill(store)
    lexical = store.search("dashboards staging", workspace="web", k=20).hits
    assert [h.path for h in lexical] == [paths["deploy"]] and not lexical[0].weak
    similar = [paths["prices"], paths["deploy"], paths["timezones"]]
    fused = fuse_similar(store.indexer, lexical, similar, 2, archived=False)
    assert [h.path for h in fused] == [paths["deploy"], paths["prices"]]  # cut to k
    assert (fused[0].weak, fused[0].view) == (False, "lexical+semantic")
    assert (fused[1].weak, fused[1].view, fused[1].score) == (True, "semantic", 0.0)
    # a hit only the lexical views found keeps its place among the confident ones
    alone = fuse_similar(store.indexer, lexical, [paths["prices"]], 5, archived=False)
    assert [(h.path, h.view) for h in alone] == [
        (paths["deploy"], "lexical"),
        (paths["prices"], "semantic"),
    ]


def test_fusion_puts_a_superseded_memory_below_its_correction(store: Store) -> None:
    old = store.add("The API listens on port 8080.", workspace="web")
    new = store.add("The API listens on port 9090.", workspace="web", supersedes=(old.id,))
    fused = fuse_similar(store.indexer, [], [old.path, new.path], 5, archived=False)
    assert [h.id for h in fused] == [new.id, old.id]
    assert fused[1].superseded_by == (new.id,)


def test_without_the_extra_turning_the_view_on_names_the_fix(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, semantic.PACKAGE, None)  # as if not installed
    fix = r"pipx install --force 'memstore-agents\[semantic\]'.*'\.\[semantic\]'.*unset MEMSTORE_SEMANTIC$"
    with (
        Store.open(replace(settings_at(vault), semantic=SEMANTIC_ON)) as store,
        pytest.raises(InvalidInputError, match=fix),
    ):
        store.search("anything", workspace="web")


def test_a_model_folder_that_holds_no_model_is_one_line_from_the_cli(tmp_path: Path) -> None:
    env = {**os.environ, "MEMSTORE_VAULT": str(tmp_path / "v")}
    assert invoke_memstore("init", str(tmp_path / "v"), env=env).returncode == 0
    assert invoke_memstore("add", "-w", "web", "a note", env=env).returncode == 0
    empty = tmp_path / "model"
    empty.mkdir()
    done = invoke_memstore("search", "note", env={**env, "MEMSTORE_SEMANTIC_MODEL": str(empty)})
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {empty} holds no model") and done.stderr.count("\n") == 1


# --- with the model ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def model() -> None:
    pytest.importorskip(semantic.PACKAGE)


def semantic_store(vault: Path) -> Store:
    return Store.open(replace(settings_at(vault), semantic=SEMANTIC_ON))


def ranked(store: Store, query: str, workspace: str | None = "web") -> list[tuple[str, bool]]:
    return [(h.path, h.weak) for h in store.search(query, workspace=workspace, k=5).hits]


def test_a_paraphrase_sharing_no_word_is_found_only_with_the_view_on(
    vault: Path, model: None
) -> None:
    with Store.open(settings_at(vault)) as plain:
        paths = fill(plain)
        assert plain.search(PARAPHRASE, workspace="web").hits == ()
    with semantic_store(vault) as store:
        result = store.search(PARAPHRASE, workspace="web", k=1)
    assert [(h.path, h.weak, h.view) for h in result.hits] == [(paths["deploy"], True, "semantic")]
    assert result.weak  # related at most: it shares no word with the question


def test_a_resident_store_embeds_each_memory_as_it_is_written(vault: Path, model: None) -> None:
    with semantic_store(vault) as store:
        store.search("anything", workspace="web")  # the view is in step: empty
        views = store.shared.vector_views[SEMANTIC_ON]
        added = store.add(MEMORIES["deploy"], workspace="web")
        # embedded by the add itself, before any search
        assert views.digests() == {added.path: store.indexer.by_path([added.path])[0].hash}
        assert store.vectors.in_step()
        assert ranked(store, PARAPHRASE) == [(added.path, True)]


def test_a_persons_edit_and_a_deletion_reach_the_vectors(vault: Path, model: None) -> None:
    with semantic_store(vault) as store:
        paths = fill(store)
        assert ranked(store, PARAPHRASE)[0][0] == paths["deploy"]
        (vault / paths["deploy"]).write_text("Lunch is at noon in the big room.\n", "utf-8")
        (vault / paths["timezones"]).unlink()
        git(vault, "commit", "-qam", "a person's edits")
        found = ranked(store, "when do we eat together")
        assert found[0][0] == paths["deploy"]  # its new text
        assert paths["timezones"] not in {path for path, _ in found}
        assert set(store.shared.vector_views[SEMANTIC_ON].digests()) == {
            paths["deploy"],
            paths["prices"],
        }


def test_reindex_after_losing_the_cache_answers_exactly_as_before(vault: Path, model: None) -> None:
    queries = [PARAPHRASE, "money amounts representation", "which timezone do servers use"]
    with semantic_store(vault) as store:
        fill(store)
        fill(store, "global")
        before = {q: store.search(q, workspace=None, k=6).hits for q in queries}
    shutil.rmtree(vault / ".memstore")
    with semantic_store(vault) as store:
        store.reindex()
        assert (vault / ".memstore" / "semantic").is_dir()
        after = {q: store.search(q, workspace=None, k=6).hits for q in queries}
    assert after == before and all(len(hits) == 6 for hits in after.values())


def test_reindex_shows_indexing_then_embedding_each_on_its_own_line(
    vault: Path, model: None
) -> None:
    with Store.open(settings_at(vault)) as plain:
        fill(plain)
    code, shown = on_a_terminal(
        vault, "reindex", MEMSTORE_SEMANTIC="on", MEMSTORE_PROGRESS_DELAY="0"
    )
    assert code == 0, shown
    lines = shown.replace("\r\n", "\n").split("\n")
    indexing = [n for n, line in enumerate(lines) if "indexing" in line]
    embedding = [n for n, line in enumerate(lines) if "embedding" in line]
    assert indexing and embedding, shown
    assert max(indexing) < min(embedding), shown  # the first bar ended before the second


def test_the_daemon_and_a_lone_process_print_the_same_semantic_search(
    tmp_path: Path,
    daemons_allowed: dict[str, str],  # noqa: F811
    model: None,
) -> None:
    vault = tmp_path / "vault"
    env = {**daemons_allowed, "MEMSTORE_VAULT": str(vault), "MEMSTORE_SEMANTIC": "on"}
    alone = {**env, "MEMSTORE_NO_DAEMON": "1"}
    assert invoke_memstore("init", str(vault), env=alone).returncode == 0
    for text in MEMORIES.values():
        assert invoke_memstore("add", "-w", "web", text, env=alone).returncode == 0
    start_daemon(env, vault)
    # A request that waits over BUSY_WAIT_S for the warm-up's step under way is answered
    # "run it yourself", by design; its first step (a search: the model loaded) takes a
    # second quiet, more than BUSY_WAIT_S on a loaded machine. Asked once it is done.
    wait_until(lambda: status(vault).get("warmed") is True, 4 * TIMEOUT, "the daemon warmed")
    served = requests_served(vault)

    def search(environment: dict[str, str]) -> str:
        done = subprocess.run(
            [str(EXE), "search", "-w", "web", PARAPHRASE, "--json"],
            env=environment,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    through_daemon = search(env)
    assert requests_served(vault) == served + 1
    assert through_daemon == search(alone)
    assert json.loads(through_daemon)["results"][0]["view"] == "semantic"


def test_settings_from_a_shell_carry_the_choice_with_home_read_as_the_callers(
    tmp_path: Path,
) -> None:
    env = {"MEMSTORE_VAULT": str(tmp_path), "MEMSTORE_SEMANTIC_MODEL": "~/models/usem"}
    chosen = Settings.from_env(env, home=Path("/home/ada")).semantic
    assert chosen == "/home/ada/models/usem"
