#!/bin/sh
# Claude Code SessionStart hook: lists what changed in memory since this agent's last
# session (from the vault's git history), within ~300 tokens. Silent the first time.
exec "${MEMSTORE_BIN:-memstore}" hook briefing
