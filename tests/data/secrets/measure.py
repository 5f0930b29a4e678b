"""Measure the secret scan on the corpora: refused secrets, false refusals, time per memory.

Run: .venv/bin/python tests/data/secrets/measure.py
With detect-secrets importable (it is not a memstore dependency), its figures are printed
too, for the comparison in docs/reliability.md: raw, and behind memstore's normalize().

Another pair of files (the held-out sets nobody tuned on) and the real add path:
    .venv/bin/python tests/data/secrets/measure.py --secrets secrets-heldout2.json \
        --benign benign-heldout2.json --add [-v]
`--add` also runs every item through `memstore add TEXT` (the CLI process, in a throwaway
vault) and counts what it refused; -v names every form stored and every look-alike refused.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from memstore.core.secrets import find_secret_in_fields, normalize  # noqa: E402

Fields = Mapping[str, str | Sequence[str]]


def load(name: str) -> list[dict[str, object]]:
    return json.loads((HERE / name).read_text(encoding="utf-8"))


def fields_of(item: dict[str, object]) -> Fields:
    return {str(item["field"]): item["value"]}  # type: ignore[dict-item]


def flat(fields: Fields) -> Iterator[str]:
    for value in fields.values():
        yield value if isinstance(value, str) else " ".join(value)


FILES = {"secrets": "secrets.json", "benign": "benign.json"}


def measure(name: str, refuses: Callable[[Fields], bool], context: AbstractContextManager) -> None:
    secrets = [fields_of(item) for item in load(FILES["secrets"])]
    benign = [fields_of(item) for item in load(FILES["benign"])]
    with context:
        started = time.perf_counter()
        stored = sum(not refuses(f) for f in secrets)
        false = sum(refuses(f) for f in benign)
        elapsed = time.perf_counter() - started
    per = elapsed / (len(secrets) + len(benign)) * 1e6
    print(
        f"{name}: {stored}/{len(secrets)} secrets stored, {false}/{len(benign)} benign refused, "
        f"{per:.0f} µs per memory"
    )


def detect_secrets_scan(normalized: bool) -> Callable[[Fields], bool]:
    """Scan as `detect-secrets scan` reads a file (its ad-hoc scan_line reports every word)."""
    from detect_secrets.core.scan import _process_line_based_plugins

    def refuses(fields: Fields) -> bool:
        for text in flat(fields):
            text = normalize(text) if normalized else text
            lines = list(enumerate(text.splitlines(), start=1))
            if any(True for _ in _process_line_based_plugins(lines, filename="memory.md")):
                return True
        return False

    return refuses


def cli_add(vault: Path) -> Callable[[Fields], bool]:
    """Refuses as `memstore add TEXT` does: exit status 1 and a message naming a credential."""
    environment = {**os.environ, "MEMSTORE_VAULT": str(vault), "MEMSTORE_NO_DAEMON": "1"}

    def refuses(fields: Fields) -> bool:
        (text,) = flat(fields)
        done = subprocess.run(
            [sys.executable, "-m", "memstore", "add", "-w", "secrets", "--", text],
            capture_output=True,
            text=True,
            env=environment,
            cwd=vault,
        )
        if done.returncode not in (0, 1) or (
            done.returncode and "--allow-secret" not in done.stderr
        ):
            raise RuntimeError(f"memstore add failed otherwise: {done.stderr.strip()}")
        return done.returncode == 1

    return refuses


def itemize(refuses: Callable[[Fields], bool]) -> None:
    """Print every secret form stored and every benign look-alike refused."""
    for item in load(FILES["secrets"]):
        if not refuses(fields_of(item)):
            print(f"  stored:  {item.get('form')}: {str(item['value'])[:70]!r}")
    for item in load(FILES["benign"]):
        if refuses(fields_of(item)):
            print(f"  refused: {str(item['value'])[:80]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--secrets", default=FILES["secrets"], help="file of forms (in this folder)"
    )
    parser.add_argument("--benign", default=FILES["benign"], help="file of look-alikes")
    parser.add_argument("--add", action="store_true", help="also through the `memstore add` CLI")
    parser.add_argument("-v", "--verbose", action="store_true", help="name every miss")
    args = parser.parse_args()
    FILES.update(secrets=args.secrets, benign=args.benign)
    scan = lambda f: find_secret_in_fields(f) is not None  # noqa: E731
    measure("memstore.core.secrets", scan, nullcontext())
    if args.verbose:
        itemize(scan)
    if args.add:
        with tempfile.TemporaryDirectory(prefix="memstore-secrets-") as folder:
            vault = Path(folder) / "vault"
            subprocess.run(
                [sys.executable, "-m", "memstore", "init", str(vault)],
                check=True,
                capture_output=True,
            )
            measure("memstore add (CLI)", cli_add(vault), nullcontext())
        return
    try:
        from detect_secrets.settings import default_settings
    except ImportError:
        print("detect-secrets is not installed: its figures are skipped")
        return
    measure(
        "detect-secrets 1.5 (file scan, default plugins)",
        detect_secrets_scan(False),
        default_settings(),
    )
    measure("detect-secrets + normalize()", detect_secrets_scan(True), default_settings())


if __name__ == "__main__":
    main()
