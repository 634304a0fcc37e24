import { spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { DbHandle } from "./database.js";
import type { NatsHandle } from "./nats.js";
import { killOnExit, type TestOwner } from "./owner.js";
import { freePort, waitForPort } from "./ports.js";
import { waitMs } from "./wait.js";
import { nodeFlagsFor } from "../bulk-gc.js";
import { testLinkTls } from "./dev-ca.js";

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

export interface KeyPair {
  privateKey: KeyObject;
  /** Hex of the raw 32-byte public key. */
  publicKeyHex: string;
}

export function ed25519(): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const der = publicKey.export({ format: "der", type: "spki" });
  return { privateKey, publicKeyHex: der.subarray(der.length - 32).toString("hex") };
}

export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  output: string[];
}

export interface SystemHandle {
  /** Gateway base URL, e.g. http://127.0.0.1:PORT */
  url: string;
  /** The port an `agents` process of this system links on (ORCH_AGENTS_LINK_PORT: free unless `env` set it). */
  linkPort: number;
  admin: KeyPair;
  env: Record<string, string>;
  procs: Map<string, ServiceProcess>;
  /** Every line any service printed (for leak checks). */
  output(): string;
  kill(name: string, signal?: NodeJS.Signals): Promise<void>;
  start(name: string, extraEnv?: Record<string, string>, as?: string): Promise<ServiceProcess>;
  stop(): Promise<void>;
  /** Logs in with a key pair; returns the bearer token. */
  login(key: KeyPair): Promise<string>;
  /** fetch against the gateway with an optional bearer token and JSON body. */
  api(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers; text: string }>;
}

export interface SystemOptions {
  /**
   * A handle from startNats (each service connects as its own bus user, from `busEnv`), or any
   * server or cluster by `url` (`url` may list several; without `busEnv` services connect anonymously).
   */
  nats: Pick<NatsHandle, "url"> & Partial<Pick<NatsHandle, "busEnv">>;
  db: Pick<DbHandle, "url">;
  services: string[];
  env?: Record<string, string>;
  /** Env of one service on top of `env` (e.g. its own bus user), also on restarts by `start`. */
  serviceEnv?: (name: string) => Record<string, string>;
  admin?: KeyPair;
  /**
   * "localhost": the gateway's public URL (and `url`) is http://localhost:PORT, a host name, as the
   * console's passkeys need (browsers refuse IP addresses as WebAuthn RP IDs). It still binds 127.0.0.1.
   */
  publicHost?: "localhost";
  /**
   * How long the gateway's port and every service's readiness may take (ms; default 30 s each), a
   * base scaled by waitMs (./wait.ts).
   */
  readyTimeoutMs?: number;
  /**
   * tap's `t`: the services' stop is registered before the first one starts, so a start-up that
   * throws leaks no process (./owner.ts). Give startNats and createTestDatabase the same owner.
   */
  owner?: TestOwner;
}

/** The env every service process starts with, before its own bus user and `serviceEnv`. */
function systemEnv(
  opts: SystemOptions,
  admin: KeyPair,
  ports: { http: number; link: number },
  publicUrl: string | undefined,
) {
  const env: Record<string, string> = {
    NATS_URL: opts.nats.url,
    DATABASE_URL: opts.db.url,
    ORCH_HEALTH_PORT: "0",
    ORCH_HEALTH_HOST: "127.0.0.1",
    ORCH_LOG_LEVEL: "info",
    ORCH_HTTP_PORT: String(ports.http),
    ORCH_HTTP_HOST: "127.0.0.1",
    ORCH_BOOTSTRAP_ADMIN_KEY: admin.publicKeyHex,
    ORCH_GATEWAY_SERVICES: JSON.stringify(opts.services.filter((s) => s !== "gateway")),
    // notify refuses to start without a key for channel credentials.
    ORCH_NOTIFY_CREDENTIALS_KEYS: `e2e:${Buffer.alloc(32, 0x6e).toString("base64")}`,
    // Single sign-on seals identity providers' client secrets and users' refresh tokens with this keyring.
    ORCH_AUTH_SSO_KEYS: `e2e:${Buffer.alloc(32, 0x61).toString("base64")}`,
    // Git sources seal their credentials and webhook secrets with this keyring.
    ORCH_STATE_SOURCE_KEYS: `e2e:${Buffer.alloc(32, 0x73).toString("base64")}`,
    ...(publicUrl ? { ORCH_HTTP_PUBLIC_URL: publicUrl } : {}),
    // The agent link is TLS as in a real deployment; spawned agents trust this CA (agentPool).
    ...(opts.services.includes("agents") && !opts.env?.ORCH_AGENTS_INSECURE
      ? { ORCH_AGENTS_TLS_CERT: testLinkTls().serverCert, ORCH_AGENTS_TLS_KEY: testLinkTls().serverKey }
      : {}),
    // Every listener on a free port, never a deployment default (7443) a running `npm run up` holds.
    ORCH_AGENTS_LINK_PORT: String(ports.link),
    ...(opts.env ?? {}),
  };
  return env;
}

/** fetch against the gateway at `base`, with an optional bearer token and JSON body. */
async function callApi(
  base: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any; headers: Headers; text: string }> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.body !== undefined) headers["content-type"] ??= "application/json";
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(o.body !== undefined ? { body: typeof o.body === "string" ? o.body : JSON.stringify(o.body) } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.status, body, headers: res.headers, text };
}

/** The challenge-response login with a key pair; returns the bearer token. */
async function login(api: SystemHandle["api"], key: KeyPair): Promise<string> {
  const ch = await api("POST", "/api/v1/auth/challenge", { body: { public_key: key.publicKeyHex } });
  if (ch.status !== 200) throw new Error(`challenge failed: ${ch.status} ${ch.text}`);
  const signature = sign(null, Buffer.from(ch.body.nonce, "hex"), key.privateKey).toString("hex");
  const v = await api("POST", "/api/v1/auth/verify", {
    body: { public_key: key.publicKeyHex, nonce: ch.body.nonce, signature },
  });
  if (v.status !== 200) throw new Error(`verify failed: ${v.status} ${v.text}`);
  return v.body.token as string;
}

/** Waits for the gateway's port, then until GET /status reports every started service ok. */
async function waitReady(handle: SystemHandle, port: number, readyMs: number): Promise<void> {
  await waitForPort(port, readyMs);
  const until = Date.now() + waitMs(readyMs);
  for (;;) {
    const st = await handle.api("GET", "/api/v1/status").catch(() => undefined);
    if (st?.status === 200 && st.body.status === "ok") return;
    if (Date.now() > until)
      throw new Error(`services did not become ready: ${JSON.stringify(st?.body)}\n${handle.output().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts services as real processes from their built `dist/main.js` (run `npm run build` first),
 * on the given NATS and database, with the gateway and the agent link on free ports. Waits until
 * GET /status reports every started service ok; a start-up that fails stops what it started.
 */
export async function startSystem(opts: SystemOptions): Promise<SystemHandle> {
  const admin = opts.admin ?? ed25519();
  const port = await freePort();
  const publicUrl = opts.publicHost ? `http://${opts.publicHost}:${port}` : undefined;
  const env = systemEnv(opts, admin, { http: port, link: await freePort() }, publicUrl);
  const procs = new Map<string, ServiceProcess>();
  const all: ServiceProcess[] = [];

  const start = async (name: string, extraEnv: Record<string, string> = {}, as = name): Promise<ServiceProcess> => {
    const main = `${ROOT}services/${name}/dist/main.js`;
    if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build`);
    const child = spawn(process.execPath, [...nodeFlagsFor(name), main], {
      env: {
        ...process.env,
        ...env,
        ...(opts.nats.busEnv?.(name) ?? {}),
        ...(opts.serviceEnv?.(name) ?? {}),
        ...extraEnv,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    killOnExit(child);
    const p: ServiceProcess = { name: as, child, output: [] };
    child.stdout!.on("data", (d: Buffer) => p.output.push(d.toString()));
    child.stderr!.on("data", (d: Buffer) => p.output.push(d.toString()));
    procs.set(as, p);
    all.push(p);
    return p;
  };

  const handle: SystemHandle = {
    url: publicUrl ?? `http://127.0.0.1:${port}`,
    linkPort: Number(env.ORCH_AGENTS_LINK_PORT),
    admin,
    env,
    procs,
    output: () => all.map((p) => p.output.join("")).join("\n"),
    start,
    async kill(name, signal = "SIGKILL") {
      const p = procs.get(name);
      if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        p.child.once("exit", () => resolve());
        p.child.kill(signal);
      });
    },
    async stop() {
      await Promise.all([...procs.keys()].map((n) => handle.kill(n, "SIGTERM")));
    },
    login: (key) => login(handle.api, key),
    api: (method, path, o) => callApi(handle.url, method, path, o),
  };

  opts.owner?.teardown(() => handle.stop());
  try {
    for (const s of opts.services) await start(s);
    await waitReady(handle, port, opts.readyTimeoutMs ?? 30_000);
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return handle;
}
