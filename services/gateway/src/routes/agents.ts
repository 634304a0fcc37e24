import { z } from "zod";
import { AgentsService, NODE_ID_RE, type ErrorReason } from "@orch/contracts";
import { notFound, rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { qInt, rfc3339 } from "../schemas.js";
import { AgentOut, AgentSummaryOut, SampleOut, agentJson, sampleJson, summaryJson } from "./agents-json.js";
import {
  AgentParams,
  AgentStatus,
  KEY_RULE,
  MAX_TAGS,
  NAME_RULE,
  SelectorQuery,
  TARGET_RULE,
  TagParams,
  TagValueField,
  VALUE_RULE,
  checkName,
  checkTagKey,
  checkTagValue,
  checkTags,
  fieldError,
  isNodeId,
  validTarget,
} from "./agents-schemas.js";

type AgentsClient = Client<typeof AgentsService>;

const NOT_FOUND: Record<number, ErrorReason[]> = { 404: ["agent_not_found"] };

/**
 * /agents, /tags and /discover. Every route is `operator` (docs/agents-api.md#who-may-call): none is admin-only,
 * and approval, rejection and removal are recorded in the audit log with the operator as actor.
 */
export function agentRoutes(ctx: GatewayContext) {
  const agents = rpcClient(ctx.nc, "agents", AgentsService, { timeoutMs: ctx.timeoutMs });
  return [
    ...agentReadRoutes(agents),
    ...agentRecordRoutes(agents),
    ...agentTagRoutes(agents),
    ...agentMetricsAndDiscoveryRoutes(agents),
  ];
}

/** The registry read: the list, the status counts, one agent. */
function agentReadRoutes(agents: AgentsClient) {
  return [
    route({
      method: "GET",
      path: "/api/v1/agents",
      auth: "operator",
      summary: "List agents from the registry, by node id",
      tags: ["agents"],
      query: z.object({
        status: AgentStatus.optional(),
        limit: qInt(1, 500).optional(),
        cursor: z.string().regex(NODE_ID_RE, "must be the next_cursor of a previous page").optional(),
        selector: SelectorQuery.optional(),
      }),
      responses: {
        200: z.object({ agents: z.array(AgentOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      errors: { 400: ["invalid_request", "invalid_selector"] },
      async handler({ query, call }) {
        const r = await agents.listAgents(
          {
            limit: query.limit ?? 0,
            cursor: query.cursor ?? "",
            status: query.status ?? "",
            selector: query.selector ?? "",
          },
          call,
        );
        return { agents: r.agents.map(agentJson), has_more: r.nextCursor !== "", next_cursor: r.nextCursor || null };
      },
    }),
    // A static segment: fastify matches it before /agents/{node_id}, so it needs no ordering care here.
    route({
      method: "GET",
      path: "/api/v1/agents/summary",
      auth: "operator",
      summary: "Count agents by status and connection",
      description:
        "Counts only the agents the caller can see (its scope), narrowed by `selector`. `connected` and `disconnected` split the approved agents; pending agents waiting on a live link count as pending only.",
      tags: ["agents"],
      query: z.object({ selector: SelectorQuery.optional() }),
      responses: { 200: AgentSummaryOut },
      errors: { 400: ["invalid_request", "invalid_selector"] },
      async handler({ query, call }) {
        return summaryJson(await agents.summarizeAgents({ selector: query.selector ?? "" }, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}",
      auth: "operator",
      summary: "Get one agent by node id or name",
      tags: ["agents"],
      params: AgentParams,
      responses: { 200: AgentOut },
      errors: NOT_FOUND,
      async handler({ params, call }) {
        return agentJson(await agents.getAgent({ id: params.node_id }, call));
      },
    }),
  ];
}

/** Approval or rejection, removal, and the reported attributes of one agent. */
function agentRecordRoutes(agents: AgentsClient) {
  return [
    route({
      method: "POST",
      path: "/api/v1/agents/{node_id}",
      auth: "operator",
      summary: "Approve (with an immutable name) or reject an agent",
      description:
        "`name` is required when approving and ignored when rejecting. A different name for an already named agent is refused (name_immutable), as is a name another agent holds (name_taken).",
      tags: ["agents"],
      params: AgentParams,
      body: z.object({
        status: z.enum(["approved", "rejected"]),
        name: z.string().nullish().describe(`required when approving; ${NAME_RULE}`),
      }),
      responses: { 200: AgentOut },
      errors: {
        400: ["invalid_request", "name_required", "invalid_name"],
        ...NOT_FOUND,
        409: ["name_taken", "name_immutable"],
      },
      async handler({ params, body, call }) {
        const name = body.status === "approved" ? checkName(body.name) : "";
        return agentJson(await agents.setApproval({ nodeId: params.node_id, status: body.status, name }, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/agents/{node_id}",
      auth: "operator",
      summary: "Remove a rejected agent's record",
      tags: ["agents"],
      params: AgentParams,
      responses: { 204: null },
      errors: { ...NOT_FOUND, 409: ["agent_not_rejected"] },
      async handler({ params, call }) {
        await agents.removeAgent({ id: params.node_id }, call);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/attributes",
      auth: "operator",
      summary: "The attribute map an agent reported",
      tags: ["agents"],
      params: AgentParams,
      responses: { 200: z.object({ node_id: z.string(), attributes: z.record(z.string(), z.string()) }) },
      errors: NOT_FOUND,
      async handler({ params, call }) {
        const a = await agents.getAgent({ id: params.node_id }, call);
        return { node_id: a.nodeId, attributes: { ...a.attributes } };
      },
    }),
  ];
}

function agentTagRoutes(agents: AgentsClient) {
  return [
    route({
      method: "PUT",
      path: "/api/v1/agents/{node_id}/tags",
      auth: "operator",
      summary: "Replace all tags of an agent",
      tags: ["agents"],
      params: AgentParams,
      body: z.object({
        tags: z
          .record(z.string(), TagValueField)
          .describe(`at most ${MAX_TAGS} tags; keys ${KEY_RULE}; values ${VALUE_RULE}`),
      }),
      responses: { 200: AgentOut },
      errors: { 400: ["invalid_request", "invalid_tag_key", "invalid_tag_value", "too_many_tags"], ...NOT_FOUND },
      async handler({ params, body, call }) {
        checkTags(body.tags);
        return agentJson(await agents.replaceTags({ nodeId: params.node_id, tags: body.tags }, call));
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/agents/{node_id}/tags/{key}",
      auth: "operator",
      summary: "Set one tag",
      description: "A key containing '/' is sent percent-encoded (%2F).",
      tags: ["agents"],
      params: TagParams,
      body: z.object({ value: TagValueField }),
      responses: { 200: AgentOut },
      errors: { 400: ["invalid_request", "invalid_tag_key", "invalid_tag_value", "too_many_tags"], ...NOT_FOUND },
      async handler({ params, body, call }) {
        checkTagKey(params.key, "path", "key");
        checkTagValue(body.value, "value");
        return agentJson(await agents.setTag({ nodeId: params.node_id, key: params.key, value: body.value }, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/agents/{node_id}/tags/{key}",
      auth: "operator",
      summary: "Remove one tag; answers with the updated agent",
      tags: ["agents"],
      params: TagParams,
      responses: { 200: AgentOut },
      errors: { 400: ["invalid_request", "invalid_tag_key"], 404: ["agent_not_found", "tag_not_found"] },
      async handler({ params, call }) {
        checkTagKey(params.key, "path", "key");
        return agentJson(await agents.deleteTag({ nodeId: params.node_id, key: params.key }, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/tags",
      auth: "operator",
      summary: "Every distinct tag key with its distinct values",
      tags: ["agents"],
      responses: { 200: z.object({ tags: z.record(z.string(), z.array(z.string())) }) },
      async handler({ call }) {
        const r = await agents.listTags({}, call);
        return { tags: Object.fromEntries(r.tags.map((t) => [t.key, [...t.values]])) };
      },
    }),
  ];
}

function agentMetricsAndDiscoveryRoutes(agents: AgentsClient) {
  return [
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/metrics",
      auth: "operator",
      summary: "Metrics history of an agent, newest first",
      description: "`since` is inclusive, `until` exclusive; `limit` defaults to 100.",
      tags: ["agents"],
      params: AgentParams,
      query: z.object({ since: rfc3339.optional(), until: rfc3339.optional(), limit: qInt(1, 1000).optional() }),
      responses: { 200: z.object({ node_id: z.string(), samples: z.array(SampleOut) }) },
      errors: { 400: ["invalid_request", "invalid_range"], ...NOT_FOUND },
      async handler({ params, query, call }) {
        const since = query.since ? Date.parse(query.since) : 0;
        const until = query.until ? Date.parse(query.until) : 0;
        if (since && until && until <= since)
          throw fieldError("query", "since", "must be earlier than until", "invalid_range");
        // The reply carries no node id; a name is resolved first so the answer always names the node.
        const nodeId = isNodeId(params.node_id)
          ? params.node_id
          : (await agents.getAgent({ id: params.node_id }, call)).nodeId;
        const r = await agents.getMetrics({ nodeId, since, until, limit: query.limit ?? 0 }, call);
        return { node_id: nodeId, samples: r.samples.map(sampleJson) };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/metrics/latest",
      auth: "operator",
      summary: "The newest metrics sample of an agent",
      tags: ["agents"],
      params: AgentParams,
      responses: { 200: SampleOut.extend({ node_id: z.string() }) },
      errors: { 404: ["agent_not_found", "no_metrics"] },
      async handler({ params, call }) {
        const p = await agents.getLatestMetrics({ id: params.node_id }, call);
        if (!p.sample) throw notFound("no_metrics", "the agent has not reported metrics yet");
        return { node_id: p.nodeId, ...sampleJson(p.sample) };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/discover",
      auth: "operator",
      summary: "Send a UDP discovery datagram (broadcast, or unicast to target)",
      description:
        "Unicast goes to agents.discovery_port only. Inside agents.discovery_networks any operator may send; " +
        "outside them unicast is admin-only, and loopback, link-local, multicast or reserved addresses are refused " +
        "unless a configured network covers them (decided by the agents service).",
      tags: ["agents"],
      body: z
        .object({
          target: z.string().nullish().describe(`unicast address; ${TARGET_RULE}; absent or null = broadcast`),
        })
        .prefault({}),
      responses: { 202: z.object({ sent_to: z.array(z.string()), announced: z.string() }) },
      errors: {
        400: ["invalid_request", "invalid_target", "discovery_port_not_allowed"],
        403: ["discovery_target_not_allowed", "discovery_target_refused"],
        503: ["discovery_failed"],
      },
      async handler({ body, call }) {
        if (body.target != null && !validTarget(body.target))
          throw fieldError("body", "target", TARGET_RULE, "invalid_target");
        const r = await agents.discover({ target: body.target ?? "" }, call);
        return { sent_to: [...r.sentTo], announced: r.announced };
      },
    }),
  ];
}
