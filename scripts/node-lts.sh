#!/usr/bin/env bash
# Sourced by .ci/run (and usable by hand: `source scripts/node-lts.sh`): puts the supported Node LTS
# (the version in .node-version) first on PATH when the system Node is older, and points
# npm_config_nodedir at it so node-gyp builds native modules (node-pty) against its headers, offline.
# The runtime is fetched by scripts/lib/pinned-node.mjs, the same code `npm run up`, `npm test` and
# `npm run agent` re-run themselves with (docs/node.md); npm itself is the system one, run by the
# new node.
_orch_node_dir=$(node "$(dirname "${BASH_SOURCE[0]}")/lib/pinned-node.mjs")
if [ -n "$_orch_node_dir" ] && [ -x "$_orch_node_dir/bin/node" ]; then
  export PATH="$_orch_node_dir/bin:$PATH"
  export npm_config_nodedir="$_orch_node_dir"
elif [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt "$(cut -d. -f1 "$(dirname "${BASH_SOURCE[0]}")/../.node-version")" ]; then
  echo "warning: Node $(tr -d ' \n' <"$(dirname "${BASH_SOURCE[0]}")/../.node-version") could not be installed; staying on $(node -v 2>/dev/null || echo 'no node')" >&2
fi
unset _orch_node_dir
