"""`make dist` builds the distribution a person installs with `pipx install memstore-agents`;
its wheel, installed into a fresh venv with no network, runs the README's commands.

The install takes every dependency from the wheelhouse that `make test` fills (.venv/wheelhouse,
the one tests/test_newcomer.py installs from).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import memstore
from tests.conftest import REPO_ROOT
from tests.test_newcomer import _wheelhouse

DISTRIBUTION = "memstore-agents"  # `memstore` on the package index is another project


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and sdist `make dist` builds (into a temporary DIST, not the checkout's)."""
    out = tmp_path_factory.mktemp("dist")
    venv = Path(sys.prefix)
    subprocess.run(
        # -o: take this venv as set up (make would otherwise reinstall it if pyproject is newer)
        ["make", "-s", "-o", f"{venv}/.installed", "dist", f"VENV={venv}", f"DIST={out}"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def test_make_dist_builds_a_wheel_and_an_sdist_named_memstore_agents(built: Path) -> None:
    version = memstore.__version__
    wheel = built / f"memstore_agents-{version}-py3-none-any.whl"
    sdist = built / f"memstore_agents-{version}.tar.gz"
    assert sorted(p.name for p in built.iterdir()) == sorted([wheel.name, sdist.name])
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"memstore_agents-{version}.dist-info"
        meta = Parser().parsestr(archive.read(f"{info}/METADATA").decode("utf-8"))
        scripts = archive.read(f"{info}/entry_points.txt").decode("utf-8")
    assert meta["Name"] == DISTRIBUTION and meta["Version"] == version
    assert "memstore = memstore.launcher:main" in scripts  # the command keeps its name
    assert "memstore/__init__.py" in names and "memstore/index/__init__.py" in names
    # The search engine installs inside memstore: no top-level package to collide with.
    assert {n.split("/", 1)[0] for n in names if n.endswith(".py")} == {"memstore"}
    assert any(n.startswith("memstore/sample_vault/") and n.endswith(".md") for n in names)
    # `memstore view`'s page: its template, style and script are files the wheel carries
    assert {f"memstore/ops/view_page.{ext}" for ext in ("html", "css", "js")} <= names
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[-1] for m in archive.getmembers()}
    assert {"pyproject.toml", "README.md", "memstore/__init__.py", "Makefile"} <= members
    assert "index/__init__.py" in members  # a wheel built from the sdist takes it from there


def run(args: list[str], home: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "MEMSTORE_NO_DAEMON": "1",
        "PIP_NO_INDEX": "1",  # the wheelhouse only: no network
        "PIP_FIND_LINKS": str(_wheelhouse()),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    done = subprocess.run(
        args, env=env, cwd=home, capture_output=True, text=True, timeout=600, **kwargs
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.long  # CI keeps the build and the wheel's contents (the test above)
def test_the_wheel_in_a_fresh_venv_runs_the_demo_and_adds_and_searches(
    built: Path, tmp_path: Path
) -> None:
    home = tmp_path / "person"  # a fresh HOME: no git identity, no vault
    home.mkdir()
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], home)
    wheel = next(built.glob("*.whl"))
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], home)
    exe = str(venv / "bin" / "memstore")
    assert run([exe, "--version"], home).stdout.strip() == f"memstore {memstore.__version__}"
    # make demo's equivalent: the sample vault inside the wheel, not this checkout's folder
    demo = run([exe, "demo", str(tmp_path / "demo")], home).stdout
    assert "50 sample memories" in demo and "Try it yourself:" in demo
    # the README's Use block, shortened: init, add, search
    run([exe, "init"], home)
    added = json.loads(
        run(
            [exe, "add", "Staging deploys need approval from @maria", "-w", "webshop", "--json"],
            home,
        ).stdout
    )
    found = run([exe, "search", "staging approval", "--all"], home).stdout
    assert added["id"] in found
