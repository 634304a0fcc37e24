/**
 * The text files of the package tree: the launcher, the systemd unit and the Debian control data
 * and maintainer scripts. Shell is POSIX sh (dash, busybox) and shellcheck-clean (tested).
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { AGENT_CONFIG_DIR, AGENT_DATA_DIR, AGENT_ENV_FILE, AGENT_INSTALL_ROOT } from "@orch/contracts";
import { nodeFlagsFor } from "@orch/kit/bulk-gc";

/**
 * releases/<v>/bin/orch-agent. Resolves its own symlinks (/usr/bin/orch-agent → current → releases/<v>)
 * so ORCH_AGENT_RELEASE_DIR names the real release directory the agent's upgrader works from.
 */
export const WRAPPER = `#!/bin/sh
# orch-agent launcher: the bundled agent on the Node.js runtime of the same release.
set -e
here=$(dirname "$(readlink -f "$0")")/..
here=$(cd "$here" && pwd -P)
ORCH_AGENT_RELEASE_DIR=$here
export ORCH_AGENT_RELEASE_DIR
exec "$here/node/bin/node" ${nodeFlagsFor("agent").join(" ")} "$here/lib/orch-agent.mjs" "$@"
`;

export const UNIT_NAME = "orch-agent.service";

/**
 * The unit is deploy/systemd/orch-agent.service, one file for packages and hand installs. It runs as
 * root on purpose (docs/agent-install.md § Packages): the agent manages system state.
 */
export const UNIT = readFileSync(
  fileURLToPath(new URL("../../deploy/systemd/orch-agent.service", import.meta.url)),
  "utf8",
);

/** Debian's own version syntax: a '-' would start a Debian revision, '~' sorts before the release as ours does. */
export const debianVersion = (version: string) => version.replace(/-/g, "~");

export function control(o: { version: string; nodeVersion: string; installedKiB: number }): string {
  return `Package: orch-agent
Version: ${debianVersion(o.version)}
Architecture: amd64
Maintainer: orch maintainers <orch@localhost>
Installed-Size: ${o.installedKiB}
Depends: libc6 (>= 2.28), libstdc++6, libgcc-s1 | libgcc1
Section: admin
Priority: optional
Description: orch fleet agent
 Links this machine to the orch orchestrator over an authenticated gRPC link
 and applies desired state, runs commands and serves remote terminals.
 Self-contained: ships its own Node.js runtime (${o.nodeVersion}); no Node.js
 installation is needed.
`;
}

/**
 * postinst: the data dir (identity key: 0700), then the unit, only when systemd runs (not in a
 * chroot or container without it). The service is (re)started only once it is configured
 * (agent.env exists): before that it would fail to link and restart every 2 s.
 */
export const POSTINST = `#!/bin/sh
set -e
if [ "$1" = configure ]; then
  mkdir -p ${AGENT_DATA_DIR}
  chmod 0700 ${AGENT_DATA_DIR}
  mkdir -p ${AGENT_CONFIG_DIR}
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
    if [ -f ${AGENT_ENV_FILE} ]; then
      systemctl enable ${UNIT_NAME} || true
      systemctl restart ${UNIT_NAME} || true
    else
      echo "orch-agent: write ${AGENT_ENV_FILE}, then: systemctl enable --now orch-agent"
    fi
  fi
fi
exit 0
`;

/** prerm: stop on removal only; on upgrade the new postinst restarts the running agent. */
export const PRERM = `#!/bin/sh
set -e
case "$1" in
  remove|deconfigure)
    if [ -d /run/systemd/system ]; then
      systemctl stop ${UNIT_NAME} || true
      systemctl disable ${UNIT_NAME} || true
    fi
    ;;
esac
exit 0
`;

/**
 * postrm: purge removes what dpkg does not own: the identity and state, the configuration, and
 * releases the agent's upgrader installed next to the packaged one.
 */
export const POSTRM = `#!/bin/sh
set -e
case "$1" in
  remove|purge)
    if [ -d /run/systemd/system ]; then
      systemctl daemon-reload || true
    fi
    ;;
esac
if [ "$1" = purge ]; then
  rm -rf ${AGENT_DATA_DIR} ${AGENT_CONFIG_DIR} ${AGENT_INSTALL_ROOT}
fi
exit 0
`;
