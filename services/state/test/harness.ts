import { setTimeout as sleep } from "node:timers/promises";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Test } from "tap";
import { fromBinary } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import {
  AgentCommandService,
  AgentsService,
  AgentStateService,
  AuditEventSchema,
  NotifyService,
  SecretsService,
  StateService,
  type Agent,
  type AuditEvent,
} from "@orch/contracts";
import {
  OrchError,
  notFound,
  pingService,
  rpcClient,
  serveRpc,
  type Actor,
  type Handlers,
  type RpcServer,
} from "@orch/kit";
import { createTestDatabase, ed25519, serviceDeps, silentLogger, startNats, type NatsHandle } from "@orch/kit/testing";
import { AgentError, type AgentHandlers, type AgentRuntime } from "../../../agent/src/runtime.js";
import { commandsFeature } from "../../../agent/src/commands/feature.js";
import { stateFeature } from "../../../agent/src/state/feature.js";
import { call, login, startAuth, startGateway } from "../../gateway/test/harness.js";
import { secretsConfigSchema } from "../../secrets/src/config.js";
import { createSecretsService } from "../../secrets/src/service.js";
import { stateConfigSchema, type StateConfig } from "../src/config.js";
import { createStateService } from "../src/service.js";

/** The keyring state tests seal git sources' secrets with. */
export const TEST_SOURCE_KEYS = `t1:${Buffer.alloc(32, 7).toString("base64")}`;

export const STATE_MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));
const SECRETS_MIGRATIONS = fileURLToPath(new URL("../../secrets/migrations", import.meta.url));

type StateOverrides = Partial<StateConfig["state"]>;

/**
 * The agents registry as seen by the state service: GetAgent/ListAgents over NATS from a map the
 * test controls. (The registry's own behaviour is the agents service's tests' business; the
 * e2e test runs the real one.)
 */
function startRegistry(nc: Awaited<ReturnType<NatsHandle["connect"]>>) {
  const agents = new Map<string, Agent>();
  const refuse = async () => {
    throw new OrchError("INTERNAL", undefined, "not served by the test registry");
  };
  const handlers = Object.fromEntries(
    (AgentsService as unknown as { methods: Array<{ localName: string }> }).methods.map((m) => [m.localName, refuse]),
  ) as unknown as Handlers<typeof AgentsService>;
  const find = (id: string) => agents.get(id) ?? [...agents.values()].find((a) => a.name === id && a.name !== "");
  handlers.getAgent = async (req) => {
    const a = find(req.id);
    if (!a) throw notFound("agent_not_found", `no agent '${req.id}'`);
    return a;
  };
  handlers.listAgents = async (req) => {
    const all = [...agents.values()]
      .filter((a) => !req.status || a.status === req.status)
      .sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
    const from = all.filter((a) => a.nodeId > req.cursor);
    const limit = req.limit || 50;
    const page = from.slice(0, limit);
    return { agents: page, nextCursor: from.length > limit ? page.at(-1)!.nodeId : "" };
  };
  const server = serveRpc({ nc, name: "agents", service: AgentsService, handlers, log: silentLogger() });
  return { agents, server };
}

/** A maintenance status the test sets; stands in for the notify service's answer. */
function startMaintenance(nc: Awaited<ReturnType<NatsHandle["connect"]>>) {
  const status: { active: boolean; reason?: string } = { active: false };
  const refuse = async () => {
    throw new OrchError("INTERNAL", undefined, "not served here");
  };
  const handlers = Object.fromEntries(
    (NotifyService as unknown as { methods: Array<{ localName: string }> }).methods.map((m) => [m.localName, refuse]),
  ) as unknown as Handlers<typeof NotifyService>;
  handlers.getMaintenanceStatus = async () => ({
    active: status.active,
    ...(status.active && status.reason ? { window: { id: "01JWINDOW0000000000000000", reason: status.reason } } : {}),
  });
  const server = serveRpc({ nc, name: "notify", service: NotifyService, handlers, log: silentLogger() });
  return { status, server };
}

const agentCall =
  <Req, Res>(h: (req: Req, ctx: { deadline: number }) => Promise<Res>) =>
  (req: Req, ctx: { deadline: number }) =>
    h(req, { deadline: ctx.deadline }).catch((e: unknown) => {
      throw e instanceof AgentError ? new OrchError(e.code, e.reason, e.message) : e;
    });

/**
 * The real agent-side features served where the link relays them (orch.agent.<node_id>): state
 * providers (agent/src/state) and fleet commands (agent/src/commands).
 */
async function serveRealProviders(
  nc: Awaited<ReturnType<NatsHandle["connect"]>>,
  nodeId: string,
  dataDir: string,
): Promise<RpcServer> {
  const served = new Map<unknown, unknown>();
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const rt: AgentRuntime = {
    nodeId,
    dataDir,
    options: {
      server: undefined,
      discover: false,
      discoveryPort: 0,
      terminalEnabled: false,
      shells: [],
      metricsIntervalSeconds: 60,
      trust: { kind: "system" },
    },
    log: silent,
    onLinkUp() {},
    exit() {},
    serve(service, h) {
      served.set(service, h);
    },
    publish: (subject, data) => nc.publish(subject, data),
    subscribe: () => () => {},
    setAttribute() {},
  };
  await stateFeature(rt);
  await commandsFeature(rt);
  const state = served.get(AgentStateService) as AgentHandlers<typeof AgentStateService>;
  const commands = served.get(AgentCommandService) as AgentHandlers<typeof AgentCommandService>;
  const base = { nc, name: "agent", subjectBase: `orch.agent.${nodeId}`, queue: null, log: silentLogger() } as const;
  const servers = [
    serveRpc({ ...base, service: AgentStateService, handlers: { execute: agentCall(state.execute) } }),
    serveRpc({
      ...base,
      service: AgentCommandService,
      handlers: { runCommand: agentCall(commands.runCommand), cancelCommand: agentCall(commands.cancelCommand) },
    }),
  ];
  return {
    inflight: () => servers.reduce((n, x) => n + x.inflight(), 0),
    stop: async () => void (await Promise.all(servers.map((x) => x.stop()))),
  };
}

export interface StackOptions {
  state?: StateOverrides;
  /** Whether a maintenance window is active when the state service starts. */
  maintenance?: boolean;
}

/**
 * Real NATS and Postgres; auth, secrets, state and the gateway in-process; the agents registry as
 * a map; agents are the real providers served over NATS.
 */
export async function startStack(t: Test, opts: StackOptions = {}) {
  const nats = await startNats();
  const db = await createTestDatabase();
  const admin = ed25519();
  const auth = await startAuth(nats, db, admin);
  const infra = await nats.connect("test-infra");
  const registry = startRegistry(infra);
  const maintenance = startMaintenance(infra);
  maintenance.status.active = opts.maintenance ?? false;
  const secretsDeps = await serviceDeps({
    name: "secrets",
    nats,
    db,
    schema: "secrets",
    migrations: SECRETS_MIGRATIONS,
    config: secretsConfigSchema.parse({ secrets: { keys: `k1:${randomBytes(32).toString("base64")}` } }),
  });
  const secrets = await createSecretsService(secretsDeps);
  const startState = async (overrides: StateOverrides = {}) => {
    const deps = await serviceDeps({
      name: "state",
      nats,
      db,
      schema: "state",
      migrations: STATE_MIGRATIONS,
      config: stateConfigSchema.parse({
        state: { drift_interval_seconds: 0, source_keys: TEST_SOURCE_KEYS, ...opts.state, ...overrides },
      }),
    });
    const svc = await createStateService(deps);
    return {
      deps,
      svc,
      async stop() {
        await svc.stop();
        await deps.close();
      },
    };
  };
  let state = await startState();
  const gw = await startGateway(nats);
  const token = await login(gw.url, admin);
  const agentServers = new Map<string, RpcServer>();
  const dirs: string[] = [];
  const secretsClient = rpcClient(infra, "secrets", SecretsService, { timeoutMs: 5000 });
  const stateClient = rpcClient(infra, "state", StateService, { timeoutMs: 30_000 });

  const stack = {
    nats,
    db,
    gw,
    token,
    registry,
    maintenance,
    get state() {
      return state;
    },
    /** Stops the state service and starts a new instance on the same database. */
    async restartState(overrides: StateOverrides = {}) {
      await state.stop();
      state = await startState(overrides);
      // Its subscriptions reach the server a moment after start returns; the ping subject is
      // subscribed after the RPC subjects on the same connection, so its answer means they are live.
      for (let i = 0; i < 100 && !(await pingService(infra, "state", 200)); i++) await sleep(50);
      return state;
    },
    /** The state service over NATS, as the gateway calls it (for RPCs without an HTTP route here). */
    stateRpc: stateClient,
    /** The bus connection of the test's infrastructure (subscriptions, publishing as an agent would). */
    infra,
    api: (method: string, path: string, body?: unknown) =>
      call(gw.url, method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) }),
    /** Registers an agent in the registry; `serve` runs the real providers for it. */
    async addAgent(o: {
      name: string;
      tags?: Record<string, string>;
      attributes?: Record<string, string>;
      status?: string;
      serve?: boolean;
    }) {
      const nodeId = randomBytes(16).toString("hex");
      registry.agents.set(nodeId, {
        $typeName: "orch.v1.Agent",
        nodeId,
        name: o.status === "pending" ? "" : o.name,
        status: o.status ?? "approved",
        tags: o.tags ?? {},
        attributes: { hostname: o.name, os: "linux", ...o.attributes },
        connected: o.serve !== false,
        firstSeen: Date.now(),
        lastSeen: Date.now(),
        address: "",
        version: "test",
        publicKey: "",
        outdated: false,
        pendingReason: "",
      });
      // Each agent's own data directory (the files it wrote from a secret are remembered there).
      if (o.serve !== false) agentServers.set(nodeId, await serveRealProviders(infra, nodeId, stack.tempDir()));
      return nodeId;
    },
    /** An approved, "connected" agent whose link swallows requests without answering. */
    async addSilentAgent(name: string) {
      const nodeId = await stack.addAgent({ name, serve: false });
      registry.agents.get(nodeId)!.connected = true;
      const sub = infra.subscribe(`orch.agent.${nodeId}.>`, { callback: () => {} });
      await infra.flush();
      return { nodeId, stop: () => sub.unsubscribe() };
    },
    async createSecret(
      name: string,
      value: string,
      restriction?: { nodeIds?: string[]; tags?: Record<string, string> },
    ) {
      await secretsClient.createSecret(
        {
          name,
          value,
          ...(restriction ? { restriction: { nodeIds: restriction.nodeIds ?? [], tags: restriction.tags ?? {} } } : {}),
        },
        { actor: { id: "admin", name: "admin", type: "operator", role: "admin" } },
      );
    },
    /** A temporary directory removed at teardown. */
    tempDir() {
      const d = mkdtempSync(join(tmpdir(), "orch-state-test-"));
      dirs.push(d);
      return d;
    },
    /** Audit events of one type that reached the AUDIT stream. */
    async events(type: string): Promise<AuditEvent[]> {
      await state.deps.relay?.flush();
      const js = jetstream(infra);
      const consumer = await js.consumers.get("AUDIT", { filter_subjects: `audit.${type}` });
      const out: AuditEvent[] = [];
      const msgs = await consumer.fetch({ max_messages: 1000, expires: 1000 });
      for await (const m of msgs) {
        out.push(fromBinary(AuditEventSchema, m.data));
        if (m.info.pending === 0) break;
      }
      return out;
    },
    /** Every row of every table of the state schema, as text (for leak checks). */
    async dumpStateSchema(): Promise<string> {
      const tables = (
        await state.deps.pool.query<{ table_name: string }>(
          "SELECT table_name FROM information_schema.tables WHERE table_schema = 'state'",
        )
      ).rows.map((r) => r.table_name);
      const parts: string[] = [];
      for (const tname of tables)
        parts.push(JSON.stringify((await state.deps.pool.query(`SELECT * FROM state.${tname}`)).rows));
      return parts.join("\n");
    },
  };

  t.teardown(async () => {
    await Promise.all([...agentServers.values()].map((s) => s.stop()));
    await gw.stop();
    await state.stop();
    await secrets.stop();
    await secretsDeps.close();
    await registry.server.stop();
    await maintenance.server.stop();
    await auth.stop();
    await db.drop();
    await nats.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return stack;
}

export type Stack = Awaited<ReturnType<typeof startStack>>;

export const ADMIN: Actor = { id: "admin-1", name: "alice", type: "operator", role: "admin" };
export const operator = (id: string, name = id): Actor => ({ id, name, type: "operator", role: "operator" });
