import { z } from "zod";
import { SOURCE_PLAN_WAIT_DEFAULT_S, SOURCE_SYNC_WAIT_S, StateService } from "@orch/contracts";
import { OrchError, rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { CreatedSourceOut, SourceOut, SourcePlanOut, planJson, sourceJson } from "./sources-json.js";
import { CreateSourceBody, checkCreate, checkPlan, PlanBody, SourceParams } from "./sources-schemas.js";
import { webhookRoute } from "./sources-webhook.js";

type StateClient = Client<typeof StateService>;

/**
 * Git sources (docs/sources.md): the state service fetches, validates and applies; these routes
 * check input and map to JSON. The public push webhook is in sources-webhook.ts.
 */

/** The state service answers a sync after at most this long (the sync goes on), a plan after its fetch. */
const SYNC_ALLOWANCE_MS = SOURCE_SYNC_WAIT_S * 1000;

export function sourceRoutes(ctx: GatewayContext) {
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
  return [...sourceRegistryRoutes(state), ...sourceSyncRoutes(ctx, state)];
}

/** Register, list, read and remove sources. */
function sourceRegistryRoutes(state: StateClient) {
  return [
    route({
      method: "POST",
      path: "/api/v1/sources",
      auth: "admin",
      summary: "Register a git repository whose modules/ and assignments/ are synced into the catalog",
      description:
        "The first sync starts at once (status `pending` until it ends). Credentials (`auth`) are stored sealed and never returned; the webhook secret (given, or generated) is returned this once. `file://` URLs only where `state.sources_allow_file_urls` is set.",
      tags: ["sources"],
      body: CreateSourceBody,
      responses: { 201: CreatedSourceOut },
      errors: {
        400: ["invalid_source", "source_url_not_allowed"],
        409: ["source_exists", "source_keys_unset"],
      },
      async handler({ body, call }) {
        checkCreate(body);
        const a = body.auth;
        const created = await state.createSource(
          {
            name: body.name,
            url: body.url,
            branch: body.branch ?? "",
            path: body.path ?? "",
            ...(body.interval_s !== undefined ? { intervalS: body.interval_s } : {}),
            ...(a ? { auth: { token: a.token ?? "", username: a.username ?? "", sshKey: a.ssh_key ?? "" } } : {}),
            ...(body.webhook_secret !== undefined ? { webhookSecret: body.webhook_secret } : {}),
          },
          call,
        );
        if (!created.source) throw new OrchError("INTERNAL", "internal", "CreateSource answered without the source");
        return { ...sourceJson(created.source), webhook_secret: created.webhookSecret };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/sources",
      auth: "operator",
      summary: "List git sources by name, with their sync status",
      tags: ["sources"],
      query: pageQuery,
      responses: {
        200: z.object({ sources: z.array(SourceOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      errors: { 400: ["invalid_cursor"] },
      async handler({ query, call }) {
        const r = await state.listSources({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return { sources: r.sources.map(sourceJson), has_more: r.nextCursor !== "", next_cursor: r.nextCursor || null };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/sources/{name}",
      auth: "operator",
      summary: "One git source: the commit in force, the last attempt and its per-file errors",
      tags: ["sources"],
      params: SourceParams,
      responses: { 200: SourceOut },
      errors: { 404: ["source_not_found"] },
      async handler({ params, call }) {
        return sourceJson(await state.getSource({ name: params.name }, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/sources/{name}",
      auth: "admin",
      summary: "Delete a git source; the modules and assignments it managed stay, no longer managed",
      tags: ["sources"],
      params: SourceParams,
      responses: { 204: null },
      errors: { 404: ["source_not_found"] },
      async handler({ params, call }) {
        await state.deleteSource({ name: params.name }, call);
      },
    }),
  ];
}

/** Sync and plan on demand, and the push webhook that syncs. */
function sourceSyncRoutes(ctx: GatewayContext, state: StateClient) {
  return [
    route({
      method: "POST",
      path: "/api/v1/sources/{name}/sync",
      auth: "admin",
      summary: "Fetch the source's branch now and apply its tree, all or nothing",
      description: `Answers when a sync that started after the request ended (one already under way, which may have fetched an older commit, is waited out first), or after ${SOURCE_SYNC_WAIT_S} s with the source as it stands while the sync goes on. A failed fetch or an invalid tree is not an error of this request: the source answers with status \`error\`, \`error\` and per-file \`errors\`, and nothing in the catalog changed.`,
      tags: ["sources"],
      params: SourceParams,
      responses: { 200: SourceOut },
      errors: { 404: ["source_not_found"], 409: ["source_keys_unset"] },
      async handler({ params, call }) {
        return sourceJson(
          await state.syncSource({ name: params.name }, { ...call, timeoutMs: ctx.timeoutMs + SYNC_ALLOWANCE_MS }),
        );
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/sources/{name}/plan",
      auth: "operator",
      summary: "Plan the fleet against a branch or commit of the source without syncing it",
      description:
        "Validates the ref's tree like a sync; when it is valid, plans every created or updated assignment on its matched agents (per-agent diffs, as assignment plans) and waits up to `wait_seconds` for them (`complete` says whether all finished). Nothing in the catalog changes.",
      tags: ["sources"],
      params: SourceParams,
      body: PlanBody,
      responses: { 200: SourcePlanOut },
      errors: {
        400: ["invalid_ref"],
        404: ["source_not_found", "source_ref_not_found"],
        409: ["source_keys_unset"],
        503: ["source_unreachable"],
      },
      async handler({ params, body, call }) {
        checkPlan(body);
        const wait = body?.wait_seconds ?? SOURCE_PLAN_WAIT_DEFAULT_S;
        const plan = await state.planSource(
          {
            name: params.name,
            ref: body?.ref ?? "",
            ...(body?.wait_seconds !== undefined ? { waitSeconds: body.wait_seconds } : {}),
          },
          { ...call, timeoutMs: ctx.timeoutMs + SYNC_ALLOWANCE_MS + wait * 1000 },
        );
        return planJson(plan);
      },
    }),
    webhookRoute(state),
  ];
}
