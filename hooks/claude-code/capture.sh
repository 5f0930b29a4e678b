#!/bin/sh
# Claude Code Stop / SessionEnd hook: keeps the session's final assistant message as a
# memory of kind "trace", unless it is short (under 200 characters) or an existing memory
# already says it (--if-novel). Never fails the session (always exits 0).
exec "${MEMSTORE_BIN:-memstore}" hook capture --if-novel
