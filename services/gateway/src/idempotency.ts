import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { IDEMPOTENCY_HEADER, IDEMPOTENCY_REPLAYED_HEADER, parseIdempotencyKey } from "@orch/contracts";
import { OrchError, type CallOptions } from "@orch/kit";
import type { RouteSpec } from "./route.js";

/**
 * Reads the Idempotency-Key of a write request for the RPC call options. The gateway stores nothing:
 * the owning service remembers the reply per operator, key and RPC method (kit idempotency.ts), so a
 * route that makes several RPCs replays each of them. Public routes (challenge, verify) have no
 * operator to scope a key to and ignore it, as do reads, which are safe to repeat anyway.
 */
export function idempotencyOf(
  spec: RouteSpec,
  req: FastifyRequest,
  reply: FastifyReply,
): Pick<CallOptions, "idempotency"> {
  // A streamed upload makes one RPC per piece: one key would replay the first piece's reply for all.
  if (spec.method === "GET" || spec.auth === "public" || spec.streamBody) return {};
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return {};
  const key = typeof raw === "string" ? parseIdempotencyKey(raw) : undefined;
  if (!key) {
    const rule = "Idempotency-Key must be 1-255 characters of A-Z a-z 0-9 . _ ~ : + / = -";
    throw new OrchError("INVALID_ARGUMENT", "invalid_idempotency_key", rule);
  }
  // Same key with another method, path, query or body is a different request: the service answers 409.
  const hash = createHash("sha256")
    .update(`${req.method} ${req.url}\n`)
    .update(JSON.stringify(req.body ?? null))
    .digest("hex");
  const onReplay = () => void reply.header(IDEMPOTENCY_REPLAYED_HEADER, "true");
  return { idempotency: { key, hash, onReplay } };
}
