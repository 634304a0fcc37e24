// CLI sign-in by the device authorization grant (RFC 8628): the provider's device code stays in
// the service; the CLI polls with an opaque id, and each poll is exactly one token request.
import { randomBytes } from "node:crypto";
import type { SsoService } from "@orch/contracts";
import { OrchError, precondition, type Handlers } from "@orch/kit";
import * as oidc from "openid-client";
import { hashToken } from "../handlers/login.js";
import type { SsoContext } from "./context.js";
import { configOrRefuse, requestScopes } from "./handlers-login.js";
import { loginsDb, type PendingDevice } from "./logins-db.js";
import { classifyOidcError } from "./oidc-client.js";
import { providersDb } from "./providers-db.js";
import { claimsOf, completeSignIn, tokenFailure } from "./signin.js";

type DeviceHandlers = Pick<Handlers<typeof SsoService>, "beginSsoDevice" | "pollSsoDevice">;

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const DEFAULT_INTERVAL_S = 5;

const expired = () =>
  precondition("sso_device_expired", "the device code expired or was denied at the provider; sign in again");

function beginDevice(c: SsoContext): DeviceHandlers["beginSsoDevice"] {
  const { pool, clock } = c.deps;
  return async (req) => {
    c.requireRing();
    const p = await c.provider(pool, req.provider).catch(async (err) => {
      throw err instanceof OrchError ? await c.refuse(undefined, err, req.remoteAddress) : err;
    });
    if (!p.enabled) {
      throw await c.refuse(
        p,
        precondition("sso_provider_disabled", `identity provider '${p.name}' is disabled`),
        req.remoteAddress,
      );
    }
    const config = await configOrRefuse(c, p, req.remoteAddress);
    if (!config.serverMetadata().device_authorization_endpoint) {
      const refusal = precondition("sso_device_unsupported", `identity provider '${p.name}' offers no device flow`);
      throw await c.refuse(p, refusal, req.remoteAddress);
    }
    let dar: oidc.DeviceAuthorizationResponse;
    try {
      dar = await oidc.initiateDeviceAuthorization(config, { scope: requestScopes(config, p) });
    } catch (err) {
      throw await c.refuse(p, tokenFailure(err, p.name), req.remoteAddress);
    }
    // The id is what the CLI holds: a bearer of the coming session, so only its hash is stored.
    const deviceId = randomBytes(32).toString("base64url");
    const interval = dar.interval ?? DEFAULT_INTERVAL_S;
    const expiresAt = clock.now() + dar.expires_in * 1000;
    await loginsDb.addDevice(pool, {
      id: hashToken(deviceId),
      provider_id: p.id,
      device_code: dar.device_code,
      interval_seconds: interval,
      expires_at: expiresAt,
    });
    return {
      deviceId,
      userCode: dar.user_code,
      verificationUri: dar.verification_uri,
      verificationUriComplete: dar.verification_uri_complete ?? "",
      interval,
      expiresAt,
    };
  };
}

type PollOutcome =
  | { kind: "tokens"; tokens: Awaited<ReturnType<typeof oidc.genericGrantRequest>> }
  | { kind: "pending"; interval: number }
  | { kind: "refused"; err: OrchError; spent: boolean };

async function askOnce(
  c: SsoContext,
  config: oidc.Configuration,
  d: PendingDevice,
  name: string,
): Promise<PollOutcome> {
  try {
    return {
      kind: "tokens",
      tokens: await oidc.genericGrantRequest(config, DEVICE_GRANT, { device_code: d.device_code }),
    };
  } catch (err) {
    switch (classifyOidcError(err)) {
      case "pending":
        return { kind: "pending", interval: d.interval_seconds };
      case "slow_down": {
        const interval = d.interval_seconds + 5;
        await loginsDb.setDeviceInterval(c.deps.pool, d.id, interval);
        return { kind: "pending", interval };
      }
      case "grant":
        return { kind: "refused", err: expired(), spent: true };
      case "unreachable":
        return { kind: "refused", err: tokenFailure(err, name), spent: false };
      default:
        return { kind: "refused", err: tokenFailure(err, name), spent: true };
    }
  }
}

function pollDevice(c: SsoContext): DeviceHandlers["pollSsoDevice"] {
  const { pool, clock } = c.deps;
  return async (req) => {
    c.requireRing();
    const id = hashToken(req.deviceId);
    const d = req.deviceId ? await loginsDb.device(pool, id) : undefined;
    const p = d ? await providersDb.byId(pool, d.provider_id) : undefined;
    if (!d || !p || d.expires_at < clock.now()) {
      if (d) await loginsDb.removeDevice(pool, id);
      throw await c.refuse(p, expired(), req.remoteAddress);
    }
    const config = await configOrRefuse(c, p, req.remoteAddress);
    const out = await askOnce(c, config, d, p.name);
    if (out.kind === "pending") return { status: "pending", interval: out.interval };
    // Spent either way: a device code yields one session.
    if (out.kind === "refused" && !out.spent) throw await c.refuse(p, out.err, req.remoteAddress);
    const mine = await loginsDb.removeDevice(pool, id);
    if (out.kind === "refused") throw await c.refuse(p, out.err, req.remoteAddress);
    if (!mine) throw await c.refuse(p, expired(), req.remoteAddress);
    let claims: Record<string, unknown>;
    try {
      claims = await claimsOf(config, p, out.tokens);
    } catch (err) {
      throw await c.refuse(p, err instanceof OrchError ? err : tokenFailure(err, p.name), req.remoteAddress);
    }
    const session = await completeSignIn(c, {
      provider: p,
      claims,
      refreshToken: out.tokens.refresh_token,
      client: "cli",
      returnTo: "",
      remoteAddress: req.remoteAddress,
    });
    return { status: "complete", interval: 0, session };
  };
}

export function deviceHandlers(c: SsoContext): DeviceHandlers {
  return { beginSsoDevice: beginDevice(c), pollSsoDevice: pollDevice(c) };
}
