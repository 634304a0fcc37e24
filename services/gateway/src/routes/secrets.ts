import { z } from "zod";
import { SecretsService, type ErrorReason } from "@orch/contracts";
import { rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { HeldOut, heldJson, SecretOut, secretJson } from "./secrets-json.js";
import {
  Description,
  ExpiresAt,
  NameParams,
  RestrictionField,
  SecretName,
  Value,
  approvalFields,
  parseRestriction,
} from "./secrets-schemas.js";

type SecretsClient = Client<typeof SecretsService>;

const HELD_DOC =
  " When an approval policy covers `secret.write` the write does not happen: it becomes a change request (202, `change_request_id`) and the new value waits sealed in the secrets service until approved (docs/approvals.md). An admin may pass `break_glass: true` with a `reason` instead.";
const APPROVAL_400: ErrorReason[] = ["break_glass_reason_required"];
const APPROVAL_403: ErrorReason[] = ["break_glass_forbidden"];

const ERR_400: ErrorReason[] = [
  ...APPROVAL_400,
  "invalid_request",
  "invalid_restriction",
  "invalid_name",
  "invalid_value",
  "value_too_large",
  "expires_at_in_past",
];

export function secretRoutes(ctx: GatewayContext) {
  const secrets = rpcClient(ctx.nc, "secrets", SecretsService, { timeoutMs: ctx.timeoutMs });
  return [...secretCollectionRoutes(secrets), ...secretItemRoutes(secrets)];
}

/** The collection: create, list, and the keyring-wide re-encryption. */
function secretCollectionRoutes(secrets: SecretsClient) {
  return [
    route({
      method: "POST",
      path: "/api/v1/secrets",
      auth: "operator",
      summary: "Create a secret (the value is write-only)",
      description: HELD_DOC.trim(),
      tags: ["secrets"],
      body: z
        .object({
          name: SecretName,
          value: Value,
          description: Description.optional(),
          expires_at: ExpiresAt.optional(),
          restriction: RestrictionField,
          ...approvalFields,
        })
        .strict(),
      responses: { 201: SecretOut, 202: HeldOut },
      errors: { 400: ERR_400, 403: APPROVAL_403, 409: ["secret_exists"] },
      async handler({ body, call }, reply) {
        const restriction = parseRestriction(body.restriction);
        const s = await secrets.createSecret(
          {
            name: body.name,
            value: body.value,
            description: body.description ?? "",
            expiresAt: body.expires_at ? Date.parse(body.expires_at) : 0,
            ...(restriction ? { restriction } : {}),
            reason: body.reason ?? "",
            breakGlass: body.break_glass ?? false,
          },
          call,
        );
        if (s.held) return reply.code(202).send(heldJson(s.held));
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
  ];
}

/** One secret by name: read its metadata, update, delete. */
function secretItemRoutes(secrets: SecretsClient) {
  return [
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
        "moving expires_at later (or clearing it) need the admin role; operators may only narrow." +
        HELD_DOC,
      tags: ["secrets"],
      params: NameParams,
      body: z
        .object({
          value: Value.optional(),
          description: Description.optional(),
          expires_at: ExpiresAt.optional(),
          restriction: RestrictionField,
          ...approvalFields,
        })
        .strict(),
      responses: { 200: SecretOut, 202: HeldOut },
      // Operators may call it; the secrets service refuses (403) an operator's change that widens who
      // may receive the secret, which needs the stored restriction to decide.
      errors: {
        400: [...ERR_400, "nothing_to_update"],
        403: ["restriction_widening_requires_admin", "expiry_extension_requires_admin", ...APPROVAL_403],
        404: ["secret_not_found"],
      },
      async handler({ params, body, call }, reply) {
        const restriction = parseRestriction(body.restriction);
        const s = await secrets.updateSecret(
          {
            name: params.name,
            ...(body.value !== undefined ? { value: body.value } : {}),
            ...(body.description !== undefined ? { description: body.description ?? "" } : {}),
            ...(body.expires_at !== undefined ? { expiresAt: body.expires_at ? Date.parse(body.expires_at) : 0 } : {}),
            ...(restriction ? { restriction } : {}),
            clearRestriction: restriction === null,
            reason: body.reason ?? "",
            breakGlass: body.break_glass ?? false,
          },
          call,
        );
        if (s.held) return reply.code(202).send(heldJson(s.held));
        return secretJson(s);
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/secrets/{name}",
      auth: "operator",
      summary: "Delete a secret",
      description: `The body is optional.${HELD_DOC}`,
      tags: ["secrets"],
      params: NameParams,
      body: z.object(approvalFields).strict().optional(),
      responses: { 204: null, 202: HeldOut },
      errors: { 400: ["invalid_request", ...APPROVAL_400], 403: APPROVAL_403, 404: ["secret_not_found"] },
      async handler({ params, body, call }, reply) {
        const r = await secrets.deleteSecret(
          { name: params.name, reason: body?.reason ?? "", breakGlass: body?.break_glass ?? false },
          call,
        );
        // Sent here: `responses` lists 202 before 204 (numeric keys), so 204 is not the route's default.
        if (!r.held) return reply.code(204).send();
        return reply.code(202).send(heldJson(r.held));
      },
    }),
  ];
}
