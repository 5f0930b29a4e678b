"""A rebuild's index is the one the slow path builds from the same files: every posting (field,
term, document, weight, value), every stored field and field length, every entity row, and the
answers and scores of searches.

The slow path is the code the rebuild's shortcuts stand in for: PyYAML reading every front
matter (no fast path of the codec's, none of YAML's), each word run through the analyzers'
filter chains, and Whoosh's own segment writer. The vault mixes files memstore renders with
hand-written odd front matter, accents, CJK text and identifiers.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from whoosh import index as whoosh_index
from whoosh.writing import SegmentWriter

from memstore.catalog import reading
from memstore.catalog.indexer import rebuild
from memstore.core import codec, yaml_values
from memstore.core.codec import render_memory
from memstore.core.model import KINDS, Memory
from memstore.index import analysis, entities, entity_table
from memstore.index import writer as index_writer
from memstore.vault.files import Vault

WORDS = [
    *("nginx", "upload", "deploy", "kafka", "retries", "running", "the", "a", "42", "007"),
    *("Deploy", "API", "HTTP2", "snake_case_name", "camelCaseName", "XMLHttpRequest"),
    *("src/api/upload.ts", "v2.3.1", "nginx.conf", "types-requests", "to-do", "how-to"),
    *("über", "Übersetzung", "dấu", "đâu", "l'erreur", "c'est", "部署需要审批", "v2配置", "ÉTÉ"),
    *("JIRA-4821", "@alice", "https://example.com/a/b", "`make check`", '"quoted words"', "—"),
]
HAND_WRITTEN = [
    "---\nid: hand0001\nkind: lesson\n# a comment\nkeywords: [a, b]\n---\n{body}\n",
    "---\r\nid: hand0002\r\nkind: note\r\nseen: 3\r\n---\r\n{body}\r\n",
    '---\nid: "hand0003"\nkind: decision\nsource: "cli # not a comment"\n---\n{body}\n',
    "---\nid: hand0004\nkind: weird\nseen: lots\n---\n{body}\n",
    "---\nid: 0012\nkind: note\nkeywords: yes, no, 1e3\n---\n{body}\n",
    "---\nid: hand0006\nkind: note\nseen_by: {laptop: 2, desk: 1}\nseen: 3\n---\n{body}\n",
    "---\nid: hand0007\ntags:\n  - x\n  - y\nowner: bob\n---\n{body}\n",
    "---\nid: hand0008\nkind: [broken\n---\n{body}\n",
    "{body}\n",
    "---\nkind: note\nkeywords: [Deploy, deploy, DEPLOY]\n---\n{body}\n",
    "---\nid: hand0011\nkind: note\ncreated: 2026-12-01\nlast_recalled: 12:30\n---\n{body}\n",
    "---\nid: hand0012\nkind: note\nid: again\n---\n{body}\n",
]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(1, 30)))


def _write_vault(root: Path, count: int) -> None:
    rng = random.Random(39)
    folder = root / "webshop" / "2026-12"
    folder.mkdir(parents=True)
    for n in range(count):
        memory = Memory(
            id=f"m{n:07d}",
            workspace="webshop",
            body=_text(rng),
            kind=rng.choice(KINDS),
            keywords=tuple(rng.sample(WORDS, rng.randint(0, 3))),
            source=rng.choice(["cli", "cursor", "yes", ""]),
            created=f"2026-12-{rng.randint(1, 28):02d}T10:00:00Z",
            seen=rng.randint(1, 4),
            recalled=rng.randint(0, 2),
            supersedes=("abcdefgh",) if n % 17 == 0 else (),
        )
        (folder / f"m-{n}.md").write_text(render_memory(memory), encoding="utf-8")
    for n, template in enumerate(HAND_WRITTEN):
        text = template.replace("{body}", _text(rng))
        (folder / f"hand-{n}.md").write_bytes(text.encode("utf-8"))


def _slow_analysis(self: Any, word: str) -> tuple[str, ...]:
    return tuple(token.text for token in self._chain(word, mode="index"))


def _snapshot(vault: Path) -> dict[str, Any]:
    """Everything the index holds, by document key (document numbers may differ)."""
    indexer, _ = rebuild(Vault(vault))
    root = indexer.search.root
    queries = ["nginx upload", "deploy", "über", "dau", "部署", "snake_case_name", "api http2"]
    answers = {
        q: [(h.document.key, round(h.score, 9)) for h in indexer.search.search(q, limit=20)]
        for q in queries
    }
    indexer.close()
    ix = whoosh_index.open_dir(str(root / "whoosh"))
    with ix.reader() as reader:
        keys = {n: fields["key"] for n, fields in reader.iter_docs()}
        stored = {fields["key"]: fields for _, fields in reader.iter_docs()}
        lengths = {
            (keys[n], name): reader.doc_field_length(n, name)
            for n in keys
            for name in ("content", "keywords", "exact")
        }
        postings = {}
        for fieldname, term in reader.all_terms():
            m = reader.postings(fieldname, term)
            found = []
            while m.is_active():
                found.append((keys[m.id()], m.weight(), m.value()))
                m.next()
            postings[(fieldname, term)] = sorted(found)
    ix.close()
    with sqlite3.connect(root / "entities.sqlite") as db:
        entities = sorted(db.execute("SELECT key, entity, kind FROM entities"))
    with sqlite3.connect(root.parent / "manifest.sqlite") as db:
        # every column of every row (the same files: the same times and sizes)
        manifest = sorted(db.execute("SELECT * FROM files"))
    return {
        "stored": stored,
        "lengths": lengths,
        "postings": postings,
        "entities": entities,
        "answers": answers,
        "manifest": manifest,
    }


def _every_pattern(text: str, *, skip: bool = True) -> list[tuple[str, str]]:
    return entities.extract_entities(text, skip=False)


@pytest.mark.parametrize("shared", [False, True], ids=["one process", "shared with a helper"])
def test_a_rebuild_holds_what_the_slow_path_builds(
    vault: Path, monkeypatch: pytest.MonkeyPatch, shared: bool
) -> None:
    """The slow path also runs every entity pattern on every text (no gates) in one
    process; the fast one is also a build shared with a helper process, this process
    writing its share as a part of its own (as a rebuild of 20,000 files or more does)."""
    _write_vault(vault, 400)
    with (
        mock.patch.object(codec, "read_own", lambda *a, **k: None),
        mock.patch.object(yaml_values, "_load_simple", lambda text: None),
        mock.patch.object(analysis.WordCachedAnalyzer, "_analysis", _slow_analysis),
        mock.patch.object(analysis.ExactAnalyzer, "_analysis", _slow_analysis),
        mock.patch.object(index_writer, "TermWriter", SegmentWriter),
        mock.patch.object(entity_table, "extract_entities", _every_pattern),
    ):
        slow = _snapshot(vault)
    if shared:
        monkeypatch.setattr(reading, "PART_MIN", 100)
        monkeypatch.setattr(reading, "usable_cores", lambda: 2)
    fast = _snapshot(vault)
    if shared:
        segments = list((vault / ".memstore" / "index" / "search" / "whoosh").glob("*.seg"))
        assert len(segments) == 2  # the helper's part and this process's
    assert len(slow["stored"]) == 400 + len(HAND_WRITTEN)
    assert len(slow["manifest"]) == 400 + len(HAND_WRITTEN)
    assert any(fields.get("exact") is None for fields in slow["stored"].values())
    assert sum(1 for field, _ in slow["postings"] if field == "exact") >= 2  # accents indexed
    assert sum(1 for hits in slow["answers"].values() if hits) >= 5
    assert {kind for _, _, kind in slow["entities"]} >= {"identifier", "version", "code"}
    for part in ("stored", "lengths", "postings", "entities", "answers", "manifest"):
        assert fast[part] == slow[part], part
