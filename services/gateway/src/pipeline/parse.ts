import type { FastifyRequest } from "fastify";
import type { z } from "zod";
import { OrchError, rejectInvalidStrings } from "@orch/kit";
import type { RouteSpec } from "../route.js";

export interface ParsedInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

function zodIssues(location: string, err: z.ZodError) {
  return err.issues.map((i) => ({ location, field: i.path.map(String).join(".") || "(root)", message: i.message }));
}

function parse<T>(schema: z.ZodType<T> | undefined, value: unknown, location: string): T {
  if (!schema) return undefined as T;
  const r = schema.safeParse(value ?? (location === "body" ? undefined : {}));
  if (!r.success) {
    const errors = zodIssues(location, r.error);
    const first = errors[0]!;
    // Every paginated list refuses a cursor it did not hand out the same way (see pagination.ts).
    const code = location === "query" && first.field === "cursor" ? "invalid_cursor" : "invalid_request";
    const where = first.field === "(root)" ? "" : `field '${first.field}' `;
    throw new OrchError("INVALID_ARGUMENT", code, `${location} ${where}${first.message}`.replace(/\s+/g, " "), {
      errors,
    });
  }
  return r.data;
}

/** Validates path, query and body against the route's schemas; a raw-body route gets the bytes as sent, a stream-body route the stream. */
export function parseInput(spec: RouteSpec, req: FastifyRequest): ParsedInput {
  // NUL and lone surrogates are refused before validation, whatever the route's schema allows.
  rejectInvalidStrings(req.params, "path");
  rejectInvalidStrings(req.query, "query");
  const params = parse(spec.params, req.params, "path");
  const query = parse(spec.query, req.query, "query");
  let body: unknown;
  if (spec.rawBody) body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  else if (spec.streamBody) body = req.body ?? req.raw;
  else {
    rejectInvalidStrings(req.body, "body");
    body = parse(spec.body, req.body, "body");
  }
  return { params, query, body };
}
