import { gatewayConfigSchema } from "../../../services/gateway/src/config.js";
import { WEBHOOK_BODY_LIMIT } from "../../../services/gateway/src/routes/sources-webhook.js";
import type { FuzzRequest, Route } from "./requests.js";

/** The gateway's http.body_limit as the fuzz stack runs it: the default (it sets none). */
export const GATEWAY_BODY_LIMIT = gatewayConfigSchema.shape.http.parse(undefined).body_limit;

/**
 * The body limit of the route that serves a request: a raw-body route (documented as any bytes,
 * `*\/*`; the webhook is the only one) has its own, every other request the gateway's.
 */
export function bodyLimitOf(route: Route | undefined, method: string): number {
  const raw = route !== undefined && route.method === method && route.op.requestBody?.content["*/*"] !== undefined;
  return raw ? WEBHOOK_BODY_LIMIT : GATEWAY_BODY_LIMIT;
}

/** True when the request's body is larger than the limit of the route that serves it. */
export const overBodyLimit = (req: FuzzRequest, route: Route | undefined): boolean =>
  req.body !== undefined && Buffer.byteLength(req.body) > bodyLimitOf(route, req.method);

/** What fetch (undici) reports when the server closed the connection under it. */
const CLOSED_CODES = new Set(["EPIPE", "ECONNRESET", "ECONNABORTED", "UND_ERR_SOCKET"]);
const CLOSED_TEXT = /\b(EPIPE|ECONNRESET|other side closed|socket hang up)\b/;

/**
 * Whether `err` (from fetch or from reading its body) says the server closed the connection, as
 * opposed to never accepting it (ECONNREFUSED: the gateway is down) or a timeout. Walks the cause
 * chain: fetch wraps the socket's error ("fetch failed", "terminated") in its own.
 */
export function closedByServer(err: unknown): boolean {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0) {
    const e = queue.shift();
    if (e === null || typeof e !== "object" || seen.has(e)) continue;
    seen.add(e);
    const { code, message, cause, errors } = e as {
      code?: unknown;
      message?: unknown;
      cause?: unknown;
      errors?: unknown;
    };
    if (typeof code === "string" && CLOSED_CODES.has(code)) return true;
    if (typeof message === "string" && CLOSED_TEXT.test(message)) return true;
    queue.push(cause);
    if (Array.isArray(errors)) queue.push(...errors);
  }
  return false;
}

/**
 * A request the gateway refused by closing the connection: past the body limit it answers 413 and
 * may close while the client is still sending the rest, so the client sees the close (EPIPE, a
 * reset, "other side closed"), not the answer. Only a body over the limit makes a close a refusal;
 * any other close is a request left without an answer.
 */
export const refusedByClose = (req: FuzzRequest, route: Route | undefined, err: unknown): boolean =>
  overBodyLimit(req, route) && closedByServer(err);
