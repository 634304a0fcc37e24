import { spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync, sign } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { credentials as grpcCredentials, type ChannelCredentials } from "@grpc/grpc-js";
import {
  AgentsService,
  AuditEventSchema,
  nodeIdFromPublicKey,
  type AuditEvent,
  type BusMessage,
  type Request,
  type Welcome,
} from "@orch/contracts";
import { rpcClient, type Actor, type Logger, type NatsConnection } from "@orch/kit";
import { serviceDeps, eventually, testLinkTls, type DbHandle, type NatsHandle } from "@orch/kit/testing";
import { nodeFlagsFor } from "@orch/kit/bulk-gc";
import { agentsConfigSchema } from "../src/config.js";
import { createAgentsService } from "../src/service.js";
import type { Identity } from "../../../agent/src/identity.js";
import { openLink, type LinkOutcome, type Send } from "../../../agent/src/link/client.js";
import { choosesTrust } from "../../../agent/src/options.js";
import type { AgentLogger } from "../../../agent/src/runtime.js";

export const AGENTS_MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));
export const AGENT_MAIN = fileURLToPath(new URL("../../../agent/dist/main.js", import.meta.url));
export const ADMIN: Actor = { id: "01ADMIN", name: "admin", type: "operator", role: "admin" };

/** TLS settings of the test process's development CA (testLinkTls), as the service config takes them. */
export const linkTlsConfig = () => ({ tls_cert: testLinkTls().serverCert, tls_key: testLinkTls().serverKey });

/** Client credentials trusting the test CA (what `orch-agent --ca` does). */
export const testCaCredentials = (): ChannelCredentials =>
  grpcCredentials.createSsl(readFileSync(testLinkTls().caCert));

/**
 * The agents service in this process, link on a free port of 127.0.0.1, with TLS from the test
 * CA like a real deployment (pass `insecure: true` for a plaintext link).
 */
export async function startAgentsService(
  nats: NatsHandle,
  db: DbHandle,
  agents: Record<string, unknown> = {},
  more: { releases?: Record<string, unknown>; log?: Logger } = {},
) {
  const tls = agents.insecure || agents.tls_cert || agents.tls_key ? {} : linkTlsConfig();
  const deps = await serviceDeps({
    name: "agents",
    nats,
    db,
    schema: "agents",
    migrations: AGENTS_MIGRATIONS,
    ...(more.log ? { log: more.log } : {}),
    config: agentsConfigSchema.parse({
      agents: { link_host: "127.0.0.1", link_port: 0, ...tls, ...agents },
      releases: more.releases ?? {},
    }),
  });
  const svc = await createAgentsService(deps);
  return {
    deps,
    svc,
    server: `127.0.0.1:${svc.linkPort}`,
    async stop() {
      await svc.stop();
      await deps.close();
    },
  };
}
export type AgentsUnderTest = Awaited<ReturnType<typeof startAgentsService>>;

export function agentsClient(nc: NatsConnection, timeoutMs = 5000) {
  const c = rpcClient(nc, "agents", AgentsService, { timeoutMs });
  return { c, as: { actor: ADMIN } };
}

/** Every audit event published while it runs (core subscription on audit.>). */
export function collectEvents(nc: NatsConnection) {
  const events: AuditEvent[] = [];
  const sub = nc.subscribe("audit.>", { callback: (_e, m) => void events.push(fromBinary(AuditEventSchema, m.data)) });
  return {
    events,
    of: (type: string, targetId?: string) =>
      events.filter((e) => e.eventType === type && (!targetId || e.target?.id === targetId)),
    wait: (type: string, targetId?: string, timeoutMs = 10_000) =>
      eventually(() => events.find((e) => e.eventType === type && (!targetId || e.target?.id === targetId)), timeoutMs),
    stop: () => sub.unsubscribe(),
  };
}

export interface AgentProcess {
  child: ChildProcess;
  dataDir: string;
  lines: string[];
  /** Parsed JSON log records. */
  records(): Array<Record<string, any>>;
  nodeId(timeoutMs?: number): Promise<string>;
  waitFor(pred: (r: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
  exited: Promise<number | null>;
  signal(sig: NodeJS.Signals): Promise<void>;
}

export interface SpawnAgentOptions {
  dataDir?: string;
  env?: Record<string, string>;
  /** Runs the agent inside this network namespace (`ip netns exec`, which execs node: same pid). */
  netns?: string;
}

/**
 * A real orch-agent process (agent/dist/main.js) with its own data dir (kept across restarts when
 * given). Unless the test chooses how it trusts the server, it trusts the test CA (`--ca`).
 */
export function spawnAgent(args: string[], opts: SpawnAgentOptions = {}): AgentProcess {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "orch-agent-t-"));
  // HOME is the agent's own directory: the shells its terminals spawn must not read the host's
  // dotfiles (a ~/.bashrc running `pyenv rehash` waits 60 s on a lock a killed shell left behind).
  const home = join(dataDir, "home");
  mkdirSync(home, { recursive: true });
  const env: Record<string, string | undefined> = { ...process.env, HOME: home, ...(opts.env ?? {}) };
  const trust = choosesTrust(args, env) ? [] : ["--ca", testLinkTls().caCert];
  const argv = [...nodeFlagsFor("agent"), AGENT_MAIN, "--data-dir", dataDir, "--log-level", "debug", ...trust, ...args];
  const [cmd, cmdArgs] = opts.netns
    ? ["ip", ["netns", "exec", opts.netns, process.execPath, ...argv]]
    : [process.execPath, argv];
  const child = spawn(cmd, cmdArgs, { env, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  let partial = "";
  child.stdout!.on("data", (d: Buffer) => {
    const parts = (partial + d.toString()).split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr!.on("data", (d: Buffer) => lines.push(d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const records = () =>
    lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, any>];
      } catch {
        return [];
      }
    });
  const waitFor = (pred: (r: Record<string, any>) => boolean, timeoutMs = 15_000) =>
    eventually(() => records().find(pred), timeoutMs);
  return {
    child,
    dataDir,
    lines,
    records,
    waitFor,
    nodeId: async (timeoutMs?: number) =>
      (await waitFor((r) => typeof r.node_id === "string" && r.msg === "orch-agent starting", timeoutMs))
        .node_id as string,
    exited,
    async signal(sig) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(sig);
      await exited;
    },
  };
}

/** Kills every agent it made and removes their data dirs. */
export function agentPool() {
  const all: AgentProcess[] = [];
  return {
    spawn(args: string[], opts: SpawnAgentOptions = {}) {
      const a = spawnAgent(args, opts);
      all.push(a);
      return a;
    },
    async stop() {
      await Promise.all(all.map((a) => a.signal("SIGKILL")));
      for (const d of new Set(all.map((a) => a.dataDir))) rmSync(d, { recursive: true, force: true });
    },
  };
}

/** An in-memory agent identity for driving the link directly (agent/src/link/client.ts). */
export function memIdentity(): Identity {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const der = publicKey.export({ format: "der", type: "spki" });
  const raw = der.subarray(der.length - 32);
  return {
    nodeId: nodeIdFromPublicKey(raw),
    publicKeyHex: raw.toString("hex"),
    sign: (d) => sign(null, d, privateKey),
  };
}

export const quietLog: AgentLogger = { debug() {}, info() {}, warn() {}, error() {} };

export interface TestLink {
  outcome: Promise<LinkOutcome>;
  welcomes: Welcome[];
  requests: Request[];
  messages: BusMessage[];
  send(): Send;
  up(): Promise<Welcome>;
  close(): void;
}

/** Opens one link with openLink and records what the server sends. */
export function testLink(
  server: string,
  identity: Identity,
  opts: {
    attributes?: Record<string, string>;
    onRequest?: (r: Request, send: Send) => void;
    credentials?: ChannelCredentials;
  } = {},
): TestLink {
  const welcomes: Welcome[] = [];
  const requests: Request[] = [];
  const messages: BusMessage[] = [];
  let linkSend: Send | undefined;
  const attempt = openLink({
    server,
    credentials: opts.credentials ?? testCaCredentials(),
    identity,
    hello: { version: "9.9.9-test", attributes: opts.attributes ?? { hostname: "test-host", os: "linux" } },
    log: quietLog,
    handlers: {
      onWelcome(w, send) {
        linkSend = send;
        welcomes.push(w);
      },
      onRequest(r, send) {
        requests.push(r);
        opts.onRequest?.(r, send);
      },
      onMessage(m) {
        messages.push(m);
      },
    },
  });
  return {
    outcome: attempt.done,
    welcomes,
    requests,
    messages,
    send: () => linkSend!,
    up: () =>
      Promise.race([
        eventually(() => welcomes[0]),
        attempt.done.then((o) => Promise.reject(new Error(`link ended: ${JSON.stringify(o)}`))),
      ]),
    close: () => attempt.close(),
  };
}
