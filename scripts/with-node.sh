#!/usr/bin/env bash
# Runs a command on the Node that production runs (.nvmrc: 22, as the Lambdas' nodejs22.x, esbuild's
# node22 target and the worker's node:22-alpine image), or a newer one. `npm start` and `npm test`
# go through here, so the local run's Lambda sandboxes (worker_threads in the host process) and
# every test run on that Node even where the machine's default is older.
#
#   - `node` on PATH is that major or newer: the command replaces this shell, untouched.
#   - older: Node <major> comes from the npm registry's `node` package (`npx -p node@22`, cached in
#     ~/.npm/_npx after the first time), its directory goes first on PATH, and the command
#     replaces this shell. Every `node`, `npm run`, tsx, mocha and tsc the command starts then
#     finds that Node first (their shebangs are `env node`), so nested npm scripts that come back
#     here take the first branch: the switch happens once.
#
# Both branches `exec`: no process stays in between, so the exit code, stdin/stdout/stderr (and
# the TTY the live view draws on) and signals (Ctrl-C reaches the run and its moto child as before)
# are the command's own, and arguments pass through as given.
# Usage: scripts/with-node.sh <command> [args…]
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: scripts/with-node.sh <command> [args…]" >&2
  exit 2
fi

want=$(tr -d ' \tv\r\n' < "$(dirname "$0")/../.nvmrc")
want=${want%%.*}
major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if command -v node >/dev/null 2>&1 && [ "$(major node)" -ge "$want" ]; then
  exec "$@"
fi

have=$(node --version 2>/dev/null || echo "no node")
# npx's own notes (the download on a first run, npm config warnings) are shown only if it fails.
npx_log=$(mktemp)
if ! node_bin=$(npx --yes -p "node@$want" node -p process.execPath 2>"$npx_log") || [ "$(major "$node_bin")" -ne "$want" ]; then
  cat "$npx_log" >&2
  rm -f "$npx_log"
  echo "with-node: Node $want is needed (the default here is $have) and could not be fetched with \`npx -p node@$want\`; install Node $want (see .nvmrc)" >&2
  exit 2
fi
rm -f "$npx_log"
echo "with-node: the default Node here is $have, older than $want (.nvmrc); running on Node $("$node_bin" --version) from the npm registry (npx -p node@$want)" >&2
PATH="$(dirname "$node_bin"):$PATH" exec "$@"
