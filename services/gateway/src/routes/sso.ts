import type { FastifyReply } from "fastify";
import { AuthService, SsoService, type ErrorReason } from "@orch/contracts";
import { OrchError, rpcClient, type CallOptions, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { setSessionCookies, setSsoStateCookie, takeSsoStateCookie } from "../console/session.js";
import { publicBaseUrl } from "../public-url.js";
import { route } from "../route.js";
import {
  DeviceAuthorizationOut,
  DeviceTokenOut,
  SignInProviderList,
  SsoTokenOut,
  deviceAuthorizationJson,
  deviceTokenJson,
  signInProviderJson,
  ssoTokenJson,
} from "./sso-json.js";
import {
  AuthorizeBody,
  AuthorizeOut,
  DeviceTokenBody,
  LoginQuery,
  SsoProviderParams,
  TokenBody,
  logoutTokenOf,
  safeReturnTo,
  signInErrorPath,
} from "./sso-schemas.js";

type Sso = Client<typeof SsoService>;
type Auth = Client<typeof AuthService>;

/** Every sign-in route is throttled per caller address, each with a budget of its own. */
const byAddress = (req: { ip: string }) => req.ip;

/**
 * /auth/sso: single sign-on through OIDC providers (docs/sso.md). Public: the provider's redirect,
 * the auth service's state, PKCE and nonce, and the signed ID token are the authentication.
 */
export function ssoRoutes(ctx: GatewayContext) {
  const sso = rpcClient(ctx.nc, "auth", SsoService, { timeoutMs: ctx.timeoutMs });
  const auth = rpcClient(ctx.nc, "auth", AuthService, { timeoutMs: ctx.timeoutMs });
  return [
    ...consoleSsoRoutes(ctx, sso, auth),
    ...cliSsoRoutes(sso, auth),
    ...deviceSsoRoutes(sso),
    backchannelRoute(sso),
  ];
}

/**
 * A session the flow opened for the other kind of client (a console redirect posted to the CLI's
 * token route, or the reverse) is ended at once and refused like a forged state.
 */
async function requireClient(auth: Auth, call: CallOptions, token: string, got: string, want: string): Promise<void> {
  if (got === want) return;
  await auth.logout({ token }, call).catch(() => undefined);
  throw new OrchError(
    "UNAUTHENTICATED",
    "sso_state_invalid",
    `this sign-in was begun for the ${got || "other"} client`,
  );
}

/** A top-level navigation that failed: back to the console's sign-in page, which shows the code. */
function toSignInError(reply: FastifyReply, base: string, err: unknown): FastifyReply {
  return reply.redirect(base + signInErrorPath(OrchError.from(err).reason), 302);
}

function consoleSsoRoutes(ctx: GatewayContext, sso: Sso, auth: Auth) {
  return [
    route({
      method: "GET",
      path: "/api/v1/auth/sso/providers",
      auth: "public",
      summary: "The enabled identity providers, for the sign-in page's buttons",
      tags: ["auth"],
      rateLimitKey: byAddress,
      responses: { 200: SignInProviderList },
      errors: { 429: ["rate_limited"] },
      async handler({ call }) {
        const r = await sso.listSignInProviders({}, call);
        return { providers: r.providers.map(signInProviderJson) };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/auth/sso/{provider}/login",
      auth: "public",
      summary: "Start a console sign-in with an identity provider: redirects the browser to it",
      description:
        "Answers 302 to the provider's authorization URL (code flow with PKCE, state and nonce); on failure 302 to the console's sign-in page with `?sso_error=<problem code>`.",
      tags: ["auth"],
      params: SsoProviderParams,
      query: LoginQuery,
      rateLimitKey: byAddress,
      responses: { 302: null },
      errors: { 429: ["rate_limited"] },
      async handler({ params, query, call, raw }, reply) {
        const base = publicBaseUrl(ctx.config.http, raw);
        try {
          const req = {
            provider: params.provider,
            redirectUri: `${base}/api/v1/auth/sso/callback`,
            client: "console",
            returnTo: safeReturnTo(query.return_to),
            remoteAddress: raw.ip,
          };
          const begun = await sso.beginSsoLogin(req, call);
          setSsoStateCookie(reply, ctx.config.http, begun.state);
          return reply.redirect(begun.authorizationUrl, 302);
        } catch (err) {
          return toSignInError(reply, base, err);
        }
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/auth/sso/callback",
      auth: "public",
      summary: "The identity provider's redirect after a console sign-in; sets the console session cookies",
      description:
        "Answers 302 to the console page the sign-in began from (its home by default) with the session cookies set, or 302 to the sign-in page with `?sso_error=<problem code>`. A top-level navigation from the provider, so there is no Origin check: the single-use state must equal the `orch_sso_state` cookie set on the browser that began the sign-in (SameSite=Lax), and PKCE and the nonce bind the code and the ID token to that sign-in.",
      tags: ["auth"],
      rateLimitKey: byAddress,
      responses: { 302: null },
      errors: { 429: ["rate_limited"] },
      async handler({ call, raw }, reply) {
        const base = publicBaseUrl(ctx.config.http, raw);
        const bound = takeSsoStateCookie(raw, ctx.config.http);
        // Spent whatever the outcome (fastify appends Set-Cookie values: the session's come after).
        reply.header("set-cookie", bound.clear);
        try {
          const req = {
            callbackUrl: base + raw.url,
            remoteAddress: raw.ip,
            bindBrowser: true,
            browserState: bound.state,
          };
          const s = await sso.finishSsoLogin(req, call);
          await requireClient(auth, call, s.token, s.client, "console");
          setSessionCookies(reply, ctx.config.http, ctx.clock, s.token, s.expiresAt);
          return reply.redirect(base + (safeReturnTo(s.returnTo) || "/"), 302);
        } catch (err) {
          return toSignInError(reply, base, err);
        }
      },
    }),
  ];
}

const SIGN_IN_ERRORS: Record<number, ErrorReason[]> = {
  401: ["sso_state_invalid", "sso_code_invalid", "sso_token_invalid", "sso_claims_invalid", "sso_login_refused"],
  403: ["sso_mapping_refused"],
  409: ["sso_unavailable", "sso_provider_disabled"],
  429: ["rate_limited"],
  503: ["sso_provider_unreachable"],
};

function cliSsoRoutes(sso: Sso, auth: Auth) {
  return [
    route({
      method: "POST",
      path: "/api/v1/auth/sso/{provider}/authorize",
      auth: "public",
      summary: "Start a CLI sign-in with an identity provider through a loopback redirect (RFC 8252)",
      tags: ["auth"],
      params: SsoProviderParams,
      body: AuthorizeBody,
      rateLimitKey: byAddress,
      responses: { 200: AuthorizeOut },
      errors: {
        404: ["identity_provider_not_found"],
        409: ["sso_unavailable", "sso_provider_disabled"],
        429: ["rate_limited"],
        503: ["sso_provider_unreachable"],
      },
      async handler({ params, body, call, raw }) {
        const req = { provider: params.provider, redirectUri: body.redirect_uri, client: "cli", remoteAddress: raw.ip };
        const r = await sso.beginSsoLogin(req, call);
        return { authorization_url: r.authorizationUrl, state: r.state };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/auth/sso/token",
      auth: "public",
      summary: "Finish a CLI sign-in: redeem the provider's redirect for a session token",
      tags: ["auth"],
      body: TokenBody,
      rateLimitKey: byAddress,
      responses: { 200: SsoTokenOut },
      errors: SIGN_IN_ERRORS,
      async handler({ body, call, raw }) {
        const s = await sso.finishSsoLogin({ callbackUrl: body.callback_url, remoteAddress: raw.ip }, call);
        await requireClient(auth, call, s.token, s.client, "cli");
        return ssoTokenJson(s);
      },
    }),
  ];
}

function deviceSsoRoutes(sso: Sso) {
  return [
    route({
      method: "POST",
      path: "/api/v1/auth/sso/{provider}/device",
      auth: "public",
      summary: "Start a CLI sign-in with the device authorization grant (RFC 8628)",
      tags: ["auth"],
      params: SsoProviderParams,
      rateLimitKey: byAddress,
      responses: { 200: DeviceAuthorizationOut },
      errors: {
        404: ["identity_provider_not_found"],
        409: ["sso_unavailable", "sso_provider_disabled", "sso_device_unsupported"],
        429: ["rate_limited"],
        503: ["sso_provider_unreachable"],
      },
      async handler({ params, call, raw }) {
        return deviceAuthorizationJson(
          await sso.beginSsoDevice({ provider: params.provider, remoteAddress: raw.ip }, call),
        );
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/auth/sso/device/token",
      auth: "public",
      summary: "Ask once whether the user approved a device sign-in: pending, or the session token",
      tags: ["auth"],
      body: DeviceTokenBody,
      rateLimitKey: byAddress,
      responses: { 200: DeviceTokenOut },
      errors: { ...SIGN_IN_ERRORS, 409: [...(SIGN_IN_ERRORS[409] ?? []), "sso_device_expired"] },
      async handler({ body, call, raw }) {
        return deviceTokenJson(await sso.pollSsoDevice({ deviceId: body.device_id, remoteAddress: raw.ip }, call));
      },
    }),
  ];
}

/** OIDC Back-Channel Logout 1.0: the provider posts a signed logout token, form-encoded. */
function backchannelRoute(sso: Sso) {
  return route<{ provider: string }, undefined, Buffer>({
    method: "POST",
    path: "/api/v1/auth/sso/{provider}/backchannel-logout",
    auth: "public",
    summary: "An identity provider ends a user's sessions (OIDC Back-Channel Logout 1.0)",
    description:
      "Called by the provider, not by people: an `application/x-www-form-urlencoded` body with `logout_token`, a JWT signed by the provider. 200 once the sessions it names have ended; 400 when the token does not validate.",
    tags: ["auth"],
    params: SsoProviderParams,
    rawBody: { maxBytes: 65_536 },
    rateLimitKey: byAddress,
    responses: { 200: null },
    errors: { 400: ["invalid_logout_token"], 413: ["body_too_large"], 429: ["rate_limited"] },
    async handler({ params, body, call }) {
      const logoutToken = logoutTokenOf(body);
      if (!logoutToken)
        throw new OrchError("INVALID_ARGUMENT", "invalid_logout_token", "the body carries no logout_token form field");
      try {
        await sso.backchannelLogout({ provider: params.provider, logoutToken }, call);
      } catch (err) {
        // The specification wants 400 for every refusal; an unknown provider is one.
        const e = OrchError.from(err);
        if (e.reason !== "identity_provider_not_found") throw e;
        throw new OrchError("INVALID_ARGUMENT", "invalid_logout_token", "no identity provider has this name");
      }
    },
  });
}
