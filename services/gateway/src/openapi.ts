import { z } from "zod";
import {
  CSRF_HEADER,
  ERROR_CATALOGUE,
  ERROR_REASONS,
  IDEMPOTENCY_KEY_RE,
  SESSION_COOKIE,
  type ErrorReason,
} from "@orch/contracts";
import type { RouteSpec } from "./route.js";

export const API_VERSION = "0.0.9";

function jsonSchema(s: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const out = z.toJSONSchema(s, { target: "draft-2020-12", io, unrepresentable: "any" }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

function parameters(schema: z.ZodType | undefined, where: "path" | "query") {
  if (!schema) return [];
  const js = jsonSchema(schema, "input") as {
    properties?: Record<string, Record<string, unknown>>;
    required?: string[];
  };
  return Object.entries(js.properties ?? {}).map(([name, s]) => {
    const { description, ...rest } = s;
    return {
      name,
      in: where,
      required: where === "path" || (js.required ?? []).includes(name),
      schema: rest,
      ...(description ? { description } : {}),
    };
  });
}

const IDEMPOTENCY_PARAM = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  schema: { type: "string", pattern: IDEMPOTENCY_KEY_RE.source },
  description: "Repeat the request with the same key to get the first result instead of a second change (24 h).",
};

const PROBLEM = {
  type: "object",
  required: ["type", "title", "status", "detail", "code"],
  properties: {
    type: { type: "string" },
    title: { type: "string" },
    status: { type: "integer" },
    detail: { type: "string" },
    code: {
      type: "string",
      enum: [...ERROR_REASONS],
      description:
        "stable machine-readable error code; `x-error-catalogue` (and docs/errors.md) gives each one's status",
    },
    request_id: { type: "string" },
  },
  additionalProperties: true,
  "x-error-catalogue": Object.fromEntries(
    ERROR_REASONS.map((code) => [
      code,
      { status: ERROR_CATALOGUE[code].status, meaning: ERROR_CATALOGUE[code].meaning },
    ]),
  ),
};

/** OpenAPI 3.1 document built from the same route table and zod schemas that validate requests. */
export function buildOpenApi(routes: RouteSpec[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const responses: Record<string, unknown> = {};
    for (const [status, schema] of Object.entries(r.responses)) {
      responses[status] = schema
        ? { description: "success", content: { "application/json": { schema: jsonSchema(schema, "output") } } }
        : { description: "success, no body" };
    }
    const errs: Record<number, ErrorReason[]> = { ...(r.errors ?? {}) };
    if (r.auth !== "public") errs[401] ??= ["unauthenticated", "invalid_token"];
    if (r.auth === "admin") errs[403] ??= ["admin_required"];
    if (r.params || r.query || r.body) errs[400] ??= ["invalid_request"];
    // Authenticated writes take an Idempotency-Key (idempotency.ts, docs/http-api.md).
    const keyed = r.method !== "GET" && r.auth !== "public";
    if (keyed) {
      errs[400] = [...(errs[400] ?? []), "invalid_idempotency_key"];
      errs[409] = [...(errs[409] ?? []), "idempotency_key_reused", "idempotency_key_in_flight"];
    }
    for (const [status, codes] of Object.entries(errs)) {
      responses[status] = {
        description: `problem codes: ${codes.join(", ")}`,
        content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
      };
    }
    const op: Record<string, unknown> = {
      operationId: `${r.method.toLowerCase()}${r.path
        .replace(/^\/api\/v1/, "")
        .replace(/[{}]/g, "")
        .replace(/[^a-zA-Z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
      summary: r.summary,
      description: [
        r.description,
        r.auth === "admin"
          ? "Requires the admin role."
          : r.auth === "public"
            ? "No authentication."
            : "Any authenticated operator.",
      ]
        .filter(Boolean)
        .join("\n\n"),
      tags: r.tags,
      parameters: [
        ...parameters(r.params, "path"),
        ...parameters(r.query, "query"),
        ...(keyed ? [IDEMPOTENCY_PARAM] : []),
      ],
      responses,
      security: r.auth === "public" ? [] : [{ bearer: [] }, { console: [] }],
      "x-auth": r.auth,
    };
    if (r.rawBody)
      // Any bytes of any type: the handler reads them as sent (route.ts rawBody).
      op.requestBody = {
        required: true,
        description: `the body exactly as sent, up to ${r.rawBody.maxBytes} bytes`,
        content: { "*/*": { schema: { type: "string", format: "binary" } } },
      };
    else if (r.streamBody)
      // Streamed to the service piece by piece (route.ts streamBody): any size up to the route's limit.
      op.requestBody = {
        required: true,
        description: "the bytes, streamed (Content-Length optional); see the route's description for its limit",
        content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
      };
    else if (r.body)
      op.requestBody = { required: true, content: { "application/json": { schema: jsonSchema(r.body, "input") } } };
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Orchestrator Management API",
      version: API_VERSION,
      description: "Fleet orchestrator: agents, state, secrets, terminals, notifications and audit.",
    },
    servers: [{ url: "/" }],
    paths,
    components: {
      schemas: { Problem: PROBLEM },
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "Session token from POST /api/v1/auth/verify" },
        console: {
          type: "apiKey",
          in: "cookie",
          name: SESSION_COOKIE,
          description: `The web console's session cookie (\`__Host-${SESSION_COOKIE}\` over https); requests other than GET/HEAD also need the \`${CSRF_HEADER}\` header (docs/console.md)`,
        },
      },
    },
    security: [{ bearer: [] }, { console: [] }],
  };
}
