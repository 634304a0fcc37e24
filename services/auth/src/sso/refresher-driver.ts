// The refresher's I/O: picks identities due a check (SKIP LOCKED, so replicas share the work), asks
// the provider with the refresh token, and performs what refresher-machine.ts decides, in the
// transaction holding the identity's row. Revocations go out after the commit.
import { SYSTEM_ACTOR, type Emit, type Queryable } from "@orch/kit";
import * as oidc from "openid-client";
import { sessionsDb } from "../db/sessions.js";
import { deprovision, publishRevocation, setAccess } from "./access.js";
import type { SsoContext } from "./context.js";
import { identitiesDb, type DueIdentity } from "./identities-db.js";
import { openValue, sealValue } from "./keyring.js";
import { classifyOidcError, describeOidcError } from "./oidc-client.js";
import { providersDb, type ProviderRow } from "./providers-db.js";
import { initialState, step, type RefreshEffect, type RefreshEvent, type RefreshState } from "./refresher-machine.js";

/** How often each replica looks for due identities. */
const TICK_MS = 1000;
/** Checks per tick and replica: bounds how long one tick can hold the loop. */
const BATCH = 50;
/** A provider that does not answer is asked again after this long at most (or its interval, if shorter). */
const MAX_RETRY_MS = 30_000;

async function askProvider(c: SsoContext, p: ProviderRow, due: DueIdentity): Promise<RefreshEvent> {
  let config: oidc.Configuration;
  try {
    config = await c.configFor(p);
  } catch {
    return { type: "unreachable", detail: "discovery failed" };
  }
  try {
    const refreshToken = openValue(c.requireRing(), due.operator_id, due.refresh_token!);
    const tokens = await oidc.refreshTokenGrant(config, refreshToken);
    let claims: Record<string, unknown> | null = tokens.claims() ? { ...tokens.claims() } : null;
    // Groups only from userinfo (or no ID token on refresh): ask it with the new access token.
    if ((!claims || claims[p.groups_claim] === undefined) && config.serverMetadata().userinfo_endpoint) {
      const info = await oidc.fetchUserInfo(
        config,
        tokens.access_token,
        claims?.sub ? String(claims.sub) : due.subject,
      );
      claims = { ...info, ...claims };
    }
    return { type: "refreshed", claims, refreshToken: tokens.refresh_token };
  } catch (err) {
    const detail = describeOidcError(err).slice(0, 200);
    const kind = classifyOidcError(err);
    if (kind === "grant") return { type: "refused", detail };
    if (kind === "unreachable") return { type: "unreachable", detail };
    return { type: "failed", detail };
  }
}

interface Applied {
  revoke?: { operatorId: string; scopeChanged: boolean };
}

async function endSessions(db: Queryable, emit: Emit, due: DueIdentity, p: ProviderRow): Promise<void> {
  const n = await sessionsDb.removeOperatorTokens(db, due.operator_id);
  await emit({
    type: "auth.sso.logout",
    summary: `sessions of ${due.operator_name} ended: ${p.name} issued no refresh token to confirm the user`,
    actor: SYSTEM_ACTOR,
    target: { id: due.operator_id, name: due.operator_name, type: "operator" },
    metadata: { provider: p.name, reason: "no_refresh_token", sessions_ended: n },
  });
}

async function apply(
  c: SsoContext,
  db: Queryable,
  emit: Emit,
  ctx: { due: DueIdentity; p: ProviderRow; now: number },
  e: RefreshEffect,
): Promise<Applied> {
  const { due, p, now } = ctx;
  const who = { id: due.operator_id, name: due.operator_name };
  switch (e.type) {
    case "end_sessions":
      await endSessions(db, emit, due, p);
      return { revoke: { operatorId: due.operator_id, scopeChanged: false } };
    case "deprovision":
      await deprovision(db, emit, who, { provider: p.name, reason: e.reason, detail: e.detail });
      return { revoke: { operatorId: due.operator_id, scopeChanged: false } };
    case "set_access":
      await setAccess(
        db,
        { id: due.operator_id, role: due.role, agent_selector: due.agent_selector },
        { role: e.role, agentSelector: e.agentSelector },
      );
      await emit({
        type: "operator.provisioned",
        summary: `role or scope of ${due.operator_name} updated from ${p.name} (rule ${e.ruleName})`,
        actor: SYSTEM_ACTOR,
        target: { id: who.id, name: who.name, type: "operator" },
        metadata: {
          provider: p.name,
          rule: e.ruleName,
          role: e.role,
          agent_selector: e.agentSelector,
          created: false,
          old_role: due.role,
          old_agent_selector: due.agent_selector,
        },
      });
      return { revoke: { operatorId: due.operator_id, scopeChanged: true } };
    case "checked":
      await identitiesDb.checked(db, due.operator_id, {
        at: now,
        refreshToken: e.refreshToken ? sealValue(c.requireRing(), due.operator_id, e.refreshToken) : null,
        groups: e.groups ?? due.groups,
        email: e.email === undefined ? due.email : e.email,
        ruleIndex: e.mapping?.ruleIndex ?? due.rule_index,
        ruleName: e.mapping?.ruleName ?? due.rule_name,
      });
      return {};
    case "unreachable":
      await identitiesDb.unreachable(db, due.operator_id, e.since);
      return {};
    case "count":
      c.countRefresh(p.name, e.outcome);
      if (e.outcome !== "ok")
        if (e.outcome !== "ok")
          c.deps.log.info({ provider: p.name, operator: who.name, outcome: e.outcome }, "sso refresh");
      return {};
    case "refresh":
      return {};
  }
}

/** Checks one due identity; false when none is due. */
export async function checkOne(c: SsoContext): Promise<boolean> {
  const { events, clock, config } = c.deps;
  const revocations: NonNullable<Applied["revoke"]>[] = [];
  const found = await events.tx(async (db, emit) => {
    const now = clock.now();
    const due = await identitiesDb.nextDue(db, now, config.auth.sso_refresh_interval_seconds, MAX_RETRY_MS);
    if (!due) return false;
    const p = await providersDb.byId(db, due.provider_id);
    if (!p) return true;
    await identitiesDb.attempted(db, due.operator_id, now);
    let state: RefreshState = initialState({
      operatorId: due.operator_id,
      operatorName: due.operator_name,
      provider: p.name,
      subject: due.subject,
      role: due.role,
      agentSelector: due.agent_selector,
      hasRefreshToken: due.refresh_token !== null,
      checkedAt: due.checked_at,
      unreachableSince: due.unreachable_since,
      policy: c.policyOf(p),
      intervalMs: c.intervalMs(p),
      graceMs: config.auth.sso_unreachable_grace_seconds * 1000,
    });
    let event: RefreshEvent | undefined = { type: "start" };
    while (event) {
      const next = step(state, event, clock.now());
      state = next.state;
      event = undefined;
      for (const effect of next.effects) {
        if (effect.type === "refresh") event = await askProvider(c, p, due);
        const out = await apply(c, db, emit, { due, p, now: clock.now() }, effect);
        if (out.revoke) revocations.push(out.revoke);
      }
    }
    return true;
  });
  for (const r of revocations) publishRevocation(c.deps.nc, r.operatorId, r.scopeChanged);
  return found;
}

/**
 * Looks for due identities every second, whatever the intervals: a period derived from the
 * providers' intervals would be read before a provider with a shorter one exists, and it would then
 * wait the old period out. One indexed query a second per replica is cheap.
 */
export function startRefresher(c: SsoContext): { stop(): Promise<void>; tick(): Promise<void> } {
  const { log } = c.deps;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  async function tick(): Promise<void> {
    for (let i = 0; i < BATCH && !stopped; i++) {
      if (!(await checkOne(c))) break;
    }
  }
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = (async () => {
        try {
          await tick();
        } catch (err) {
          log.warn({ err }, "sso refresher tick failed");
        }
        schedule(TICK_MS);
      })();
    }, ms);
    timer.unref();
  };
  if (c.ring) schedule(TICK_MS);
  return {
    tick,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
