import type { FastifyReply } from "fastify";
import { z } from "zod";
import type { VerifyResponse } from "@orch/contracts";
import type { GatewayContext } from "../context.js";
import { setSessionCookies } from "../console/session.js";
import { OperatorOut, iso } from "../schemas.js";
import { operatorJson } from "./operators-json.js";

/** What a console sign-in answers (the token itself is only in the HttpOnly cookie). */
export const ConsoleSessionOut = z.object({
  operator: OperatorOut,
  expires_at: z.string(),
  csrf_token: z.string().describe("send as the x-orch-csrf header on every request that is not GET/HEAD"),
});

/** Sets the console cookies for a new session and returns its body. */
export function consoleSession(
  ctx: GatewayContext,
  reply: FastifyReply,
  r: VerifyResponse,
): z.infer<typeof ConsoleSessionOut> {
  const csrf = setSessionCookies(reply, ctx.config.http, ctx.clock, r.token, r.expiresAt);
  return consoleSessionJson(r, csrf);
}

export function consoleSessionJson(r: VerifyResponse, csrf: string): z.infer<typeof ConsoleSessionOut> {
  return { operator: operatorJson(r.operator!), expires_at: iso(r.expiresAt), csrf_token: csrf };
}
