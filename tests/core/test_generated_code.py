"""The methods dataclasses generate from the kept code are those it compiles itself: the same
code, flags, annotations and defaults for every dataclass a no-daemon command defines; a file
that is not the cache's is ignored, and dataclasses gets the builtin `exec` back."""

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
        marshal.dumps((KEY, [(text, "not code"), (3, b"x")])),
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
