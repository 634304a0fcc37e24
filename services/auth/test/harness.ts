import { fileURLToPath } from "node:url";
import { create, fromBinary } from "@bufbuild/protobuf";
import {
  AuthService,
  RevocationSchema,
  type AuditEvent,
  AuditEventSchema,
  OperatorSchema,
  type Revocation,
} from "@orch/contracts";
import { rpcClient, SYSTEM_ACTOR, systemClock, type Actor, type CallContext, type Clock } from "@orch/kit";
import {
  createTestDatabase,
  ed25519,
  serviceDeps,
  startNats,
  type DbHandle,
  type KeyPair,
  type NatsHandle,
} from "@orch/kit/testing";
import { authConfigSchema } from "../src/config.js";
import { operatorHandlers } from "../src/handlers/operators.js";
import { createAuthService, type AuthServiceOptions } from "../src/service.js";

export const AUTH_MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));

/** A settable clock for window and expiry tests. */
export function manualClock(start = Date.now()): Clock & { advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

/** One in-process auth service whose bootstrap admin is `admin`. */
/** A fixed SSO keyring for tests (`auth.sso_keys`). */
export const TEST_SSO_KEYS = `t1:${Buffer.alloc(32, 0x5a).toString("base64")}`;

export async function startAuth(
  nats: NatsHandle,
  db: DbHandle,
  admin: KeyPair,
  clock: Clock = systemClock,
  auth: Record<string, unknown> = {},
  options: AuthServiceOptions = {},
) {
  const deps = await serviceDeps({
    name: "auth",
    nats,
    db,
    schema: "auth",
    migrations: AUTH_MIGRATIONS,
    clock,
    config: authConfigSchema.parse({ auth: { bootstrap_admin_key: admin.publicKeyHex, ...auth } }),
  });
  const svc = await createAuthService(deps, options);
  return {
    deps,
    svc,
    async stop() {
      await svc.stop();
      await deps.close();
    },
  };
}

/**
 * The setup every auth test file shares: a private NATS, a fresh database and a running auth service,
 * all torn down with the test file.
 */
export async function authTestbed(
  t: { teardown(fn: () => Promise<void>): void },
  o: { clock?: Clock; auth?: Record<string, unknown>; options?: AuthServiceOptions } = {},
) {
  const nats = await startNats();
  const db = await createTestDatabase();
  const admin = ed25519();
  const auth = await startAuth(nats, db, admin, o.clock, o.auth, o.options);
  t.teardown(async () => {
    await auth.stop();
    await db.drop();
    await nats.stop();
  });
  /** A call context of the system actor, for calling handlers directly. */
  const systemCtx = (requestId = "r", timeoutMs = 60_000): CallContext => ({
    requestId,
    actor: { ...SYSTEM_ACTOR },
    deadline: Date.now() + timeoutMs,
    log: auth.deps.log,
  });
  /** Adds an operator (as the system) and returns the actor the gateway would send for it. */
  const addOperator = async (name: string, role: "admin" | "operator" = "operator") => {
    const key = ed25519();
    const req = {
      $typeName: "orch.v1.CreateOperatorRequest",
      name,
      publicKey: key.publicKeyHex,
      role,
      agentSelector: "",
    } as const;
    const op = create(OperatorSchema, await operatorHandlers(auth.deps).createOperator(req, systemCtx()));
    const actor: Actor = { id: op.id, name: op.name, type: "operator", role };
    return { op, actor, key };
  };
  return { nats, db, admin, auth, systemCtx, addOperator };
}

/** A bus client of the auth service, as the gateway holds one. */
export async function authClient(nats: NatsHandle, name = "client") {
  return rpcClient(await nats.connect(name), "auth", AuthService, { timeoutMs: 10_000 });
}

/** Everything published on the revocation subject and the auth audit subjects, for assertions. */
export async function busObserver(nats: NatsHandle) {
  const nc = await nats.connect("observer");
  const revocations: Revocation[] = [];
  const events: AuditEvent[] = [];
  nc.subscribe("orch.auth.revoked", {
    callback: (_e, m) => void revocations.push(fromBinary(RevocationSchema, m.data)),
  });
  nc.subscribe("audit.auth.>", { callback: (_e, m) => void events.push(fromBinary(AuditEventSchema, m.data)) });
  await nc.flush();
  return { revocations, events };
}
