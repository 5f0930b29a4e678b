#!/bin/sh
# Claude Code UserPromptSubmit hook: adds the memories that match the prompt to its context.
# Silent when nothing confident matches; never blocks the prompt (always exits 0).
exec "${MEMSTORE_BIN:-memstore}" hook prompt
