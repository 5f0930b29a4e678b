"""Contradiction hints: an add that disagrees with a memory of its workspace names it and the
supersede that would correct it (CLI, MCP, daemon), and `memstore audit` lists such pairs."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstore.core.codec import derive_id
from memstore.core.contradictions import disagreement
from memstore.core.errors import InvalidInputError
from memstore.core.model import AddResult
from memstore.service.curation import ContradictionError, Curator
from memstore.service.store import Store
from tests.cli.test_cli_surface import EXE, typer_run
from tests.cli.test_cli_surface import run as run_executable
from tests.conftest import head, invoke_memstore, settings_at, vault_bytes
from tests.daemon.test_daemon import (
    env,  # noqa: F401 (a pytest fixture, asked for by name)
    requests_served,
    start_daemon,
)
from tests.mcp.test_mcp import (
    call,
    server,  # noqa: F401 (a pytest fixture, asked for by name)
)


def run(
    *args: str, vault: Path, under: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run memstore's main in-process (add takes the lean path, as in the executable); with
    `under` (an environment where a daemon may answer), the executable itself."""
    if under is not None:
        return run_executable(*args, vault=vault, under=under)
    return invoke_memstore(*args, vault=vault)


# (stored, contradicting, agreeing paraphrase, unrelated, the contradiction's detail)
CASES = {
    "en": (
        "The dev server listens on port 8080; change it in vite.config.ts.",
        "The dev server listens on port 3000; change it in vite.config.ts.",
        "The dev server listens on port 8080.",
        "Release notes go in CHANGELOG.md under Unreleased.",
        "port 3000 vs 8080",
    ),
    "de": (
        "Der Worker-Timeout beträgt 30 Sekunden.",
        "Der Worker-Timeout beträgt 90 Sekunden.",
        "Der Worker-Timeout ist 30s.",
        "Die Doku liegt im Ordner docs.",
        "beträgt 90 Sekunden vs 30 Sekunden",
    ),
    "fr": (
        "Les tests d'intégration tournent en parallèle sur la CI.",
        "Les tests d'intégration ne tournent pas en parallèle sur la CI.",
        "Sur la CI, les tests d'intégration tournent en parallèle.",
        "Le changelog se met à jour à chaque release.",
        '"ne tournent pas en parallèle sur la CI" on one side only',
    ),
    "es": (
        "El token de sesión caduca a los 60 minutos.",
        "El token de sesión caduca a los 15 minutos.",
        "El token de sesión caduca a la hora (1 h).",
        "Los commits siguen Conventional Commits.",
        "caduca 15 minutos vs 60 minutos",
    ),
}


def hinted_add(store: Store, text: str, **options: Any) -> AddResult:
    """Add `text` and ask for its hint, as the CLI, MCP and the daemon do after an add."""
    return store.hint(store.add(text, **options), text)


def added_id(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith(("added ", "duplicate of ")), out.stdout
    return first.split()[1] if first.startswith("added ") else first.split()[2]


def hints(out: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in out.stdout.splitlines() if line.startswith("contradicts ")]


def supersedes_of(vault: Path, memory_id: str) -> list[str]:
    shown = run("show", memory_id, "--json", vault=vault)
    assert shown.returncode == 0, shown.stderr
    return list(json.loads(shown.stdout)["supersedes"])


def in_a_shell(command: str, vault: Path) -> subprocess.CompletedProcess[str]:
    """Run a command line as a person pastes it, with the installed `memstore` on PATH."""
    path = f"{EXE.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-c", command],
        env={**os.environ, "PATH": path, "MEMSTORE_VAULT": str(vault)},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )


# --- the CLI -----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", sorted(CASES))
def test_a_contradicting_add_names_the_other_memory_and_the_supersede(
    vault: Path, lang: str
) -> None:
    stored, contradicting, agreeing, unrelated, detail = CASES[lang]
    old = added_id(run("add", stored, "-w", "web", vault=vault))
    for quiet in (agreeing, unrelated):
        out = run("add", quiet, "-w", "web", vault=vault)
        assert added_id(out) and hints(out) == [], out.stdout
    out = run("add", contradicting, "-w", "web", vault=vault)
    assert added_id(out) and out.stderr == ""
    line = next(h for h in hints(out) if h.startswith(f"contradicts {old} "))
    assert line.startswith(
        f"contradicts {old} ({detail}); if the new memory is right: memstore add "
    )
    assert line.endswith(f" -w web --supersedes {old}")


def seen_of(vault: Path, memory_id: str) -> int:
    shown = run("show", memory_id, "--json", vault=vault)
    assert shown.returncode == 0, shown.stderr
    return int(json.loads(shown.stdout)["seen"])


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_following_the_hint_records_the_supersede(vault: Path, lang: str) -> None:
    stored, contradicting, *_ = CASES[lang]
    old = added_id(run("add", stored, "-w", "web", vault=vault))
    out = run("add", contradicting, "-w", "web", vault=vault)
    new = added_id(out)
    [line] = hints(out)
    command = line.split("; if the new memory is right: ", 1)[1]
    followed = in_a_shell(command, vault)
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.startswith(
        f"{new} in web now supersedes {old} (a correction recorded; seen stays 1)"
    )
    assert supersedes_of(vault, new) == [old]
    # A link recorded is not the memory stored again: neither memory's `seen` moved
    # (issue 36 item 12: it went to 2), and the commit says what happened.
    assert (seen_of(vault, new), seen_of(vault, old)) == (1, 1)
    assert (
        f"  supersede(web): {contradicting[:20]}" in run("log", vault=vault).stdout.splitlines()[0]
    )
    # following it once more changes nothing
    before = head(vault)
    assert in_a_shell(command, vault).returncode == 0 and head(vault) == before
    found = run("search", stored, "-w", "web", vault=vault)
    assert f"(superseded by {new})" in found.stdout
    # corrected now: the same text added again is no contradiction, and is a duplicate
    again = run("add", contradicting, "-w", "web", vault=vault)
    assert hints(again) == [] and "seen 2 times" in again.stdout


def test_a_hand_written_memory_named_by_the_hint_gets_the_link(vault: Path) -> None:
    stored, contradicting, *_ = CASES["en"]
    old = added_id(run("add", stored, "-w", "web", vault=vault))
    (vault / "web" / "port.md").write_text(contradicting + "\n", encoding="utf-8")
    followed = run("add", contradicting, "-w", "web", "--supersedes", old, vault=vault)
    assert followed.returncode == 0, followed.stderr
    new = followed.stdout.split()[0]
    assert "now supersedes" in followed.stdout and supersedes_of(vault, new) == [old]
    assert seen_of(vault, new) == 1


def test_the_hint_names_the_vault_when_the_command_did(vault: Path, tmp_path: Path) -> None:
    stored, contradicting, *_ = CASES["en"]
    elsewhere = {**os.environ, "MEMSTORE_VAULT": str(tmp_path / "not-this-one")}
    old = added_id(run("add", stored, "-w", "web", "--vault", str(vault), vault=vault))
    out = run(
        "add", contradicting, "-w", "web", "--vault", str(vault), vault=vault, under=elsewhere
    )
    [line] = hints(out)
    assert line.endswith(f" -w web --supersedes {old} --vault {vault}")
    followed = in_a_shell(line.split("is right: ", 1)[1], tmp_path / "not-this-one")
    assert followed.returncode == 0, followed.stderr
    assert supersedes_of(vault, added_id(out)) == [old]


def test_a_memory_of_another_workspace_or_global_gives_no_hint(vault: Path) -> None:
    stored, contradicting, *_ = CASES["en"]
    added_id(run("add", stored, "-w", "web", vault=vault))
    added_id(run("add", stored, "-w", "global", vault=vault))
    out = run("add", contradicting, "-w", "mobile", vault=vault)
    assert added_id(out) and hints(out) == []


def test_json_lists_each_contradiction_with_its_command(vault: Path) -> None:
    stored, contradicting, *_ = CASES["de"]
    old = added_id(run("add", stored, "-w", "infra", vault=vault))
    plain = run("add", "Die Doku liegt im Ordner docs.", "-w", "infra", "--json", vault=vault)
    assert json.loads(plain.stdout)["contradicts"] == []
    out = run("add", contradicting, "-w", "infra", "--json", vault=vault)
    assert out.returncode == 0, out.stderr
    [found] = json.loads(out.stdout)["contradicts"]
    assert found == {
        "id": old,
        "kind": "number",
        "detail": "beträgt 90 Sekunden vs 30 Sekunden",
        "command": f"memstore add 'Der Worker-Timeout beträgt 90 Sekunden.' -w infra --supersedes {old}",
    }


def test_the_lean_and_the_typer_add_print_the_same_hint(vault: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    assert run("init", str(other), vault=other).returncode == 0
    stored, contradicting, *_ = CASES["en"]
    quoted = "The staging deploy doesn't need approval from Maria."
    for text in (stored, "The staging deploy needs approval from Maria."):
        assert run("add", text, "-w", "web", vault=vault).returncode == 0
        assert typer_run("add", text, "-w", "web", vault=other).exit_code == 0
    for text in (contradicting, quoted):
        lean_out = run("add", text, "-w", "web", vault=vault)
        typer_out = typer_run("add", text, "-w", "web", vault=other)
        assert lean_out.returncode == typer_out.exit_code == 0, lean_out.stderr
        assert len(hints(lean_out)) == 1 and lean_out.stdout == typer_out.output
    assert f'memstore add "{quoted}" -w web --supersedes ' in lean_out.stdout


def test_the_daemon_prints_the_hint_as_the_command_does_in_process(
    vault: Path,
    tmp_path: Path,
    env: dict[str, str],  # noqa: F811 (the fixture imported above)
) -> None:
    alone = {**env, "MEMSTORE_NO_DAEMON": "1"}
    other = tmp_path / "other"
    assert run("init", str(other), vault=other, under=alone).returncode == 0
    stored, contradicting, *_ = CASES["es"]
    for where in (vault, other):
        assert run("add", stored, "-w", "api", vault=where, under=alone).returncode == 0
    start_daemon(env, vault)
    served = run("add", contradicting, "-w", "api", vault=vault, under=env)
    assert requests_served(vault) == 1
    in_process = run("add", contradicting, "-w", "api", vault=other, under=alone)
    assert served.stdout == in_process.stdout and len(hints(served)) == 1


# --- what the store leaves out -----------------------------------------------------------


def test_the_old_text_superseding_itself_is_refused_and_counts_nothing(store: Store) -> None:
    stored, contradicting, *_ = CASES["en"]
    old = store.add(stored, workspace="web")
    store.add(contradicting, workspace="web")
    before = store.git.head()
    with pytest.raises(InvalidInputError, match=f"memory {old.id} itself, which cannot supersede"):
        store.add(stored, workspace="web", supersedes=(old.id,))
    assert store.git.head() == before and store.show(old.id)[1].seen == 1


def test_no_hint_for_what_the_add_supersedes_or_a_duplicate(store: Store) -> None:
    stored, contradicting, *_ = CASES["en"]
    old = store.add(stored, workspace="web")
    named = hinted_add(store, contradicting, workspace="web", supersedes=(old.id,))
    assert named.status == "added" and named.contradicts == ()
    duplicate = hinted_add(store, contradicting, workspace="web")
    assert duplicate.status == "duplicate_merged" and duplicate.contradicts == ()
    # the old memory is corrected now: a third port disagrees with the correction only
    third = hinted_add(
        store, "The dev server listens on port 4000; change it in vite.config.ts.", workspace="web"
    )
    assert [(c.id, c.detail) for c in third.contradicts] == [(named.id, "port 4000 vs 3000")]


ARCHIVED = (
    "Nightly backups run at 02:00 UTC on the db host.",
    "Nightly backups run at 03:00 UTC on the db host.",
)
CORE = ("Release tags are created by hand.", "Release tags are not created by hand.")


@pytest.mark.parametrize("left_out", ["archived", "core", "trace stored", "trace added"])
def test_no_hint_with_an_archived_core_or_trace_memory(store: Store, left_out: str) -> None:
    first, second = ARCHIVED if left_out == "archived" else CORE
    assert disagreement(second, first) is not None  # they do disagree
    kinds = {"core": ("core", "note"), "trace stored": ("trace", "note")}
    kinds["trace added"] = ("note", "trace")
    old_kind, new_kind = kinds.get(left_out, ("note", "note"))
    old = store.add(first, workspace="ops", kind=old_kind)
    if left_out == "archived":
        Curator(store, datetime.now(UTC)).archive(old.id)
    added = hinted_add(store, second, workspace="ops", kind=new_kind)
    assert old.status == added.status == "added" and added.contradicts == ()
    # the same pair between two notes is hinted
    control = store.add(second, workspace="ops-control")
    assert hinted_add(store, first, workspace="ops-control").contradicts[0].id == control.id


# --- MCP ---------------------------------------------------------------------------------


def test_memory_add_returns_the_contradiction_and_what_to_do(
    server: Any,  # noqa: F811 (the fixture imported above)
    vault: Path,
) -> None:
    stored, contradicting, agreeing, unrelated, detail = CASES["fr"]
    first = call(server, "memory_add", {"content": stored, "keywords": ["ci", "tests"]})
    old = first.structured_content["id"]
    quiet = [
        call(server, "memory_add", {"content": t}).structured_content for t in (agreeing, unrelated)
    ]
    assert all(
        set(out) == {"status", "id", "seen", "workspace"} for out in quiet
    )  # no tokens spent
    added = call(server, "memory_add", {"content": contradicting, "keywords": ["ci"]})
    assert not added.is_error
    out = added.structured_content
    # both say the tests run in parallel: the stored memory and its paraphrase
    paraphrase = quiet[0]["id"]
    assert out["status"] == "added" and sorted(
        out["contradicts"], key=lambda c: c["id"] != old
    ) == [
        {"id": old, "detail": detail},
        {"id": paraphrase, "detail": detail},
    ]
    ids = [c["id"] for c in out["contradicts"]]
    assert out["message"] == (
        f"Stored, but it contradicts {', '.join(ids)} (see contradicts). Ask the person which is "
        "right; if the new memory is, call memory_add again with the same content and "
        f"supersedes={json.dumps(ids)}."
    )
    again = call(server, "memory_add", {"content": contradicting, "supersedes": ids})
    assert again.structured_content["status"] == "supersede_recorded"
    assert again.structured_content["seen"] == 1
    assert "contradicts" not in again.structured_content
    assert sorted(supersedes_of(vault, out["id"])) == sorted(ids)


def test_memory_add_hints_in_german_and_spanish_only_within_the_workspace(
    server: Any,  # noqa: F811 (the fixture imported above)
) -> None:
    for lang in ("de", "es"):
        stored, contradicting, *_, detail = CASES[lang]
        call(server, "memory_add", {"content": stored, "workspace": "billing"})
        elsewhere = call(server, "memory_add", {"content": contradicting}).structured_content
        assert elsewhere["workspace"] == "webshop" and "contradicts" not in elsewhere
        here = call(server, "memory_add", {"content": contradicting, "workspace": "billing"})
        assert [c["detail"] for c in here.structured_content["contradicts"]] == [detail]


# --- audit -------------------------------------------------------------------------------


def test_audit_lists_each_contradicting_pair_with_its_command(vault: Path) -> None:
    pairs = {}
    for lang in ("en", "de"):
        stored, contradicting, _, unrelated, _ = CASES[lang]
        old, _, new = (
            added_id(run("add", t, "-w", lang, vault=vault))
            for t in (stored, unrelated, contradicting)
        )
        pairs[lang] = {old, new}
    # a pair already corrected is not listed
    stored, contradicting, *_ = CASES["es"]
    old = added_id(run("add", stored, "-w", "es", vault=vault))
    added_id(run("add", contradicting, "-w", "es", "--supersedes", old, vault=vault))
    audited = run("audit", vault=vault)
    assert audited.returncode == 0, audited.stderr
    assert "contradictions (newer first; if it is right, run the command) (2):" in audited.stdout
    listed = json.loads(run("audit", "--json", vault=vault).stdout)["contradictions"]
    # added within a second of each other, either may count as the newer
    assert {p["workspace"]: {p["new"], p["old"]} for p in listed} == pairs
    for pair in listed:
        line = f"  {pair['new']} vs {pair['old']} ({pair['detail']}): {pair['command']}"
        assert line in audited.stdout.splitlines()
    [german] = [p for p in listed if p["workspace"] == "de"]
    assert german["kind"] == "number" and german["command"].endswith(
        f"-w de --supersedes {german['old']}"
    )
    followed = in_a_shell(german["command"], vault)
    assert followed.returncode == 0, followed.stderr
    assert supersedes_of(vault, german["new"]) == [german["old"]]
    after = json.loads(run("audit", "--json", vault=vault).stdout)["contradictions"]
    assert [p["workspace"] for p in after] == ["en"]


def ticking(start: datetime) -> Any:
    """A clock a second later at every reading: each memory is newer than the one before."""
    seconds = iter(range(10**6))
    return lambda: start + timedelta(seconds=next(seconds))


def test_audit_finds_what_an_add_hints(vault: Path) -> None:
    hinted = set()
    with Store.open(settings_at(vault), clock=ticking(datetime(2026, 12, 1, tzinfo=UTC))) as store:
        for lang, (stored, contradicting, agreeing, unrelated, _) in CASES.items():
            for text in (stored, agreeing, unrelated, contradicting):
                result = hinted_add(store, text, workspace=lang)
                hinted |= {(result.id, c.id, c.detail) for c in result.contradicts}
        pairs = Curator(store, datetime.now(UTC)).audit().contradictions
    assert {(p.new, p.old, p.detail) for p in pairs} == hinted and len(hinted) >= 4


def test_audit_names_the_later_committed_memory_newer_within_one_second(vault: Path) -> None:
    # Stamps have one-second precision. Before, a tie was settled by id, so when the newer
    # memory's id sorted first the command told the person to mark the newer one wrong.
    stored, contradicting, *_ = CASES["en"]
    workspace = next(
        ws
        for ws in (f"web{i}" for i in range(100))
        if derive_id(ws, contradicting) < derive_id(ws, stored)
    )
    second = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    with Store.open(settings_at(vault), clock=lambda: second) as store:
        old = store.add(stored, workspace=workspace)
        new = hinted_add(store, contradicting, workspace=workspace)
        assert new.id < old.id and [c.id for c in new.contradicts] == [old.id]
        [pair] = Curator(store, datetime.now(UTC)).audit().contradictions
        [listed] = Curator(store, datetime.now(UTC)).alike().contradictions
    assert (pair.new, pair.old, pair.detail) == (new.id, old.id, "port 3000 vs 8080")
    assert listed == pair
    audited = json.loads(run("audit", "--json", vault=vault).stdout)["contradictions"]
    assert [p["command"] for p in audited] == [
        f"memstore add '{contradicting}' -w {workspace} --supersedes {old.id}"
    ]


# --- dedupe ------------------------------------------------------------------------------

# (older, newer, kind): alike enough to be near-duplicates (≥ 70% of terms), yet they disagree
LOOK_ALIKES = [
    (
        "The dev server listens on port 3000; change it in vite.config.ts.",
        "The dev server listens on port 8080; change it in vite.config.ts.",
        "number",
    ),
    (
        "Worker timeout is 30 seconds for the billing queue consumer.",
        "Worker timeout is 90 seconds for the billing queue consumer.",
        "number",
    ),
    (
        "Always rebase feature branches onto main before merging.",
        "Never rebase feature branches onto main before merging.",
        "negation",
    ),
    (
        "CI runs the integration tests in parallel on every pull request.",
        "CI does not run the integration tests in parallel on every pull request.",
        "negation",
    ),
    (
        "In the compose file set DB_HOST=postgres for the api service.",
        "In the compose file set DB_HOST=localhost for the api service.",
        "value",
    ),
    (
        "Telemetry is enabled in the staging config of the api service.",
        "Telemetry is disabled in the staging config of the api service.",
        "antonym",
    ),
]
TRUE_DUPLICATE = (
    "Staging deploys need an approval from Maria before merging the release branch",
    "Staging deploys need an approval from Maria before merging the release branch, always",
)


def test_dedupe_never_calls_a_look_alike_that_disagrees_a_duplicate(vault: Path) -> None:
    with Store.open(settings_at(vault), clock=ticking(datetime(2026, 12, 1, tzinfo=UTC))) as store:
        pairs = {}
        for older, newer, kind in LOOK_ALIKES:
            old, new = (store.add(t, workspace="web").id for t in (older, newer))
            pairs[(new, old)] = kind
        kept, folded = (store.add(t, workspace="web").id for t in TRUE_DUPLICATE)
        curator = Curator(store, datetime.now(UTC))
        alike = curator.alike()
        report = curator.audit()
        before, files = head(vault), vault_bytes(vault)
        for new, old in pairs:
            for asked in (new, old):
                with pytest.raises(ContradictionError) as refused:
                    curator.merge_duplicate(asked)
                assert (refused.value.pair.new, refused.value.pair.old) == (new, old)
        assert head(vault) == before and vault_bytes(vault) == files
        # a true duplicate among them still merges
        merged, gone = curator.merge_duplicate(kept)
    assert {(c.new, c.old): c.kind for c in alike.contradictions} == pairs
    assert alike.disputed == alike.contradictions
    assert [(a, b) for a, b, _ in alike.duplicates] == [tuple(sorted((kept, folded)))]
    assert report.near_duplicates == alike.duplicates
    assert {(c.new, c.old) for c in report.contradictions} == set(pairs)
    assert (merged.id, gone, merged.seen) == (kept, folded, 2)


def test_dedupe_lists_the_contradiction_and_merge_names_the_supersede(vault: Path) -> None:
    older, newer, _ = LOOK_ALIKES[0]
    old = added_id(run("add", older, "-w", "web", vault=vault))
    new = added_id(run("add", newer, "-w", "web", vault=vault))
    command = f"memstore add '{newer}' -w web --supersedes {old}"
    for ws in ("web", "docs"):
        for text in TRUE_DUPLICATE:
            assert run("add", text, "-w", ws, vault=vault).returncode == 0
    listed = run("dedupe", "--list", vault=vault)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count(" ~ ") == 2 and f"{new} ~ " not in listed.stdout
    assert f" ~ {new}" not in listed.stdout
    assert "contradictions, not duplicates (newer first) (1):" in listed.stdout
    assert f"{new} vs {old}  (port 8080 vs 3000)" in listed.stdout
    assert f"  if {new} is right: {command}" in listed.stdout.splitlines()
    before = head(vault)
    for asked in (new, old):
        refused = run("dedupe", "--merge", asked, vault=vault)
        assert refused.returncode == 1 and refused.stdout == ""
        assert refused.stderr.startswith(f"Error: {new} and {old} contradict each other")
        assert refused.stderr.rstrip().endswith(command)
    assert head(vault) == before and (vault / "web").exists()
    assert older in run("show", old, vault=vault).stdout
    # the command it names settles the pair: neither a contradiction nor a duplicate now
    assert in_a_shell(command, vault).returncode == 0
    after = run("dedupe", "--list", vault=vault)
    assert "contradictions" not in after.stdout and after.stdout.count(" ~ ") == 2
