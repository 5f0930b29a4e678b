"""A newcomer's first session, scripted: the README's install lines into a fresh HOME, then
init, add, search, list, edit, show, an agent's hooks, and two vaults syncing with a plain
`git pull` in a third clone — every command the installed `memstore` a person would run.

The install reads nothing from the network: pip takes every wheel from the wheelhouse that
`make test` fills (.venv/wheelhouse; made here the same way if it is missing).
"""

from __future__ import annotations

import fcntl
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, commit_count, git

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
LESSON = "Upload 413 is nginx client_max_body_size, not the app; raise it in the server block"
# One worker runs this module (`make test` distributes by group): the README's install, ~45 s
# of a worker's time, is made once, not once in each worker that draws one of these tests.
pytestmark = pytest.mark.xdist_group("newcomer")


def readme_block(heading: str) -> list[str]:
    """The command lines of the first sh block under `heading`, comments left out."""
    section = README.split(f"\n## {heading}\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, heading
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def fresh_home(root: Path, name: str) -> Path:
    home = root / name
    home.mkdir()
    return home


class Machine:
    """A person's shell on a fresh machine: their HOME, a PATH with only the system's tools."""

    def __init__(self, home: Path, tools: Path) -> None:
        self.home = home
        self.env = {
            "HOME": str(home),
            "PATH": f"{tools}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",  # no git identity, no system settings: a new machine
            "MEMSTORE_NO_DAEMON": "1",  # no resident index left behind by the test
            # pip and pipx install from the wheelhouse only (no network)
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(WHEELHOUSE),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "MEMSTORE_HOOK_BUDGET": "120",  # an answer, however busy the machine running tests
        }

    def sh(
        self, line: str, cwd: Path | None = None, stdin: str | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run one shell line as the person would type it; it must succeed."""
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=cwd or self.home,
            env={**self.env, **env},
            input=stdin,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=300,
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        return done


def _wheelhouse() -> Path:
    """The wheelhouse, filled first if missing (by one pytest worker while the others wait)."""
    with open(Path(sys.prefix) / ".wheelhouse.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not WHEELHOUSE.is_dir():  # what `make test` does first (Makefile: $(WHEELHOUSE))
            wanted = [str(REPO_ROOT), "pip", "pipx", "hatchling"]
            partial = WHEELHOUSE.with_name("wheelhouse.partial")
            shutil.rmtree(partial, ignore_errors=True)
            download = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(partial)]
            subprocess.run([*download, *wanted], check=True, timeout=600)
            partial.rename(WHEELHOUSE)
    return WHEELHOUSE


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    """A fresh HOME where the README's install lines ran, from this checkout."""
    _wheelhouse()
    root = tmp_path_factory.mktemp("newcomer")
    tools = root / "tools"  # `python3` as the machine has it (a pyenv shim needs its HOME)
    tools.mkdir()
    (tools / "python3").symlink_to(Path(sys._base_executable).resolve())  # type: ignore[attr-defined]
    machine = Machine(fresh_home(root, "home"), tools)
    for line in readme_block("Install"):
        machine.sh(line, cwd=REPO_ROOT)
    # "Open a new shell": ensurepath put ~/.local/bin on PATH in the shell's start-up files.
    local_bin = f"{machine.home}/.local/bin"
    starts = [machine.home / name for name in (".bashrc", ".profile", ".bash_profile")]
    assert any(local_bin in p.read_text(encoding="utf-8") for p in starts if p.exists())
    machine.env["PATH"] = f"{local_bin}:{machine.env['PATH']}"
    yield machine


def test_the_readme_install_lines_work_in_a_fresh_home(installed: Machine) -> None:
    home = installed.home
    link = home / ".local" / "bin" / "memstore"
    assert link.exists(), "pipx did not link memstore into ~/.local/bin"
    assert installed.sh("command -v memstore").stdout.strip() == str(link)
    assert installed.sh("memstore --version").stdout.startswith("memstore ")


def test_a_newcomer_inits_adds_searches_lists_edits_and_shows(installed: Machine) -> None:
    scratch = installed.home / "notes"  # outside any git repository
    scratch.mkdir()
    sh = installed.sh
    sh("memstore init", cwd=scratch)
    vault = installed.home / "memstore"
    assert (vault / ".git").is_dir() and not (scratch / ".git").exists()
    added = json.loads(
        sh(
            f"memstore add {shlex.quote(LESSON)} --kind lesson -K nginx -K upload --json",
            cwd=scratch,
        ).stdout
    )
    memory = added["id"]
    assert added["workspace"] == "global"
    sh('memstore add "Staging deploys need approval from @maria" -w webshop')
    assert memory in sh('memstore search "nginx upload limit"', cwd=scratch).stdout
    assert memory in sh("memstore search nginx upload limit", cwd=scratch).stdout  # unquoted
    listed = json.loads(sh("memstore list --json").stdout)
    assert listed["by_workspace"] == {"global": 1, "webshop": 1}
    assert memory in {m["id"] for m in listed["memories"]}
    assert memory in sh("memstore ls -w global").stdout
    # An editor that changes the text: one edit(…) commit, and search sees it at once.
    editor = installed.home / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/server block/server block of nginx.conf/" "$1"\n')
    editor.chmod(0o755)
    commits = commit_count(vault)
    sh(f"memstore edit {memory[:5]}", EDITOR=str(editor), VISUAL="")
    assert commit_count(vault) == commits + 1
    assert git(vault, "log", "-1", "--format=%s").startswith("edit(global): ")
    assert memory in sh('memstore search "nginx.conf"').stdout
    shown = sh(f"memstore show {memory[:4]}").stdout
    assert f"id: {memory}" in shown and "server block of nginx.conf" in shown


def test_init_of_another_folder_says_how_to_use_it(installed: Machine) -> None:
    """A vault made anywhere but ~/memstore: init prints the one line that points the other
    commands at it (without it, they would use, and make, ~/memstore)."""
    folder = installed.home / "work notes"
    printed = installed.sh(f"memstore init {shlex.quote(str(folder))}").stdout
    export = next(line for line in printed.splitlines() if "export MEMSTORE_VAULT=" in line)
    line = export.removeprefix("Next:").partition("(")[0].strip()
    assert line == f"export MEMSTORE_VAULT={shlex.quote(str(folder))}"
    before = (
        commit_count(installed.home / "memstore") if (installed.home / "memstore").exists() else 0
    )
    installed.sh(f'{line} && memstore add "Builds of the docs site run on Fridays"')
    assert len(list(folder.rglob("*.md"))) == 1
    assert (
        not (installed.home / "memstore").exists()
        or commit_count(installed.home / "memstore") == before
    )
    assert "export" not in installed.sh("memstore init").stdout  # the default needs no line


def test_agents_install_puts_hooks_that_recall_into_the_persons_claude_settings(
    installed: Machine,
) -> None:
    sh = installed.sh
    sh("memstore init")
    memory = json.loads(sh(f"memstore add {shlex.quote(LESSON)} -K nginx --json").stdout)["id"]
    sh("memstore agents --install claude-code --yes")
    settings = json.loads(
        (installed.home / ".claude" / "settings.json").read_text(encoding="utf-8")
    )
    hooks = {
        event: [h["command"] for entry in entries for h in entry["hooks"]]
        for event, entries in settings["hooks"].items()
    }
    assert {"SessionStart", "UserPromptSubmit", "Stop"} <= set(hooks)
    # Claude Code runs the prompt hook with the prompt as JSON on stdin.
    prompt = {
        "prompt": "how do I raise the nginx client_max_body_size for uploads",
        "cwd": str(installed.home),
    }
    answered = sh(hooks["UserPromptSubmit"][0], stdin=json.dumps(prompt), PATH="/usr/bin:/bin")
    # Other tests of this module may have stored the lesson in this home's vault first: the
    # hook then injects one of the copies (a second holds no prompt word the first does not).
    found = json.loads(sh("memstore search client_max_body_size --all --json").stdout)
    lessons = {hit["id"] for hit in found["results"]}
    assert memory in lessons and "client_max_body_size" in answered.stdout, answered.stdout
    assert any(f"[{lesson}]" in answered.stdout for lesson in lessons), answered.stdout
    sh("memstore agents --install claude-code --yes")  # a rerun changes nothing
    again = json.loads((installed.home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert again == settings


def test_two_vaults_sync_through_a_bare_remote_and_a_third_clone_takes_plain_git_pull(
    installed: Machine, tmp_path: Path
) -> None:
    remote = tmp_path / "memory.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    first, second = readme_block("Across machines")
    url = "git@github.com:you/memory.git"
    assert url in first and url in second
    laptop = installed
    laptop.sh("memstore init")
    lesson = json.loads(laptop.sh(f"memstore add {shlex.quote(LESSON)} --json").stdout)["id"]
    laptop.sh(first.replace(url, shlex.quote(str(remote))))
    desktop = Machine(fresh_home(tmp_path, "desktop"), Path("/usr/bin"))
    desktop.env["PATH"] = laptop.env["PATH"]  # the same memstore, installed once
    desktop.sh(second.replace(url, shlex.quote(str(remote))))
    note = json.loads(
        desktop.sh(
            'memstore add "Staging deploys need approval from @maria" -w webshop --json'
        ).stdout
    )["id"]
    assert lesson in desktop.sh('memstore search "nginx upload limit" --all').stdout
    desktop.sh("memstore sync")
    laptop.sh("memstore sync")
    assert note in laptop.sh('memstore search "staging approval" --all').stdout

    # A third clone, set up by init, takes a plain `git pull` that has to merge: both sides
    # stored the lesson again (seen on adjacent lines), and nobody configured a git identity.
    third = tmp_path / "third"
    desktop.sh(f"git clone -q {shlex.quote(str(remote))} {third} && memstore init {third}")
    before = next(third.glob(f"global/**/*-{lesson}.md")).read_text(encoding="utf-8")
    seen = int(re.search(r"^seen: (\d+)$", before, re.MULTILINE).group(1))  # type: ignore[union-attr]
    desktop.sh(f"memstore add {shlex.quote(LESSON)} -w global", MEMSTORE_VAULT=str(third))
    laptop.sh(f"memstore add {shlex.quote(LESSON)} -w global && memstore sync")
    pulled = desktop.sh("git pull", cwd=third)
    assert "CONFLICT" not in pulled.stdout + pulled.stderr
    text = next(third.glob(f"global/**/*-{lesson}.md")).read_text(encoding="utf-8")
    # both bumps count (the same bump on two clones once looked identical to git: one lost)
    assert f"seen: {seen + 2}\n" in text and "<<<<<<<" not in text
    assert git(third, "status", "--porcelain") == ""


def test_the_demo_hint_runs_from_a_shell_without_memstore_on_path(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("memstore")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    done = subprocess.run(
        [str(exe), "demo", str(tmp_path / "demo")],
        env={**env, "MEMSTORE_NO_DAEMON": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    steps = re.findall(r"^(\d+)\. ", done.stdout, re.M)
    assert steps == [str(n) for n in range(1, len(steps) + 1)]  # each number once, in order
    hint = done.stdout.split("Try it yourself:", 1)[1].strip()
    tried = subprocess.run(
        ["bash", "-c", hint],
        env={**env, "MEMSTORE_NO_DAEMON": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tried.returncode == 0, tried.stderr
    assert "deploy" in tried.stdout.lower()
