import type { Violation } from "./violation.js";

/**
 * orch-agent releases: what `npm run build:agent-package` writes and signs, what the gateway serves
 * under /install (checking the stored signatures), and what the install script and the agent's
 * upgrader verify. One description for all of them (docs/agent-install.md).
 *
 * On disk (releases.dir): `<version>/manifest.json`, `manifest.json.sig` and the files it lists. Served:
 *   GET /install/agent.sh                          the install script (public key embedded)
 *   GET /install/release.pub                       the release public key (PEM, SPKI)
 *   GET /install/releases/<version>/manifest.json  the manifest, byte for byte as on disk
 *   GET /install/releases/<version>/manifest.json.sig  base64 Ed25519 signature of those bytes (made at build)
 *   GET /install/releases/<version>/<file>         a package the manifest lists
 */

/** 1.2.3 or 1.2.3-suffix (the suffix orders after the plain version is NOT modelled: see compareVersions). */
export const AGENT_VERSION_RE = /^(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})(-[0-9A-Za-z.-]{1,40})?$/;
export const AGENT_VERSION_RULE = "a version like 1.2.3 or 1.2.3-rc.1";

export const RELEASE_ARCHES = ["amd64", "arm64"] as const;
export type ReleaseArch = (typeof RELEASE_ARCHES)[number];
export const RELEASE_KINDS = ["deb", "tar"] as const;
export type ReleaseKind = (typeof RELEASE_KINDS)[number];

/** Where a package installs; the agent's upgrader and the unit file use the same paths. */
export const AGENT_INSTALL_ROOT = "/opt/orch-agent";
export const AGENT_CONFIG_DIR = "/etc/orch-agent";
export const AGENT_ENV_FILE = "/etc/orch-agent/agent.env";
export const AGENT_RELEASE_KEY_FILE = "/etc/orch-agent/release.pub";
export const AGENT_DATA_DIR = "/var/lib/orch-agent";

/** Package file names, one rule for the builder, the gateway and the script. */
export const debFileName = (version: string, arch: ReleaseArch) => `orch-agent_${version}_${arch}.deb`;
export const tarFileName = (version: string, arch: ReleaseArch) => `orch-agent-${version}-linux-${arch}.tar.gz`;
/** Safe as a path segment: what a listed file name must match. */
export const RELEASE_FILE_RE = /^orch-agent[-_][0-9A-Za-z._-]{1,100}\.(deb|tar\.gz)$/;

export interface ReleasePackage {
  file: string;
  kind: ReleaseKind;
  arch: ReleaseArch;
  /** Lower-case hex. */
  sha256: string;
  size: number;
}

export interface ReleaseManifest {
  schema: 1;
  name: "orch-agent";
  version: string;
  /** The bundled runtime, e.g. v24.11.1. */
  node_version: string;
  /** ISO 8601. */
  created_at: string;
  packages: ReleasePackage[];
}

export function checkAgentVersion(v: string): Violation | null {
  return AGENT_VERSION_RE.test(v) ? null : { reason: "invalid_version", message: `must be ${AGENT_VERSION_RULE}` };
}

/** Parses and checks a manifest's shape; null when it is not one. */
export function parseReleaseManifest(text: string): ReleaseManifest | null {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof m !== "object" || m === null) return null;
  const r = m as Record<string, unknown>;
  if (r.schema !== 1 || r.name !== "orch-agent") return null;
  if (typeof r.version !== "string" || !AGENT_VERSION_RE.test(r.version)) return null;
  if (typeof r.node_version !== "string" || typeof r.created_at !== "string") return null;
  if (!Array.isArray(r.packages)) return null;
  for (const p of r.packages as unknown[]) {
    if (typeof p !== "object" || p === null) return null;
    const q = p as Record<string, unknown>;
    if (typeof q.file !== "string" || !RELEASE_FILE_RE.test(q.file)) return null;
    if (!RELEASE_KINDS.includes(q.kind as ReleaseKind) || !RELEASE_ARCHES.includes(q.arch as ReleaseArch)) return null;
    if (typeof q.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(q.sha256)) return null;
    if (typeof q.size !== "number" || !Number.isInteger(q.size) || q.size < 0) return null;
  }
  return m as ReleaseManifest;
}

/**
 * Orders versions numerically by major.minor.patch; a suffixed version sorts before its plain
 * one (1.2.3-rc.1 < 1.2.3), suffixes among themselves by string.
 */
export function compareVersions(a: string, b: string): number {
  const pa = AGENT_VERSION_RE.exec(a);
  const pb = AGENT_VERSION_RE.exec(b);
  if (!pa || !pb) return a < b ? -1 : a > b ? 1 : 0;
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d) return d;
  }
  const sa = pa[4] ?? "";
  const sb = pb[4] ?? "";
  if (sa === sb) return 0;
  if (!sa) return 1;
  if (!sb) return -1;
  return sa < sb ? -1 : 1;
}

/**
 * The one text form of a manifest (what `npm run build:agent-package` writes and signs
 * byte for byte): pretty JSON, fixed key order, each packages[] entry on ONE line, so a POSIX sh
 * install script can pick its package's sha256 with grep/sed. Ends with a newline.
 */
export function formatReleaseManifest(m: ReleaseManifest): string {
  const head = {
    schema: m.schema,
    name: m.name,
    version: m.version,
    node_version: m.node_version,
    created_at: m.created_at,
  };
  const lines = m.packages.map((p) =>
    JSON.stringify({ file: p.file, kind: p.kind, arch: p.arch, sha256: p.sha256, size: p.size }),
  );
  const packages = lines.length ? `[\n${lines.map((l) => `    ${l}`).join(",\n")}\n  ]` : "[]";
  return `${JSON.stringify(head, null, 2).slice(0, -2)},\n  "packages": ${packages}\n}\n`;
}
