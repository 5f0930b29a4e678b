"""A lone code candidate (issue 38, fifteenth session): when one chunk alone holds any of a
question's words, it has no next hit to lead, so its text's share of the question is no
evidence of a far lead; a name that matches the question still is."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memstore.catalog import code_hits
from memstore.catalog.code_evidence import Evidence
from memstore.catalog.code_hits import Lead, _is_confident
from memstore.core.model import Hit
from memstore.service.store import Store, init_vault
from tests.conftest import git, settings_at

BUFFER = '''"""Bytes received and not yet parsed."""


class ReceiveBuffer:
    """Bytes read from the peer, held until a whole line has arrived."""

    def __init__(self):
        self.data = bytearray()

    def extract_line(self):
        """Take the first complete line out of the buffer."""
        # a certificate's PEM lines are checked the same way: valid or not, one at a time
        end = self.data.find(b"\\r\\n")
        if end < 0:
            return None
        line = bytes(self.data[:end])
        del self.data[: end + 2]
        return line
'''

WRITER = '''"""Bytes sent to the peer."""


def write_status(status, write):
    """Write the status line of a response."""
    write(b"HTTP/1.1 %d\\r\\n" % status)
'''


@pytest.fixture
def store(tmp_path: Path) -> Store:
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "wire"
    repo.mkdir()
    (repo / "receive_buffer.py").write_text(BUFFER, encoding="utf-8")
    (repo / "writers.py").write_text(WRITER, encoding="utf-8")
    git(repo, "init", "-q")
    opened = Store.open(settings_at(vault))
    opened.ingest(repo, "wire")
    return opened


def code_hits_of(store: Store, question: str) -> list[Hit]:
    found = store.search(question, workspace="wire", k=5, catch_up=False).hits
    return [hit for hit in found if hit.kind == "code"]


def test_the_one_chunk_holding_an_off_corpus_questions_words_is_weak(store: Store) -> None:
    with store:
        found = code_hits_of(store, "where is the TLS certificate verified")
        assert len(found) == 1  # nothing else holds any of its words
        assert found[0].weak


def test_a_lone_candidate_named_as_the_question_asks_is_still_confident(store: Store) -> None:
    with store:
        found = code_hits_of(store, "where do we write the status line")
        assert found[0].keywords[-1] == "write_status"
        assert not found[0].weak


LONE = Lead(
    evidence=Evidence(named=0.0, exact=0.0, context=0.0),
    held=0.62,
    margin=math.inf,
    sibling_lead=0.0,
    elsewhere=1.2,
    words=2,
)


def test_no_next_hit_is_no_far_lead() -> None:
    assert not _is_confident(LONE)
    # the same text's share with a next hit far below it is a far lead
    far = Lead(**{**{f: getattr(LONE, f) for f in Lead.__slots__}, "margin": 1.0})
    assert far.margin >= code_hits.CONFIDENT_FAR_MARGIN
    assert _is_confident(far)
