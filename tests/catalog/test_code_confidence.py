"""Code confidence: the function asked about first and confident, off-corpus questions silent,
confident hits above weak ones beside memories."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memstore.catalog.code_evidence import held, read_question, weigh
from memstore.catalog.code_hits import fuse
from memstore.core.model import Hit
from memstore.service.store import Store
from tests.conftest import git, settings_at


def _methods() -> str:
    """Members enough to make SmtpClient longer than a chunk (a header and one per member)."""
    names = ["connect", "login", "quit", "noop", "reset", "verify", "expand", "helo", "ehlo"]
    return "".join(
        f"    def {name}(self, *args):\n"
        f'        """Run the {name.upper()} command."""\n'
        + "".join(f"        step_{n} = self._command('{name}', {n})\n" for n in range(10))
        + "        return step_9\n\n"
        for name in names
    )


SMTP = (
    '"""A small SMTP client."""\n\n\n'
    "class SmtpClient:\n"
    '    """SMTP client that sends the email messages of the outbox."""\n\n'
    "    retries = 3  # times a message is sent before it is kept\n\n"
    + _methods()
    + "    def send_message(self, message, recipients):\n"
    "        for address in recipients:\n"
    "            self._command('rcpt', address)\n"
    "        self._command('data', message.as_bytes())\n"
)

RETRY = '''"""Retry policy for calls to the billing provider."""

import time

# The provider's Retry-After header says how long to wait; the header value is
# parsed below, and a missing header falls back to the backoff.
BACKOFF_S = (1, 2, 4, 8)
MAX_WAIT_S = 60


def parse_retry_after(value: str) -> float:
    """Return the seconds a Retry-After header value asks to wait."""
    seconds = float(value.strip())
    return min(seconds, MAX_WAIT_S)


def sleep_before_retry(attempt: int) -> None:
    time.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
'''

LOCKS = '''"""The lock file that keeps two writers apart."""

import os


def acquire_lock_file(path: str) -> int:
    """Create the lock file, failing if another writer holds it."""
    return os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)


def release_lock_file(path: str, handle: int) -> None:
    """Close and remove the lock file so the next writer can take it."""
    os.close(handle)
    os.unlink(path)
'''


@pytest.fixture
def store(tmp_path: Path) -> Store:
    from memstore.service.store import init_vault

    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "shop"
    for name, text in {"mail/smtp.py": SMTP, "billing/retry.py": RETRY, "locks.py": LOCKS}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "init", "-q")  # the hook's workspace is the repository's folder name: shop
    opened = Store.open(settings_at(vault))
    opened.ingest(repo, "shop")
    return opened


def code_hits(store: Store, question: str) -> list[Hit]:
    hits = store.search(question, workspace="shop", k=5, catch_up=False).hits
    return [h for h in hits if h.kind == "code"]


def test_the_method_asked_about_ranks_above_its_class_header(store: Store) -> None:
    with store:
        hits = code_hits(store, "where does the smtp client send an email message")
    assert hits[0].content.split("\n", 1)[0].endswith("method SmtpClient.send_message")
    header = next(h for h in hits if h.content.split("\n", 1)[0].endswith("class SmtpClient"))
    assert hits.index(header) > 0


def test_the_function_asked_about_ranks_above_its_module_chunk_and_is_confident(
    store: Store,
) -> None:
    with store:
        hits = code_hits(store, "where do we parse the retry-after header")
    assert hits[0].path.startswith("billing/retry.py:")
    assert hits[0].content.split("\n", 1)[0].endswith("function parse_retry_after")
    assert not hits[0].weak
    assert all(h.weak for h in hits[1:])


def test_a_sibling_sharing_words_is_not_the_answer(store: Store) -> None:
    with store:
        hits = code_hits(store, "how is the lock file released")
    assert hits[0].content.split("\n", 1)[0].endswith("function release_lock_file")
    assert not hits[0].weak


@pytest.mark.parametrize(
    "question",
    [
        "where do we resize uploaded images into thumbnails",
        "how is the jwt token verified",
        "make me a sandwich",
        "who makes the coffee here?",
        "thanks, that worked!",
    ],
)
def test_questions_about_other_code_or_no_code_get_no_confident_hit(
    store: Store, question: str
) -> None:
    with store:
        assert all(h.weak for h in code_hits(store, question))


def test_a_confident_chunk_comes_above_a_weak_memory_and_a_confident_memory_above_weak_code(
    store: Store,
) -> None:
    with store:
        store.add("Press the retry button on the dashboard before paging anyone", workspace="shop")
        store.add("Billing smtp relay password rotates every month", workspace="shop")
        hits = store.search("where do we parse the retry-after header", workspace="shop").hits
        assert hits[0].kind == "code" and not hits[0].weak
        assert [h.weak for h in hits] == sorted(h.weak for h in hits)  # confident first
        memory = next(h for h in hits if h.kind != "code")
        assert memory.weak and hits.index(memory) > 0
        hits = store.search("smtp relay password rotates", workspace="shop").hits
        assert hits[0].kind != "code" and not hits[0].weak
        assert [h.weak for h in hits] == sorted(h.weak for h in hits)


def test_the_prompt_hook_gives_the_confident_function_and_nothing_for_other_prompts(
    store: Store, tmp_path: Path
) -> None:
    from memstore.ops.hooks import prompt_hook

    repo = str(tmp_path / "shop")
    with store:
        lines = prompt_hook(store, {"prompt": "how is the lock file released"}, repo)
        assert len(lines) == 2 and "locks.py:11-14 function release_lock_file" in lines[1]
        assert prompt_hook(store, {"prompt": "make me a sandwich"}, repo) == []
        assert prompt_hook(store, {"prompt": "where do we resize images"}, repo) == []


def _hit(id: str, kind: str, *, weak: bool) -> Hit:
    return Hit(id, "shop", kind, id, id, (), "", "", 1, 1.0, weak)


def test_fuse_puts_every_confident_hit_above_every_weak_one() -> None:
    memories = [_hit("m-weak", "note", weak=True), _hit("m-sure", "note", weak=False)]
    code = [_hit("c-sure", "code", weak=False), _hit("c-weak", "code", weak=True)]
    fused = [h.id for h in fuse(memories, code, 4)]
    # each list keeps its order among hits of one confidence; a memory first on a tie
    assert fused == ["c-sure", "m-sure", "m-weak", "c-weak"]
    assert [h.id for h in fuse([replace(memories[0], weak=False)], code, 2)] == [
        "m-weak",
        "c-sure",
    ]


def test_a_name_made_of_the_question_s_words_matches_it_abbreviated() -> None:
    question = read_question(
        "where do we parse an email address into the display name", {"pars": 5}, 1000
    )
    evidence = weigh(question, "parseaddr", "email/utils.py")
    assert evidence.named > 0.3 and evidence.exact == 1.0
    assert evidence.context > 0  # "email" of email/utils.py
    sibling = weigh(question, "formataddr", "email/utils.py")
    assert sibling.exact == 0.0 and sibling.named < evidence.named
    leap = read_question("check whether a year is a leap year", {}, 1000)
    assert weigh(leap, "isleap", "calendar.py").exact == 1.0  # "is" says nothing


def test_generic_and_unknown_words_are_no_evidence() -> None:
    question = read_question("where is the function that handles the code", {}, 1000)
    assert question.total == 0.0 and weigh(question, "handle_code", "x.py").named == 0.0
    # a word no chunk holds counts against: half the question is missing from any text
    sandwich = read_question("parse a sandwich", {"pars": 10}, 1000)
    assert held(sandwich, "def parse(): ...") < 0.5


def test_a_text_holds_a_word_as_a_word_or_identifier_part_not_inside_another() -> None:
    question = read_question("where is the header parsed", {"header": 3, "pars": 3}, 1000)
    assert held(question, "def parseHeader(raw): ...") == 1.0
    assert held(question, "def parse_header(raw): ...") == 1.0
    assert held(question, "def sparse_leader(raw): ...") == 0.0
