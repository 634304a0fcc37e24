import { z } from "zod";
import { AGENT_VERSION_RULE, AgentsService, type AgentUpgrade, type ErrorReason } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { route } from "../route.js";
import { iso, pageQuery } from "../schemas.js";
import { AgentParams, AgentRef, SelectorQuery } from "./agents-schemas.js";

export const AgentUpgradeOut = z.object({
  id: z.string(),
  node_id: z.string(),
  name: z.string().nullable(),
  from_version: z.string(),
  to_version: z.string(),
  status: z.enum(["requested", "succeeded", "failed"]),
  reason: z
    .string()
    .nullable()
    .describe(
      "why it failed: timeout, agent_unreachable, superseded, or the agent's refusal (upgrade_unsupported, download_failed, signature_invalid, checksum_mismatch, package_invalid, already_current, upgrade_in_progress)",
    ),
  message: z.string().nullable(),
  requested_at: z.string(),
  deadline_at: z.string().describe("reported failed (timeout) if the agent is not back on to_version by then"),
  finished_at: z.string().nullable(),
  requested_by: z.string(),
});

export const upgradeJson = (u: AgentUpgrade): z.infer<typeof AgentUpgradeOut> => ({
  id: u.id,
  node_id: u.nodeId,
  name: u.name || null,
  from_version: u.fromVersion,
  to_version: u.toVersion,
  status: u.status as "requested" | "succeeded" | "failed",
  reason: u.reason || null,
  message: u.message || null,
  requested_at: iso(u.requestedAt),
  deadline_at: iso(u.deadlineAt),
  finished_at: u.finishedAt ? iso(u.finishedAt) : null,
  requested_by: u.requestedBy,
});

const Started = z.object({
  upgrades: z.array(AgentUpgradeOut),
  version: z.string(),
  skipped: z.number().int().describe("matched agents already running the version"),
});
const Version = z.string().max(64).nullish().describe(`${AGENT_VERSION_RULE}; absent = the newest published`);
const VERSION_ERRORS: Record<number, ErrorReason[]> = {
  400: ["invalid_request", "invalid_version"],
  404: ["agent_not_found", "agent_version_not_found", "agent_packages_unavailable"],
};
const DESCRIPTION =
  "The agents download the version's signed manifest and tarball from this server's /install routes, verify them against the release key they were installed with, unpack beside the running release, switch and restart (docs/agent-install.md#upgrades). The answer comes once the requests are sent: fast refusals are already `failed`, the rest end `succeeded` when the agent links up on the version or `failed` with `timeout` at `deadline_at`.";

/** Agent upgrades: admin only (they replace the software that runs as root on the fleet). */
export function agentUpgradeRoutes(ctx: GatewayContext) {
  const agents = rpcClient(ctx.nc, "agents", AgentsService, { timeoutMs: Math.max(ctx.timeoutMs, 15_000) });
  const toJson = (r: { upgrades: AgentUpgrade[]; version: string; skipped: number }) => ({
    upgrades: r.upgrades.map(upgradeJson),
    version: r.version,
    skipped: r.skipped,
  });
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
        return toJson(await agents.upgradeAgents({ nodeId: params.node_id, version: body.version ?? "" }, call));
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
        return toJson(await agents.upgradeAgents({ selector: body.selector, version: body.version ?? "" }, call));
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
