import { z } from "zod";
import { AuthService } from "@orch/contracts";
import { loginLink } from "@orch/contracts/console";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { requireConsoleOrigin } from "../console/csrf.js";
import { clearSessionCookies, requestToken } from "../console/session.js";
import { publicBaseUrl } from "../public-url.js";
import { route } from "../route.js";
import { OperatorOut, iso } from "../schemas.js";
import { ConsoleSessionOut, consoleSession } from "./auth-json.js";
import { Hex } from "./auth-schemas.js";
import { operatorJson } from "./operators-json.js";

export function authRoutes(ctx: GatewayContext) {
  const auth = rpcClient(ctx.nc, "auth", AuthService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "POST",
      path: "/api/v1/auth/challenge",
      auth: "public",
      summary: "Start a login: get a nonce to sign",
      description: "Refused with 401 unknown_operator when no active operator holds the key.",
      tags: ["auth"],
      // Key format is checked by the auth service so that a malformed key is a 400 with code invalid_public_key.
      body: z.object({ public_key: z.string().max(200) }),
      responses: { 200: z.object({ nonce: z.string(), expires_at: z.string() }) },
      errors: { 400: ["invalid_public_key"], 401: ["unknown_operator"], 429: ["rate_limited"] },
      async handler({ body, call, raw }) {
        const r = await auth.challenge({ publicKey: body.public_key, remoteAddress: raw.ip }, call);
        return { nonce: r.nonce, expires_at: iso(r.expiresAt) };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/auth/verify",
      auth: "public",
      summary: "Finish a login: verify the signed nonce and issue a session token",
      tags: ["auth"],
      body: z.object({ public_key: z.string().max(200), nonce: Hex(32, "the nonce"), signature: z.string().max(200) }),
      responses: { 200: z.object({ token: z.string(), expires_at: z.string(), operator: OperatorOut }) },
      errors: {
        400: ["invalid_public_key", "invalid_signature_format"],
        401: ["invalid_nonce", "invalid_signature", "unknown_operator"],
        429: ["rate_limited"],
      },
      async handler({ body, call, raw }) {
        const r = await auth.verify(
          { publicKey: body.public_key, nonce: body.nonce, signature: body.signature, remoteAddress: raw.ip },
          call,
        );
        return { token: r.token, expires_at: iso(r.expiresAt), operator: operatorJson(r.operator!) };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/auth/login-codes",
      auth: "operator",
      summary: "Get a single-use console login link for the calling operator",
      description: "The code is valid for 60 s and travels in the URL fragment, so it reaches no server log.",
      tags: ["auth"],
      responses: { 201: z.object({ code: z.string(), url: z.string(), expires_at: z.string() }) },
      async handler({ call, raw }) {
        const r = await auth.createLoginCode({}, call);
        return {
          code: r.code,
          url: loginLink(publicBaseUrl(ctx.config.http, raw), r.code),
          expires_at: iso(r.expiresAt),
        };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/auth/console/exchange",
      auth: "public",
      summary: "Exchange a login code for a console session; sets the console session cookies",
      description: "Browsers only: the Origin header must be the console's (http.public_url or http.allowed_origins).",
      tags: ["auth"],
      body: z.object({ code: z.string().min(1).max(200) }),
      responses: { 200: ConsoleSessionOut },
      errors: {
        401: ["invalid_login_code", "login_code_expired", "unknown_operator"],
        403: ["origin_not_allowed"],
        429: ["rate_limited"],
      },
      async handler({ body, call, raw }, reply) {
        requireConsoleOrigin(raw, ctx.config.http);
        return consoleSession(
          ctx,
          reply,
          await auth.exchangeLoginCode({ code: body.code, remoteAddress: raw.ip }, call),
        );
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/auth/logout",
      auth: "operator",
      summary: "Revoke the presented session token (a console session also gets its cookies cleared)",
      tags: ["auth"],
      responses: { 204: null },
      async handler({ raw, call }, reply) {
        const cred = requestToken(raw, ctx.config.http);
        await auth.logout({ token: cred?.token ?? "" }, call);
        if (cred?.via === "cookie") clearSessionCookies(reply, ctx.config.http);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/auth/whoami",
      auth: "operator",
      summary: "The operator behind the presented token",
      tags: ["auth"],
      responses: { 200: OperatorOut },
      async handler({ principal, call }) {
        return operatorJson(await auth.getOperator({ id: principal!.id }, call));
      },
    }),
  ];
}
