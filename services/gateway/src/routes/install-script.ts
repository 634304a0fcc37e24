import { readFile } from "node:fs/promises";

/**
 * The install script template: a real POSIX sh file that shellcheck lints. Read next to this
 * module: src/install/agent.sh under tsx, dist/install/agent.sh once built (the gateway's build
 * copies it there).
 */
export const AGENT_SH_TEMPLATE = new URL("../install/agent.sh", import.meta.url);

let template: Promise<string> | undefined;
/** Read once: it ships with the gateway and does not change while it runs. */
export const agentShTemplate = (): Promise<string> => {
  template ??= readFile(AGENT_SH_TEMPLATE, "utf8").catch((err) => {
    template = undefined;
    throw err;
  });
  return template;
};

export interface AgentShValues {
  /** e.g. https://orch.example.com (no trailing slash). */
  baseUrl: string;
  /** host:port of the agent link. */
  server: string;
  /** sha256:HEX, empty when insecure. */
  fingerprint: string;
  insecure: boolean;
  /** The version installed when --version is not given. */
  version: string;
  /** SPKI PEM of the release key. */
  releasePub: string;
}

/** Every placeholder sits inside single quotes in the template; a ' in a value must not end them. */
const singleQuoted = (v: string) => v.replace(/'/g, `'\\''`);

/** Fills the template's @@NAME@@ placeholders; throws on one left unfilled (a template/renderer mismatch). */
export function renderAgentSh(tpl: string, v: AgentShValues): string {
  const values: Record<string, string> = {
    BASE_URL: v.baseUrl,
    SERVER: v.server,
    FINGERPRINT: v.fingerprint,
    INSECURE: v.insecure ? "true" : "false",
    VERSION: v.version,
    RELEASE_PUB: v.releasePub.trim(),
  };
  const out = tpl.replace(/@@([A-Z_]+)@@/g, (m, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`install script template: unknown placeholder ${m}`);
    return singleQuoted(value);
  });
  return out;
}

/** The link address the agent dials: the advertised one, else the base URL's host with the link's port. */
export function linkAddress(baseUrl: string, advertiseAddress: string, port: number): string {
  if (advertiseAddress) return advertiseAddress;
  return `${new URL(baseUrl).hostname}:${port}`;
}

/**
 * What /install/agent.sh answers when the server cannot install an agent (nothing published, no
 * release key, the agents service down): a script that prints why on stderr and exits 1. The
 * documented line is `curl -fsSL … | sh`, and curl -f hands sh nothing on an error status, which sh
 * runs as an empty script that "succeeds"; so the answer is 200 and the failure is the script's.
 */
export function renderFailingSh(v: { baseUrl: string; code: string; detail: string }): string {
  const say = (line: string) => `  printf '%s\\n' '${singleQuoted(line)}'`;
  return [
    "#!/bin/sh",
    "# orch-agent install script: this server cannot install an agent now, so this only says why.",
    "# The reason is printed as written: a `…` in it is a quoted command, not one to run.",
    "# shellcheck disable=SC2016",
    "{",
    say(`orch-agent install: ${v.baseUrl} cannot install an agent now (${v.code}):`),
    say(`  ${v.detail}`),
    say("nothing was installed; run the same install line again once that is fixed."),
    "} >&2",
    "exit 1",
    "",
  ].join("\n");
}
