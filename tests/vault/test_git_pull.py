"""Plain `git pull` / `git push` in a vault, by hand, with no git set-up of the person's own.

HOME is an empty folder (no ~/.gitconfig, no identity, no pull mode): what makes git work
is what `memstore init` and `memstore remote add` wrote into the vault's .git/config.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXE, git, hang_bound_s, head, invoke_memstore

TEXT = "upload 413 is nginx client_max_body_size, not the app"


@pytest.fixture
def bare_env(tmp_path: Path) -> dict[str, str]:
    """A person's environment with an empty HOME: no git config anywhere."""
    home = tmp_path / "empty-home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "MEMSTORE_VAULT")) and k != "XDG_CONFIG_HOME"
    }
    return {
        **env,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": f"{EXE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def sh(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a command as a person would in a shell at `cwd` (60 s ends a hang on an idle
    machine: `memstore init` took over that at load 20 for under 1 s of CPU)."""
    return subprocess.run(
        list(args),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=hang_bound_s(60),
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args}: {done.stdout}{done.stderr}"
    return done.stdout


def memory_file(vault: Path) -> str:
    (path,) = (vault / "global").rglob("upload-413*.md")
    return path.read_text(encoding="utf-8")


def test_plain_git_pull_merges_through_the_driver_and_git_push_works(
    tmp_path: Path, bare_env: dict[str, str]
) -> None:
    remote = tmp_path / "memory.git"
    ok(sh(bare_env, tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(remote)))
    a, b = tmp_path / "a", tmp_path / "b"
    ok(sh(bare_env, tmp_path, "memstore", "init", str(a)))
    added = ok(sh(bare_env, a, "memstore", "remote", "add", str(remote), "--vault", str(a)))
    assert "branch main tracks origin/main" in added and "pull.rebase=false" not in added
    ok(sh(bare_env, a, "memstore", "add", TEXT, "-K", "nginx", "--vault", str(a)))
    ok(sh(bare_env, a, "git", "push"))  # the upstream is set: no arguments needed
    ok(sh(bare_env, tmp_path, "git", "clone", "-q", str(remote), str(b)))
    ok(sh(bare_env, tmp_path, "memstore", "init", str(b)))
    # both machines store the same memory again (seen 1 → 2 on each) and something of their own
    for vault, word in ((a, "proxy"), (b, "upload")):
        ok(sh(bare_env, vault, "memstore", "add", TEXT, "-K", word, "--vault", str(vault)))
        ok(sh(bare_env, vault, "memstore", "add", f"only on {vault.name}", "--vault", str(vault)))
    ok(sh(bare_env, a, "git", "push"))

    pulled = sh(bare_env, b, "git", "pull")

    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert "CONFLICT" not in pulled.stdout
    merged = memory_file(b)
    assert "seen: 3\n" in merged and "keywords: [nginx, proxy, upload]\n" in merged
    assert "<<<<<<<" not in merged and "conflict" not in merged
    author = ok(sh(bare_env, b, "git", "log", "-1", "--format=%an <%ae> %P"))
    assert author.startswith("memstore <memstore@localhost> ") and len(author.split()) == 4
    ok(sh(bare_env, b, "git", "push"))
    ok(sh(bare_env, a, "git", "pull"))  # a fast-forward on the first machine
    assert memory_file(a) == merged
    assert git(a, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    assert sh(bare_env, a, "memstore", "sync", "--vault", str(a)).stderr == ""


def three_clones(
    tmp_path: Path, env: dict[str, str], old_front_matter: str
) -> tuple[Path, tuple[Path, Path, Path], str]:
    """Three clones a, b, c of a vault whose one memory (TEXT) is as an older memstore wrote
    it (`old_front_matter` after its `seen: 1`); return the remote, the clones, its id."""
    remote = tmp_path / "memory.git"
    ok(sh(env, tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(remote)))
    a, b, c = (tmp_path / name for name in "abc")
    ok(sh(env, tmp_path, "memstore", "init", str(a)))
    ok(sh(env, a, "memstore", "remote", "add", str(remote), "--vault", str(a)))
    ok(sh(env, a, "memstore", "add", TEXT, "--vault", str(a)))
    (path,) = (a / "global").rglob("upload-413*.md")
    path.write_text(memory_file(a).replace("seen: 1\n", old_front_matter), "utf-8")
    ok(sh(env, a, "git", "commit", "-qam", "as an older memstore left it"))
    ok(sh(env, a, "git", "push"))
    for clone in (b, c):
        ok(sh(env, tmp_path, "git", "clone", "-q", str(remote), str(clone)))
        ok(sh(env, tmp_path, "memstore", "init", str(clone)))
    return remote, (a, b, c), path.stem.rsplit("-", 1)[1]


def pull_around(env: dict[str, str], remote: Path, clones: tuple[Path, Path, Path]) -> str:
    """b pushes; c then a pull by plain git (the merge driver counting) and push; b and c
    fast-forward. Return the memory's file, the same bytes on every clone."""
    a, b, c = clones
    ok(sh(env, b, "git", "push"))
    for vault in (c, a):
        pulled = sh(env, vault, "git", "pull")
        assert pulled.returncode == 0 and "CONFLICT" not in pulled.stdout, pulled.stdout
        ok(sh(env, vault, "git", "push"))
    for vault in (b, c):
        ok(sh(env, vault, "git", "pull"))  # fast-forwards
    for vault in clones:
        assert git(vault, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    assert memory_file(a) == memory_file(b) == memory_file(c)
    return memory_file(a)


def test_plain_git_pull_counts_the_same_bump_made_on_two_clones(
    tmp_path: Path, bare_env: dict[str, str]
) -> None:
    """Issue 36 item 3: base seen 8, two clones bump it to 9 each; git must not take the two
    as one identical change (it then never runs the driver and a count is lost)."""
    # a file as an older memstore wrote it: a plain `seen: 8`, no per-clone counts
    remote, clones, _ = three_clones(tmp_path, bare_env, "seen: 8\n")
    for vault in clones:  # the same bump on every clone: seen 8 → 9
        ok(sh(bare_env, vault, "memstore", "add", TEXT, "--vault", str(vault)))
        assert "seen: 9\n" in memory_file(vault)
    assert "seen: 11\n" in pull_around(bare_env, remote, clones)


def test_plain_git_pull_counts_the_same_confirm_made_on_two_clones(
    tmp_path: Path, bare_env: dict[str, str]
) -> None:
    """`confirmed` is a count too: base 2, each of three clones confirms once (to 3, the
    same bytes without a per-clone map); after plain pulls every clone reads 5."""
    # a file as an older memstore wrote it: a plain `confirmed: 2`, no per-clone counts
    remote, clones, memory_id = three_clones(tmp_path, bare_env, "seen: 1\nconfirmed: 2\n")
    for vault in clones:  # the same confirm on every clone: 2 → 3
        ok(sh(bare_env, vault, "memstore", "confirm", memory_id, "--vault", str(vault)))
        assert "confirmed: 3\n" in memory_file(vault)
    assert "confirmed: 5\n" in pull_around(bare_env, remote, clones)


def test_a_persons_identity_and_tracking_are_left_alone(tmp_path: Path) -> None:
    # conftest's HOME has an identity: memstore writes none of its own
    remote, vault = tmp_path / "memory.git", tmp_path / "v"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    assert invoke_memstore("init", str(vault)).returncode == 0
    git(vault, "config", "branch.main.remote", "backup")
    git(vault, "config", "branch.main.merge", "refs/heads/main")
    done = invoke_memstore("remote", "add", str(remote), "--vault", str(vault))
    assert done.returncode == 0, done.stderr
    assert "git pull" not in done.stdout  # nothing to set up
    local = git(vault, "config", "--local", "--list")
    assert "user." not in local and "branch.main.remote=backup" in local
    assert "pull.rebase=false" in local


def test_the_stand_in_identity_goes_once_the_person_has_one(
    tmp_path: Path, bare_env: dict[str, str]
) -> None:
    remote, vault = tmp_path / "memory.git", tmp_path / "v"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    made = ok(sh(bare_env, tmp_path, "memstore", "init", str(vault)))
    assert "user.email=memstore@localhost" in made
    assert "user.name=memstore" in git(vault, "config", "--local", "--list")
    ok(sh(bare_env, vault, "git", "config", "--global", "user.name", "Ada"))
    ok(sh(bare_env, vault, "git", "config", "--global", "user.email", "ada@example.com"))
    done = ok(sh(bare_env, vault, "memstore", "remote", "add", str(remote), "--vault", str(vault)))
    assert "user.email=memstore@localhost removed" in done
    assert "user." not in git(vault, "config", "--local", "--list")
    assert ok(sh(bare_env, vault, "git", "var", "GIT_COMMITTER_IDENT")).startswith("Ada ")


def test_memstores_own_commits_are_the_persons_once_they_set_an_identity(
    tmp_path: Path, bare_env: dict[str, str]
) -> None:
    # A new user who skipped the README's `git config --global user.name` line and set it
    # later: the stand-in must not keep authoring their adds and edits until a sync
    env = bare_env
    vault = Path(env["HOME"]) / "memstore"  # the first add makes the default vault
    ok(sh(env, tmp_path, "memstore", "add", "the first memory, before any identity"))
    assert git(vault, "log", "-1", "--format=%an <%ae>") == "memstore <memstore@localhost>\n"
    ok(sh(env, tmp_path, "git", "config", "--global", "user.name", "Ada"))
    ok(sh(env, tmp_path, "git", "config", "--global", "user.email", "ada@example.com"))
    ok(sh(env, tmp_path, "memstore", "add", "the second memory, after the identity"))
    assert git(vault, "log", "-1", "--format=%an <%ae> %cn") == "Ada <ada@example.com> Ada\n"
    assert "user." not in git(vault, "config", "--local", "--list")
    ok(sh(env, vault, "git", "commit", "-q", "--allow-empty", "-m", "by hand"))
    assert git(vault, "log", "-1", "--format=%an") == "Ada\n"  # plain git too


def test_sync_sets_up_plain_git_in_a_vault_made_before(tmp_path: Path) -> None:
    remote, vault = tmp_path / "memory.git", tmp_path / "v"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    assert invoke_memstore("init", str(vault)).returncode == 0
    git(vault, "remote", "add", "origin", str(remote))  # by hand, as before memstore did this
    git(vault, "config", "--unset", "pull.rebase")
    done = invoke_memstore("sync", vault=vault)
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        "memstore: set up a plain git pull in this vault: pull.rebase=false, "
        "branch main tracks origin/main\n"
    )
    assert git(vault, "rev-parse", "--abbrev-ref", "main@{upstream}") == "origin/main\n"
    again = invoke_memstore("sync", vault=vault)
    assert again.returncode == 0 and again.stderr == ""


def test_remote_alone_prints_the_remotes(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    assert invoke_memstore("init", str(vault)).returncode == 0
    none = invoke_memstore("remote", vault=vault)
    assert none.returncode == 0  # none is an answer, as `remote --json`'s {} (docs/cli.md)
    assert none.stderr == "no remote; add one with: memstore remote add URL\n"
    assert none.stdout == ""
    assert invoke_memstore("remote", "--json", vault=vault).returncode == none.returncode
    git(vault, "remote", "add", "origin", "git@example.com:me/memory.git")
    git(vault, "remote", "add", "backup", "/mnt/usb/memory.git")
    shown = invoke_memstore("remote", vault=vault)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == "origin\tgit@example.com:me/memory.git\nbackup\t/mnt/usb/memory.git\n"
    help_text = invoke_memstore("remote", "--help")
    assert "add" in help_text.stdout and "show" in help_text.stdout


def test_a_relative_remote_path_is_stored_absolute_and_sync_reaches_it(
    tmp_path: Path, bare_env: dict[str, str]
) -> None:
    # git reads a relative URL from the vault: `remotes/u.git` typed in tmp_path was unreachable
    (tmp_path / "remotes").mkdir()
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "remotes/u.git")
    ok(sh(bare_env, tmp_path, "memstore", "init", "vaults/u1"))
    added = ok(
        sh(bare_env, tmp_path, "memstore", "remote", "--vault", "vaults/u1", "add", "remotes/u.git")
    )
    where = str((tmp_path / "remotes" / "u.git").resolve())
    assert added.startswith(f"remote origin = {where}\n"), added
    vault = tmp_path / "vaults" / "u1"
    assert git(vault, "config", "remote.origin.url") == where + "\n"
    ok(sh(bare_env, tmp_path, "memstore", "add", TEXT, "--vault", str(vault)))
    ok(sh(bare_env, tmp_path, "memstore", "sync", "--vault", str(vault)))
    assert git(tmp_path / "remotes" / "u.git", "rev-parse", "main") == git(
        vault, "rev-parse", "main"
    )
    for url in ("git@example.com:me/m.git", "https://example.com/m.git", where):
        ok(sh(bare_env, tmp_path, "memstore", "remote", "--vault", str(vault), "add", url))
        assert git(vault, "config", "remote.origin.url") == url + "\n"
    before = (git(vault, "config", "--list"), head(vault))
    for typo, said in (
        ("nope/u.git", f"no such path 'nope/u.git' from {tmp_path}; "),
        # an absolute path was taken as given: every sync then failed on it
        ("/abs/not/made.git", "no such path '/abs/not/made.git'; "),
        ("file:///abs/not/made.git", "no such path 'file:///abs/not/made.git'; "),
    ):
        missing = sh(bare_env, tmp_path, "memstore", "remote", "--vault", str(vault), "add", typo)
        assert missing.returncode == 1 and missing.stderr.count("\n") == 1, missing.stderr
        assert missing.stderr.startswith(f"Error: {said}"), missing.stderr
        assert "(e.g. made with: git init --bare /" in missing.stderr  # the path it names
        assert (git(vault, "config", "--list"), head(vault)) == before  # nothing changed


def test_a_sync_to_a_path_where_no_repository_is_names_git_init_bare(
    tmp_path: Path, bare_env: dict[str, str]
) -> None:
    """Found by the eleventh session's trial: a remote's folder gone (a disk not mounted, a
    folder moved), the sync said "run 'memstore sync' again when it is reachable", which
    never helps: it names the folder and how to make the repository there."""
    ok(sh(bare_env, tmp_path, "memstore", "init", "v"))
    vault = tmp_path / "v"
    later = tmp_path / "disk" / "memory.git"
    git(tmp_path, "init", "-q", "--bare", str(later))
    ok(sh(bare_env, tmp_path, "memstore", "remote", "--vault", "v", "add", str(later)))
    shutil.rmtree(tmp_path / "disk")  # the disk is not mounted today
    ok(sh(bare_env, tmp_path, "memstore", "add", TEXT, "--vault", str(vault)))

    failed = sh(bare_env, tmp_path, "memstore", "sync", "--vault", str(vault))

    assert failed.returncode == 1 and failed.stderr.count("\n") == 1, failed.stderr
    assert f"there is no repository at {later}; make one with 'git init --bare {later}'" in (
        failed.stderr
    ), failed.stderr
    assert "when it is reachable" not in failed.stderr, failed.stderr
    git(tmp_path, "init", "-q", "--bare", str(later))  # what it says
    ok(sh(bare_env, tmp_path, "memstore", "sync", "--vault", str(vault)))
    assert git(later, "rev-parse", "main") == git(vault, "rev-parse", "main")
