import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import {
  AgentsService,
  ApprovalService,
  AuditEventSchema,
  SecretsService,
  nodeIdFromPublicKey,
  type AuditEvent,
} from "@orch/contracts";
import {
  OrchError,
  rpcClient,
  serveRpc,
  systemClock,
  type Actor,
  type Clock,
  type Logger,
  type NatsConnection,
} from "@orch/kit";
import { eventually, serviceDeps, silentLogger, type DbHandle, type NatsHandle } from "@orch/kit/testing";
import { secretsConfigSchema } from "../src/config.js";
import { createSecretsService } from "../src/service.js";

export const SECRETS_MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));
export const newKey = (id: string) => `${id}:${randomBytes(32).toString("base64")}`;
export const ADMIN: Actor = { id: "01ADMIN", name: "root", type: "operator", role: "admin" };
export const OPERATOR: Actor = { id: "01OPERATOR", name: "olga", type: "operator", role: "operator" };

/** One in-process secrets service with its own deps on the test NATS and database. */
export async function startSecrets(
  nats: NatsHandle,
  db: DbHandle,
  keys: string,
  o: { clock?: Clock; log?: Logger; reencryptOnStart?: boolean } = {},
) {
  const deps = await serviceDeps({
    name: "secrets",
    nats,
    db,
    schema: "secrets",
    migrations: SECRETS_MIGRATIONS,
    clock: o.clock ?? systemClock,
    ...(o.log ? { log: o.log } : {}),
    config: secretsConfigSchema.parse({ secrets: { keys, reencrypt_on_start: o.reencryptOnStart ?? false } }),
  });
  const svc = await createSecretsService(deps);
  // The server has the service's subscriptions once the flush returns: no "no responders" race.
  await deps.nc.flush();
  return {
    deps,
    async stop() {
      await svc.stop();
      await deps.close();
    },
  };
}

/**
 * Stands in for the auth service's approvals when no auth service runs: no policy ever holds a
 * secret write (the secrets service asks EvaluateApproval before every create, update and delete).
 * The approval path itself is tested against the real auth service (test/e2e/approvals-secrets.test.ts).
 */
export async function noApprovalPolicies(nats: NatsHandle) {
  return stubApprovals(nats, { evaluateApproval: async () => ({ required: false }) });
}

/** A stand-in auth service answering only the given ApprovalService methods (the rest fail). */
export async function stubApprovals(nats: NatsHandle, methods: Record<string, (req: unknown) => Promise<unknown>>) {
  const nc = await nats.connect("approvals-stub");
  const handlers = new Proxy(
    {},
    {
      get: (_t, method) =>
        methods[String(method)] ??
        (async () => {
          throw new Error(`approvals stub: ${String(method)} is not served`);
        }),
    },
  );
  const rpc = serveRpc({
    nc,
    name: "auth",
    service: ApprovalService,
    log: silentLogger(),
    handlers: handlers as never,
  });
  await nc.flush();
  return {
    async stop() {
      await rpc.stop();
      await nc.close();
    },
  };
}

export const secretsClient = (nc: NatsConnection) => rpcClient(nc, "secrets", SecretsService, { timeoutMs: 5000 });

/** The error a promise rejects with (as OrchError), for asserting code and reason. */
export async function rejection(p: Promise<unknown>): Promise<OrchError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof OrchError) return err;
    throw err;
  }
  throw new Error("expected the call to fail");
}

/** Every audit event published on the test bus from now on (core subscription). */
export function auditLog(nc: NatsConnection) {
  const events: AuditEvent[] = [];
  const raw: Uint8Array[] = [];
  const sub = nc.subscribe("audit.>", {
    callback: (_err, m) => {
      raw.push(m.data);
      events.push(fromBinary(AuditEventSchema, m.data));
    },
  });
  return {
    events,
    raw,
    /** Waits until an event of `type` matching `pred` arrives and returns it. */
    waitFor: (type: string, pred: (e: AuditEvent) => boolean = () => true, timeoutMs = 10_000) =>
      eventually(() => events.find((e) => e.eventType === type && pred(e)), timeoutMs),
    stop: () => sub.unsubscribe(),
  };
}

/** The real agents service in-process; agents are added as their first connect would, then approved and tagged over its RPCs. */
export async function startAgents(nats: NatsHandle, db: DbHandle) {
  const { createAgentsService } = await import("../../agents/src/service.js");
  const { agentsConfigSchema } = await import("../../agents/src/config.js");
  const deps = await serviceDeps({
    name: "agents",
    nats,
    db,
    schema: "agents",
    migrations: fileURLToPath(new URL("../../agents/migrations", import.meta.url)),
    config: agentsConfigSchema.parse({ agents: { link_host: "127.0.0.1", link_port: 0, insecure: true } }),
  });
  const svc = await createAgentsService(deps);
  await deps.nc.flush();
  // The test approves and tags as an operator would (through the gateway), not as the agents user.
  const client = rpcClient(await nats.connect("agents-admin"), "agents", AgentsService, { timeoutMs: 5000 });
  const actor = { actor: ADMIN };
  let stopped: Promise<void> | undefined;
  return {
    client,
    /** Registers an agent as pending (what the link does on first contact) and returns its node id. */
    async add(
      opts: { status?: "pending" | "approved" | "rejected"; name?: string; tags?: Record<string, string> } = {},
    ): Promise<string> {
      const pub = randomBytes(32);
      const nodeId = nodeIdFromPublicKey(pub);
      const now = Date.now();
      await deps.pool.query(
        "INSERT INTO agents (node_id, public_key, status, first_seen, last_seen) VALUES ($1, $2, 'pending', $3, $3)",
        [nodeId, pub.toString("hex"), now],
      );
      if (opts.status === "approved")
        await client.setApproval({ nodeId, status: "approved", name: opts.name ?? `n-${nodeId.slice(0, 8)}` }, actor);
      if (opts.status === "rejected") await client.setApproval({ nodeId, status: "rejected" }, actor);
      if (opts.tags) await client.replaceTags({ nodeId, tags: opts.tags }, actor);
      return nodeId;
    },
    stop() {
      stopped ??= (async () => {
        await svc.stop();
        await deps.close();
      })();
      return stopped;
    },
  };
}
