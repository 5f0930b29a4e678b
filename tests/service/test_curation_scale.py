"""Near-duplicates at scale: candidates from rare terms find every pair all-pairs finds, and
audit/dedupe show progress on a terminal only.

Also the benchmark behind the figures in docs/upkeep.md (not a test), from the checkout:

    .venv/bin/python -m tests.service.test_curation_scale --sizes 1000 3000 10000 --root /tmp/curation

It measures the memstore first on sys.path; for other code (a worktree of an older commit),
run it from outside the checkout: cd /tmp && PYTHONPATH=/old/tree:/work/main python -m ...
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memstore.core.codec import derive_id, render_memory, slugify
from memstore.core.config import Settings
from memstore.core.model import Memory
from memstore.index import terms
from memstore.service.curation import NEAR_DUPLICATE, Curator
from memstore.service.store import Store, init_vault
from tests.benchmarks.bench_foundation import SEED, Corpus
from tests.cli.test_upkeep import cli
from tests.conftest import EXE, git

Item = tuple[str, str, frozenset[str]]


def all_pairs(items: list[Item], threshold: float) -> dict[tuple[str, str], float]:
    """Compare every pair of one group, the way near-duplicates were found by brute force."""
    found: dict[tuple[str, str], float] = {}
    for i, (key, group, mine) in enumerate(items):
        for other, other_group, theirs in items[i + 1 :]:
            if group == other_group and mine and theirs:
                share = len(mine & theirs) / max(min(len(mine), len(theirs)), 1)
                if share >= threshold:
                    a, b = sorted((key, other))
                    found[(a, b)] = share
    return found


def unordered(pairs: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    return {(min(a, b), max(a, b)): share for (a, b), share in pairs.items()}


def corpus_texts(count: int) -> list[tuple[str, str]]:
    """(workspace, text) of `count` generated coding-agent memories (bench_foundation's corpus)."""
    corpus = Corpus(SEED)
    made = [corpus.make() for _ in range(count)]
    return [(g.workspace, g.body) for g in made]


# --- the pure parts ----------------------------------------------------------------------
# memstore.core.similar is imported where used: the benchmark below also runs the code from before it.

WORDS = [
    "nginx.conf",
    "v2.3.1",
    "src/cart/parse_user.py",
    "ParseHTTPRequest",
    "the",
    "and",
    "413",
    "Café",
    "naïve",
    "Straße",
    "ÉCOLE",
    "why",
    "does",
    "it",
    "fail?",
    "user_id",
    "kebab-case-name",
    "...",
    "--",
    "__init__",
    "x/y/",
    "a.b-",
    "日本語",
    "running",
    "ran",
]
identifier_text = st.lists(
    st.one_of(
        st.sampled_from(WORDS),
        st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
    ),
    max_size=20,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(identifier_text, max_size=5))
@example(["\U0002f800", "cafe\u0301 e\u0302\u0301t"])  # composed by NFC: 丽, café, ết
def test_term_sets_are_the_index_terms_of_each_text(texts: list[str]) -> None:
    from memstore.core.similar import term_sets

    assert term_sets(texts) == [terms(text) for text in texts]


def test_term_sets_match_the_index_on_the_sample_vault_and_corpus() -> None:
    from memstore.core.similar import term_sets

    sample = Path(__file__).resolve().parents[2] / "sample-vault"
    texts = [p.read_text(encoding="utf-8") for p in sorted(sample.rglob("*.md"))]
    texts += [text for _, text in corpus_texts(500)]
    assert term_sets(texts) == [terms(text) for text in texts]


term_set = st.frozensets(st.sampled_from([f"t{i}" for i in range(14)]), max_size=10)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["a", "b"]), term_set), max_size=40),
    st.sampled_from([0.5, 0.7, 0.9]),
)
def test_counted_overlaps_find_exactly_the_all_pairs_result(
    sets: list[tuple[str, frozenset[str]]], threshold: float
) -> None:
    from memstore.core.similar import similar_pairs

    items = [(f"m{i}", group, chosen) for i, (group, chosen) in enumerate(sets)]
    assert unordered(similar_pairs(items, threshold)) == all_pairs(items, threshold)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["a", "b"]), term_set), max_size=40),
    st.integers(min_value=1, max_value=4),
)
def test_neighbours_keep_every_near_pair_and_each_sets_closest(
    sets: list[tuple[str, frozenset[str]]], count: int
) -> None:
    from memstore.core.similar import neighbours, similar_pairs

    items = [(f"m{i:02}", group, chosen) for i, (group, chosen) in enumerate(sets)]
    loose = similar_pairs(items, 0.5)
    found = neighbours(items, 0.7, loose=0.5, per_set=count)
    assert found.pairs == similar_pairs(items, 0.7)
    assert unordered(found.pairs) == all_pairs(items, 0.7)
    assert found.closest.items() <= loose.items()
    for larger in {b for _, b in loose}:
        mine = sorted((-share, a) for (a, b), share in loose.items() if b == larger)
        expected = {(a, larger): -negative for negative, a in mine[:count]}
        assert {pair: v for pair, v in found.closest.items() if pair[1] == larger} == expected
    assert len(found.closest) <= count * len(items)


def test_every_pair_of_a_3000_memory_corpus_is_found_with_progress() -> None:
    from memstore.core.similar import similar_pairs, term_sets

    texts = corpus_texts(3000)
    sets = term_sets([text for _, text in texts])
    items = [
        (f"m{i}", ws, chosen) for i, ((ws, _), chosen) in enumerate(zip(texts, sets, strict=True))
    ]
    reported: list[tuple[int, int]] = []
    found = similar_pairs(items, NEAR_DUPLICATE, lambda done, total: reported.append((done, total)))
    expected = all_pairs(items, NEAR_DUPLICATE)
    assert len(expected) > 1000 and unordered(found) == expected
    assert reported[-1] == (3000, 3000) and len(reported) > 10


# --- through the store and the CLI -------------------------------------------------------

RESTATED = [
    "Staging deploys need an approval from Maria before merging the release branch",
    "Staging deploys need an approval from Maria before merging the release branch today",
    "Staging deploys need approval from Maria before merging the release branch, always",
    "staging deploys need an approval from maria before merging release branches",
    "Note: staging deploys need an approval from Maria before merging the release branch",
    "Staging deploys need an approval from Maria before merging the release branch (confirmed)",
]


def test_dedupe_lists_every_pair_of_a_cluster_larger_than_a_search_page(vault: Path) -> None:
    # Six restatements of one memory make 15 pairs; a top-4 search per memory missed some.
    settings_ = Settings(vault=vault, source="t", session="t", host="t")
    with Store.open(settings_) as store:
        ids = [store.add(text, workspace="infra").id for text in RESTATED]
        store.add("Use pnpm, never npm, in every JS repo", workspace="infra")
        pairs = Curator(store, datetime.now(UTC)).near_duplicates()
    assert {(a, b) for a, b, _ in pairs} == {
        tuple(sorted((x, y))) for i, x in enumerate(ids) for y in ids[i + 1 :]
    }
    listed = cli(vault, "dedupe", "--list")
    assert listed.stderr == "" and listed.stdout.count(" ~ ") == 15
    assert "Staging deploys need an approval from Maria" in listed.stdout


def large_vault(root: Path, count: int) -> Path:
    """A vault of `count` distinct generated memories, written as files and committed at once."""
    init_vault(root, Settings(vault=root, source="t", session="t", host="t"))
    corpus, written = Corpus(SEED), set[str]()
    while len(written) < count:
        made = corpus.make()
        memory_id = derive_id(made.workspace, made.body, 10)
        if memory_id in written:
            continue
        written.add(memory_id)
        memory = Memory(id=memory_id, workspace=made.workspace, body=made.body, kind=made.kind)
        path = root / made.workspace / f"{slugify(made.body)}-{memory_id}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(render_memory(memory), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"{count} generated memories")
    return root


def on_a_terminal(vault: Path, *args: str) -> tuple[int, str]:
    """Run the CLI with stderr on a pseudo-terminal; return its exit code and what stderr showed."""
    leader, follower = pty.openpty()
    env = {**os.environ, "MEMSTORE_VAULT": str(vault), "COLUMNS": "100"}
    process = subprocess.Popen(
        [str(EXE), *args], env=env, stdout=subprocess.DEVNULL, stderr=follower
    )
    os.close(follower)
    shown = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the follower side closed: the process is gone
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    os.close(leader)
    return process.wait(timeout=30), shown.decode("utf-8", errors="replace")


@pytest.mark.long  # indexing 2,100 memories and three CLI runs: ~10 s
def test_audit_and_dedupe_show_progress_on_a_terminal_only(tmp_path: Path) -> None:
    vault = large_vault(tmp_path / "vault", 2100)  # bars show from 2,000 memories
    piped = cli(vault, "audit", "--json")
    assert piped.returncode == 0 and piped.stderr == ""
    assert json.loads(piped.stdout)["memories"] == 2100
    code, shown = on_a_terminal(vault, "audit")
    assert code == 0 and "auditing" in shown and "100%" in shown
    listed = cli(vault, "dedupe", "--list")
    assert listed.returncode == 0 and listed.stderr == "" and " ~ " in listed.stdout


# --- the benchmark -----------------------------------------------------------------------


def _run_cli(vault: Path, *args: str, timeout: float) -> float | None:
    """Seconds one CLI run took, or None when it ran past `timeout`."""
    env = {**os.environ, "MEMSTORE_VAULT": str(vault), "MEMSTORE_NO_DAEMON": "1"}
    start = time.perf_counter()
    try:
        done = subprocess.run([str(EXE), *args], env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    assert done.returncode == 0, done.stderr
    return round(time.perf_counter() - start, 3)


def _measure(count: int, root: Path, reference: bool, timeout: float) -> dict[str, object]:
    vault = root / f"v{count}"
    if not vault.exists():
        large_vault(vault, count)
    settings_ = Settings(vault=vault, source="bench", session="bench", host="bench")
    with Store.open(settings_) as store:
        store.catch_up()
        curator = Curator(store, datetime.now(UTC))
        start = time.perf_counter()
        pairs = curator.near_duplicates()
        figures: dict[str, object] = {"memories": count, "pairs": len(pairs)}
        figures["near_duplicates_s"] = round(time.perf_counter() - start, 3)
        start = time.perf_counter()
        curator.audit()
        figures["audit_s"] = round(time.perf_counter() - start, 3)
        documents = store.indexer.search.documents()
    figures["cli_audit_json_s"] = _run_cli(vault, "audit", "--json", timeout=timeout)
    figures["cli_dedupe_list_s"] = _run_cli(vault, "dedupe", "--list", timeout=timeout)
    if reference:
        items = [(d.id, d.workspace, frozenset(terms(d.content))) for d in documents]
        expected = all_pairs(items, NEAR_DUPLICATE)
        found = {(a, b) for a, b, _ in pairs}
        figures["all_pairs"] = len(expected)
        figures["all_pairs_found"] = len(found & set(expected))
    figures["pair_list"] = [[a, b] for a, b, _ in pairs]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description="Time audit and dedupe; count pairs found.")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--root", type=Path, help="Keep the generated vaults here (reused).")
    parser.add_argument("--no-reference", action="store_true", help="Skip the all-pairs check.")
    parser.add_argument("--timeout", type=float, default=600, help="Per CLI run (None past it).")
    parser.add_argument("--pairs-out", type=Path, help="Write the pairs found as JSON.")
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="memstore-curation-"))
    results = [_measure(n, root, not args.no_reference, args.timeout) for n in args.sizes]
    if args.pairs_out:
        args.pairs_out.write_text(json.dumps(results), encoding="utf-8")
    for figures in results:
        shown = {k: v for k, v in figures.items() if k != "pair_list"}
        print(json.dumps(shown))


if __name__ == "__main__":
    main()
