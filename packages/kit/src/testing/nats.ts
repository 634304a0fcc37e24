import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectNats, type NatsConnection } from "../nats.js";
import { createTestBus, type BusCredentials } from "./bus.js";
import { killOnExit, onExit, type TestOwner } from "./owner.js";
import { freePort, waitForPort } from "./ports.js";

export interface NatsHandle {
  /** Without credentials: a client picks its user (credentials, busEnv). */
  url: string;
  port: number;
  /**
   * Connects a client (closed by stop()). Named after a service ("secrets"), it is that service's
   * bus user with its permissions; any other name is the test user, allowed everything.
   */
  connect(name?: string): Promise<NatsConnection>;
  /** The user a client named `name` connects as (see connect); undefined on an open bus. */
  credentials(name: string): BusCredentials | undefined;
  /** ORCH_NATS_USER / ORCH_NATS_PASSWORD for a service process ({} on an open bus). */
  busEnv(service: string): Record<string, string>;
  /** Kills the server, keeping its JetStream store. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const NATS_BIN = process.env.NATS_SERVER_BIN ?? "nats-server";

/**
 * A private nats-server with JetStream for one test file: own port, own store, no shared state.
 * It runs the deployment's bus users and permissions (./bus.ts) unless `configFile` brings the
 * caller's own configuration or `openBus` asks for none (no users: anyone may do anything).
 * With `owner` (tap's `t`) its stop is registered before the server starts (./owner.ts).
 */
export async function startNats(
  opts: { configFile?: string; openBus?: boolean; owner?: TestOwner } = {},
): Promise<NatsHandle> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "orch-nats-"));
  const unguard = onExit(() => rmSync(dir, { recursive: true, force: true }));
  const bus = opts.configFile || opts.openBus ? undefined : createTestBus(dir);
  const configFile = opts.configFile ?? bus?.configFile;
  let child: ChildProcess | undefined;
  const clients: NatsConnection[] = [];
  const launch = async () => {
    const args = ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir];
    if (configFile) args.push("-c", configFile);
    child = spawn(NATS_BIN, args, { stdio: "ignore" });
    killOnExit(child);
    await waitForPort(port, 10_000);
  };
  const handle: NatsHandle = {
    url: `nats://127.0.0.1:${port}`,
    port,
    credentials: (name) => bus?.credentials(name),
    busEnv: (service) => bus?.serviceEnv(service) ?? {},
    async connect(name = "test") {
      const creds = bus?.credentials(name);
      const nc = await connectNats({
        url: `nats://127.0.0.1:${port}`,
        name,
        ...(creds ? { user: creds.user, password: creds.password } : {}),
      });
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
      unguard();
    },
    [Symbol.asyncDispose]: () => handle.stop(),
  };
  opts.owner?.teardown(() => handle.stop());
  try {
    await launch();
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return handle;
}
