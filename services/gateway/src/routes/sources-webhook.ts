import type { FastifyRequest } from "fastify";
import { checkName, type StateService } from "@orch/contracts";
import type { Client } from "@orch/kit";
import { route } from "../route.js";
import { fieldError } from "./agents-schemas.js";
import { WebhookOut, webhookJson } from "./sources-json.js";
import { SourceParams } from "./sources-schemas.js";

/**
 * POST /api/v1/sources/{name}/webhook — a forge's push notification. Public: the HMAC over the
 * body (checked by the state service against the sealed secret) is the authentication, so the
 * body must arrive byte for byte — a raw-body route, whatever the content type (GitHub and Gitea
 * may also post form-encoded payloads). The state service answers before the sync runs: a forge
 * gives up after about 10 s.
 */

export const WEBHOOK_BODY_LIMIT = 1_048_576;
/** Credentials of the caller's own session have no business travelling to the state service. */
const DROPPED_HEADERS = new Set(["cookie", "authorization"]);

function forwardedHeaders(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || DROPPED_HEADERS.has(k)) continue;
    out[k] = Array.isArray(v) ? v.join(", ") : v;
  }
  return out;
}

export function webhookRoute(state: Client<typeof StateService>) {
  return route<{ name: string }, undefined, Buffer>({
    method: "POST",
    path: "/api/v1/sources/{name}/webhook",
    auth: "public",
    summary: "A forge's push notification (GitHub, GitLab, Gitea): syncs the source when it is a push of its branch",
    description:
      "Authenticated by the signature over the exact body with the source's webhook secret (`X-Hub-Signature-256`, `X-Gitea-Signature`, or `X-Gitlab-Token`); any content type, up to 1 MiB. Answers once the notification is verified; the sync runs after the answer (GET the source for its outcome). A delivery already received (same delivery id — `X-GitHub-Delivery`, `X-Gitea-Delivery`, GitLab's `Idempotency-Key`/`X-Gitlab-Event-UUID` — or same signed body) answers 202 with `synced: false` and does not sync again. An unknown source answers exactly like a wrong signature. Rate-limited per address and source.",
    tags: ["sources"],
    params: SourceParams,
    rawBody: { maxBytes: WEBHOOK_BODY_LIMIT },
    // Per address and source: a forge delivering many sources' pushes from one address is not throttled by the others.
    rateLimitKey: (req) => `${req.ip} ${(req.params as { name?: string }).name ?? ""}`,
    responses: { 202: WebhookOut },
    errors: {
      400: ["invalid_webhook"],
      401: ["webhook_signature_invalid"],
      409: ["source_keys_unset"],
      413: ["body_too_large"],
      429: ["rate_limited"],
    },
    async handler({ params, body, raw, call }) {
      const bad = checkName(params.name);
      if (bad) throw fieldError("path", "name", bad.message, bad.reason);
      const r = await state.sourceWebhook(
        { name: params.name, headers: forwardedHeaders(raw), body: new Uint8Array(body) },
        call,
      );
      return webhookJson(r);
    },
  });
}
