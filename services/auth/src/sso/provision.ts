// Just-in-time provisioning: a sign-in whose claims map creates or updates the operator behind the
// (provider, subject) identity and opens its session, all in one transaction with its audit events.
import type { SsoSession } from "@orch/contracts";
import { SYSTEM_ACTOR, type Emit, type Queryable } from "@orch/kit";
import { toOperator } from "../convert.js";
import { consoleSessionOpener } from "../console-session.js";
import { operatorsDb, type OperatorRow } from "../db/operators.js";
import { sessionsDb } from "../db/sessions.js";
import { newSecret } from "../handlers/login.js";
import { publishRevocation, setAccess } from "./access.js";
import type { SsoContext } from "./context.js";
import { identitiesDb } from "./identities-db.js";
import { sealValue } from "./keyring.js";
import { nameCandidates, operatorNameBase, type MappingResult, type SsoClaims } from "./mapping.js";
import type { ProviderRow } from "./providers-db.js";

export interface SignIn {
  provider: ProviderRow;
  claims: SsoClaims;
  mapping: MappingResult;
  refreshToken: string | undefined;
  client: "console" | "cli";
  returnTo: string;
  remoteAddress: string;
}

/** The first of `base`, `base-2`... that no operator uses: an admin's operator of that name is never taken over. */
export async function freeOperatorName(db: Queryable, base: string): Promise<string> {
  const candidates = nameCandidates(base);
  const r = await db.query<{ name: string }>("SELECT name FROM operators WHERE name = ANY($1)", [candidates]);
  const taken = new Set(r.rows.map((x) => x.name));
  const free = candidates.find((c) => !taken.has(c));
  return free ?? `${base.slice(0, 40)}-${Date.now().toString(36)}`;
}

/** The operator name claims would get: the identity's existing operator, else a free name. */
export async function operatorNameFor(db: Queryable, providerId: string, claims: SsoClaims): Promise<string> {
  const r = await db.query<{ name: string }>(
    "SELECT o.name FROM sso_identities i JOIN operators o ON o.id = i.operator_id WHERE i.provider_id = $1 AND i.subject = $2",
    [providerId, claims.sub],
  );
  return r.rows[0]?.name ?? freeOperatorName(db, operatorNameBase(claims));
}

interface Provisioned {
  op: OperatorRow;
  created: boolean;
  changed: boolean;
}

async function upsertOperator(c: SsoContext, db: Queryable, emit: Emit, s: SignIn): Promise<Provisioned> {
  const { clock, ids } = c.deps;
  const role = s.mapping.role as "admin" | "operator";
  const agentSelector = s.mapping.agentSelector || null;
  const identity = await identitiesDb.bySubject(db, s.provider.id, s.claims.sub);
  let op = identity ? await operatorsDb.byId(db, identity.operator_id) : undefined;
  let created = false;
  let changed = false;
  if (op) {
    changed = await setAccess(db, op, { role, agentSelector });
  } else {
    const row: OperatorRow = {
      id: ids.next(),
      name: await freeOperatorName(db, operatorNameBase(s.claims)),
      public_key: null,
      role,
      active: true,
      created_at: clock.now(),
      created_by: `sso:${s.provider.name}`,
      agent_selector: agentSelector,
    };
    await operatorsDb.insert(db, row);
    created = true;
    op = row;
  }
  const now = clock.now();
  const ring = c.requireRing();
  await identitiesDb.upsert(db, {
    operator_id: op.id,
    provider_id: s.provider.id,
    subject: s.claims.sub,
    email: s.claims.email ?? null,
    groups: s.claims.groups,
    rule_index: s.mapping.ruleIndex,
    rule_name: s.mapping.ruleName,
    refresh_token: s.refreshToken ? sealValue(ring, op.id, s.refreshToken) : null,
    sid: s.claims.sid ?? null,
    provisioned_at: now,
    last_login_at: now,
    checked_at: now,
    unreachable_since: null,
  });
  if (created || changed) {
    await emit({
      type: "operator.provisioned",
      summary: created
        ? `operator ${op.name} (${role}) provisioned by single sign-on through ${s.provider.name}`
        : `role or scope of ${op.name} updated by single sign-on through ${s.provider.name}`,
      actor: SYSTEM_ACTOR,
      target: { id: op.id, name: op.name, type: "operator" },
      metadata: {
        provider: s.provider.name,
        rule: s.mapping.ruleName,
        role,
        agent_selector: agentSelector,
        created,
        ...(created ? {} : { old_role: op.role, old_agent_selector: op.agent_selector }),
      },
    });
  }
  const fresh = (await operatorsDb.byId(db, op.id)) ?? op;
  return { op: fresh, created, changed };
}

async function openSession(c: SsoContext, db: Queryable, emit: Emit, op: OperatorRow, s: SignIn) {
  if (s.client === "console") {
    const open = consoleSessionOpener(c.deps);
    return open(db, emit, op, { via: "sso", remoteAddress: s.remoteAddress, audit: false });
  }
  const now = c.deps.clock.now();
  const { value: token, hash } = newSecret();
  const expiresAt = now + c.deps.config.auth.token_ttl_hours * 3_600_000;
  await sessionsDb.addToken(db, hash, op.id, now, expiresAt, "sso");
  return { token, expiresAt };
}

/** Provisions, opens the session and audits it; broadcasts a scope change after the commit. */
export async function provisionAndSignIn(c: SsoContext, s: SignIn): Promise<SsoSession> {
  const out = await c.deps.events.tx(async (db, emit) => {
    const p = await upsertOperator(c, db, emit, s);
    const session = await openSession(c, db, emit, p.op, s);
    const actor = { id: p.op.id, name: p.op.name, type: "operator" };
    await emit({
      type: "auth.sso.login_succeeded",
      summary: `${p.op.name} signed in through ${s.provider.name} (${s.client})`,
      actor,
      target: actor,
      metadata: {
        provider: s.provider.name,
        client: s.client,
        rule: s.mapping.ruleName,
        remote_address: s.remoteAddress,
        expires_at: new Date(session.expiresAt).toISOString(),
      },
    });
    return { ...p, session };
  });
  // Its other sessions may hold streams the new scope no longer allows.
  if (out.changed && !out.created) publishRevocation(c.deps.nc, out.op.id, true);
  c.countLogin(s.provider.name, "ok");
  return {
    $typeName: "orch.v1.SsoSession",
    token: out.session.token,
    expiresAt: out.session.expiresAt,
    operator: toOperator(out.op),
    client: s.client,
    returnTo: s.client === "console" ? s.returnTo : "",
    provider: s.provider.name,
  };
}
