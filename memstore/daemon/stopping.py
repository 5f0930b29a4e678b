"""`memstore daemon --stop` without loading the daemon: only the client, so it returns in well under a second."""

from __future__ import annotations

import sys
from collections.abc import Mapping


def stop_from_command_line(argv: list[str], env: Mapping[str, str], cwd: str) -> int | None:
    """Run `memstore daemon --stop [--vault PATH]` with the lean client alone (importing the
    daemon's server took ~0.3 s quiet, 2-3 s on a busy machine); None: not a plain stop."""
    from memstore.ops.client import resolve_vault, stop
    from memstore.ops.options import DAEMON, last, parse

    options = parse(argv, DAEMON)
    if options is None or "stop" not in options:
        return None
    vault = resolve_vault(last(options, "vault") or None, env, cwd)
    if stop(vault):  # a daemon outlives its vault's removal for a moment: stop it still
        print(f"stopped the daemon for {vault}")
        return 0
    if not (vault / ".git").is_dir():  # a typo in --vault, as status says
        from memstore.core.errors import no_vault_at

        print(f"Error: {no_vault_at(vault)}", file=sys.stderr)
        return 1
    print(f"no daemon runs for {vault}")
    return 0
