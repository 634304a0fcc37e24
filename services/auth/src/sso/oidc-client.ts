// openid-client wiring: discovery (cached per provider version) and the translation of its errors
// into the problem codes of the error catalogue. No token is validated by hand anywhere.
import * as oidc from "openid-client";

/** Plain http is only for an issuer on this machine (a test or a local provider). */
export function isLoopbackHttp(url: URL): boolean {
  return url.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname);
}

const DISCOVERY_TIMEOUT_S = 10;

/** Discovers the issuer and sets up the client; ID token signatures are checked against its JWKS too. */
export async function discover(issuer: string, clientId: string, clientSecret: string | undefined) {
  const url = new URL(issuer);
  const auth = clientSecret ? oidc.ClientSecretBasic(clientSecret) : oidc.None();
  const config = await oidc.discovery(url, clientId, undefined, auth, {
    timeout: DISCOVERY_TIMEOUT_S,
    ...(isLoopbackHttp(url) ? { execute: [oidc.allowInsecureRequests] } : {}),
  });
  config.timeout = DISCOVERY_TIMEOUT_S;
  // Over TLS the token endpoint's word would do (OIDC Core 3.1.3.7); checking the signature as
  // well means a compromised or spoofed token endpoint cannot mint identities.
  oidc.enableNonRepudiationChecks(config);
  return config;
}

export type OidcConfiguration = oidc.Configuration;

const CACHE_TTL_MS = 10 * 60_000;

/** Discovered configurations by provider id and version, so a sign-in does not re-discover. */
export function discoveryCache(now: () => number = Date.now) {
  const entries = new Map<string, { key: string; at: number; config: Promise<oidc.Configuration> }>();
  return {
    get(
      p: { id: string; updated_at: number; issuer: string; client_id: string },
      secret: () => string | undefined,
    ): Promise<oidc.Configuration> {
      const key = `${p.updated_at}`;
      const hit = entries.get(p.id);
      if (hit && hit.key === key && now() - hit.at < CACHE_TTL_MS) return hit.config;
      const config = discover(p.issuer, p.client_id, secret());
      entries.set(p.id, { key, at: now(), config });
      // A failed discovery is not remembered: the next sign-in tries again.
      config.catch(() => {
        if (entries.get(p.id)?.config === config) entries.delete(p.id);
      });
      return config;
    },
    forget(id: string) {
      entries.delete(id);
    },
  };
}
export type DiscoveryCache = ReturnType<typeof discoveryCache>;

/**
 * What went wrong talking to a provider:
 * - `grant`: the provider refused the grant (invalid_grant: code replayed or expired, refresh token
 *   revoked, user disabled), or the device code expired or was denied;
 * - `token`: the response did not validate (ID token signature, alg, iss, aud, exp, nonce, state);
 * - `unreachable`: no answer, a timeout, or a 5xx;
 * - `pending` / `slow_down`: a device code not approved yet;
 * - `other`: anything else the provider answered (an invalid_client, say).
 */
export type OidcFailure = "grant" | "token" | "unreachable" | "pending" | "slow_down" | "other";

const TOKEN_CODES = new Set([
  "OAUTH_JWT_CLAIM_COMPARISON_FAILED",
  "OAUTH_JWT_TIMESTAMP_CHECK_FAILED",
  "OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED",
  "OAUTH_KEY_SELECTION_FAILED",
  "OAUTH_INVALID_RESPONSE",
  "OAUTH_PARSE_ERROR",
  "OAUTH_UNSUPPORTED_OPERATION",
  "OAUTH_INVALID_REQUEST",
  "ERR_JWS_SIGNATURE_VERIFICATION_FAILED",
  "OAUTH_AUTHORIZATION_RESPONSE_ERROR",
]);

function statusOf(err: { cause?: unknown; status?: unknown }): number | undefined {
  if (typeof err.status === "number") return err.status;
  const cause = err.cause;
  if (cause instanceof Response) return cause.status;
  return undefined;
}

export function classifyOidcError(err: unknown): OidcFailure {
  if (err instanceof oidc.ResponseBodyError) {
    if (err.error === "authorization_pending") return "pending";
    if (err.error === "slow_down") return "slow_down";
    if (["invalid_grant", "expired_token", "access_denied"].includes(err.error)) return "grant";
    return err.status >= 500 ? "unreachable" : "other";
  }
  if (err instanceof TypeError) return "unreachable"; // fetch failed: refused, reset, DNS
  if (err instanceof oidc.ClientError) {
    const code = err.code ?? "";
    if (code === "OAUTH_TIMEOUT" || code === "OAUTH_ABORT") return "unreachable";
    if (code === "OAUTH_RESPONSE_IS_NOT_CONFORM" || code === "OAUTH_RESPONSE_IS_NOT_JSON") {
      return (statusOf(err) ?? 500) >= 500 ? "unreachable" : "other";
    }
    if (TOKEN_CODES.has(code)) return "token";
    if (err.cause instanceof TypeError) return "unreachable";
    return "token";
  }
  if (err instanceof oidc.AuthorizationResponseError) return "other";
  if (err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError")) return "unreachable";
  return "other";
}

/** For logs: the library's message and code, never a token. */
export function describeOidcError(err: unknown): string {
  if (err instanceof oidc.ResponseBodyError)
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ""}`;
  if (err instanceof oidc.ClientError) return `${err.code ?? "client_error"}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
