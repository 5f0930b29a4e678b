"""Export and restore: byte-exact round trips, all-or-nothing restore, owner-only files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.core.errors import InvalidInputError
from memstore.service.store import Store, init_vault
from memstore.service.transfer import export, parse_export, restore
from tests.cli.test_upkeep import cli
from tests.conftest import git, head, settings_at, vault_bytes

NOT_UTF8 = b"---\nid: latin1x\n---\ncaf\xe9 cr\xe8me \xff\xfe\n"
ODD_FILES = {
    "h/a..b.md": b"two dots inside a name\n",
    "h/dir.md/inner.md": b"inside a folder named like a memory\r\n",
    "h/deep/er/x y #1.md": b"spaces and a hash\n",
    "h/back\\slash.md": b"a backslash is a plain character here\n",
    "h/bin.md": NOT_UTF8,
    "h/bom.md": "\ufeff---\r\nid: bomcrlf1\r\nkind: note\r\n---\r\nbom and crlf\r\n".encode(),
    "h/" + "x" * 252 + ".md": b"the longest name a file system takes\n",
    "Other Folder/caf\u00e9 \u2603.md": "unicode names \u2603\n".encode(),
}


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def write_files(root: Path, files: dict[str, bytes]) -> None:
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def modes(root: Path) -> set[tuple[str, int]]:
    """Every file's and folder's permission bits under the vault's workspace folders."""
    found = set()
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if relative.parts[0] in (".git", ".memstore") or (
            len(relative.parts) == 1 and path.is_file()
        ):
            continue
        kind = "folder" if path.is_dir() else "file"
        found.add((kind, stat.S_IMODE(path.lstat().st_mode)))
    return found


def export_data(entries: list[dict[str, str]], version: int = 2) -> dict[str, object]:
    return {"format": "memstore-export", "version": version, "memories": entries}


def git_is_clean(vault: Path) -> bool:
    return git(vault, "status", "--porcelain", "--untracked-files=all") == ""


# --- defect 9: restore takes back exactly what export wrote ------------------------------


def test_restore_takes_back_every_file_export_wrote_byte_for_byte(
    vault: Path, tmp_path: Path
) -> None:
    write_files(vault, ODD_FILES)
    exported = tmp_path / "memory.json"
    done = cli(vault, "export", "-o", str(exported))
    assert done.returncode == 0, done.stderr
    other = tmp_path / "other"
    assert cli(other, "init", str(other)).returncode == 0  # only ~/memstore is made unasked
    done = cli(other, "restore", str(exported))
    assert done.returncode == 0, done.stderr
    assert f"{len(ODD_FILES)} added" in done.stdout
    assert vault_bytes(other) == vault_bytes(vault)
    assert git_is_clean(other)
    assert (
        git(other, "log", "-1", "--format=%s").strip()
        == f"restore: {len(ODD_FILES)} added, 0 merged"
    )
    again = cli(other, "restore", str(exported))
    assert f"0 added, 0 merged, {len(ODD_FILES)} unchanged" in again.stdout


def test_export_carries_bytes_that_are_not_utf8_as_base64_and_keeps_text(vault: Path) -> None:
    write_files(vault, {"h/bin.md": NOT_UTF8, "h/plain.md": b"plain\n"})
    done = cli(vault, "export")
    items = {m["path"]: m for m in json.loads(done.stdout)["memories"]}
    assert "base64" not in items["h/plain.md"] and items["h/plain.md"]["text"] == "plain\n"
    assert "caf\ufffd" in items["h/bin.md"]["text"]  # readable for a person or an old reader
    assert items["h/bin.md"]["id"] == "latin1x"


def test_an_old_export_with_text_only_still_restores(store: Store, vault: Path) -> None:
    old = {"path": "h/old.md", "id": "x", "workspace": "h", "text": "---\nid: old1\n---\nold\n"}
    report = restore(store, parse_export(export_data([old], version=1)))
    assert report.added == 1
    assert (vault / "h/old.md").read_bytes() == b"---\nid: old1\n---\nold\n"


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_export_then_restore_into_an_empty_vault_gives_identical_bytes(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    check_round_trip(tmp_path_factory, data.draw(vault_files()))


@pytest.mark.long
@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_export_then_restore_round_trips_many_random_vaults(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    check_round_trip(tmp_path_factory, data.draw(vault_files()))


def check_round_trip(factory: pytest.TempPathFactory, files: dict[str, bytes]) -> None:
    source = factory.mktemp("from") / "vault"
    init_vault(source, settings_at(source))
    write_files(source, files)
    with Store.open(settings_at(source)) as store:
        exported = json.loads(json.dumps(export(store), ensure_ascii=False))
    assert len(exported["memories"]) == len(files)
    target = factory.mktemp("to") / "vault"
    init_vault(target, settings_at(target))
    with Store.open(settings_at(target)) as store:
        report = restore(store, parse_export(exported))
        assert (report.added, report.kept) == (len(files), [])
    assert git_is_clean(target)
    assert vault_bytes(target) == vault_bytes(source)
    assert modes(target) <= {("file", 0o600), ("folder", 0o700)}


NAME_CHARS = "abzAZ09 -_.#'\"\\\t\u00e9\u20ac\u2603\U0001f600"


def is_plain_name(name: str) -> bool:
    """Names the vault scan sees (not hidden) that no separator can turn into '..'."""
    return not name.startswith((".", "\\")) and not {".", ".."} & set(name.split("\\"))


names = st.text(st.sampled_from(NAME_CHARS), min_size=1, max_size=12).filter(is_plain_name)
folder_names = st.one_of(names, names.map(lambda name: name + ".md"))  # like h/dir.md/


@st.composite
def vault_files(draw: st.DrawFn) -> dict[str, bytes]:
    """A few memory files: odd names, nested folders, any bytes, front matter, CRLF, BOM."""
    files: dict[str, bytes] = {}
    for number in range(draw(st.integers(1, 6))):
        folders = draw(st.lists(folder_names, min_size=1, max_size=3))
        leaf = draw(names) + ".md"
        path = "/".join([*folders, leaf])
        taken = {p for f in files for p in _prefixes(f)}
        if path in files or path in taken or any(p in files for p in _prefixes(path)):
            continue  # a file where another path needs a folder
        files[path] = draw(contents(number))
    return files


def _prefixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def contents(number: int) -> st.SearchStrategy[bytes]:
    text = st.text(max_size=120)
    memory = text.map(lambda body: f"---\nid: prop{number}\nkind: note\n---\n{body}")
    as_bytes = st.one_of(text, memory).flatmap(
        lambda t: st.sampled_from(
            [t.encode(), t.replace("\n", "\r\n").encode(), b"\xef\xbb\xbf" + t.encode()]
        )
    )
    return st.one_of(as_bytes, st.binary(max_size=120))


# --- defect 9: all or nothing -----------------------------------------------------------

GOOD = {"path": "h/good.md", "id": "", "workspace": "h", "text": "---\nid: good1\n---\ngood\n"}
LATER = {"path": "h/later.md", "id": "", "workspace": "h", "text": "---\nid: later1\n---\nl\n"}


@pytest.mark.parametrize(
    "path",
    [
        "h/../escape.md",
        "../escape.md",
        "/tmp/escape.md",
        "h/..\\..\\escape.md",
        "h/\\escape.md",
        ".git/hooks/x.md",
        "h/.git/x.md",
        ".memstore/x.md",
        "h/./x.md",
        "h//x.md",
        "top.md",
        "h/not-markdown.sh",
        "h/nul\0.md",
        "h/" + "x" * 253 + ".md",
    ],
)
def test_restore_refuses_an_unsafe_path_and_writes_nothing(
    store: Store, vault: Path, path: str
) -> None:
    before, commit = vault_bytes(vault), head(vault)
    bad = {**GOOD, "path": path, "text": "---\nid: bad1\n---\nbad\n"}
    with pytest.raises(InvalidInputError, match=r"unsafe path.*nothing was restored"):
        restore(store, parse_export(export_data([GOOD, bad, LATER])))
    assert vault_bytes(vault) == before and head(vault) == commit and git_is_clean(vault)


def test_restore_with_a_bad_entry_in_the_middle_changes_nothing(
    vault: Path, tmp_path: Path
) -> None:
    cli(vault, "add", "an existing memory to merge into", "-w", "h")
    current = json.loads(cli(vault, "export").stdout)["memories"][0]
    merged = {**current, "text": current["text"].replace("seen: 1", "seen: 7")}
    bad = {**GOOD, "path": "h/../../escape.md"}
    exported = tmp_path / "bad.json"
    exported.write_text(json.dumps(export_data([GOOD, merged, bad, LATER])), encoding="utf-8")
    before, commit = vault_bytes(vault), head(vault)
    done = cli(vault, "restore", str(exported))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "'h/../../escape.md'" in done.stderr and "Traceback" not in done.stderr
    assert vault_bytes(vault) == before and head(vault) == commit and git_is_clean(vault)
    assert not (tmp_path / "escape.md").exists()
    fresh = tmp_path / "fresh"
    assert cli(fresh, "restore", str(exported)).returncode == 1
    assert not fresh.exists()  # a bad export does not even create the vault


def test_restore_of_an_entry_holding_a_credential_names_it_and_the_export_as_the_fix(
    vault: Path, tmp_path: Path
) -> None:
    """An export holds a hand-written file its vault never committed (a credential in it):
    restore refused in the words of a hand edit, "remove the credential from the file, or
    commit it yourself with git", a file that was never left in this vault."""
    key = "wJalrXUtnFEMK7MDENGbPxRfiCYzq81Ab4TkL0vX"  # random-looking, not AWS's example
    creds = {**GOOD, "path": "h/creds.md", "text": f"ops: AWS_SECRET_ACCESS_KEY={key}\n"}
    exported = tmp_path / "export.json"
    exported.write_text(json.dumps(export_data([GOOD, creds, LATER])), encoding="utf-8")
    before, commit = vault_bytes(vault), head(vault)

    done = cli(vault, "restore", str(exported))

    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        "Error: cannot restore h/creds.md: it holds what looks like an AWS"
    ), done.stderr
    assert done.stderr.rstrip().endswith(
        "so nothing was restored; restore with --allow-secret to keep it as its vault did, "
        "or remove that entry from the export"
    ), done.stderr
    assert key not in done.stderr
    assert vault_bytes(vault) == before and head(vault) == commit and git_is_clean(vault)


def test_an_export_holding_a_memory_kept_with_allow_secret_restores_with_allow_secret(
    vault: Path, tmp_path: Path
) -> None:
    """A vault with one `add --allow-secret` memory exported a backup that no restore took:
    the restore's commit refused the credential, and with it every other memory."""
    cli(vault, "add", "prod key AKIAQ3EGRJ5LTMWD7XZN for the build bot", "--allow-secret")
    cli(vault, "add", "a plain note beside it")
    exported = tmp_path / "export.json"
    assert cli(vault, "export", "-o", str(exported)).returncode == 0
    fresh = tmp_path / "fresh"
    assert cli(fresh, "init", str(fresh)).returncode == 0
    refused = cli(fresh, "restore", str(exported))
    assert refused.returncode == 1 and "--allow-secret" in refused.stderr, refused.stderr
    done = cli(fresh, "restore", str(exported), "--allow-secret", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 2
    assert vault_bytes(fresh) == vault_bytes(vault) and git_is_clean(fresh)


@pytest.mark.parametrize(
    ("field", "value"),
    [("text", "lone \ud800 surrogate"), ("text", 42), ("base64", "not base64!")],
)
def test_restore_refuses_unreadable_content_and_writes_nothing(
    store: Store, vault: Path, field: str, value: object
) -> None:
    before = vault_bytes(vault)
    with pytest.raises(InvalidInputError, match=r"unreadable content.*nothing was restored"):
        restore(store, parse_export(export_data([GOOD, {**LATER, field: value}])))
    assert vault_bytes(vault) == before


def test_restore_refuses_a_workspace_folder_that_is_a_symlink_out_of_the_vault(
    store: Store, vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "h").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidInputError, match="h in the vault is not a folder"):
        restore(store, parse_export(export_data([GOOD])))
    assert list(outside.iterdir()) == []


def test_restore_refuses_to_write_through_a_symlinked_file(
    store: Store, vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"not the vault's\n")
    (vault / "h").mkdir()
    (vault / "h" / "good.md").symlink_to(outside)
    with pytest.raises(InvalidInputError, match="symlink"):
        restore(store, parse_export(export_data([GOOD])))
    assert outside.read_bytes() == b"not the vault's\n"


def test_restore_that_cannot_commit_puts_every_file_back(vault: Path, tmp_path: Path) -> None:
    cli(vault, "add", "an existing memory to merge into", "-w", "h")
    current = json.loads(cli(vault, "export").stdout)["memories"][0]
    merged = {**current, "text": current["text"].replace("seen: 1", "seen: 7")}
    new = {**GOOD, "path": "new-ws/new.md"}
    exported = tmp_path / "restore.json"
    exported.write_text(json.dumps(export_data([new, merged, LATER])), encoding="utf-8")
    before, commit = vault_bytes(vault), head(vault)
    branch = git(vault, "symbolic-ref", "HEAD").strip()
    lock = vault / ".git" / f"{branch}.lock"  # another git process is updating the branch
    lock.write_text("", encoding="utf-8")
    # ... and is alive (waiting on its input), so the lock is its and stays
    person = subprocess.Popen(
        ["git", "hash-object", "--stdin"], cwd=vault, stdin=subprocess.PIPE, text=True
    )
    try:
        done = cli(vault, "restore", str(exported))
    finally:
        person.communicate("x", timeout=10)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lock.unlink()
    assert vault_bytes(vault) == before and head(vault) == commit and git_is_clean(vault)
    assert not (vault / "new-ws").exists()


def test_restore_never_overwrites_another_memory_at_the_exported_path(
    store: Store, vault: Path
) -> None:
    write_files(vault, {"h/good.md": b"---\nid: mine1\n---\nthe person's own\n"})
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "by hand")
    report = restore(store, parse_export(export_data([GOOD])))
    assert (report.added, report.kept[0][0]) == (0, "h/good.md")
    assert (vault / "h/good.md").read_bytes() == b"---\nid: mine1\n---\nthe person's own\n"


def test_restore_keeps_a_vault_file_it_cannot_merge_and_says_so(
    vault: Path, tmp_path: Path
) -> None:
    write_files(vault, {"h/bin.md": NOT_UTF8})
    exported = tmp_path / "e.json"
    cli(vault, "export", "-o", str(exported))
    data = json.loads(exported.read_text(encoding="utf-8"))
    data["memories"][0].pop("base64")  # as an old export would carry it: lossy text only
    exported.write_text(json.dumps(data), encoding="utf-8")
    done = cli(vault, "restore", str(exported))
    assert done.returncode == 0 and "1 kept as they were" in done.stdout
    assert "kept h/bin.md: the vault's copy is not valid UTF-8" in done.stderr
    assert (vault / "h/bin.md").read_bytes() == NOT_UTF8


def test_restore_refuses_an_export_from_a_newer_format() -> None:
    with pytest.raises(InvalidInputError, match=r"version 3 .*upgrade memstore"):
        parse_export(export_data([GOOD], version=3))


# --- defect 12: owner-only files ----------------------------------------------------------


def test_export_file_is_created_owner_only(vault: Path, tmp_path: Path) -> None:
    cli(vault, "add", "a memory to export", "-w", "h")
    fresh, existing = tmp_path / "fresh.json", tmp_path / "existing.json"
    existing.write_text("old", encoding="utf-8")
    existing.chmod(0o644)
    with umask(0):
        for output in (fresh, existing):
            assert cli(vault, "export", "-o", str(output)).returncode == 0
            assert stat.S_IMODE(output.stat().st_mode) == 0o600
            assert json.loads(output.read_text(encoding="utf-8"))["memories"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_restored_files_are_owner_only_and_so_are_the_folders_made_for_them(
    vault: Path, tmp_path: Path
) -> None:
    write_files(vault, {"h/dir.md/inner.md": b"nested\n", "w/a/b/c.md": b"deeper\n"})
    exported = tmp_path / "e.json"
    cli(vault, "export", "-o", str(exported))
    other = tmp_path / "other"
    with umask(0):
        assert cli(other, "init", str(other)).returncode == 0
        assert cli(other, "restore", str(exported)).returncode == 0
    assert modes(other) == {("file", 0o600), ("folder", 0o700)}


def test_a_person_s_uncommitted_edit_is_committed_on_its_own_before_a_restore_merges(
    vault: Path, tmp_path: Path
) -> None:
    memory_id = json.loads(cli(vault, "add", "merge target memory", "-w", "h", "--json").stdout)[
        "id"
    ]
    item = json.loads(cli(vault, "export").stdout)["memories"][0]
    exported = tmp_path / "e.json"
    item["text"] = item["text"].replace("seen: 1", "seen: 7")
    exported.write_text(json.dumps(export_data([item])), encoding="utf-8")
    path = vault / item["path"]
    path.write_bytes(path.read_bytes() + b"a line the person added\n")
    done = cli(vault, "restore", str(exported))
    assert "1 merged" in done.stdout, done.stderr
    assert git(vault, "log", "-2", "--format=%s").splitlines()[1].startswith("edit(h): ")
    assert "a line the person added" in git(vault, "show", "HEAD~1", "--", item["path"])
    restored = git(vault, "show", "HEAD", "--", item["path"])
    assert "+seen: 7" in restored and "+a line the person added" not in restored
    assert json.loads(cli(vault, "show", memory_id, "--json").stdout)["seen"] == 7
    assert git_is_clean(vault)


AWS_KEY_ID = "AKIAQ3EGRJ5LTMWD7XZN"  # AWS's documented example (tests/core/test_secrets.py)


def test_export_leaves_out_a_file_held_back_for_a_credential_and_names_it(vault: Path) -> None:
    assert cli(vault, "add", "Deploys go out on Tuesdays", "-w", "webshop").returncode == 0
    creds = vault / "webshop" / "creds.md"
    creds.write_text(f"# deploy keys\n\naws_access_key_id = {AWS_KEY_ID}\n", encoding="utf-8")
    assert "webshop/creds.md" not in git(vault, "ls-files")  # never committed
    done = cli(vault, "export")
    assert done.returncode == 0, done.stderr
    assert AWS_KEY_ID not in done.stdout
    exported = json.loads(done.stdout)["memories"]
    assert [m["path"].rsplit("/", 1)[-1] for m in exported if "creds" in m["path"]] == []
    assert any("Tuesdays" in m["text"] for m in exported)  # the rest is exported
    assert "left out webshop/creds.md" in done.stderr
    assert "remove the credential from the file" in done.stderr
    assert AWS_KEY_ID not in done.stderr
    # Once the credential is gone, the file is an ordinary hand-written memory again.
    creds.write_text("# deploy keys\n\nkept in the team's password manager\n", encoding="utf-8")
    again = cli(vault, "export")
    assert "left out" not in again.stderr
    assert any(m["path"] == "webshop/creds.md" for m in json.loads(again.stdout)["memories"])
