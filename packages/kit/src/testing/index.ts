import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pg from "pg";
import { connectNats, type NatsConnection } from "../nats.js";
import { createLogger, type Logger } from "../logger.js";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export interface NatsHandle {
  url: string;
  port: number;
  /** Connects a client (closed by stop()). */
  connect(name?: string): Promise<NatsConnection>;
  /** Kills the server, keeping its JetStream store. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const NATS_BIN = process.env.NATS_SERVER_BIN ?? "nats-server";

/** A private nats-server with JetStream for one test file: own port, own store, no shared state. */
export async function startNats(opts: { configFile?: string } = {}): Promise<NatsHandle> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "orch-nats-"));
  let child: ChildProcess | undefined;
  const clients: NatsConnection[] = [];
  const launch = async () => {
    const args = ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir];
    if (opts.configFile) args.push("-c", opts.configFile);
    child = spawn(NATS_BIN, args, { stdio: "ignore" });
    await waitForPort(port, 10_000);
  };
  await launch();
  const handle: NatsHandle = {
    url: `nats://127.0.0.1:${port}`,
    port,
    async connect(name = "test") {
      const nc = await connectNats({ url: `nats://127.0.0.1:${port}`, name });
      clients.push(nc);
      return nc;
    },
    async kill() {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        c.once("exit", () => resolve());
        c.kill("SIGKILL");
      });
    },
    async restart() {
      await handle.kill();
      await launch();
    },
    async stop() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await handle.kill();
      rmSync(dir, { recursive: true, force: true });
    },
    [Symbol.asyncDispose]: () => handle.stop(),
  };
  return handle;
}

export async function waitForPort(port: number, timeoutMs: number, host = "127.0.0.1"): Promise<void> {
  const { connect } = await import("node:net");
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, host);
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`port ${port} did not open within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface DbHandle {
  url: string;
  name: string;
  drop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A fresh database for one test file, dropped afterwards. Base server from TEST_DATABASE_URL. */
export async function createTestDatabase(prefix = "orch_t"): Promise<DbHandle> {
  const base = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const name = `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  const handle: DbHandle = {
    url: u.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await c.end();
    },
    [Symbol.asyncDispose]: () => handle.drop(),
  };
  return handle;
}

/** A logger whose lines are kept in memory (for asserting what was, or was not, logged). */
export function memoryLogger(name = "test", level = "debug"): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const dest = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { log: createLogger({ name, level, destination: dest }), lines };
}

export const silentLogger = (): Logger => createLogger({ name: "test", level: "silent" });

/** Polls until `fn` returns a truthy value or the timeout passes. */
export async function eventually<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 10_000,
  stepMs = 50,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > until)
      throw new Error(`condition not met within ${timeoutMs} ms${lastErr ? `: ${(lastErr as Error).message}` : ""}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
export { serviceDeps } from "./deps.js";
export * from "./system.js";
export * from "./dev-ca.js";
export * from "./git.js";
export * from "./releases.js";
export * from "./private-postgres.js";
export * from "./nats-cluster.js";
