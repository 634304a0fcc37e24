import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { ErrorReason } from "@orch/contracts";
import type { CallOptions } from "@orch/kit";
import type { Principal } from "./auth-cache.js";

/** Every route declares who may call it; there is no default. */
export type AuthLevel = "public" | "operator" | "admin";
export type Method = "GET" | "POST" | "PUT" | "DELETE" | "PATCH";

export interface RouteRequest<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** Present on every non-public route. */
  principal: Principal | undefined;
  /** Pass to every RPC so the owning service sees the actor and the request id. */
  call: CallOptions;
  raw: FastifyRequest;
}

export interface RouteSpec<P = unknown, Q = unknown, B = unknown> {
  method: Method;
  /** OpenAPI-style path, e.g. `/api/v1/agents/{node_id}`. */
  path: string;
  auth: AuthLevel;
  summary: string;
  description?: string;
  tags: string[];
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /**
   * The handler's `body` is the request body exactly as sent (a Buffer, empty when none), whatever
   * its content type, up to `maxBytes` — for signatures computed over the bytes (forge webhooks),
   * which parsing JSON would break. `body` (the schema) is then absent; declare B as Buffer.
   */
  rawBody?: { maxBytes: number };
  /**
   * The handler's `body` is the request body as a stream (a Readable, not read yet), whatever its
   * content type: for uploads of any size, which the handler passes on piece by piece and never
   * holds whole. The handler enforces its own size limit. `body` (the schema) is then absent;
   * declare B as Readable. An Idempotency-Key is ignored: such a route must be idempotent by its
   * path (a blob is named by its digest), since its RPCs repeat per piece.
   */
  streamBody?: true;
  /**
   * Throttles an unauthenticated route before its body is read: at most
   * gateway.auth_rate_limit_per_minute requests a minute per key (e.g. the caller's address).
   */
  rateLimitKey?: (req: FastifyRequest) => string;
  /** Documented responses: status → body schema (null = no body). The first 2xx is the success status. */
  responses: Record<number, z.ZodType | null>;
  /** Extra documented error statuses with their problem codes (problem+json). */
  errors?: Record<number, ErrorReason[]>;
  /**
   * Returns the success body. Return the reply itself when the handler sent the response
   * (streams, downloads, WebSocket upgrades).
   */
  handler(req: RouteRequest<P, Q, B>, reply: FastifyReply): Promise<unknown>;
}

/** Identity helper that keeps P/Q/B inferred from the zod schemas. */
export function route<P = undefined, Q = undefined, B = undefined>(spec: RouteSpec<P, Q, B>): RouteSpec<P, Q, B> {
  return spec;
}

export const successStatus = (spec: RouteSpec): number =>
  Number(Object.keys(spec.responses).find((s) => Number(s) >= 200 && Number(s) < 300) ?? 200);
export const fastifyPath = (p: string) => p.replace(/\{([a-zA-Z0-9_]+)\}/g, ":$1");
