import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pty from "node-pty";
import WebSocket from "ws";
import { create } from "@bufbuild/protobuf";
import { AgentSchema, AgentsService, TerminalService } from "@orch/contracts";
import {
  notFound,
  rpcClient,
  serveRpc,
  systemClock,
  type Actor,
  type Clock,
  type Handlers,
  type Logger,
} from "@orch/kit";
import { serviceDeps, silentLogger, type DbHandle, type NatsHandle } from "@orch/kit/testing";
import { terminalConfigSchema } from "../src/config.js";
import { createTerminalService } from "../src/service.js";

export const TERMINAL_MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));

export async function startTerminal(
  nats: NatsHandle,
  db: DbHandle,
  o: { terminal?: Record<string, unknown>; clock?: Clock; log?: Logger; dir?: string } = {},
) {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), "orch-transcripts-"));
  const deps = await serviceDeps({
    name: "terminal",
    nats,
    db,
    schema: "terminal",
    migrations: TERMINAL_MIGRATIONS,
    config: terminalConfigSchema.parse({ terminal: { transcript_dir: dir, flush_interval_ms: 50, ...o.terminal } }),
    ...(o.clock ? { clock: o.clock } : {}),
    log: o.log ?? silentLogger(),
  });
  // No auth service runs here: no policy holds an open (test/e2e/approvals-terminal.test.ts runs the real one).
  const noApprovals = { check: async () => ({ kind: "open" as const }), agentNow: async () => undefined };
  const svc = await createTerminalService(deps, noApprovals);
  await deps.nc.flush(); // the RPC subscriptions are live before the test calls them
  return {
    deps,
    svc,
    dir,
    async stop() {
      await svc.stop();
      await deps.close();
      if (!o.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface StubAgent {
  status: "pending" | "approved" | "rejected";
  name: string;
}

/**
 * Stand-in for the agents service's registry lookup (GetAgent) while the gateway resolves the
 * agent of POST /terminal; the end-to-end test runs the real agents service.
 */
export async function startAgentsRegistry(nats: NatsHandle, agents: Record<string, StubAgent>) {
  const nc = await nats.connect("agents-registry");
  const getAgent: Handlers<typeof AgentsService>["getAgent"] = async (req) => {
    const entry = Object.entries(agents).find(([id, a]) => id === req.id || (a.name && a.name === req.id));
    if (!entry) throw notFound("agent_not_found", `no agent '${req.id}'`);
    return create(AgentSchema, { nodeId: entry[0], name: entry[1].name, status: entry[1].status, connected: true });
  };
  const handlers = new Proxy({ getAgent } as Record<string, unknown>, {
    get: (target, key: string) =>
      target[key] ?? (async () => Promise.reject(new Error(`${key} is not part of this stand-in`))),
  }) as unknown as Handlers<typeof AgentsService>;
  const server = serveRpc({ nc, name: "agents", service: AgentsService, handlers, log: silentLogger() });
  await nc.flush();
  return {
    async stop() {
      await server.stop();
      await nc.close();
    },
  };
}

export const operatorActor = (id: string, role: "admin" | "operator" = "operator"): Actor => ({
  id,
  name: `op-${id}`,
  type: "operator",
  role,
});

export const terminalClient = async (nats: NatsHandle) =>
  rpcClient(await nats.connect("terminal-client"), "terminal", TerminalService, { timeoutMs: 30_000 });

export interface Attached {
  ws: WebSocket;
  text(): string;
  send(s: string): void;
  control(m: object): void;
  closed: Promise<{ code: number; reason: string }>;
}

export type AttachResult = { ok: true; a: Attached } | { ok: false; status: number; body: any };

/** Connects to a ws_url the way orchctl does; refusals come back as the HTTP problem. */
export function attach(
  url: string,
  o: { origin?: string; token?: string; collect?: boolean } = {},
): Promise<AttachResult> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    const ws = new WebSocket(url, { headers, ...(o.origin ? { origin: o.origin } : {}) });
    const out: Buffer[] = [];
    ws.on("message", (d: Buffer, binary: boolean) => {
      if (binary && o.collect !== false) out.push(d);
    });
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on("close", (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => {
        let json: unknown = body;
        try {
          json = JSON.parse(body);
        } catch {
          /* keep text */
        }
        resolve({ ok: false, status: res.statusCode ?? 0, body: json });
      });
    });
    ws.on("error", (err) => reject(err));
    ws.on("open", () =>
      resolve({
        ok: true,
        a: {
          ws,
          text: () => Buffer.concat(out).toString("utf8"),
          send: (s) => ws.send(Buffer.from(s), { binary: true }),
          control: (m) => ws.send(JSON.stringify(m)),
          closed,
        },
      }),
    );
  });
}

/** `asciinema cat` needs a terminal (it opens /dev/tty), so it runs in a PTY here. */
export function asciinemaCat(file: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const p = pty.spawn("asciinema", ["cat", file], {
      cols: 200,
      rows: 50,
      cwd: "/",
      env: { ...process.env, TERM: "xterm" } as Record<string, string>,
    });
    let output = "";
    p.onData((d) => (output += d));
    p.onExit(({ exitCode }) => resolve({ code: exitCode, output }));
  });
}

export { systemClock };
