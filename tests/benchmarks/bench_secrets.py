"""Measure the secret scan on the generated corpus: forms stored, look-alikes refused, µs per memory.

Run: .venv/bin/python tests/benchmarks/bench_secrets.py [--seed N] [--show]
Targets (issue 36): at most 3% of the forms stored, at most 1% of the look-alikes refused.
`--scanner FILE` measures another copy of memstore/core/secrets.py (e.g. the one before a change,
`git show REV:memstore/core/secrets.py > /tmp/old.py`) on the same corpus; `--detect-secrets`
measures that library's default plugins (not a memstore dependency: install it in a scratch
venv and put its site-packages on PYTHONPATH) the way `detect-secrets scan` reads a file.

`--texts FOLDER…` measures characters a second on real texts instead (issue 41): the memory
files under each folder (read only; `.git` skipped; at most `--limit` a folder), scanned by
the fast path and by `find_secrets(text, full=True)` (the full one the fast path is held
to), rounds interleaved, CPU time; `--scanner FILE` adds another copy of secrets.py:

    git show REV:memstore/core/secrets.py > /tmp/old_secrets.py
    nice -n 10 python tests/benchmarks/bench_secrets.py --texts /tmp/vb/n10000/vault \
        --scanner /tmp/old_secrets.py
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.core.secrets_corpus import Sample, benign, forms  # noqa: E402

Scan = Callable[[str], list[str]]


def load_scanner(path: str | None) -> Scan:
    if path is None:
        from memstore.core.secrets import find_secrets

        return find_secrets
    spec = importlib.util.spec_from_file_location("scanner_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module.find_secrets  # type: ignore[no-any-return]


def detect_secrets_scanner() -> Scan:
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings

    def scan(text: str) -> list[str]:
        lines = list(enumerate(text.splitlines(), start=1))
        with default_settings():
            found = _process_line_based_plugins(lines, filename="memory.md")
            return sorted({secret.type for secret in found})

    return scan


def add_cost(adds: int) -> None:
    """Print what the scans cost inside `Store.add`: the fields, the file at commit, the message."""
    import tempfile

    import memstore.service.store
    import memstore.vault.git
    from memstore.core.config import Settings
    from memstore.core.errors import MemstoreError
    from memstore.service.store import Store, init_vault

    spent = [0.0]

    def timed(function: Callable[..., object]) -> Callable[..., object]:
        def wrapper(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started

        return wrapper

    memstore.service.store.find_secret_in_fields = timed(
        memstore.service.store.find_secret_in_fields
    )  # type: ignore[assignment]
    for name in ("find_added_secret", "withhold_secret"):
        if hasattr(memstore.vault.git, name):
            setattr(memstore.vault.git, name, timed(getattr(memstore.vault.git, name)))
    texts = [s.text for s in benign(7, adds)]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "vault"
        settings = Settings(vault=root, source="bench", session="bench", host="bench")
        init_vault(root, settings)
        with Store.open(settings) as store:
            store.add("warm up", workspace="global")
            spent[0] = 0.0
            started = time.perf_counter()
            for i, text in enumerate(texts):
                with contextlib.suppress(MemstoreError):  # a scanner that refuses it
                    store.add(f"{text} ({i})", workspace="global")
            total = time.perf_counter() - started
    print(
        f"Store.add: {total / adds * 1e3:.1f} ms per add, of which the secret scans "
        f"{spent[0] / adds * 1e6:.0f} µs ({adds} adds of look-alike texts)"
    )


def rates(
    scan: Scan, secret: list[Sample], plain: list[Sample]
) -> tuple[list[Sample], list[Sample]]:
    """Return the forms the scan stores and the look-alikes it refuses."""
    stored = [s for s in secret if not scan(s.text)]
    refused = [s for s in plain if scan(s.text)]
    return stored, refused


def cost_us(scans: list[Scan], samples: list[Sample], rounds: int = 15) -> list[float]:
    """Best time per memory of each scanner, their rounds interleaved (a busy machine slows
    them alike, so their ratio holds when the absolute figures do not)."""
    best = [float("inf")] * len(scans)
    for _ in range(rounds):
        for i, scan in enumerate(scans):
            started = time.perf_counter()
            for sample in samples:
                scan(sample.text)
            best[i] = min(best[i], time.perf_counter() - started)
    return [b / len(samples) * 1e6 for b in best]


def read_texts(folders: list[str], limit: int) -> list[str]:
    """The memory files under each folder (at most `limit` a folder, in path order)."""
    texts: list[str] = []
    for folder in folders:
        paths = sorted(p for p in Path(folder).rglob("*.md") if ".git" not in p.parts)
        texts += [p.read_text(encoding="utf-8", errors="replace") for p in paths[:limit]]
    return texts


def throughput(texts: list[str], scans: dict[str, Scan], rounds: int = 3) -> None:
    """Print characters a second of each scan on `texts` (best of interleaved rounds, CPU)."""
    chars = sum(map(len, texts))
    best = dict.fromkeys(scans, float("inf"))
    for _ in range(rounds):
        for name, scan in scans.items():
            started = time.process_time()
            for text in texts:
                scan(text)
            best[name] = min(best[name], time.process_time() - started)
    first = next(iter(scans))
    found = {name: [scan(text) for text in texts] for name, scan in scans.items()}
    print(f"{len(texts)} texts, {chars / 1e6:.2f} M characters")
    for name, seconds in best.items():
        same = "same findings" if found[name] == found[first] else "OTHER FINDINGS"
        print(
            f"  {name}: {chars / seconds / 1e6:.2f} M characters/s ({seconds * 1e9 / chars:.0f} ns "
            f"a character, CPU), {sum(map(bool, found[name]))} texts flagged, {same}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--scanner", help="another copy of memstore/core/secrets.py to measure")
    parser.add_argument("--detect-secrets", action="store_true", help="measure detect-secrets")
    parser.add_argument("--show", action="store_true", help="print each miss")
    parser.add_argument("--adds", type=int, default=0, help="also time N adds in a temp vault")
    parser.add_argument("--texts", nargs="+", help="folders of memory files: characters a second")
    parser.add_argument("--limit", type=int, default=10_000, help="files read per --texts folder")
    args = parser.parse_args()
    if args.texts:
        from memstore.core.secrets import find_secrets

        measured: dict[str, Scan] = {
            "fast": find_secrets,
            "full": lambda text: find_secrets(text, full=True),
        }
        if args.scanner:
            measured[args.scanner] = load_scanner(args.scanner)
        throughput(read_texts(args.texts, args.limit), measured)
        return
    scans = {"memstore": load_scanner(None)}
    if args.scanner:
        scans[args.scanner] = load_scanner(args.scanner)
    if args.detect_secrets:
        scans["detect-secrets"] = detect_secrets_scanner()
    secret, plain = forms(args.seed), benign(args.seed)
    families = len({s.family for s in secret})
    costs = cost_us(list(scans.values()), secret + plain)
    for (name, scan), cost in zip(scans.items(), costs, strict=True):
        stored, refused = rates(scan, secret, plain)
        print(
            f"{name}: forms {len(stored)}/{len(secret)} stored ({len(stored) / len(secret):.1%}, "
            f"{families} families); look-alikes {len(refused)}/{len(plain)} refused "
            f"({len(refused) / len(plain):.1%}); scan {cost:.0f} µs per memory"
        )
        if args.show:
            for sample in stored:
                print(f"  stored  [{sample.family}] {sample.text[:110]!r}")
            for sample in refused:
                print(f"  refused {scan(sample.text)} {sample.text[:110]!r}")
    if args.adds:
        add_cost(args.adds)


if __name__ == "__main__":
    main()
