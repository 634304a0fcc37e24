import { z } from "zod";
import {
  checkRestriction,
  checkSecretDescription,
  checkSecretName,
  checkSecretValue,
  RESTRICTION_MAX_NODE_IDS,
  SECRET_DESCRIPTION_MAX,
  SECRET_NAME_RE,
  SecretsService,
  type ErrorReason,
  type Secret,
} from "@orch/contracts";
import { invalid, rpcClient } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { route } from "../route.js";
import { iso, pageQuery, rfc3339, ruled } from "../schemas.js";

// The secrets service's rules (from @orch/contracts); it checks them again for bus callers. No
// message here repeats an input: a secret value must never come back in an error.
const SecretName = ruled(checkSecretName, SECRET_NAME_RE);
const Value = ruled(checkSecretValue).describe("plaintext; write-only, never returned");
const Description = ruled(checkSecretDescription).meta({ maxLength: SECRET_DESCRIPTION_MAX }).nullable();
const ExpiresAt = rfc3339.nullable().describe("RFC 3339; must be in the future; null = never expires");

const RestrictionObj = z
  .object({
    node_ids: z.array(z.string()).max(RESTRICTION_MAX_NODE_IDS).optional().describe("node ids allowed outright"),
    tags: z.record(z.string(), z.string()).optional().describe("tags an agent must all carry (key → exact value)"),
  })
  .strict();
const RestrictionIn = RestrictionObj.nullable();

const restrictionDoc = (() => {
  const js = z.toJSONSchema(RestrictionObj, { target: "draft-2020-12", io: "input" }) as Record<string, unknown>;
  delete js.$schema;
  return js;
})();
/**
 * Declared loosely so its own check below can answer `invalid_restriction` naming the field; the
 * OpenAPI document still shows the real shape.
 */
const RestrictionField = z
  .unknown()
  .optional()
  .meta({
    description: "null = any approved agent; else the agent's node id is listed, or it carries every listed tag",
    anyOf: [{ type: "null" }, restrictionDoc],
  });

const RestrictionOut = z.object({ node_ids: z.array(z.string()), tags: z.record(z.string(), z.string()) });
export const SecretOut = z.object({
  name: z.string(),
  description: z.string().nullable(),
  expires_at: z.string().nullable(),
  restriction: RestrictionOut.nullable(),
  created_at: z.string(),
  created_by: z.string(),
  updated_at: z.string(),
  updated_by: z.string(),
});

/** Metadata only: this mapping is the one place a Secret becomes JSON, and it has no value field. */
export function secretJson(s: Secret): z.infer<typeof SecretOut> {
  return {
    name: s.name,
    description: s.description || null,
    expires_at: s.expiresAt ? iso(s.expiresAt) : null,
    restriction: s.restriction ? { node_ids: [...s.restriction.nodeIds], tags: { ...s.restriction.tags } } : null,
    created_at: iso(s.createdAt),
    created_by: s.createdBy,
    updated_at: iso(s.updatedAt),
    updated_by: s.updatedBy,
  };
}

const restrictionError = (field: string, message: string) =>
  invalid("invalid_restriction", `body field '${field}' ${message}`, {
    field,
    errors: [{ location: "body", field, message }],
  });

function parseRestriction(raw: unknown): { nodeIds: string[]; tags: Record<string, string> } | null | undefined {
  if (raw === undefined) return undefined;
  const r = RestrictionIn.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw restrictionError(["restriction", ...issue.path.map(String)].join("."), issue.message);
  }
  if (!r.data) return null;
  const restriction = { nodeIds: r.data.node_ids ?? [], tags: r.data.tags ?? {} };
  const bad = checkRestriction(restriction);
  if (bad) throw restrictionError(bad.field, bad.message);
  return restriction;
}

const NameParams = z.object({ name: SecretName });
const ERR_400: ErrorReason[] = [
  "invalid_request",
  "invalid_restriction",
  "invalid_name",
  "invalid_value",
  "value_too_large",
  "expires_at_in_past",
];

export function secretRoutes(ctx: GatewayContext) {
  const secrets = rpcClient(ctx.nc, "secrets", SecretsService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "POST",
      path: "/api/v1/secrets",
      auth: "operator",
      summary: "Create a secret (the value is write-only)",
      tags: ["secrets"],
      body: z
        .object({
          name: SecretName,
          value: Value,
          description: Description.optional(),
          expires_at: ExpiresAt.optional(),
          restriction: RestrictionField,
        })
        .strict(),
      responses: { 201: SecretOut },
      errors: { 400: ERR_400, 409: ["secret_exists"] },
      async handler({ body, call }) {
        const restriction = parseRestriction(body.restriction);
        const s = await secrets.createSecret(
          {
            name: body.name,
            value: body.value,
            description: body.description ?? "",
            expiresAt: body.expires_at ? Date.parse(body.expires_at) : 0,
            ...(restriction ? { restriction } : {}),
          },
          call,
        );
        return secretJson(s);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/secrets",
      auth: "operator",
      summary: "List secrets (metadata only)",
      tags: ["secrets"],
      query: pageQuery,
      responses: {
        200: z.object({ secrets: z.array(SecretOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      async handler({ query, call }) {
        const r = await secrets.listSecrets({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return { secrets: r.secrets.map(secretJson), has_more: r.nextCursor !== "", next_cursor: r.nextCursor || null };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/secrets/reencrypt",
      auth: "admin",
      summary: "Re-encrypt every secret with the active key",
      description: "Run after putting a new key first in ORCH_SECRETS_KEYS; afterwards the old key can be removed.",
      tags: ["secrets"],
      responses: {
        200: z.object({
          active_key: z.string(),
          reencrypted: z.number().int(),
          failed: z.array(z.string()).describe("secrets that did not decrypt with the keyring"),
        }),
      },
      async handler({ call }) {
        const r = await secrets.reencrypt({}, call);
        return { active_key: r.activeKey, reencrypted: r.reencrypted, failed: [...r.failed] };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/secrets/{name}",
      auth: "operator",
      summary: "One secret's metadata",
      tags: ["secrets"],
      params: NameParams,
      responses: { 200: SecretOut },
      errors: { 404: ["secret_not_found"] },
      async handler({ params, call }) {
        return secretJson(await secrets.getSecret({ name: params.name }, call));
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/secrets/{name}",
      auth: "operator",
      summary: "Update a secret: any of value, description, expires_at, restriction",
      description:
        "Fields left out keep their value; null clears description, expires_at or restriction. " +
        "A new value is encrypted with the active key. Widening the restriction (or clearing it) and " +
        "moving expires_at later (or clearing it) need the admin role; operators may only narrow.",
      tags: ["secrets"],
      params: NameParams,
      body: z
        .object({
          value: Value.optional(),
          description: Description.optional(),
          expires_at: ExpiresAt.optional(),
          restriction: RestrictionField,
        })
        .strict(),
      responses: { 200: SecretOut },
      // Operators may call it; the secrets service refuses (403) an operator's change that widens who
      // may receive the secret, which needs the stored restriction to decide.
      errors: {
        400: [...ERR_400, "nothing_to_update"],
        403: ["restriction_widening_requires_admin", "expiry_extension_requires_admin"],
        404: ["secret_not_found"],
      },
      async handler({ params, body, call }) {
        const restriction = parseRestriction(body.restriction);
        const s = await secrets.updateSecret(
          {
            name: params.name,
            ...(body.value !== undefined ? { value: body.value } : {}),
            ...(body.description !== undefined ? { description: body.description ?? "" } : {}),
            ...(body.expires_at !== undefined ? { expiresAt: body.expires_at ? Date.parse(body.expires_at) : 0 } : {}),
            ...(restriction ? { restriction } : {}),
            clearRestriction: restriction === null,
          },
          call,
        );
        return secretJson(s);
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/secrets/{name}",
      auth: "operator",
      summary: "Delete a secret",
      tags: ["secrets"],
      params: NameParams,
      responses: { 204: null },
      errors: { 404: ["secret_not_found"] },
      async handler({ params, call }) {
        await secrets.deleteSecret({ name: params.name }, call);
      },
    }),
  ];
}
