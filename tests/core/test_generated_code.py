"""The methods dataclasses generate from the kept code are those it compiles itself: the same
code, flags, annotations and defaults for every dataclass a no-daemon command defines; a file
that is not the cache's (another memstore version's) is ignored, texts no code uses any more
are dropped, and dataclasses gets the builtin `exec` back."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
from pathlib import Path

from memstore.core import generated_code
from memstore.core.generated_code import KEY, GeneratedCode

# Import what a no-daemon search and add import (the cache at argv[1], or none: ''), then
# describe every generated method of every dataclass they defined. Reports on stdout.
DESCRIBE = """
import dataclasses, json, re, sys
from pathlib import Path
def shown(value):  # a repr without the addresses that differ between processes
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))
from memstore.core import generated_code
cache = generated_code.install(Path(sys.argv[1])) if sys.argv[1] else None
import memstore.service.store, memstore.ops.lean, memstore.ops.registry
import memstore.service.writer, memstore.service.transaction  # an add's
described = {}
for module in list(sys.modules.values()):
    for value in list(vars(module).values()) if module else []:
        if not (isinstance(value, type) and dataclasses.is_dataclass(value)):
            continue
        for name, method in vars(value).items():
            code = getattr(method, "__code__", None)
            if code is None or code.co_filename != "<string>":
                continue
            described[f"{value.__module__}.{value.__qualname__}.{name}"] = [
                code.co_code.hex(), shown(code.co_consts), code.co_names, code.co_varnames,
                code.co_freevars, code.co_flags, code.co_argcount, code.co_kwonlyargcount,
                shown(method.__annotations__), shown(method.__defaults__),
                shown(method.__kwdefaults__), method.__qualname__,
            ]
if cache is not None:
    cache.save()
    generated_code.uninstall()
print(json.dumps({"methods": described, "compiled": cache.compiled if cache else None,
                  "exec_left": "exec" in vars(dataclasses)}))
"""


def _describe(cache: Path | None) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", DESCRIBE, str(cache) if cache else ""],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_methods_built_from_the_kept_code_are_the_ones_dataclasses_compiles(
    tmp_path: Path,
) -> None:
    path = tmp_path / "generated.marshal"
    plain = _describe(None)  # dataclasses' own exec
    first = _describe(path)  # compiles each text and keeps it
    second = _describe(path)  # runs every text from the file

    methods = plain["methods"]
    assert isinstance(methods, dict) and len(methods) > 100  # the store's ~45 classes' methods
    assert any(name.endswith(".__init__") for name in methods)
    assert first["methods"] == methods
    assert second["methods"] == methods  # same code, flags, annotations (not strings), defaults
    assert isinstance(first["compiled"], int) and first["compiled"] > 40
    assert second["compiled"] == 0  # nothing compiled: all of it came from the file
    assert first["exec_left"] is False and second["exec_left"] is False  # uninstalled


def test_a_file_that_is_not_the_caches_is_ignored_and_rewritten(tmp_path: Path) -> None:
    text = "def __create_fn__():\n def f(self):\n  return 1\n return f"
    for garbage in (
        b"not marshal at all",
        marshal.dumps(("another interpreter", [(text, compile("x = 2", "<string>", "exec"))])),
        marshal.dumps((KEY, [(text, compile("x = 2", "<string>", "exec"))])),  # before versions
        marshal.dumps((f"{KEY}|", 1, [(text, "not code", 1), (3, b"x", 1)])),
        marshal.dumps((f"{KEY}|", "one", [])),
    ):
        path = tmp_path / "generated.marshal"
        path.write_bytes(garbage)
        cache = GeneratedCode(path)
        assert cache.known == {}
        space: dict[str, object] = {}
        cache.exec(text, {}, space)
        made = space["__create_fn__"]()  # type: ignore[operator]
        assert made(None) == 1 and cache.compiled == 1
        cache.save()
        assert text in GeneratedCode(path).known  # rewritten with what it compiled


def test_code_that_is_not_a_text_runs_as_exec_runs_it(tmp_path: Path) -> None:
    cache = GeneratedCode(tmp_path / "generated.marshal")
    space: dict[str, object] = {}
    cache.exec(compile("y = 40 + 2", "<string>", "exec"), {}, space)
    assert space["y"] == 42 and cache.compiled == 0 and cache.known == {}


def test_uninstall_leaves_dataclasses_with_the_builtin_exec(tmp_path: Path) -> None:
    import dataclasses

    generated_code.install(tmp_path / "generated.marshal")
    assert "exec" in vars(dataclasses)
    generated_code.uninstall()
    assert "exec" not in vars(dataclasses)
    generated_code.uninstall()  # twice: nothing to give back


def _text(name: str) -> str:
    """A text as dataclasses generates one (a function making a class's method)."""
    return f"def __create_fn__():\n def {name}(self):\n  return {name!r}\n return {name}"


def _run(cache: GeneratedCode, text: str) -> None:
    space: dict[str, object] = {}
    cache.exec(text, {}, space)
    made = space["__create_fn__"]()  # type: ignore[operator]
    assert made(None) == made.__name__


def test_texts_older_code_generated_are_dropped_and_those_in_use_kept(tmp_path: Path) -> None:
    path = tmp_path / "generated.marshal"
    old, steady = _text("old_field"), _text("steady")
    first = GeneratedCode(path, "0.1.0")
    _run(first, old)
    _run(first, steady)
    first.save()
    # The code changes many times (a new text each), and a command still defines `steady`
    # every time, compiling nothing of its own: what a checkout moving between branches does.
    for n in range(3 * generated_code.AGE):
        changed = GeneratedCode(path, "0.1.0")
        _run(changed, _text(f"field_{n}"))
        changed.save()
        steady_user = GeneratedCode(path, "0.1.0")
        _run(steady_user, steady)
        steady_user.save()
        assert steady_user.compiled == 0  # never dropped while it is used
    kept = GeneratedCode(path, "0.1.0").known
    assert old not in kept and steady in kept  # the old code's text went, unused
    assert len(kept) <= generated_code.AGE + 1  # not one per change: they no longer pile up
    assert _text(f"field_{3 * generated_code.AGE - 1}") in kept


def test_another_memstore_versions_file_is_ignored_and_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "generated.marshal"
    text = _text("field")
    older = GeneratedCode(path, "0.1.0")
    _run(older, text)
    older.save()
    newer = GeneratedCode(path, "0.2.0")
    assert newer.known == {}
    _run(newer, text)
    assert newer.compiled == 1
    newer.save()
    assert GeneratedCode(path, "0.1.0").known == {}
    assert text in GeneratedCode(path, "0.2.0").known


def test_a_process_that_used_only_kept_texts_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "generated.marshal"
    cache = GeneratedCode(path)
    _run(cache, _text("field"))
    cache.save()
    written = path.stat().st_mtime_ns, path.read_bytes()
    again = GeneratedCode(path)
    _run(again, _text("field"))
    again.save()
    assert (path.stat().st_mtime_ns, path.read_bytes()) == written and again.compiled == 0
