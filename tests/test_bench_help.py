"""Every script in tests/benchmarks/ answers `--help` with its usage and what it measures.

They run in one child process (runpy, `__name__ == "__main__"`, as `python SCRIPT --help`
runs them) so their shared imports load once: ~55 scripts in a few seconds. A script that
reads its command line by hand took `--help` as a vault path, or ran its whole benchmark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "benchmarks"
SCRIPTS = sorted(p for p in FOLDER.glob("*.py") if not p.name.startswith("_"))

# For each script: its exit status and what it printed, or what it raised; a script that
# returns without exiting did not read `--help` (it ran, or did nothing).
RUNNER = """
import contextlib, io, json, runpy, sys, traceback
found = {}
for path in sys.argv[1:]:
    sys.argv = [path, "--help"]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(path, run_name="__main__")
        found[path] = ["returned", out.getvalue()]
    except SystemExit as stop:
        found[path] = [stop.code, out.getvalue()]
    except BaseException:
        found[path] = ["raised", traceback.format_exc(limit=3)]
print(json.dumps(found))
"""


def test_every_benchmark_script_prints_its_usage_for_help(tmp_path: Path) -> None:
    assert len(SCRIPTS) > 40
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FOLDER), str(FOLDER.parents[1])])}
    # From a scratch folder: whatever a script that ignored --help would write lands there.
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, *map(str, SCRIPTS)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    found = json.loads(done.stdout.splitlines()[-1])
    wrong = {
        Path(path).name: (status, out[:300])
        for path, (status, out) in found.items()
        if status not in (0, None) or not out.startswith("usage: ")
    }
    assert wrong == {}
    for path, (_, out) in found.items():  # and what it is for, not only its options
        assert len(out.splitlines()) > 3, f"{Path(path).name} --help says nothing of itself"
