/**
 * Agents on the in-test API the way the gateway answers for them: GET /agents/{ref} by node id or
 * name (a short id is not a path the server knows: 404, so orchctl falls back to the listing), and
 * GET /agents listing them all.
 */
import type { Agent } from "@orch/client";
import type { ServerResponse } from "node:http";
import type { World } from "./setup.js";

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

export function agentRecord(o: Partial<Agent> & Pick<Agent, "node_id">): Agent {
  return {
    public_key: "ab".repeat(32),
    pending_reason: null,
    name: null,
    status: "approved",
    tags: {},
    attributes: {},
    connected: true,
    first_seen: "2025-06-01T11:00:00.000Z",
    last_seen: "2025-06-01T11:59:50.000Z",
    address: null,
    version: "0.1.0",
    outdated: false,
    ...o,
  };
}

/** Serves `agents` (replacing what an earlier call served) and returns them. */
export function serveAgents(w: Pick<World, "server">, agents: Agent[]): Agent[] {
  w.server.overrides.set("GET /api/v1/agents", (_req, res) =>
    json(res, 200, { agents, has_more: false, next_cursor: null }),
  );
  for (const a of agents)
    for (const ref of [a.node_id, a.name].filter((r): r is string => Boolean(r)))
      w.server.overrides.set(`GET /api/v1/agents/${ref}`, (_req, res) => json(res, 200, a));
  return agents;
}
