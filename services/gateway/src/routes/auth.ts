import { z } from "zod";
import { AuthService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { route } from "../route.js";
import { OperatorOut, iso } from "../schemas.js";
import { operatorJson } from "./operators.js";

const Hex = (bytes: number, what: string) =>
  z.string().regex(new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`), `must be ${what}: ${bytes} bytes, hex-encoded`);

export function authRoutes(ctx: GatewayContext) {
  const auth = rpcClient(ctx.nc, "auth", AuthService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "POST",
      path: "/api/v1/auth/challenge",
      auth: "public",
      summary: "Start a login: get a nonce to sign",
      tags: ["auth"],
      // Key format is checked by the auth service so that a malformed key is a 400 with code invalid_public_key.
      body: z.object({ public_key: z.string().max(200) }),
      responses: { 200: z.object({ nonce: z.string(), expires_at: z.string() }) },
      errors: { 400: ["invalid_public_key"], 401: ["unknown_operator"], 429: ["rate_limited"] },
      async handler({ body, call }) {
        const r = await auth.challenge({ publicKey: body.public_key }, call);
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
      path: "/api/v1/auth/logout",
      auth: "operator",
      summary: "Revoke the presented session token",
      tags: ["auth"],
      responses: { 204: null },
      async handler({ raw, call }) {
        const token = /^Bearer\s+(\S+)$/i.exec(raw.headers.authorization ?? "")?.[1] ?? "";
        await auth.logout({ token }, call);
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
