import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import type { AgentOptions } from "./runtime.js";
import { isLogLevel, type LogLevel } from "./log.js";
import { JOIN_TOKEN_RE, parseFingerprint } from "@orch/contracts";
import type { LinkTrust } from "./link/trust.js";
import { DEFAULT_CRON_DIR } from "./state/providers/cron.js";
import { validHostPort } from "./host-port.js";
import { DEFAULT_BLOB_CACHE_MAX_BYTES } from "./blobs/evict.js";

export const DEFAULT_DATA_DIR = "/var/lib/orch-agent";
export const DEFAULT_DISCOVERY_PORT = 7444;
export const DEFAULT_METRICS_INTERVAL = 15;

export interface DaemonOptions extends AgentOptions {
  dataDir: string;
  logLevel: LogLevel;
  /** host:port of the opt-in Prometheus endpoint (GET /metrics); undefined = off. */
  metricsListen?: string | undefined;
}

export const USAGE = `usage: orch-agent [--server host:port | --discover] [options]

  --server host:port        agents service link address          ORCH_AGENT_SERVER
  --data-dir DIR            identity key and state (${DEFAULT_DATA_DIR})  ORCH_AGENT_DATA_DIR
  --discover                wait for a discovery datagram instead ORCH_AGENT_DISCOVER=true
  --discovery-port N        UDP port for discovery (${DEFAULT_DISCOVERY_PORT})        ORCH_AGENT_DISCOVERY_PORT
  --no-terminal             refuse remote terminal sessions       ORCH_AGENT_NO_TERMINAL=true
  --metrics-interval SECS   metrics sample interval (${DEFAULT_METRICS_INTERVAL})          ORCH_AGENT_METRICS_INTERVAL
  --metrics-listen host:port  serve Prometheus GET /metrics there (off)  ORCH_AGENT_METRICS_LISTEN
  How the agent authenticates the server (one of; default: TLS with the system CAs):
  --ca FILE                 CA bundle that issued the server certificate  ORCH_AGENT_CA
                            (alias --tls-ca, ORCH_AGENT_TLS_CA)
  --server-fingerprint sha256:HEX  accept exactly the server or CA certificate with this
                            fingerprint (printed by the agents service), any host name
                                                                  ORCH_AGENT_SERVER_FINGERPRINT
  --insecure                plaintext link, server NOT authenticated (development only)
                                                                  ORCH_AGENT_INSECURE=true
  --tls                     TLS with the system CAs (the default; kept for old scripts)
  --shell PATH              allowed terminal shell, repeatable; first is the default
                            (default /bin/bash if present, else /bin/sh)  ORCH_AGENT_SHELLS=a:b
  --cron-dir DIR            where cron resources are written (${DEFAULT_CRON_DIR})  ORCH_AGENT_CRON_DIR
  --blob-cache-max-bytes N  cap on the blob cache, least recently used evicted first
                            (${DEFAULT_BLOB_CACHE_MAX_BYTES} = 4 GiB; 0 = no cap)  ORCH_AGENT_BLOB_CACHE_MAX_BYTES
  --log-level LEVEL         debug|info|warn|error (info)          ORCH_AGENT_LOG_LEVEL
  --packages-url URL        where upgrades download releases (the server's /install)
                                                                  ORCH_AGENT_PACKAGES_URL
  --release-key FILE        release public key (PEM) upgrades verify manifests with
                                                                  ORCH_AGENT_RELEASE_KEY
  --join-token ojt_ID.SECRET  join token: approves this agent on first contact
                            (orchctl join-tokens create)         ORCH_AGENT_JOIN_TOKEN
  --help, --version
`;

export class UsageError extends Error {}

const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v.trim());

function num(name: string, raw: string, min: number, max: number, integer: boolean): number {
  // Number("") is 0: a blank value must not pass as one.
  const n = raw.trim() === "" ? Number.NaN : Number(raw);
  if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n)))
    throw new UsageError(
      `${name} must be ${integer ? "an integer" : "a number"} between ${min} and ${max}, got ${JSON.stringify(raw)}`,
    );
  return n;
}

function readFlags(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        server: { type: "string" },
        "data-dir": { type: "string" },
        discover: { type: "boolean" },
        "discovery-port": { type: "string" },
        "no-terminal": { type: "boolean" },
        "metrics-interval": { type: "string" },
        "metrics-listen": { type: "string" },
        tls: { type: "boolean" },
        ca: { type: "string" },
        "tls-ca": { type: "string" },
        "server-fingerprint": { type: "string" },
        insecure: { type: "boolean" },
        shell: { type: "string", multiple: true },
        "cron-dir": { type: "string" },
        "blob-cache-max-bytes": { type: "string" },
        "log-level": { type: "string" },
        "packages-url": { type: "string" },
        "release-key": { type: "string" },
        "join-token": { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean" },
      },
    }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** Flags win over the environment; the environment wins over defaults. */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): DaemonOptions | "help" | "version" {
  const values = readFlags(argv);
  if (values.help) return "help";
  if (values.version) return "version";

  const server = values.server ?? env.ORCH_AGENT_SERVER ?? undefined;
  if (server !== undefined && !validHostPort(server))
    throw new UsageError(`--server must be host:port, got ${JSON.stringify(server)}`);
  const discover = values.discover ?? truthy(env.ORCH_AGENT_DISCOVER);
  const discoveryPort = num(
    "--discovery-port",
    values["discovery-port"] ?? env.ORCH_AGENT_DISCOVERY_PORT ?? String(DEFAULT_DISCOVERY_PORT),
    1,
    65535,
    true,
  );
  const metricsIntervalSeconds = num(
    "--metrics-interval",
    values["metrics-interval"] ?? env.ORCH_AGENT_METRICS_INTERVAL ?? String(DEFAULT_METRICS_INTERVAL),
    0.2,
    86_400,
    false,
  );
  const metricsListen = values["metrics-listen"] ?? (env.ORCH_AGENT_METRICS_LISTEN || undefined);
  if (metricsListen !== undefined && !validHostPort(metricsListen))
    throw new UsageError(`--metrics-listen must be host:port, got ${JSON.stringify(metricsListen)}`);
  const terminalEnabled = !(values["no-terminal"] ?? truthy(env.ORCH_AGENT_NO_TERMINAL));
  const trust = parseTrust(values, env);
  const shells = values.shell?.length
    ? values.shell
    : env.ORCH_AGENT_SHELLS
      ? env.ORCH_AGENT_SHELLS.split(":").filter(Boolean)
      : [existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh"];
  for (const s of shells)
    if (!s.startsWith("/")) throw new UsageError(`--shell must be an absolute path, got ${JSON.stringify(s)}`);
  const cronDir = values["cron-dir"] ?? env.ORCH_AGENT_CRON_DIR ?? DEFAULT_CRON_DIR;
  if (!cronDir.startsWith("/"))
    throw new UsageError(`--cron-dir must be an absolute path, got ${JSON.stringify(cronDir)}`);
  const blobCacheMaxBytes = num(
    "--blob-cache-max-bytes",
    values["blob-cache-max-bytes"] ?? (env.ORCH_AGENT_BLOB_CACHE_MAX_BYTES || String(DEFAULT_BLOB_CACHE_MAX_BYTES)),
    0,
    Number.MAX_SAFE_INTEGER,
    true,
  );
  const logLevel = values["log-level"] ?? env.ORCH_AGENT_LOG_LEVEL ?? "info";
  if (!isLogLevel(logLevel))
    throw new UsageError(`--log-level must be debug, info, warn or error, got ${JSON.stringify(logLevel)}`);
  const joinToken = values["join-token"] ?? (env.ORCH_AGENT_JOIN_TOKEN || undefined);
  // The value is a secret: the message never repeats it.
  if (joinToken !== undefined && !JOIN_TOKEN_RE.test(joinToken))
    throw new UsageError("--join-token must be a join token (ojt_<id>.<secret>, from orchctl join-tokens create)");
  const packagesUrl = values["packages-url"] ?? (env.ORCH_AGENT_PACKAGES_URL || undefined);
  if (packagesUrl !== undefined && !/^https?:\/\/\S+$/.test(packagesUrl))
    throw new UsageError(`--packages-url must be an http(s) URL, got ${JSON.stringify(packagesUrl)}`);
  const releaseKeyFile = values["release-key"] ?? (env.ORCH_AGENT_RELEASE_KEY || undefined);
  if (releaseKeyFile !== undefined && !releaseKeyFile.startsWith("/"))
    throw new UsageError(`--release-key must be an absolute path, got ${JSON.stringify(releaseKeyFile)}`);
  return {
    server,
    joinToken,
    packagesUrl,
    releaseKeyFile,
    dataDir: values["data-dir"] ?? env.ORCH_AGENT_DATA_DIR ?? DEFAULT_DATA_DIR,
    discover,
    discoveryPort,
    terminalEnabled,
    shells,
    metricsIntervalSeconds,
    metricsListen,
    trust,
    cronDir,
    blobCacheMaxBytes,
    logLevel,
  };
}

/** The flags and variables that choose how the server is trusted (wrappers add a default only without them). */
export const TRUST_FLAGS = ["--ca", "--tls-ca", "--server-fingerprint", "--insecure", "--tls"];
export const TRUST_ENV = [
  "ORCH_AGENT_CA",
  "ORCH_AGENT_TLS_CA",
  "ORCH_AGENT_SERVER_FINGERPRINT",
  "ORCH_AGENT_INSECURE",
  "ORCH_AGENT_TLS",
];

/** True when argv or env already say how to trust the server. */
export function choosesTrust(argv: string[], env: NodeJS.ProcessEnv): boolean {
  return argv.some((a) => TRUST_FLAGS.includes(a.split("=")[0]!)) || TRUST_ENV.some((k) => env[k]);
}

/**
 * At most one way to trust the server. A flag and an environment variable of different kinds
 * conflict too: a unit file's ORCH_AGENT_INSECURE must not silently lose to, or beat, a flag.
 */
interface TrustFlags {
  tls?: boolean | undefined;
  ca?: string | undefined;
  "tls-ca"?: string | undefined;
  "server-fingerprint"?: string | undefined;
  insecure?: boolean | undefined;
}

function parseTrust(values: TrustFlags, env: NodeJS.ProcessEnv): LinkTrust {
  if (values.ca !== undefined && values["tls-ca"] !== undefined) {
    throw new UsageError("--ca and --tls-ca are the same option: give one");
  }
  const ca = values.ca ?? values["tls-ca"] ?? (env.ORCH_AGENT_CA || env.ORCH_AGENT_TLS_CA || undefined);
  const pin = values["server-fingerprint"] ?? (env.ORCH_AGENT_SERVER_FINGERPRINT || undefined);
  const insecure = values.insecure ?? truthy(env.ORCH_AGENT_INSECURE);
  const chosen = [ca !== undefined && "--ca", pin !== undefined && "--server-fingerprint", insecure && "--insecure"];
  const given = chosen.filter(Boolean);
  if (given.length > 1) {
    throw new UsageError(`${given.join(" and ")} exclude each other: choose one way to trust the server`);
  }
  if (insecure && (values.tls ?? truthy(env.ORCH_AGENT_TLS))) {
    throw new UsageError("--insecure and --tls exclude each other");
  }
  if (ca !== undefined) {
    if (!existsSync(ca)) throw new UsageError(`--ca: ${ca} does not exist`);
    return { kind: "ca", caFile: ca };
  }
  if (pin !== undefined) {
    const fingerprint = parseFingerprint(pin);
    if (!fingerprint) {
      throw new UsageError(`--server-fingerprint must be sha256: and 64 hex digits, got ${JSON.stringify(pin)}`);
    }
    return { kind: "pin", fingerprint };
  }
  return insecure ? { kind: "insecure" } : { kind: "system" };
}
