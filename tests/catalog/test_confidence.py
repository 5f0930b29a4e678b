"""Recall's confidence (issue 38): what the prompt hook, `--context` and MCP inject unasked.

Each test runs on a real vault (a copy of sample-vault/, plus the memories the issue names)
through Store, the prompt hook's own function and the MCP tool: confidence comes from the
evidence a memory holds (docs/retrieval.md step 7), never from one word that stems to a
vault word.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.catalog.retrieval import names_one_topic
from memstore.core.model import SearchResult
from memstore.ops.client import Request
from memstore.ops.hooks import answer
from memstore.ops.output import context_lines
from memstore.ops.tools import recall
from memstore.service.store import Store
from tests.conftest import git, settings_at

README = "file uploads over 1MB fail with 413, can you fix the upload limit?"
UPLOAD_413 = "mfjscswv"  # the README's lesson: nginx client_max_body_size
PRISMA = "jrb5xa2k"
MAKE_DEPLOY, DEPLOY_SCRIPT = "ejzq47vf", "ttyrydda"  # the second supersedes the first


@pytest.fixture
def store(sample_vault: Path) -> Iterator[Store]:
    """The sample vault with the issue's other memories: an S3 note sharing "upload" and
    "file", a rule holding "over", a core rule holding "make"."""
    with Store.open(settings_at(sample_vault)) as opened:
        opened.add(
            "Upload images via the S3 presigned URL; the app never proxies file bytes",
            workspace="webshop",
        )
        opened.add("Prefer ripgrep over grep", workspace="global")
        opened.add("Agents must run make lint before committing", workspace="global", kind="core")
        yield opened


def confident(result: SearchResult) -> list[str]:
    return [hit.id for hit in result.hits if not hit.weak]


def context(store: Store, prompt: str) -> list[str]:
    """The ids `memstore search --context` (and the hook) would inject."""
    lines = context_lines(store.search(prompt, workspace=None), one_topic=names_one_topic(prompt))
    return [line.split("]")[0].removeprefix("- [") for line in lines[1:]]


def hook(vault: Path, workspace: str, prompt: str) -> str:
    project = vault.parent / "projects" / workspace
    project.mkdir(parents=True, exist_ok=True)
    git(project, "init", "-q")
    environment = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    payload = json.dumps({"prompt": prompt, "cwd": str(project)}).encode()
    reply = answer(Request("hook", ["prompt"], str(project), environment, payload))
    assert reply.status == 0 and reply.stderr == ""
    return reply.stdout


@pytest.mark.parametrize(
    "prompt", ["make me a sandwich", "who makes the coffee here?", "can you fix it over there?"]
)
def test_one_word_that_stems_to_a_vault_word_is_not_evidence(store: Store, prompt: str) -> None:
    found = store.search(prompt, workspace=None)
    assert found.hits  # the any-word view still offers something …
    assert confident(found) == [] and context(store, prompt) == []  # … never as an answer


def test_big_uploads_fail_injects_no_prisma_lesson(store: Store) -> None:
    assert PRISMA not in context(store, "why do big uploads fail")


def test_the_readme_example_injects_the_413_lesson_alone(store: Store, sample_vault: Path) -> None:
    found = store.search(README, workspace=None)
    assert found.hits[0].id == UPLOAD_413 and confident(found) == [UPLOAD_413]
    assert context(store, README) == [UPLOAD_413]  # not the S3 note, not "ripgrep over grep"
    out = hook(sample_vault, "webshop", README)
    assert f"[{UPLOAD_413}]" in out and "presigned" not in out and "ripgrep" not in out


def test_stored_keywords_matching_rare_words_outrank_common_words(store: Store) -> None:
    # The 413 lesson's keywords hold "413" and "upload"; the S3 note holds only "upload"
    # and "file" in its text: the rare, stored evidence wins, in search and in MCP.
    hits = store.search("upload limit 413", workspace=None).hits
    s3 = next(h for h in store.search("presigned", workspace=None).hits)
    ids = [h.id for h in hits]
    assert ids[0] == UPLOAD_413 and (s3.id not in ids or ids.index(s3.id) > 0)
    answered = recall(store, {"query": README}, workspace="all", live=False)
    assert answered["results"][0]["id"] == UPLOAD_413 and not answered["results"][0]["weak"]


@pytest.mark.parametrize(
    ("prompt", "wanted"),
    [
        ("prisma migrate deploy fails with P3009", PRISMA),
        ("tests hang on ryuk", "5hphxpc5"),
        ("checkout.spec.ts failed again on CI", "wrjpxql3"),
    ],
)
def test_rare_evidence_held_by_one_memory_is_confident(
    store: Store, prompt: str, wanted: str
) -> None:
    found = store.search(prompt, workspace=None)
    assert found.hits[0].id == wanted and wanted in confident(found)
    assert context(store, prompt)[0] == wanted


def test_a_port_only_one_memory_names_is_evidence(tmp_path: Path) -> None:
    # localhost:5432 against a memory that says Postgres runs on 5433 (not 5432).
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        wanted = opened.add(
            "Local dev ports: API 4000, Postgres 5433 (not 5432, to avoid a system Postgres)",
            workspace="webshop",
        ).id
        for text in (
            "Redis runs in docker compose; start it with docker compose up -d redis",
            "Prices are integer cents; format them with formatMoney",
            "Deploy staging with ./scripts/deploy.sh staging",
            "The API reads its settings from .env.local",
        ):
            opened.add(text, workspace="webshop")
        found = opened.search("can't connect to localhost:5432", workspace=None)
    assert found.hits[0].id == wanted and confident(found) == [wanted]


@pytest.mark.parametrize(
    ("prompt", "rule"),
    [("run terraform apply for prod", "ilcjglvg"), ("npm i lodash-es", "fjhw3bbp")],
)
def test_core_safety_rules_are_confident(store: Store, prompt: str, rule: str) -> None:
    assert rule in confident(store.search(prompt, workspace=None))
    assert rule in context(store, prompt)


def test_confident_hits_rank_above_weak_ones(store: Store) -> None:
    for prompt in (README, "run terraform apply for prod", "npm i lodash-es", "make me a sandwich"):
        tiers = [hit.weak for hit in store.search(prompt, workspace=None, k=10).hits]
        assert tiers == sorted(tiers), prompt
        answered = recall(store, {"query": prompt, "k": 10}, workspace="all", live=False)
        weak = [hit["weak"] for hit in answered["results"]]
        assert weak == sorted(weak), prompt


def test_a_superseded_memory_comes_with_its_correction_first(
    store: Store, sample_vault: Path
) -> None:
    prompt = "why does make deploy ENV=staging fail?"
    hits = store.search(prompt, workspace=None).hits
    ids = [h.id for h in hits]
    old = hits[ids.index(MAKE_DEPLOY)]
    assert old.superseded_by == (DEPLOY_SCRIPT,) and not old.weak
    assert ids.index(DEPLOY_SCRIPT) < ids.index(MAKE_DEPLOY)
    assert not hits[ids.index(DEPLOY_SCRIPT)].weak  # as sure as what it replaced
    assert context(store, prompt) == [DEPLOY_SCRIPT]
    out = hook(sample_vault, "webshop", prompt)
    assert f"[{DEPLOY_SCRIPT}]" in out and f"[{MAKE_DEPLOY}]" not in out


def test_a_superseded_memory_whose_correction_is_out_of_scope_is_never_injected(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        old = opened.add("Deploy the shop with make deploy ENV=staging", workspace="shop").id
        opened.add(
            "make deploy was removed: deploy the shop with ./scripts/deploy.sh staging",
            workspace="infra",  # not searched from the shop
            supersedes=(old,),
        )
        for text in ("Prices are integer cents", "Use pnpm, never npm", "Redis runs on 6379"):
            opened.add(text, workspace="shop")
        found = opened.search("make deploy ENV=staging fails", workspace="shop")
    assert [h.id for h in found.hits][:1] == [old] and not found.hits[0].weak
    assert context_lines(found) == []  # the outdated memory alone is never injected


@pytest.mark.parametrize("blob", ["x" * 200_000, "a1" + "x" * 200_000, "x" * 100_000 + ".y"])
def test_a_pasted_blob_is_weighed_in_linear_time(store: Store, blob: str) -> None:
    """A prompt holding one huge word (a pasted log line, a fuzzer's argument) is weighed
    at once: the pattern that found numbers and codes once backtracked quadratically (a
    100,000-letter word took minutes). Linear work takes well under a second here."""
    started = time.process_time()
    result = store.search(f"upload limit {blob}", workspace=None)
    assert time.process_time() - started < 10, "weighing the prompt took quadratic time"
    assert result.hits[0].id == UPLOAD_413  # the words beside it still find their memory


@pytest.fixture
def worded(tmp_path: Path) -> Iterator[tuple[Store, Path, dict[str, str]]]:
    """A vault where "sidekiq", "battery" and pm_static.yml are each held by one memory, in
    its stored keywords too: one such word is worth more than EVIDENCE_UNITS on its own."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        ids = {
            word: opened.add(text, workspace="harbor", keywords=(word,)).id
            for word, text in (
                ("sidekiq", "Sidekiq queues: critical (webhooks), default, mailers, low"),
                ("battery", "Battery lasted 3 days: the UART console stayed on in release"),
                ("pm_static.yml", "pm_static.yml is frozen; never let it be generated"),
                ("tests", "Never run the integration tests against production"),
            )
        }
        for text in ("Deploy with kamal deploy -d production", "Ports: Puma 3001, MySQL 3307"):
            opened.add(text, workspace="harbor")
        yield opened, vault, ids


@pytest.mark.parametrize(
    "prompt", ["sidekiq", "Battery", "battery!", "run the tests", "looks good, run the tests"]
)
def test_a_prompt_of_one_topic_word_injects_nothing(
    worded: tuple[Store, Path, dict[str, str]], prompt: str
) -> None:
    # Held-out set 2 (tests/data/prompts-heldout2.json): "deploy", "sidekiq", "battery",
    # "run the tests" injected the memories that mention the word.
    store, vault, _ = worded
    found = store.search(prompt, workspace=None)
    assert found.hits and context(store, prompt) == []
    assert hook(vault, "harbor", prompt) == ""


def test_a_search_for_one_word_is_answered(worded: tuple[Store, Path, dict[str, str]]) -> None:
    """Only what injects context stays silent: `memstore search sidekiq` asked for the word,
    and the memory holding it is a confident answer (not "no memory has every word")."""
    store, _, ids = worded
    found = store.search("sidekiq", workspace=None)
    assert confident(found)[:1] == [ids["sidekiq"]] and not found.weak


@pytest.mark.parametrize(
    ("prompt", "word"),
    [
        ("pm_static.yml", "pm_static.yml"),  # a particular, not a topic
        ("sidekiq?", "sidekiq"),  # a question about it
        ("what are the sidekiq queues", "sidekiq"),
        ("battery dies after 3 days", "battery"),
    ],
)
def test_an_identifier_or_a_question_about_one_word_still_answers(
    worded: tuple[Store, Path, dict[str, str]], prompt: str, word: str
) -> None:
    store, _, ids = worded
    found = store.search(prompt, workspace=None)
    assert confident(found)[:1] == [ids[word]] and context(store, prompt)[:1] == [ids[word]]


@pytest.fixture
def fieldkit(tmp_path: Path) -> Iterator[tuple[Store, Path, dict[str, str]]]:
    """A small firmware vault: the battery lesson, and a memory holding "dies" beside it."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        ids = {
            keywords[0]: opened.add(text, workspace="fieldkit", keywords=keywords).id
            for text, keywords in (
                (
                    "Battery drained in 3 days on release builds: the UART console stayed "
                    "powered; disable CONFIG_SERIAL in prj_release.conf",
                    ("battery", "power"),
                ),
                ("The watchdog dies silently when the BLE stack stalls", ("watchdog",)),
                ("Release builds are signed with the MCUboot key in CI", ("mcuboot",)),
                ("Build the firmware with west build -b fieldkit_nrf52840", ("west",)),
                ("The humidity sensor is calibrated at 25 C before shipping", ("sensor",)),
                ("Flash over SWD with nrfjprog --program build/zephyr/merged.hex", ("flash",)),
                ("BLE advertising interval is 1 s in production, 100 ms in debug", ("ble",)),
                ("Logs go to RTT in debug builds; read them with JLinkRTTViewer", ("logs",)),
            )
        }
        yield opened, vault, ids


@pytest.mark.parametrize(
    "prompt",
    [
        "my battery dies so fast on release builds, honestly annoying",
        "the battery dies within days on release builds, customers are angry",
    ],
)
def test_a_prompt_with_everyday_words_the_vault_never_measured_is_answered(
    fieldkit: tuple[Store, Path, dict[str, str]], prompt: str
) -> None:
    """Held-out set 2's misses: "dies", "annoying", "angry" (one memory or none holds them)
    counted against the battery lesson as much as the vault's rarest word; as everyday
    English (catalog/english_prior.py) they say little of what a prompt is about."""
    store, vault, ids = fieldkit
    assert f"[{ids['battery']}]" in hook(vault, "fieldkit", prompt)
    # A search or a recall means every word: its tiers stay what the vault measured.
    found = store.search(prompt, workspace="fieldkit")
    assert found.hits[0].id == ids["battery"] and found.weak


@pytest.mark.parametrize(
    "prompt",
    [
        "battery dies in a few days with the zigbee radio on release builds",
        "battery dies within days on release builds with the lorawan modem",
    ],
)
def test_a_rare_word_no_memory_holds_still_keeps_the_hook_silent(
    fieldkit: tuple[Store, Path, dict[str, str]], prompt: str
) -> None:
    """A product the vault does not know ("zigbee", "lorawan": not everyday English) says
    the prompt is about something else: it counts in full against every hit."""
    _, vault, _ = fieldkit
    assert hook(vault, "fieldkit", prompt) == ""
