"""Measure the secret scan on the corpora: refused secrets, false refusals, time per memory.

Run: .venv/bin/python tests/data/secrets/measure.py
With detect-secrets importable (it is not a memstore dependency), its figures are printed
too, for the comparison in docs/reliability.md: raw, and behind memstore's normalize().
"""

from __future__ import annotations

import json
import sys
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


def measure(name: str, refuses: Callable[[Fields], bool], context: AbstractContextManager) -> None:
    secrets = [fields_of(item) for item in load("secrets.json")]
    benign = [fields_of(item) for item in load("benign.json")]
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


def main() -> None:
    measure("memstore.core.secrets", lambda f: find_secret_in_fields(f) is not None, nullcontext())
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
