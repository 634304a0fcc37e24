import { fileURLToPath } from "node:url";
import { SYSTEM_ACTOR, systemClock, type CallContext, type Clock } from "@orch/kit";
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
import { createAuthService } from "../src/service.js";

export const AUTH_MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));

/** A settable clock for window and expiry tests. */
export function manualClock(start = Date.now()): Clock & { advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

/** One in-process auth service whose bootstrap admin is `admin`. */
export async function startAuth(nats: NatsHandle, db: DbHandle, admin: KeyPair, clock: Clock = systemClock) {
  const deps = await serviceDeps({
    name: "auth",
    nats,
    db,
    schema: "auth",
    migrations: AUTH_MIGRATIONS,
    clock,
    config: authConfigSchema.parse({ auth: { bootstrap_admin_key: admin.publicKeyHex } }),
  });
  const svc = await createAuthService(deps);
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
export async function authTestbed(t: { teardown(fn: () => Promise<void>): void }, o: { clock?: Clock } = {}) {
  const nats = await startNats();
  const db = await createTestDatabase();
  const admin = ed25519();
  const auth = await startAuth(nats, db, admin, o.clock);
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
  return { nats, db, admin, auth, systemCtx };
}
