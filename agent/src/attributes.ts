import { readFileSync } from "node:fs";
import os from "node:os";
import { AGENT_VERSION } from "./version.js";

/** Parses /etc/os-release (KEY="value" lines). */
export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!.replace(/^(["'])(.*)\1$/, "$2");
  }
  return out;
}

function osRelease(): Record<string, string> {
  for (const p of ["/etc/os-release", "/usr/lib/os-release"]) {
    try {
      return parseOsRelease(readFileSync(p, "utf8"));
    } catch {
      /* try the next */
    }
  }
  return {};
}

function addresses(): string {
  const out: string[] = [];
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (!a.internal) out.push(a.address);
  }
  return out.sort().join(",");
}

/**
 * What the machine looks like, as flat strings (selectors match `attr.<key>`). `os` is the
 * platform; distro, distro_version and os_release come from /etc/os-release.
 */
export function collectAttributes(opts: { terminalEnabled: boolean }): Record<string, string> {
  const rel = osRelease();
  return {
    hostname: os.hostname(),
    os: os.platform(),
    distro: rel.ID ?? "",
    distro_version: rel.VERSION_ID ?? "",
    os_release: rel.PRETTY_NAME ?? "",
    kernel: os.release(),
    arch: os.machine(),
    cpus: String(os.availableParallelism()),
    memory_bytes: String(os.totalmem()),
    addresses: addresses(),
    agent_version: AGENT_VERSION,
    terminal_enabled: String(opts.terminalEnabled),
  };
}
