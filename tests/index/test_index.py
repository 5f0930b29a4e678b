"""The search engine on its own: BM25F, analysis, hostile queries, entities, damage."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.index import Document, Query, SearchIndex, SearchIndexError, engine, extract_entities
from memstore.index import entities as entities_module
from memstore.index.analysis import (
    _PLAIN_WORD,
    STOP_WORDS,
    WordCachedAnalyzer,
    identifier_parts,
    make_chain,
)
from memstore.index.scoring import segment_id

DOCS = [
    Document(
        "w/a.md",
        "aaaa1111",
        "webshop",
        "lesson",
        "Upload 413: nginx client_max_body_size is too small; raise it.",
        ("nginx", "upload"),
    ),
    Document(
        "w/b.md",
        "bbbb2222",
        "webshop",
        "note",
        "Staging deploys need approval from @maria.",
        ("deploy",),
    ),
    Document("g/c.md", "cccc3333", "global", "core", "Always use pnpm, never npm.", ("pnpm",)),
    Document(
        "i/d.md",
        "dddd4444",
        "infra",
        "lesson",
        "Lỗi kết nối cơ sở dữ liệu means the replica is down.",
        ("postgres",),
    ),
    Document(
        "i/e.md",
        "eeee5555",
        "infra",
        "note",
        "The OrderService reads /etc/webshop/orders.yaml on start.",
        (),
    ),
    Document(
        "i/f.md", "ffff6666", "infra", "note", "Deploying terraform needs Atlantis.", ("terraform",)
    ),
]


@pytest.fixture
def index(tmp_path: Path) -> SearchIndex:
    opened = SearchIndex.open(tmp_path / "ix")
    opened.apply(DOCS)
    yield opened
    opened.close()


def ids(hits: list) -> list[str]:
    return [h.document.id for h in hits]


def test_strict_query_needs_every_term(index: SearchIndex) -> None:
    assert ids(index.search("nginx upload")) == ["aaaa1111"]
    assert index.search("nginx approval") == []
    assert set(ids(index.search("nginx approval", any_term=True))) == {"aaaa1111", "bbbb2222"}


def test_stemming_and_accent_folding(index: SearchIndex) -> None:
    assert "ffff6666" in ids(index.search("deploy terraform"))
    assert ids(index.search("deploying")) and "bbbb2222" in ids(index.search("deploy approvals"))
    assert ids(index.search("loi ket noi")) == ["dddd4444"]
    assert ids(index.search("lỗi kết nối")) == ["dddd4444"]


def test_identifiers_are_found_whole_and_by_part(index: SearchIndex) -> None:
    assert ids(index.search("client_max_body_size")) == ["aaaa1111"]
    assert ids(index.search("body size")) == ["aaaa1111"]
    assert ids(index.search("OrderService")) == ["eeee5555"]
    assert ids(index.search("orders.yaml")) == ["eeee5555"]
    assert identifier_parts("OrderService") == ["OrderService", "Order", "Service"]


CJK = [
    Document("c/zh.md", "zh000001", "global", "note", "中文测试 部署需要审批", ()),
    Document("c/ja.md", "ja000001", "global", "note", "日本語のメモ: デプロイは金曜日に禁止", ()),
    Document("c/ko.md", "ko000001", "global", "note", "배포는 금요일에 금지", ()),
    Document("c/mix.md", "mx000001", "global", "note", "v2配置文件 lives in config_部署.yaml", ()),
]


def test_a_word_inside_chinese_japanese_or_korean_text_is_found(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "cjk")
    index.apply(CJK)
    try:
        for query, expected in [
            ("部署", {"zh000001", "mx000001"}),  # inside a run, and between _ and .
            ("审批", {"zh000001"}),
            ("部署需要审批", {"zh000001"}),  # the whole run still
            ("デプロイ", {"ja000001"}),
            ("日本語", {"ja000001"}),
            ("金曜日 禁止", {"ja000001"}),
            ("배포", {"ko000001"}),
            ("配置", {"mx000001"}),
            ("v2 config yaml", {"mx000001"}),
        ]:
            assert set(ids(index.search(query))) == expected, query
        assert index.search("審批") == []  # another character is another word
        assert identifier_parts("デプロイ") == ["デプ", "プロ", "ロイ"]
        assert identifier_parts("v2配置") == ["v2", "配置"] and identifier_parts("金") == ["金"]
    finally:
        index.close()


PLAIN = "abcdefghijklmnopqrstuvwxyz0123456789"
PLAIN = "abcdefghijklmnopqrstuvwxyz0123456789"


@given(
    st.one_of(
        st.text(PLAIN, min_size=1, max_size=14),
        st.text("0123456789", min_size=1, max_size=12),
        st.sampled_from(sorted(w for w in STOP_WORDS if _PLAIN_WORD.fullmatch(w))),
        st.sampled_from(["running", "generously", "sky", "ies", "news", "1st", "37xzzqu6"]),
    )
)
@settings(max_examples=800, deadline=None)
def test_a_plain_words_shortcut_gives_what_the_whole_chain_gives(word: str) -> None:
    # ids, numbers and lowercase words skip the filter chain when analysed (a rebuild's
    # analysis is mostly such words): the terms must be the chain's, or the index changes
    assert _PLAIN_WORD.fullmatch(word)
    chain = tuple(t.text for t in make_chain()(word, mode="index"))
    assert WordCachedAnalyzer()._analyze_word(word) == chain


def test_keywords_are_searched_but_weigh_less_than_content(tmp_path: Path) -> None:
    ix = SearchIndex.open(tmp_path / "kw")
    ix.apply(
        [
            Document("a", "a", "w", "note", "redis cache eviction", ()),
            Document("b", "b", "w", "note", "cache eviction policy", ("redis",)),
        ]
    )
    assert ids(ix.search("redis")) == ["a", "b"]
    ix.close()


def test_workspace_filter(index: SearchIndex) -> None:
    assert ids(index.search("pnpm", workspaces={"webshop", "global"})) == ["cccc3333"]
    assert index.search("pnpm", workspaces={"webshop"}) == []


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.text(max_size=80)
    | st.sampled_from(['"', "(", "a AND", "NOT", "*", "~2", "-", "x:y", "[", "\\", "OR OR", "\x00"])
)
def test_any_query_text_is_data_and_never_raises(index: SearchIndex, query: str) -> None:
    index.search(query)
    index.search(query, any_term=True)


def test_upsert_replaces_and_delete_removes(index: SearchIndex) -> None:
    index.apply(
        [Document("w/b.md", "bbbb2222", "webshop", "note", "Prod deploys need two approvals.", ())]
    )
    assert index.search("staging approval") == []
    assert ids(index.search("prod approvals")) == ["bbbb2222"]
    index.apply([], ["w/b.md"])
    assert index.search("prod approvals") == [] and index.count() == len(DOCS) - 1


def test_find_by_workspace_and_only_key_workspace_and_text_are_terms(tmp_path: Path) -> None:
    ix = SearchIndex.open(tmp_path / "f")
    ix.apply([Document("w/k2", "abzz9999", "w", "note", "y", ("kw",), hash="h2")])
    ix.apply([Document("v/k", "abcd1234", "v", "note", "x", (), hash="h1")])
    ix.apply([Document("w/k1", "abcd5678", "w", "note", "z", (), hash="h3")])
    assert [(d.key, d.id, d.hash) for d in ix.find("w")] == [
        ("w/k1", "abcd5678", "h3"),
        ("w/k2", "abzz9999", "h2"),
    ]
    assert ix.find("other") == []
    # ids and hashes are stored, not indexed: they gave every memory two terms of its own
    with ix._ix.searcher() as searcher:
        fields = {field for field, _ in searcher.reader().all_terms()}
    assert fields == {"key", "workspace", "content", "keywords"}
    ix.close()


def test_entity_table_records_what_documents_name(index: SearchIndex) -> None:
    assert index.entity_keys(["client_max_body_size"]) == {"w/a.md": 1}
    assert index.entity_keys(["@maria", "/etc/webshop/orders.yaml"]) == {"w/b.md": 1, "i/e.md": 1}


MENTIONS = ["@ana", "@ben", "@cleo", "src/app/main.py", "v2.3.1", "err_pnpm_peer_dep"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    mentions=st.lists(st.sets(st.sampled_from(MENTIONS)), min_size=1, max_size=25),
    asked=st.sets(st.sampled_from(MENTIONS)),
    excluded=st.sets(st.integers(0, 24)),
    limit=st.integers(0, 6),
)
def test_shared_with_equals_counting_every_key(
    tmp_path: Path, mentions: list[set[str]], asked: set[str], excluded: set[int], limit: int
) -> None:
    """The top keys by shared entities, from set intersections and sorted lists, are the
    ones counting every key's rows gives."""
    root = tmp_path / f"ix{len(list(tmp_path.iterdir()))}"
    ix = SearchIndex.open(root)
    try:
        docs = [
            Document(f"w/{i:02d}.md", f"id{i:06d}", "w", "note", " ".join(["see", *sorted(m)]), ())
            for i, m in enumerate(mentions)
        ]
        ix.apply(docs)
        exclude = {f"w/{i:02d}.md" for i in excluded}
        counts = {k: n for k, n in ix.entity_keys(asked).items() if k not in exclude}
        expected = sorted(counts, key=lambda k: (-counts[k], k))[:limit]
        assert ix.shared_with(asked, limit, exclude) == expected
        assert ix.shared_with(asked, limit, exclude) == expected  # from the cache
    finally:
        ix.close()


def test_entity_extraction_kinds() -> None:
    found = dict(
        extract_entities(
            "See https://staging.example.com/api, edit /etc/nginx/nginx.conf and src/app/main.py; "
            "set client_max_body_size; OrderService threw ERR_PNPM_PEER_DEP on v2.3.1, ask @maria about `make deploy`"
        )
    )
    assert found["https://staging.example.com/api"] == "url"
    assert found["/etc/nginx/nginx.conf"] == "path" and found["src/app/main.py"] == "path"
    assert found["client_max_body_size"] == "identifier" and found["orderservice"] == "identifier"
    assert found["err_pnpm_peer_dep"] == "code" and found["v2.3.1"] == "version"
    assert found["@maria"] == "mention" and found["make deploy"] == "quoted"


@given(
    st.lists(
        st.sampled_from(
            [
                "https://x.io/a",
                "@maria",
                "src/app.py",
                "/etc/nginx/nginx.conf",
                "v1.2.3",
                "2.0",
                "MAX_SIZE",
                "ABC123",
                "snake_case",
                "camelCase",
                "`cmd`",
                '"quoted text"',
                ":",
                "/",
                ".",
                "@",
                "_",
                "`",
                '"',
                " ",
                "\n",
                "word",
                "Nginx",
                "x",
                # the gates' edges: a small letter then a capital, a capital then a capital,
                # digit or underscore, digits around a dot, letters and digits around "_"
                *("a", "B", "Z", "9", "0", "v", "getHTTP", "xY", "OrderService", "ABc"),
                *("A_", "_B", "Q1", "1.", ".2", "v2", "٣", "ǅ", "é", "_9", "z_"),
            ]
        ),
        max_size=12,
    ).map("".join)
)
@settings(max_examples=600, deadline=None)
def test_skipping_patterns_a_text_cannot_match_changes_no_entity(text: str) -> None:
    assert extract_entities(text) == extract_entities(text, skip=False) == _entities_s9(text)


@given(
    st.lists(
        st.sampled_from(
            [
                *("https://x.io/a", "@maria", "src/app.py", "/etc/nginx/nginx.conf", "~/.ssh/x"),
                *("v1.2.3", "2.0", "MAX_SIZE", "ABC123", "snake_case", "camelCase", "`cmd`"),
                *("/", ".", "@", "_", ":", "`", "x", "Nginx", "a.b/c", "v2", "1.", ".2"),
                # every kind of whitespace at a run's edge: the scan of a pattern starts
                # after a space or a line's end before its first marker, and ends at the
                # end of the run holding its last
                *(" ", "\n", "\t", "\r", "\f", "\v", "\u00a0", "\u2003", "\u3000", "\x1c"),
            ]
        ),
        max_size=14,
    ).map("".join)
)
@settings(max_examples=400, deadline=None)
def test_scanning_only_the_marked_runs_changes_no_entity(text: str) -> None:
    assert extract_entities(text) == extract_entities(text, skip=False) == _entities_s9(text)


def _entities_s9(text: str) -> list[tuple[str, str]]:
    """extract_entities as the ninth session left it (its loop since made leaner)."""
    found: dict[str, str] = {}
    claimed: list[tuple[int, int]] = []
    for kind, pattern, needs, gate in entities_module._PATTERNS:
        if needs and not any(n in text for n in needs):
            continue
        if gate is not None and gate.search(text) is None:
            continue
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < e and s < end for s, e in claimed) and kind != "quoted":
                continue
            value = (
                next((g for g in match.groups() if g), match.group(0))
                if match.groups()
                else match.group(0)
            )
            value = value.strip().lower()
            if len(value) >= 2:
                found.setdefault(value, kind)
            claimed.append((start, end))
    return sorted(found.items())


def test_damaged_index_raises_search_index_error(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    ix = SearchIndex.open(root)
    ix.apply(DOCS)
    ix.close()
    for toc in (root / "whoosh").glob("*.toc"):
        toc.write_bytes(b"garbage")
    with pytest.raises(SearchIndexError):
        SearchIndex.open(root)
    moved = SearchIndex.quarantine(root)
    assert moved.exists() and not root.exists()


def test_results_do_not_depend_on_segment_layout(tmp_path: Path) -> None:
    one = SearchIndex.open(tmp_path / "one")
    one.apply(DOCS)
    many = SearchIndex.open(tmp_path / "many")
    for doc in DOCS:
        many.apply([doc])
    for query in ("nginx", "deploy", "pnpm npm", "the"):
        for any_term in (False, True):
            assert ids(one.search(query, any_term=any_term)) == ids(
                many.search(query, any_term=any_term)
            )
    one.close()
    many.close()


def test_scores_after_updates_and_deletes_equal_a_fresh_build(tmp_path: Path) -> None:
    updated = SearchIndex.open(tmp_path / "updated")
    updated.apply(DOCS)
    for doc in DOCS[:3]:  # rewrite some, identically and not, one commit each
        updated.apply([doc])
    changed = Document(
        "w/b.md", "bbbb2222", "webshop", "note", "Prod deploys need two approvals.", ()
    )
    updated.apply([changed])
    updated.apply([], ["i/f.md"])
    fresh = SearchIndex.open(tmp_path / "fresh")
    fresh.apply([changed if d.key == "w/b.md" else d for d in DOCS if d.key != "i/f.md"])
    for query in ("nginx", "deploy", "pnpm npm", "approvals prod", "webshop orders"):
        for any_term in (False, True):
            a = [
                (h.document.key, round(h.score, 6))
                for h in updated.search(query, any_term=any_term)
            ]
            b = [
                (h.document.key, round(h.score, 6)) for h in fresh.search(query, any_term=any_term)
            ]
            assert a == b, query
    updated.close()
    fresh.close()


def test_commits_leave_large_segments_alone_and_compact_merges_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # scaled down: "large" is above 5 documents here (500 in use)
    monkeypatch.setattr(engine, "MERGE_MAX_DOCS", 5)
    index = SearchIndex.open(tmp_path / "ix")
    index.apply(
        [Document(f"w/{n}.md", f"{n:08x}", "w", "note", f"kafka lag {n}") for n in range(10)]
    )
    for n in range(12):  # one document a commit, as adds do
        index.apply([Document(f"w/x{n}.md", f"x{n:07x}", "w", "note", f"redis note {n}")])
    # the small segments merge by tiers; the 10-document one stays as it is
    sizes = sorted(r.doc_count_all() for r, _ in index.reader.searcher().reader().leaf_readers())
    assert sizes[-1] == 10 and index.segment_count() > 1
    before = index.search("kafka lag", limit=5)
    index.compact()
    assert index.segment_count() == 1 and index.search("kafka lag", limit=5) == before
    index.close()


def test_only_large_segments_piling_up_call_for_compacting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "MERGE_MAX_DOCS", 50)  # "large" is above 50 documents here
    index = SearchIndex.open(tmp_path / "ix")
    for n in range(40):  # small commits: the tiers keep them few, no compacting needed
        index.apply([Document(f"w/s{n}.md", f"s{n:07x}", "w", "note", f"redis note {n}")])
    assert not index.needs_compacting()
    for batch in range(engine.COMPACT_SEGMENTS + 1):  # large batches, as syncs bring in
        docs = [
            Document(f"w/b{batch}-{n}.md", f"b{batch:03}{n:05x}", "w", "note", f"kafka {n}")
            for n in range(60)
        ]
        assert not index.needs_compacting()
        index.apply(docs)
    assert index.needs_compacting()
    index.compact()
    assert not index.needs_compacting() and index.segment_count() == 1
    index.close()


def test_one_document_commits_merge_by_tiers_and_rewrite_few_documents(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    index.apply([Document(f"w/{n}.md", f"{n:08x}", "w", "note", f"kafka {n}") for n in range(600)])
    rewritten = []
    for n in range(300):  # one document a commit, as adds do
        before = {segment_id(r) for r, _ in index.reader.searcher().reader().leaf_readers()}
        index.apply([Document(f"w/x{n}.md", f"x{n:07x}", "w", "note", f"redis note {n}")])
        leaves = [r for r, _ in index.reader.searcher().reader().leaf_readers()]
        written = [r.doc_count_all() for r in leaves if segment_id(r) not in before]
        assert len(written) == 1  # the commit's own segment, with whatever merged into it
        rewritten.append(written[0] - 1)
        tiers = Counter(engine._tier(r.doc_count_all()) for r in leaves if r.doc_count_all() <= 500)
        assert max(tiers.values()) < engine.MERGE_TIER, tiers
    assert sum(r.doc_count_all() for r in leaves) == 900  # nothing lost in merges
    assert 600 in [r.doc_count_all() for r in leaves]  # the large segment was left alone
    rewritten.sort()
    assert rewritten[len(rewritten) * 95 // 100] <= 10 and rewritten[-1] < 300, rewritten[-20:]
    assert len(index.search("redis note", limit=500)) == 300
    index.close()


def test_an_any_word_search_survives_another_writer_committing_midway(tmp_path: Path) -> None:
    """Another process's commit between a search's first look and its scoring must not close
    the searcher the search goes on with (whoosh.reading.ReaderClosed, seen live)."""
    reader = SearchIndex.open(tmp_path / "ix")
    writer = SearchIndex.open(tmp_path / "ix")
    reader.apply([Document("a.md", "a1", "w", "note", "nginx upload limit")])
    real = reader.reader._terms

    def terms_then_another_commit(query: Query, typos: bool) -> list[str]:
        found = real(query, typos)
        writer.apply([Document("b.md", "b1", "w", "note", "nginx proxy buffers")])
        return found

    reader.reader._terms = terms_then_another_commit  # type: ignore[method-assign]
    hits = reader.search("nginx upload", any_term=True)
    assert [h.document.key for h in hits] == ["a.md"]  # the index as the search began
    reader.reader._terms = real  # type: ignore[method-assign]
    assert {h.document.key for h in reader.search("nginx", any_term=True)} == {"a.md", "b.md"}
