import { z } from "zod";
import { AgentsService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { JoinTokenOut, joinTokenJson } from "./join-tokens-json.js";
import { CreateJoinTokenBody, TokenId, checkCreateJoinToken } from "./join-tokens-schemas.js";

/**
 * /join-tokens: admin only (a token approves machines without anyone looking at them). The token
 * itself is in the creation response and nowhere else, ever.
 */
export function joinTokenRoutes(ctx: GatewayContext) {
  const agents = rpcClient(ctx.nc, "agents", AgentsService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "POST",
      path: "/api/v1/join-tokens",
      auth: "admin",
      summary: "Create a join token (the token is returned once)",
      description:
        "An agent started with the token (`orch-agent --join-token`, or the install script's `--token`) is approved on first contact with the token's tags and the name `<name_prefix>-<hostname>` (made unique with `-2`, `-3`…). An expired, used-up or revoked token leaves the agent pending with a `pending_reason`. Only SHA-256 of the secret is stored: `token` cannot be shown again.",
      tags: ["join-tokens"],
      body: CreateJoinTokenBody,
      responses: {
        201: z.object({ join_token: JoinTokenOut, token: z.string().describe("`ojt_<id>.<secret>`; shown once") }),
      },
      errors: {
        400: [
          "invalid_request",
          "invalid_ttl",
          "invalid_max_uses",
          "invalid_name_prefix",
          "invalid_tag_key",
          "invalid_tag_value",
          "too_many_tags",
          "invalid_description",
        ],
      },
      async handler({ body, call }) {
        checkCreateJoinToken(body);
        const r = await agents.createJoinToken(
          {
            ttlS: body.ttl_s,
            maxUses: body.max_uses ?? 0,
            tags: body.tags ?? {},
            namePrefix: body.name_prefix ?? "",
            description: body.description ?? "",
          },
          call,
        );
        return { join_token: joinTokenJson(r.joinToken!), token: r.token };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/join-tokens",
      auth: "admin",
      summary: "List join tokens, newest first (never the secret)",
      tags: ["join-tokens"],
      query: pageQuery,
      responses: {
        200: z.object({
          join_tokens: z.array(JoinTokenOut),
          has_more: z.boolean(),
          next_cursor: z.string().nullable(),
        }),
      },
      async handler({ query, call }) {
        const r = await agents.listJoinTokens({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return {
          join_tokens: r.joinTokens.map(joinTokenJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/join-tokens/{id}",
      auth: "admin",
      summary: "Revoke a join token (idempotent); agents that joined with it stay approved",
      tags: ["join-tokens"],
      params: TokenId,
      responses: { 200: JoinTokenOut },
      errors: { 404: ["join_token_not_found"] },
      async handler({ params, call }) {
        return joinTokenJson(await agents.revokeJoinToken({ id: params.id }, call));
      },
    }),
  ];
}
