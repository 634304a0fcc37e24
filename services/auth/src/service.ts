import { ApprovalService, AuthService, SsoService } from "@orch/contracts";
import { SYSTEM_ACTOR, schedulePeriodic, serveRpc, withJobLock, type Service } from "@orch/kit";
import { operatorsDb } from "./db/operators.js";
import { sessionsDb } from "./db/sessions.js";
import type { AuthDeps } from "./deps.js";
import { loginCodeHandlers } from "./handlers/login-codes.js";
import { loginHandlers } from "./handlers/login.js";
import { operatorHandlers } from "./handlers/operators.js";
import { passkeyHandlers } from "./handlers/passkeys.js";
import { normaliseKey } from "./keys.js";
import {
  accessHandlers,
  approvalsContext,
  decideHandlers,
  replanHandlers,
  policyHandlers,
  requestHandlers,
  sourcePolicyHandlers,
  startExpiry,
  startGrantExpiry,
  type ChangeExecutors,
  type ChangeReplanners,
} from "./approvals/index.js";
import { loginsDb } from "./sso/logins-db.js";
import {
  backchannelHandlers,
  deviceHandlers,
  providerHandlers,
  ssoContext,
  ssoLoginHandlers,
  startRefresher,
} from "./sso/index.js";

/** Creates the first admin from ORCH_BOOTSTRAP_ADMIN_KEY when no admin exists yet. */
export async function bootstrapAdmin(deps: AuthDeps): Promise<void> {
  const key = deps.config.auth.bootstrap_admin_key;
  if (!key) return;
  const publicKey = normaliseKey(key);
  await withJobLock(deps.pool, "auth.bootstrap", async () => {
    const has = await deps.pool.query("SELECT 1 FROM operators WHERE role = 'admin' LIMIT 1");
    if (has.rowCount) return;
    const existing = await operatorsDb.byKey(deps.pool, publicKey);
    if (existing) return;
    const row = {
      id: deps.ids.next(),
      name: deps.config.auth.bootstrap_admin_name,
      public_key: publicKey,
      role: "admin",
      active: true,
      created_at: deps.clock.now(),
      created_by: "system",
      agent_selector: null,
    } as const;
    await deps.events.tx(async (db, emit) => {
      await operatorsDb.insert(db, row);
      await emit({
        type: "operator.created",
        summary: `bootstrap admin ${row.name} created`,
        actor: SYSTEM_ACTOR,
        target: { id: row.id, name: row.name, type: "operator" },
        metadata: { role: "admin", bootstrap: true },
      });
    });
    deps.log.info({ operator: row.name }, "bootstrap admin created");
  });
}

export interface AuthServiceOptions {
  /** Executors of approved change requests, by action (docs/approvals.md); none by default. */
  executors?: ChangeExecutors;
  /** Re-planners of pending change requests, by action; none by default. */
  replanners?: ChangeReplanners;
}

function startApprovals(deps: AuthDeps, opts: AuthServiceOptions) {
  const approvals = approvalsContext(deps, opts.executors, opts.replanners);
  const rpc = serveRpc({
    nc: deps.nc,
    idempotency: deps.idempotency,
    name: "auth",
    service: ApprovalService,
    log: deps.log,
    // Spread here, not built elsewhere: the route map (scripts/lib/route-map.ts) reads this literal.
    handlers: {
      ...policyHandlers(approvals),
      ...requestHandlers(approvals),
      ...decideHandlers(approvals),
      ...replanHandlers(approvals),
      ...accessHandlers(approvals),
      ...sourcePolicyHandlers(approvals),
    },
  });
  const expiry = startExpiry(approvals);
  const grantExpiry = startGrantExpiry(approvals);
  return {
    async stop() {
      expiry.stop();
      grantExpiry.stop();
      await rpc.stop();
    },
  };
}

export async function createAuthService(deps: AuthDeps, options: AuthServiceOptions = {}): Promise<Service> {
  await bootstrapAdmin(deps);
  const rpc = serveRpc({
    nc: deps.nc,
    idempotency: deps.idempotency,
    name: "auth",
    service: AuthService,
    log: deps.log,
    handlers: {
      ...loginHandlers(deps),
      ...operatorHandlers(deps),
      ...loginCodeHandlers(deps),
      ...passkeyHandlers(deps),
    },
  });
  const sso = ssoContext(deps);
  if (sso.ring) deps.log.info({ active_key: sso.ring.active, key_ids: sso.ring.ids }, "sso keyring loaded");
  const ssoRpc = serveRpc({
    nc: deps.nc,
    idempotency: deps.idempotency,
    name: "auth",
    service: SsoService,
    log: deps.log,
    // Spread here, not built elsewhere: the route map (scripts/lib/route-map.ts) reads this literal.
    handlers: {
      ...providerHandlers(sso),
      ...ssoLoginHandlers(sso),
      ...deviceHandlers(sso),
      ...backchannelHandlers(sso),
    },
  });
  const refresher = startRefresher(sso);
  const approvals = startApprovals(deps, options);
  const purge = schedulePeriodic(deps, "auth.purge", 600_000, async (c) => {
    await sessionsDb.purgeExpired(c, deps.clock.now());
    await loginsDb.purgeExpired(c, deps.clock.now());
  });
  return {
    async stop() {
      purge.stop();
      await approvals.stop();
      await refresher.stop();
      await ssoRpc.stop();
      await rpc.stop();
    },
  };
}
