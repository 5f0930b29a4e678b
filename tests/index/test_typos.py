"""Typo tolerance and natural-language prompts (issue 13, item 9).

A query word no memory holds is searched as the nearest word memories do hold, marked; the
prompt hook answers chatty prompts ("… can you fix the upload limit?") and stays silent on
prompts the vault cannot answer.
"""

from __future__ import annotations

import bisect
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.index import Document, SearchIndex
from memstore.index.analysis import make_analyzer, query_terms
from memstore.index.typos import distance, max_distance, near_terms, ranked, searched_forms
from memstore.ops.client import Request
from memstore.ops.hooks import answer
from memstore.ops.tools import recall
from memstore.service.store import Store
from tests.conftest import REPO_ROOT, git, settings_at
from tests.daemon.test_daemon import env, make_vault, requests_served, run, start_daemon  # noqa: F401

PROMPTS = REPO_ROOT / "tests" / "data" / "prompts-natural.json"


def test_a_swap_of_neighbouring_letters_is_one_edit() -> None:
    assert distance("kafak", "kafka") == 1 and distance("ngnix", "nginx") == 1
    assert distance("teraform", "terraform") == 1 and distance("refuses", "reuse") == 2
    assert distance("abc", "abc") == 0 and distance("", "abc") == 3


def test_only_words_of_four_letters_without_digits_may_stand_in() -> None:
    assert [max_distance(t) for t in ("teh", "kafk", "ngnix", "teraform")] == [0, 1, 1, 2]
    assert max_distance("p3008") == 0 and max_distance("1mb") == 0
    assert max_distance("x" * 41) == 0  # pasted, not typed


def test_the_automaton_walks_a_sorted_table_for_terms_within_reach() -> None:
    table = sorted(["kafka", "kafkaesque", "nginx", "terraform", "terra", "aerraform", "upload"])

    def first_at_or_after(text: str) -> str | None:
        at = bisect.bisect_left(table, text)
        return table[at] if at < len(table) else None

    assert near_terms("teraform", 2, [first_at_or_after]) == {"terraform"}  # not aerraform
    assert near_terms("kafak", 1, [first_at_or_after]) == {"kafka"}
    assert near_terms("uplaod", 1, [first_at_or_after]) == {"upload"}
    assert near_terms("zebra", 1, [first_at_or_after]) == set()


@settings(max_examples=150, deadline=None)
@given(
    term=st.text("abcdeor", min_size=4, max_size=10),
    vocabulary=st.lists(st.text("abcdeor", min_size=1, max_size=12), min_size=1, max_size=300),
)
def test_the_lazy_automaton_finds_what_the_whole_one_and_the_distance_find(
    term: str, vocabulary: list[str]
) -> None:
    from whoosh.automata.fsa import find_all_matches

    from memstore.index.typos import automaton

    table = sorted(set(vocabulary))

    def first_at_or_after(text: str) -> str | None:
        at = bisect.bisect_left(table, text)
        return table[at] if at < len(table) else None

    for edits in (1, 2):
        found = near_terms(term, edits, [first_at_or_after])
        whole = automaton(term, edits)._nfa.to_dfa()
        assert found == set(find_all_matches(whole, first_at_or_after))
        expected = {t for t in table if t[:1] == term[:1] and distance(term, t) <= edits}
        assert found == expected


def test_the_nearest_wins_then_the_most_frequent_and_the_first_letter_is_kept() -> None:
    assert ranked("bolt", {"bold": 3, "boat": 1, "colt": 9}) == [(1, "bold"), (1, "boat")]
    # two edits lose to one however frequent; two are allowed from 8 letters only
    assert ranked("deploymant", {"deplaymint": 90, "deployment": 1}) == [
        (1, "deployment"),
        (2, "deplaymint"),
    ]
    assert ranked("mock", {"lock": 5}) == [] and ranked("kafk", {"kafka": 0}) == []


@pytest.fixture
def index(tmp_path: Path) -> SearchIndex:
    opened = SearchIndex.open(tmp_path / "index")
    texts = {
        "tf": "Terraform state moved to Terraform Cloud; terraform init hangs without login",
        "tf2": "Never run terraform apply against prod from a laptop",
        "py": "pytest hangs on CI after upgrading testcontainers",
        "form": "The signup form posts to /api/signup",
        "farm": "The render farm runs on spot instances",
        "reuse": "Reuse the connection pool; do not open one per request",
        "lock": "Postgres advisory lock for order numbers",
        "stream": "Kafka stream of order events",
    }
    opened.apply(Document(key, key, "global", "note", text) for key, text in texts.items())
    return opened


def test_an_unknown_word_is_searched_as_the_nearest_known_one(index: SearchIndex) -> None:
    assert index.search("teraform", typos=False) == []
    hits = index.search("teraform", typos=True)
    assert [h.document.key for h in hits] == ["tf", "tf2"]
    (stand_in,) = index.stand_ins("teraform hangs")
    assert stand_in.label() == "teraform → terraform" and stand_in.distance == 1
    assert index.search("teraform hangs", typos=True)[0].document.key == "tf"  # all words
    assert index.unknown_terms("teraform hangs") == 1
    assert index.unknown_terms("teraform hangs", typos=True) == 0


def test_a_word_the_vault_knows_is_never_corrected(index: SearchIndex) -> None:
    assert index.stand_ins("form farm reuse lock stream") == []
    assert [h.document.key for h in index.search("form", typos=True)] == ["form"]


def test_real_words_the_vault_lacks_are_left_alone(index: SearchIndex) -> None:
    # one edit from a known stem but not from how memories write it (refuses: refus ~ reus),
    # another first letter (mock ~ lock), a longer word (upstream ~ stream); short words
    assert index.stand_ins("refuses mock upstream frm") == []


def test_a_typo_the_stemmer_takes_further_away_is_read_from_the_word_typed(
    tmp_path: Path,
) -> None:
    # "depoly" stems to depoli (y after a consonant → i), two edits from deploy; the word
    # typed is one swap from it. The same for "dealy" (deali) and delay.
    assert searched_forms("depoli", "depoly") == ["depoli", "depoly"]
    assert searched_forms("serv", "serve") == ["serv"] and searched_forms("send", "sent") == [
        "send"
    ]
    opened = SearchIndex.open(tmp_path / "index")
    texts = {
        "d": "Deploy the API with the blue-green script",
        "l": "Add a delay between retries of the webhook",
        "p": "The police report template lives in docs",
        "s": "The build server keeps its folder of logs",
    }
    opened.apply(Document(key, key, "global", "note", text) for key, text in texts.items())
    assert [s.label() for s in opened.stand_ins("depoly api")] == ["depoly → deploy"]
    assert [s.label() for s in opened.stand_ins("dealy retries")] == ["dealy → delay"]
    assert [h.document.key for h in opened.search("depoly", typos=True)] == ["d"]
    # real words the vault lacks stay uncorrected: deplore (deplor is one edit from the
    # stem deploy, the word two from it), dealt (two edits from delay either way); serve
    # and folded are one edit from the stems server and folder, but their stems (serv,
    # fold) are not, and the word typed is walked only after a y → i
    assert opened.stand_ins("deplore dealt serve folded") == []


def test_contractions_are_read_as_their_words() -> None:
    analyzer = make_analyzer()
    assert query_terms(analyzer, "I can't connect, it doesn't work") == ["connect", "work"]
    assert query_terms(analyzer, "what's in pnpm’s store") == ["pnpm", "store"]


def checkout(where: Path, workspace: str) -> Path:
    """A project checkout whose workspace is `workspace` (its folder's name)."""
    path = where / "projects" / workspace
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    return path


def hook_prompt(vault: Path, workspace: str, prompt: str) -> str:
    environment = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    project = checkout(vault.parent, workspace)
    payload = json.dumps({"prompt": prompt, "cwd": str(project)}).encode()
    reply = answer(Request("hook", ["prompt"], str(project), environment, payload))
    assert reply.status == 0 and reply.stderr == ""
    return reply.stdout


def test_the_prompt_hook_answers_a_chatty_prompt(sample_vault: Path) -> None:
    # search had the memory, marked weak, and the hook was silent (issue 13)
    prompt = "file uploads over 1MB fail with 413, can you fix the upload limit?"
    out = hook_prompt(sample_vault, "webshop", prompt)
    assert out.startswith("Relevant memories") and "[mfjscswv]" in out
    ask = "is it ok to force push to main to clean up the history?"
    assert "[6msigexx]" in hook_prompt(sample_vault, "webshop", ask)
    assert hook_prompt(sample_vault, "webshop", "write a haiku about autumn leaves") == ""


def test_the_prompt_hook_says_which_word_it_read_as_another(sample_vault: Path) -> None:
    out = hook_prompt(sample_vault, "infra", "where does teraform keep the prod state these days?")
    lines = out.splitlines()
    assert lines[1] == "(Searched unknown words as known ones: teraform → terraform.)"
    assert "[4swkexl5]" in out


def test_a_typo_ranks_the_memory_meant_first_and_recall_says_so(sample_vault: Path) -> None:
    with Store.open(settings_at(sample_vault)) as store:
        found = store.search("teraform hangs", workspace=None)
        assert "Terraform" in found.hits[0].content  # was: pytest hangs, marked confident
        answered = recall(store, {"query": "teraform hangs"}, workspace="all", live=False)
    assert answered["message"].startswith(
        "Searched unknown words as known ones: teraform → terraform. "
    )


def test_memstore_search_says_which_word_it_read_as_another(sample_vault: Path) -> None:
    environment = {**os.environ, "MEMSTORE_VAULT": str(sample_vault)}
    text = run(environment, "search", "teraform", "prod", "state", "--all")
    assert text.returncode == 0, text.stderr
    assert (
        text.stdout.splitlines()[0] == "Searched unknown words as known ones: teraform → terraform."
    )
    assert "4swkexl5" in text.stdout
    as_json = json.loads(run(environment, "search", "teraform", "--all", "--json").stdout)
    assert as_json["read_as"] == [{"word": "teraform", "as": "terraform"}]
    known = json.loads(run(environment, "search", "terraform", "--all", "--json").stdout)
    assert known["read_as"] == []


def test_natural_prompts_reach_the_hook_and_off_topic_ones_stay_silent(
    sample_vault: Path,
) -> None:
    data = json.loads(PROMPTS.read_text(encoding="utf-8"))
    with Store.open(settings_at(sample_vault)) as store:

        def shown(prompt: str) -> list[str]:
            return [h.id for h in store.search(prompt, workspace=None).hits if not h.weak]

        answered = [q["prompt"] for q in data["answerable"] if q["want"] in shown(q["prompt"])]
        noisy = [q["prompt"] for q in data["off_topic"] if shown(q["prompt"])]
    # measured: 31 of 34 answered (was 23), 18 of 18 silent (docs/retrieval.md)
    assert len(answered) >= 0.85 * len(data["answerable"]), answered
    assert len(noisy) <= 0.1 * len(data["off_topic"]), noisy
    typos = [q["prompt"] for q in data["answerable"] if "typo" in q["tags"]]
    assert set(typos) <= set(answered)


def test_the_daemon_and_the_hook_process_print_the_same_stand_in(
    tmp_path: Path,
    env: dict[str, str],  # noqa: F811
) -> None:
    served, alone = make_vault(tmp_path / "served"), make_vault(tmp_path / "alone")
    start_daemon(env, served)
    project = checkout(tmp_path, "data-pipeline")
    payload = json.dumps({"prompt": "the kafak consumer keeps getting kicked out of the group"})
    outputs = []
    for vault, environment in ((served, env), (alone, {**env, "MEMSTORE_NO_DAEMON": "1"})):
        environment = {**environment, "MEMSTORE_VAULT": str(vault)}
        done = run(environment, "hook", "prompt", stdin=payload, cwd=project)
        outputs.append((done.returncode, done.stdout, done.stderr))
    assert outputs[0] == outputs[1]
    assert "kafak → kafka" in outputs[0][1] and "[eazbqdsa]" in outputs[0][1]
    assert requests_served(served) == 1


def test_terms_held_in_memory_find_the_stand_ins_the_segment_walks_find(tmp_path: Path) -> None:
    """A resident code index keeps every segment's terms in one sorted list and walks it
    once per unknown word: the same stand-ins and hits as one walk per segment and field,
    and a segment written later is in the next walk."""
    words = ["terraform", "kubernetes", "postgres", "rollback", "webhook"]
    walked = SearchIndex.open(tmp_path / "walked")
    held = SearchIndex.open(tmp_path / "held")
    held.holds_terms = True
    for n, word in enumerate(words):  # one commit each: five segments
        for index in (walked, held):
            index.apply(
                [Document(f"d{n}", f"d{n}", "global", "note", f"{word} notes {n}", (word[:5],))]
            )
    assert held.segment_count() == len(words)
    queries = ["teraform", "kubernets", "postgrs notes", "rollbak", "webhok notes", "zzzz"]

    def answers(index: SearchIndex) -> list[object]:
        return [
            (
                [(h.document.key, round(h.score, 9)) for h in index.search(q, typos=True)],
                [s.label() for s in index.stand_ins(q)],
            )
            for q in queries
        ]

    expected = answers(walked)
    assert sum(1 for hits, _ in expected if hits) == 5  # the typos did find their words
    assert answers(held) == expected
    for index in (walked, held):  # a later segment: its terms join the held list
        index.apply([Document("late", "late", "global", "note", "grafana dashboards")])
    assert [h.document.key for h in held.search("grafanna", typos=True)] == ["late"]
    assert answers(held) == answers(walked)
