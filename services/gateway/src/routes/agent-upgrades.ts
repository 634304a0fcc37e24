import { z } from "zod";
import { AgentsService, type ErrorReason } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { AgentUpgradeOut, Started, startedJson, upgradeJson } from "./agent-upgrades-json.js";
import { Version } from "./agent-upgrades-schemas.js";
import { AgentParams, AgentRef, SelectorQuery } from "./agents-schemas.js";

const VERSION_ERRORS: Record<number, ErrorReason[]> = {
  400: ["invalid_request", "invalid_version"],
  404: ["agent_not_found", "agent_version_not_found", "agent_packages_unavailable"],
};
const DESCRIPTION =
  "The agents download the version's signed manifest and tarball from this server's /install routes, verify them against the release key they were installed with, unpack beside the running release, switch and restart (docs/agent-install.md#upgrades). The answer comes once the requests are sent: fast refusals are already `failed`, the rest end `succeeded` when the agent links up on the version or `failed` with `timeout` at `deadline_at`.";

/** Agent upgrades: admin only (they replace the software that runs as root on the fleet). */
export function agentUpgradeRoutes(ctx: GatewayContext) {
  const agents = rpcClient(ctx.nc, "agents", AgentsService, { timeoutMs: Math.max(ctx.timeoutMs, 15_000) });
  return [
    route({
      method: "POST",
      path: "/api/v1/agents/{node_id}/upgrade",
      auth: "admin",
      summary: "Upgrade one agent to a published orch-agent version",
      description: DESCRIPTION,
      tags: ["agents"],
      params: AgentParams,
      body: z.object({ version: Version }).prefault({}),
      responses: { 202: Started },
      errors: { ...VERSION_ERRORS, 409: ["agent_not_approved"] },
      async handler({ params, body, call }) {
        return startedJson(await agents.upgradeAgents({ nodeId: params.node_id, version: body.version ?? "" }, call));
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/agent-upgrades",
      auth: "admin",
      summary: "Upgrade every approved agent a selector matches",
      description: `${DESCRIPTION} \`*\` selects every approved agent.`,
      tags: ["agents"],
      body: z.object({ selector: SelectorQuery, version: Version }),
      responses: { 202: Started },
      errors: { ...VERSION_ERRORS, 400: ["invalid_request", "invalid_version", "invalid_selector"] },
      async handler({ body, call }) {
        return startedJson(await agents.upgradeAgents({ selector: body.selector, version: body.version ?? "" }, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agent-upgrades",
      auth: "admin",
      summary: "Agent upgrades, newest first",
      tags: ["agents"],
      query: pageQuery.extend({ node_id: AgentRef.optional() }),
      responses: {
        200: z.object({
          upgrades: z.array(AgentUpgradeOut),
          has_more: z.boolean(),
          next_cursor: z.string().nullable(),
        }),
      },
      errors: { 400: ["invalid_request", "invalid_cursor"], 404: ["agent_not_found"] },
      async handler({ query, call }) {
        const r = await agents.listAgentUpgrades(
          { limit: query.limit ?? 0, cursor: query.cursor ?? "", nodeId: query.node_id ?? "" },
          call,
        );
        return {
          upgrades: r.upgrades.map(upgradeJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
  ];
}
