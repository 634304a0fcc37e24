// Browser sign-in: the authorization code flow with PKCE, state and nonce (console and the CLI's
// loopback redirect, RFC 8252).
import { timingSafeEqual } from "node:crypto";
import type { SsoService } from "@orch/contracts";
import { invalid, OrchError, precondition, unauthenticated, type Handlers } from "@orch/kit";
import * as oidc from "openid-client";
import { hashToken } from "../handlers/login.js";
import type { SsoContext } from "./context.js";
import { loginsDb } from "./logins-db.js";
import { providersDb, type ProviderRow } from "./providers-db.js";
import { claimsOf, completeSignIn, tokenFailure } from "./signin.js";

type LoginHandlers = Pick<Handlers<typeof SsoService>, "beginSsoLogin" | "finishSsoLogin">;

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]"]);

function checkClient(client: string): "console" | "cli" {
  if (client === "console" || client === "cli") return client;
  throw invalid("invalid_request", "client must be console or cli", { field: "client" });
}

function checkRedirect(client: "console" | "cli", text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid("invalid_request", "redirect_uri must be a URL", { field: "redirect_uri" });
  }
  if (url.hash) throw invalid("invalid_request", "redirect_uri must not carry a fragment", { field: "redirect_uri" });
  // RFC 8252: a native app listens on a loopback IP literal, never a name that could resolve elsewhere.
  if (client === "cli" && !(url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname) && url.port)) {
    throw invalid(
      "invalid_request",
      "the CLI's redirect_uri must be http://127.0.0.1:<port>/... or http://[::1]:<port>/...",
      {
        field: "redirect_uri",
      },
    );
  }
  if (client === "console" && url.protocol !== "https:" && url.protocol !== "http:") {
    throw invalid("invalid_request", "redirect_uri must be an http(s) URL", { field: "redirect_uri" });
  }
  return url.toString();
}

/** A console path only: an absolute URL here would make the gateway an open redirect. */
function checkReturnTo(client: "console" | "cli", text: string): string {
  if (client === "cli" || text === "") return "";
  if (!text.startsWith("/") || text.startsWith("//") || text.includes("\\")) {
    throw invalid("invalid_request", "return_to must be a path on the console", { field: "return_to" });
  }
  return text;
}

/** The provider's scopes, plus offline_access where offered: the refresher needs a refresh token. */
export function requestScopes(config: oidc.Configuration, p: ProviderRow): string {
  const scopes = [...p.scopes];
  const supported = config.serverMetadata().scopes_supported ?? [];
  if (supported.includes("offline_access") && !scopes.includes("offline_access")) scopes.push("offline_access");
  return scopes.join(" ");
}

async function enabledProvider(c: SsoContext, name: string, remoteAddress: string): Promise<ProviderRow> {
  let p: ProviderRow;
  try {
    p = await c.provider(c.deps.pool, name);
  } catch (err) {
    throw await c.refuse(undefined, err as OrchError, remoteAddress);
  }
  if (!p.enabled) {
    throw await c.refuse(
      p,
      precondition("sso_provider_disabled", `identity provider '${p.name}' is disabled`),
      remoteAddress,
    );
  }
  return p;
}

/** The discovered configuration; a provider that does not answer is audited as a refused sign-in. */
export async function configOrRefuse(c: SsoContext, p: ProviderRow, remoteAddress: string) {
  try {
    return await c.configFor(p);
  } catch (err) {
    throw err instanceof OrchError ? await c.refuse(p, err, remoteAddress) : err;
  }
}

function beginLogin(c: SsoContext): LoginHandlers["beginSsoLogin"] {
  const { pool, clock, config: cfg } = c.deps;
  return async (req) => {
    c.requireRing();
    const client = checkClient(req.client);
    const redirectUri = checkRedirect(client, req.redirectUri);
    const returnTo = checkReturnTo(client, req.returnTo);
    const p = await enabledProvider(c, req.provider, req.remoteAddress);
    const config = await configOrRefuse(c, p, req.remoteAddress);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: requestScopes(config, p),
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      nonce,
    });
    await loginsDb.add(pool, {
      state_hash: hashToken(state),
      provider_id: p.id,
      nonce,
      code_verifier: verifier,
      redirect_uri: redirectUri,
      client,
      return_to: returnTo,
      expires_at: clock.now() + cfg.auth.sso_login_ttl_seconds * 1000,
    });
    return { authorizationUrl: url.href, state };
  };
}

/** Compares hashes, so the time taken says nothing about how much of the state matched. */
const sameState = (a: string, b: string) =>
  a !== "" && timingSafeEqual(Buffer.from(hashToken(a), "hex"), Buffer.from(hashToken(b), "hex"));

const badState = () =>
  unauthenticated("sso_state_invalid", "the sign-in's state is unknown, used or expired; sign in again");

/** The provider's redirect as received, re-based on the redirect_uri the flow was begun with. */
function callbackFor(redirectUri: string, received: URL): URL {
  const url = new URL(redirectUri);
  for (const [k, v] of received.searchParams) url.searchParams.append(k, v);
  return url;
}

function finishLogin(c: SsoContext): LoginHandlers["finishSsoLogin"] {
  const { pool, clock } = c.deps;
  return async (req) => {
    c.requireRing();
    let received: URL;
    try {
      received = new URL(req.callbackUrl);
    } catch {
      throw invalid("invalid_request", "callback_url must be a URL", { field: "callback_url" });
    }
    const state = received.searchParams.get("state") ?? "";
    const pending = state ? await loginsDb.take(pool, hashToken(state)) : undefined;
    const p = pending ? await providersDb.byId(pool, pending.provider_id) : undefined;
    if (!pending || !p || pending.expires_at < clock.now()) throw await c.refuse(p, badState(), req.remoteAddress);
    // Taken (so spent) before this check: a redirect shown to another browser is burnt, not retried.
    if (req.bindBrowser && !sameState(req.browserState, state)) {
      const refusal = unauthenticated(
        "sso_state_invalid",
        "this sign-in was begun in another browser (its state cookie is missing or differs); sign in again",
      );
      throw await c.refuse(p, refusal, req.remoteAddress);
    }
    const error = received.searchParams.get("error");
    if (error) {
      const why = `${error}${received.searchParams.get("error_description") ? `: ${received.searchParams.get("error_description")}` : ""}`;
      const refusal = unauthenticated(
        "sso_login_refused",
        `the identity provider refused the sign-in (${why.slice(0, 200)})`,
      );
      throw await c.refuse(p, refusal, req.remoteAddress);
    }
    if (!p.enabled) {
      throw await c.refuse(
        p,
        precondition("sso_provider_disabled", `identity provider '${p.name}' is disabled`),
        req.remoteAddress,
      );
    }
    const config = await configOrRefuse(c, p, req.remoteAddress);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    let claims: Record<string, unknown>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, callbackFor(pending.redirect_uri, received), {
        pkceCodeVerifier: pending.code_verifier,
        expectedState: state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      claims = await claimsOf(config, p, tokens);
    } catch (err) {
      const refusal = err instanceof OrchError ? err : tokenFailure(err, p.name);
      c.deps.log.info({ provider: p.name, reason: refusal.reason, err: refusal.message }, "sso sign-in refused");
      throw await c.refuse(p, refusal, req.remoteAddress);
    }
    return completeSignIn(c, {
      provider: p,
      claims,
      refreshToken: tokens.refresh_token,
      client: pending.client,
      returnTo: pending.return_to,
      remoteAddress: req.remoteAddress,
    });
  };
}

export function loginHandlers(c: SsoContext): LoginHandlers {
  return { beginSsoLogin: beginLogin(c), finishSsoLogin: finishLogin(c) };
}
