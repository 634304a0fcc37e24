// Identity providers (admin) and the public list a sign-in page shows.
import type { IdentityProvider, SsoService } from "@orch/contracts";
import { forbidden, invalid, type CallContext, type Handlers } from "@orch/kit";
import { deprovision, publishRevocation } from "./access.js";
import type { SsoContext } from "./context.js";
import { identitiesDb } from "./identities-db.js";
import { openValue, sealValue } from "./keyring.js";
import { ClaimsError, mapClaims, parseClaims } from "./mapping.js";
import { describeOidcError, discover } from "./oidc-client.js";
import { operatorNameFor } from "./provision.js";
import { checkProviderInput, type ProviderInput } from "./provider-input.js";
import { providersDb, type ProviderRow } from "./providers-db.js";

type ProviderHandlers = Pick<
  Handlers<typeof SsoService>,
  | "listIdentityProviders"
  | "getIdentityProvider"
  | "putIdentityProvider"
  | "deleteIdentityProvider"
  | "testSsoMapping"
  | "listSignInProviders"
>;

// The gateway enforces roles; the service checks again so a bus caller cannot skip it.
function requireAdmin(ctx: CallContext) {
  if (ctx.actor.type !== "system" && ctx.actor.role !== "admin") throw forbidden();
}

export function toIdentityProvider(p: ProviderRow): Omit<IdentityProvider, "$typeName"> {
  return {
    id: p.id,
    name: p.name,
    displayName: p.display_name,
    issuer: p.issuer,
    clientId: p.client_id,
    hasClientSecret: p.client_secret !== null,
    scopes: p.scopes,
    groupsClaim: p.groups_claim,
    allowedDomains: p.allowed_domains,
    rules: p.rules.map((r) => ({
      $typeName: "orch.v1.SsoMappingRule" as const,
      name: r.name,
      groups: r.groups,
      email: r.email,
      domains: r.domains,
      role: r.role,
      agentSelector: r.agent_selector,
    })),
    refreshIntervalSeconds: p.refresh_interval_seconds,
    enabled: p.enabled,
    deviceFlow: p.device_flow,
    createdAt: p.created_at,
    updatedAt: p.updated_at,
  };
}

type SecretChange = "set" | "kept" | "cleared";

/** The secret to store (sealed with the provider id) and to discover with. */
function secretFor(c: SsoContext, id: string, given: string | undefined, existing: ProviderRow | undefined) {
  const ring = c.requireRing();
  if (given === undefined) {
    const stored = existing?.client_secret ?? null;
    return { sealed: stored, plain: stored ? openValue(ring, id, stored) : undefined, change: "kept" as SecretChange };
  }
  if (given === "") return { sealed: null, plain: undefined, change: "cleared" as SecretChange };
  return { sealed: sealValue(ring, id, given), plain: given, change: "set" as SecretChange };
}

async function discoverOrRefuse(input: ProviderInput, secret: string | undefined) {
  try {
    const config = await discover(input.issuer, input.clientId, secret);
    return { deviceFlow: Boolean(config.serverMetadata().device_authorization_endpoint) };
  } catch (err) {
    throw invalid("issuer_discovery_failed", `discovery of ${input.issuer} failed: ${describeOidcError(err)}`, {
      field: "issuer",
    });
  }
}

function putProvider(c: SsoContext): ProviderHandlers["putIdentityProvider"] {
  const { pool, events, clock, ids } = c.deps;
  return async (req, ctx) => {
    requireAdmin(ctx);
    c.requireRing();
    const input = checkProviderInput(req);
    const existing = await providersDb.byName(pool, input.name);
    const id = existing?.id ?? ids.next();
    const secret = secretFor(c, id, req.clientSecret, existing);
    const { deviceFlow } = await discoverOrRefuse(input, secret.plain);
    const now = clock.now();
    const row = await events.tx(async (db, emit) => {
      const cur = await providersDb.byName(db, input.name, true);
      const stored = await providersDb.upsert(db, {
        id: cur?.id ?? id,
        name: input.name,
        display_name: input.displayName,
        issuer: input.issuer,
        client_id: input.clientId,
        client_secret: secret.sealed,
        scopes: input.scopes,
        groups_claim: input.groupsClaim,
        allowed_domains: input.allowedDomains,
        rules: input.rules,
        refresh_interval_seconds: input.refreshIntervalSeconds,
        enabled: input.enabled,
        device_flow: deviceFlow,
        created_at: cur?.created_at ?? now,
        updated_at: Math.max(now, (cur?.updated_at ?? 0) + 1),
        created_by: cur?.created_by ?? ctx.actor.id,
      });
      await emit({
        type: cur ? "identity_provider.updated" : "identity_provider.created",
        summary: `identity provider ${input.name} ${cur ? "changed" : "added"} by ${ctx.actor.name}`,
        actor: ctx.actor,
        target: { id: stored.id, name: stored.name, type: "identity_provider" },
        metadata: {
          issuer: input.issuer,
          client_id: input.clientId,
          client_secret: cur || secret.change !== "kept" ? secret.change : "none",
          enabled: input.enabled,
          rules: input.rules.length,
          device_flow: deviceFlow,
        },
      });
      return stored;
    });
    c.cache.forget(row.id);
    return toIdentityProvider(row);
  };
}

function deleteProvider(c: SsoContext): ProviderHandlers["deleteIdentityProvider"] {
  const { events, nc } = c.deps;
  return async (req, ctx) => {
    requireAdmin(ctx);
    const ended: string[] = [];
    await events.tx(async (db, emit) => {
      const p = await c.provider(db, req.name);
      await db.query("SELECT 1 FROM identity_providers WHERE id = $1 FOR UPDATE", [p.id]);
      for (const operatorId of await identitiesDb.operatorIdsOf(db, p.id)) {
        const o = await db.query<{ name: string; active: boolean }>(
          "SELECT name, active FROM operators WHERE id = $1 FOR UPDATE",
          [operatorId],
        );
        const op = o.rows[0];
        if (!op?.active) continue;
        await deprovision(
          db,
          emit,
          { id: operatorId, name: op.name },
          { provider: p.name, reason: "provider_deleted" },
        );
        ended.push(operatorId);
      }
      await providersDb.remove(db, p.id);
      await emit({
        type: "identity_provider.deleted",
        summary: `identity provider ${p.name} removed by ${ctx.actor.name}`,
        actor: ctx.actor,
        target: { id: p.id, name: p.name, type: "identity_provider" },
        metadata: { issuer: p.issuer, deprovisioned: ended.length },
      });
      c.cache.forget(p.id);
    });
    for (const id of ended) publishRevocation(nc, id);
    return { deprovisioned: ended.length };
  };
}

function testMapping(c: SsoContext): ProviderHandlers["testSsoMapping"] {
  const { pool } = c.deps;
  return async (req, ctx) => {
    requireAdmin(ctx);
    const p = await c.provider(pool, req.provider);
    let raw: unknown;
    try {
      raw = JSON.parse(req.claimsJson);
    } catch {
      throw invalid("invalid_request", "claims_json is not JSON", { field: "claims_json" });
    }
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
      throw invalid("invalid_request", "claims_json must be a JSON object", { field: "claims_json" });
    }
    try {
      const claims = parseClaims(raw as Record<string, unknown>, p.groups_claim);
      const m = mapClaims(claims, c.policyOf(p));
      return { ...m, operatorName: m.matched ? await operatorNameFor(pool, p.id, claims) : "" };
    } catch (err) {
      if (!(err instanceof ClaimsError)) throw err;
      return { matched: false, ruleIndex: -1, reason: `the claims would be refused: ${err.message}` };
    }
  };
}

export function providerHandlers(c: SsoContext): ProviderHandlers {
  const { pool } = c.deps;
  return {
    async listIdentityProviders(_req, ctx) {
      requireAdmin(ctx);
      return { providers: (await providersDb.list(pool)).map(toIdentityProvider) };
    },
    async getIdentityProvider(req, ctx) {
      requireAdmin(ctx);
      return toIdentityProvider(await c.provider(pool, req.name));
    },
    putIdentityProvider: putProvider(c),
    deleteIdentityProvider: deleteProvider(c),
    testSsoMapping: testMapping(c),
    async listSignInProviders() {
      if (!c.ring) return { providers: [] };
      const providers = (await providersDb.list(pool)).filter((p) => p.enabled);
      return {
        providers: providers.map((p) => ({ name: p.name, displayName: p.display_name, deviceFlow: p.device_flow })),
      };
    },
  };
}
