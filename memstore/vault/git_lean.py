"""libgit2 through pygit2's C extension alone: a one-shot add commits before pygit2's package loads.

`import pygit2` costs 80-125 ms of CPU (its enums, its cffi wrappers, TLS certificate paths),
and a commit needs none of it: blobs, tree builders, commits and HEAD are methods of the C
extension `pygit2._pygit2` (14 ms to load). A process that answers one command (the launcher
without a daemon: `use_c_level`) opens its repository as a `CRepository`, a subclass of the C
type with pygit2's mapping methods. The first use of anything only the package has (the git
index, references, config, status flags as enums ...) imports pygit2 and turns the same
object into a `pygit2.Repository` (`_upgrade`): one libgit2 handle throughout.

Safety, each tested in tests/vault/test_git_lean.py:
- the extension is loaded under its own name (`pygit2._pygit2`), so a later `import pygit2`
  uses that very module: one `GitError`, one set of types, never a second initialisation;
- the C level answers enum-typed values (a tree entry's mode ...) through
  `_cache_enums`, which reads `pygit2.enums`: here plain ints stand in for them until pygit2
  is imported, which caches its own enums again;
- anything missing or refused (another pygit2 whose extension lacks a name used here, a
  thread running meanwhile, an ImportError) means pygit2 is imported as before.
"""

from __future__ import annotations

import sys
import types
from typing import Any

# libgit2 keeps parsed trees in its object cache only up to 4 KB each: a month folder of a
# 100k vault is a tree of ~2,700 entries (~100 KB), inflated and parsed again at every look-up
# of a path in it (1.2 ms; an add looked three times). Trees are kept up to TREE_CACHE_BYTES
# each, and everything the cache holds within CACHE_BYTES (libgit2's default is 256 MiB):
# a walk of every month folder must not grow a daemon by tens of MiB. Set once per process,
# by whichever of `package` and the C level's load comes first.
TREE_CACHE_BYTES = 4 << 20
CACHE_BYTES = 16 << 20
_sized = False
# What a commit uses of the C extension; without any of them pygit2 is imported instead.
NEEDED = (
    *("Repository", "init_file_backend", "Commit", "Tree", "Signature", "GitError"),
    *("GIT_FILEMODE_BLOB", "GIT_FILEMODE_BLOB_EXECUTABLE", "GIT_FILEMODE_LINK"),
    *("GIT_FILEMODE_TREE", "GIT_OBJECT_TREE", "_cache_enums"),
)

_allowed = False
_loaded: Any = None  # the C extension once loaded alone; False: tried and refused


def use_c_level(allowed: bool = True) -> bool:
    """Let repositories opened from now on start at the C level (a one-shot command's);
    return the previous setting."""
    global _allowed
    before, _allowed = _allowed, allowed
    return before


def open_repository(path: str) -> Any:
    """Open the repository at `path`: a `CRepository` when allowed and pygit2 is not imported
    yet, else a `pygit2.Repository`. Raises the extension's GitError as pygit2 does."""
    c_level = _c_level() if _allowed and "pygit2" not in sys.modules else None
    if c_level is None:
        return package().Repository(path)
    return _repository_class(c_level)(c_level.init_file_backend(path, 0))


def objects() -> Any:
    """Return the module holding libgit2's types (Commit, Tree, Signature, GitError, the
    GIT_FILEMODE_* ints): the C extension, loaded alone or by pygit2."""
    loaded = sys.modules.get("pygit2._pygit2")
    if loaded is not None and all(hasattr(loaded, name) for name in NEEDED):
        return loaded
    return package()._pygit2


def _c_level() -> Any:
    global _loaded
    if _loaded is None:
        _loaded = _load_alone() or False
    return _loaded or None


def _load_alone() -> Any:
    """Load `pygit2._pygit2` (and pygit2's cffi module, to size libgit2's cache) without the
    package; None when that cannot be done safely here."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return None  # the stand-in package below must not be seen by another thread
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    def load(name: str, where: Any) -> Any:
        spec = PathFinder.find_spec(name, where)
        if spec is None or spec.loader is None:
            raise ImportError(name)
        module = module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
        return module

    try:
        package = PathFinder.find_spec("pygit2")
        where = package.submodule_search_locations if package is not None else None
        if not where:
            return None
        extension = load("pygit2._pygit2", where)
        if not all(hasattr(extension, name) for name in NEEDED):
            return None
        _cache_int_enums(extension)
        _size_the_cache(load("pygit2._libgit2", where), extension)
    except (ImportError, OSError, AttributeError, TypeError, ValueError):
        return None
    return extension


def _cache_int_enums(extension: Any) -> None:
    """Have the C level answer plain ints where it answers pygit2's enums (IntEnum and IntFlag
    values equal to them); `import pygit2` caches the enums themselves again."""

    def any_enum(name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return int

    enums = types.ModuleType("pygit2.enums")
    enums.__getattr__ = any_enum  # type: ignore[method-assign]
    # `_cache_enums` runs `__import__("pygit2.enums")`, which looks the package up first.
    package = types.ModuleType("pygit2")
    package.__path__ = []
    sys.modules["pygit2"], sys.modules["pygit2.enums"] = package, enums
    try:
        extension._cache_enums()
    finally:
        del sys.modules["pygit2.enums"], sys.modules["pygit2"]


def _size_the_cache(cffi: Any, extension: Any) -> None:
    """What `package` sets through pygit2.settings, through libgit2's own call."""
    global _sized
    lib, ffi = cffi.lib, cffi.ffi
    lib.git_libgit2_opts(lib.GIT_OPT_SET_CACHE_MAX_SIZE, ffi.cast("ssize_t", CACHE_BYTES))
    tree = ffi.cast("int", extension.GIT_OBJECT_TREE)
    lib.git_libgit2_opts(
        lib.GIT_OPT_SET_CACHE_OBJECT_LIMIT, tree, ffi.cast("size_t", TREE_CACHE_BYTES)
    )
    _sized = True


_classes: dict[int, type] = {}


def _repository_class(extension: Any) -> type:
    """Return CRepository for this extension (made once: its base is only known at run time):
    pygit2.Repository's mapping methods, which its Python package defines, not the C type."""
    found = _classes.get(id(extension))
    if found is None:
        methods: dict[str, Any] = {"get": _get, "__getitem__": _getitem, "__contains__": _contains}
        methods |= {"__getattr__": _getattr, "__module__": __name__, "__doc__": __doc__}
        found = _classes[id(extension)] = type("CRepository", (extension.Repository,), methods)
    return found


def _get(self: Any, key: Any, default: Any = None) -> Any:
    value = self.git_object_lookup_prefix(key)
    return value if value is not None else default


def _getitem(self: Any, key: Any) -> Any:
    value = self.git_object_lookup_prefix(key)
    if value is None:
        raise KeyError(key)
    return value


def _contains(self: Any, key: Any) -> bool:
    return self.git_object_lookup_prefix(key) is not None


def _getattr(self: Any, name: str) -> Any:
    """Anything the C type lacks: become a pygit2.Repository, then answer."""
    if name.startswith("__"):
        raise AttributeError(name)
    _upgrade(self)
    return getattr(self, name)


def package() -> Any:
    """Import pygit2 and return it (its `_pygit2` attribute set when the extension was loaded
    before it: an import finds a loaded submodule in sys.modules without binding it)."""
    import pygit2

    global _sized
    if not hasattr(pygit2, "_pygit2"):
        pygit2._pygit2 = sys.modules["pygit2._pygit2"]
    if not _sized:
        _sized = True
        pygit2.settings.cache_max_size(CACHE_BYTES)
        pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, TREE_CACHE_BYTES)
    return pygit2


def _upgrade(repository: Any) -> None:
    """Turn a CRepository into the pygit2.Repository it would have been (same libgit2 handle)."""
    pygit2 = package()
    repository.__class__ = pygit2.Repository
    repository._common_init()
