"""The daemon reads the team tiers too, and sees what another process's sync pulled."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from memstore.core.config import Settings
from memstore.service.store import Store, init_vault
from tests.conftest import invoke_memstore
from tests.daemon.test_daemon import env, requests_served, run, start_daemon  # noqa: F401


def test_a_search_the_daemon_answers_reads_the_team_tiers(
    tmp_path: Path,
    env: dict[str, str],  # noqa: F811
) -> None:
    remote = tmp_path / "acme.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    maintainer = Settings(
        vault=tmp_path / "maintainer", source="test", session="m", host="m", env=os.environ
    )
    init_vault(maintainer.vault, maintainer)
    with Store.open(maintainer) as store:
        store.add("webshop checkout fails with 413 until nginx allows 10m", workspace="webshop")
        store.set_remote(str(remote))
        store.sync()
    vault = tmp_path / "vault"
    alone = {"MEMSTORE_NO_DAEMON": "1"}
    assert invoke_memstore("init", str(vault), env=alone).returncode == 0
    joined = invoke_memstore("team", "join", "acme", str(remote), vault=vault, env=alone)
    assert joined.returncode == 0, joined.stderr
    env["MEMSTORE_VAULT"] = str(vault)
    start_daemon(env, vault)
    found = run(env, "search", "nginx 413", "--all")
    assert found.returncode == 0 and " acme:webshop · " in found.stdout, found.stderr
    assert requests_served(vault) == 1
    with Store.open(maintainer) as store:
        store.add("the redis eviction policy is allkeys-lru in production", workspace="webshop")
        store.sync()
    synced = run(env, "sync")  # another process pulls the team tier
    assert "team acme: pulled" in synced.stdout, synced.stderr
    found = run(env, "search", "redis eviction policy", "--all")
    assert " acme:webshop · " in found.stdout, found.stderr
    assert requests_served(vault) == 2  # the daemon answered it
