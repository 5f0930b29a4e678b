"""A deferred module is bound by `import` without running, runs once on the first attribute
read (from any thread), and is then the module its own code makes; a one-shot search leaves
the deferred standard library modules unrun, and prints what it printed before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memstore.core.deferred_modules import ONE_SHOT

# In a fresh interpreter: defer the modules in argv[1], then run argv[2]; report on stdout.
FRESH = """
import json, sys
from memstore.core.deferred_modules import defer, is_deferred
sys.path.insert(0, sys.argv[3])
deferred = defer(tuple(json.loads(sys.argv[1])))
exec(sys.argv[2])
"""


def _fresh(names: list[str], code: str, folder: Path) -> list[object]:
    done = subprocess.run(
        [sys.executable, "-c", FRESH, json.dumps(names), code, str(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_an_import_binds_a_deferred_module_without_running_it(tmp_path: Path):
    code = """
import calendar, queue
print(json.dumps([deferred, is_deferred(calendar), is_deferred(sys.modules["queue"])]))
print(json.dumps([calendar.isleap(2024), is_deferred(calendar), type(calendar).__name__]))
from queue import Queue
print(json.dumps([Queue.__module__, is_deferred(queue), queue.__file__.endswith("queue.py")]))
"""
    before, read, imported = _fresh(["calendar", "queue"], code, tmp_path)
    assert before == [["calendar", "queue"], True, True]
    assert read == [True, False, "module"]
    assert imported == ["queue", False, True]


def test_a_deferred_module_is_the_module_its_code_makes(tmp_path: Path):
    code = """
import calendar
march = calendar.month_name[3]  # runs it: vars() of a module not run yet shows no names
names = sorted(n for n in vars(calendar) if n != "__builtins__")
print(json.dumps([names, march, calendar.__spec__.name]))
"""
    deferred = _fresh(["calendar"], code, tmp_path)
    plain = _fresh([], code, tmp_path)
    assert deferred == plain
    assert deferred[0][1:] == ["March", "calendar"]


def test_threads_reading_a_deferred_module_at_once_run_it_once(tmp_path: Path):
    (tmp_path / "counted.py").write_text(
        "import sys\nsys.ran = getattr(sys, 'ran', 0) + 1\n"
        "VALUES = [n * n for n in range(20000)]\nLAST = VALUES[-1]\n"
    )
    code = """
import threading, counted
start, seen = threading.Barrier(8), []
def read():
    start.wait()
    seen.append(counted.LAST)
threads = [threading.Thread(target=read) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps([sys.ran, seen, is_deferred(counted)]))
"""
    ((ran, seen, still),) = _fresh(["counted"], code, tmp_path)
    assert ran == 1 and seen == [19999 * 19999] * 8 and still is False


def test_a_deferred_module_that_fails_leaves_no_module_behind(tmp_path: Path):
    (tmp_path / "broken.py").write_text("VALUE = 1\nraise RuntimeError('broken on purpose')\n")
    code = """
import broken
try:
    broken.VALUE
except RuntimeError as err:
    print(json.dumps([str(err), "broken" in sys.modules]))
"""
    assert _fresh(["broken"], code, tmp_path) == [["broken on purpose", False]]


def test_builtins_extensions_and_imported_modules_are_not_deferred(tmp_path: Path):
    code = "print(json.dumps(deferred))"
    assert _fresh(["sys", "_socket", "array", "os", "no_such_module_here"], code, tmp_path) == [[]]


def test_the_dataclasses_of_a_search_or_add_have_docstrings():
    # dataclasses writes a docstring from the class's signature (inspect, ~6 ms to import)
    # for a class that has none: a one-shot search or add would run the deferred inspect.
    code = """
import dataclasses, sys
import memstore.service.store, memstore.ops.lean, memstore.ops.registry, memstore.ops.output
import memstore.service.writer, memstore.service.transaction, memstore.core.contradictions
for module in list(sys.modules.values()):
    for value in list(vars(module).values()) if module else []:
        if isinstance(value, type) and dataclasses.is_dataclass(value):
            if (value.__doc__ or "").startswith(value.__name__ + "("):
                print(value.__module__ + "." + value.__qualname__)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []


def test_a_one_shot_search_runs_none_of_the_deferred_modules(vault: Path):
    from memstore.service.store import Store
    from tests.conftest import settings_at

    with Store.open(settings_at(vault)) as store:
        store.add("the upload limit is 10 MB behind nginx", workspace="global")
    script = """
import sys  # and nothing the launcher defers
sys.argv = ["memstore", "search", "upload limit", "--vault", sys.argv[1]]
from memstore.launcher import main
try:
    main()
except SystemExit:
    pass
from memstore.core.deferred_modules import ONE_SHOT, is_deferred
ran = [n for n in ONE_SHOT if n in sys.modules and not is_deferred(sys.modules[n])]
print("ran:", *ran, file=sys.stderr)
print("imported:", *(n for n in ("ast", "dis", "tokenize", "selectors", "locale") if n in sys.modules), file=sys.stderr)
"""
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1"}
    for _ in range(2):  # the first writes the machine's pattern and code caches (tempfile)
        done = subprocess.run(
            [sys.executable, "-c", script, str(vault)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    assert "upload limit is 10 MB" in done.stdout
    assert done.stderr.strip().splitlines()[-2:] == ["ran:", "imported:"]  # nor what they import
    assert {"inspect", "subprocess", "tempfile"} <= set(ONE_SHOT)
