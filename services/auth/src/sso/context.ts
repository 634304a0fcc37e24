// What every SSO handler and the refresher share: the keyring, the discovery cache, the metrics and
// the audit of refused sign-ins.
import { UNNOTIFIED_FLAG } from "@orch/contracts";
import { metric, notFound, OrchError, precondition, SYSTEM_ACTOR, type Keyring, type Queryable } from "@orch/kit";
import type { AuthDeps } from "../deps.js";
import { ssoKeyring, openValue } from "./keyring.js";
import type { MappingPolicy } from "./mapping.js";
import { discoveryCache, type DiscoveryCache, type OidcConfiguration } from "./oidc-client.js";
import { providersDb, type ProviderRow } from "./providers-db.js";

export interface SsoContext {
  deps: AuthDeps;
  ring: Keyring | undefined;
  cache: DiscoveryCache;
  /** The keyring, or `sso_unavailable` when `auth.sso_keys` is empty. */
  requireRing(): Keyring;
  provider(db: Queryable, name: string): Promise<ProviderRow>;
  /** The provider's discovered configuration; a provider that does not answer is `sso_provider_unreachable`. */
  configFor(p: ProviderRow): Promise<OidcConfiguration>;
  policyOf(p: ProviderRow): MappingPolicy;
  intervalMs(p: Pick<ProviderRow, "refresh_interval_seconds">): number;
  /** Counts and audits a refused sign-in; returns the error to throw. */
  refuse(p: { id: string; name: string } | undefined, err: OrchError, remoteAddress: string): Promise<OrchError>;
  countLogin(provider: string, outcome: string): void;
  countRefresh(provider: string, outcome: string): void;
}

export const ssoUnavailable = () =>
  precondition("sso_unavailable", "single sign-on is off: set auth.sso_keys (ORCH_AUTH_SSO_KEYS)");

// Anyone can send a stale or forged redirect: those are audited but notify nobody.
const UNNOTIFIED_REASONS = new Set(["sso_state_invalid", "identity_provider_not_found", "sso_provider_disabled"]);

export function ssoContext(deps: AuthDeps): SsoContext {
  const ring = ssoKeyring(deps.config.auth.sso_keys);
  const cache = discoveryCache(() => deps.clock.now());
  const logins = metric(deps.metrics, "orch_sso_logins_total");
  const refreshes = metric(deps.metrics, "orch_sso_refreshes_total");
  const ctx: SsoContext = {
    deps,
    ring,
    cache,
    requireRing() {
      if (!ring) throw ssoUnavailable();
      return ring;
    },
    async provider(db, name) {
      const p = await providersDb.byName(db, name);
      if (!p) throw notFound("identity_provider_not_found", `no identity provider '${name}'`);
      return p;
    },
    async configFor(p) {
      const keys = ctx.requireRing();
      try {
        return await cache.get(p, () => (p.client_secret ? openValue(keys, p.id, p.client_secret) : undefined));
      } catch (err) {
        deps.log.warn({ err, provider: p.name }, "identity provider discovery failed");
        throw new OrchError("UNAVAILABLE", "sso_provider_unreachable", `identity provider '${p.name}' did not answer`);
      }
    },
    policyOf: (p) => ({ groupsClaim: p.groups_claim, allowedDomains: p.allowed_domains, rules: p.rules }),
    intervalMs: (p) =>
      (p.refresh_interval_seconds > 0 ? p.refresh_interval_seconds : deps.config.auth.sso_refresh_interval_seconds) *
      1000,
    async refuse(p, err, remoteAddress) {
      ctx.countLogin(p?.name ?? "unknown", err.reason);
      const target = p
        ? { id: p.id, name: p.name, type: "identity_provider" }
        : { id: "unknown", name: "unknown", type: "identity_provider" };
      await deps.events.tx(async (_db, emit) => {
        await emit({
          type: "auth.sso.login_failed",
          summary: `single sign-on${p ? ` through ${p.name}` : ""} refused: ${err.reason}`,
          actor: SYSTEM_ACTOR,
          target,
          metadata: {
            provider: p?.name ?? "",
            code: err.reason,
            remote_address: remoteAddress,
            ...(UNNOTIFIED_REASONS.has(err.reason) ? { [UNNOTIFIED_FLAG]: true } : {}),
          },
        });
      });
      return err;
    },
    countLogin: (provider, outcome) => logins.inc({ provider, outcome }),
    countRefresh: (provider, outcome) => refreshes.inc({ provider, outcome }),
  };
  return ctx;
}
