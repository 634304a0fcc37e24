// The end every sign-in shares (code flow and device flow): validated tokens → claims → mapping →
// provisioning and a session, or a refusal with its audit event and no operator touched.
import type { SsoSession } from "@orch/contracts";
import { OrchError, SYSTEM_ACTOR } from "@orch/kit";
import * as oidc from "openid-client";
import type { SsoContext } from "./context.js";
import { ClaimsError, mapClaims, parseClaims } from "./mapping.js";
import { classifyOidcError, describeOidcError, type OidcConfiguration } from "./oidc-client.js";
import { provisionAndSignIn } from "./provision.js";
import type { ProviderRow } from "./providers-db.js";

/** What claimsOf needs of a token response (code, device or refresh grant). */
export type TokenResponse = Pick<oidc.TokenEndpointResponseHelpers, "claims"> & { access_token: string };

/** A failed token request or response as the catalogue's problem code. */
export function tokenFailure(err: unknown, providerName: string): OrchError {
  const why = describeOidcError(err);
  switch (classifyOidcError(err)) {
    case "unreachable":
      return new OrchError(
        "UNAVAILABLE",
        "sso_provider_unreachable",
        `identity provider '${providerName}' did not answer`,
      );
    case "token":
      return new OrchError("UNAUTHENTICATED", "sso_token_invalid", `the ID token did not validate (${why})`);
    default:
      return new OrchError("UNAUTHENTICATED", "sso_code_invalid", `the provider refused the grant (${why})`);
  }
}

/**
 * The ID token's claims, with the userinfo endpoint's merged in when the groups claim is missing
 * (some providers put groups only there); the ID token's own claims win.
 */
export async function claimsOf(
  config: OidcConfiguration,
  p: ProviderRow,
  tokens: TokenResponse,
): Promise<Record<string, unknown>> {
  const idClaims = tokens.claims();
  if (!idClaims) throw new OrchError("UNAUTHENTICATED", "sso_token_invalid", "the provider returned no ID token");
  const claims: Record<string, unknown> = { ...idClaims };
  if (claims[p.groups_claim] !== undefined || !config.serverMetadata().userinfo_endpoint) return claims;
  try {
    const info = await oidc.fetchUserInfo(config, tokens.access_token, idClaims.sub);
    return { ...info, ...claims };
  } catch (err) {
    throw tokenFailure(err, p.name);
  }
}

export interface Completion {
  provider: ProviderRow;
  claims: Record<string, unknown>;
  refreshToken: string | undefined;
  client: "console" | "cli";
  returnTo: string;
  remoteAddress: string;
}

async function mappingRefused(c: SsoContext, d: Completion, sub: string, email: string | undefined, reason: string) {
  c.countLogin(d.provider.name, "sso_mapping_refused");
  await c.deps.events.tx(async (_db, emit) => {
    await emit({
      type: "auth.sso.mapping_refused",
      summary: `single sign-on through ${d.provider.name} refused for ${email ?? sub}: ${reason}`,
      actor: SYSTEM_ACTOR,
      target: { id: d.provider.id, name: d.provider.name, type: "identity_provider" },
      metadata: {
        provider: d.provider.name,
        subject: sub,
        email: email ?? null,
        reason,
        client: d.client,
        remote_address: d.remoteAddress,
      },
    });
  });
  return new OrchError("PERMISSION_DENIED", "sso_mapping_refused", `sign-in refused: ${reason}`);
}

export async function completeSignIn(c: SsoContext, d: Completion): Promise<SsoSession> {
  let claims: ReturnType<typeof parseClaims>;
  try {
    claims = parseClaims(d.claims, d.provider.groups_claim);
  } catch (err) {
    if (!(err instanceof ClaimsError)) throw err;
    const refusal = new OrchError("UNAUTHENTICATED", "sso_claims_invalid", `the ID token's claims: ${err.message}`);
    throw await c.refuse(d.provider, refusal, d.remoteAddress);
  }
  const mapping = mapClaims(claims, c.policyOf(d.provider));
  if (!mapping.matched) throw await mappingRefused(c, d, claims.sub, claims.email, mapping.reason);
  return provisionAndSignIn(c, {
    provider: d.provider,
    claims,
    mapping,
    refreshToken: d.refreshToken,
    client: d.client,
    returnTo: d.returnTo,
    remoteAddress: d.remoteAddress,
  });
}
