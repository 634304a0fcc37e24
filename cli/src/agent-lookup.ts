/**
 * Finding agents for commands that take one. Every such command (agents …, ssh, apply, plan, drift,
 * state, run --node, secrets set --node, the --agent filters) names agents the same three ways: the
 * name, the full node id, or the short id `agents list` prints.
 */
import { unwrap, type Agent, type AgentPage } from "@orch/client";
import type { Context } from "./context.js";
import { CliError, ProblemError } from "./errors.js";
import { count } from "./format/units.js";
import { pages } from "./pages.js";

/** How every command taking one agent describes it. */
export const AGENT_ARG = "agent name, node id or short id (as agents list prints it)";

export const STATUSES = ["pending", "approved", "rejected"] as const;
export type AgentStatus = (typeof STATUSES)[number];

/** One page, or every page (following next_cursor) with `all`. */
export async function listAgents(
  ctx: Context,
  opts: {
    status?: AgentStatus | undefined;
    selector?: string | undefined;
    limit?: number | undefined;
    cursor?: string | undefined;
    all?: boolean | undefined;
  },
): Promise<AgentPage> {
  const fetchPage = async (cursor: string | undefined) =>
    unwrap(
      await ctx.api.GET("/api/v1/agents", {
        params: { query: { status: opts.status, selector: opts.selector, limit: opts.limit, cursor } },
      }),
    );
  return pages(fetchPage, "agents", opts);
}

/**
 * The agent a reference names: node id, name, or (what `agents list` prints) a unique node-id
 * prefix of at least 4 hex characters.
 */
export async function resolveAgent(ctx: Context, ref: string): Promise<Agent> {
  try {
    return unwrap(await ctx.api.GET("/api/v1/agents/{node_id}", { params: { path: { node_id: ref } } }));
  } catch (err) {
    if (!(err instanceof ProblemError) || err.status !== 404 || !/^[0-9a-f]{4,31}$/.test(ref)) throw err;
    const matches = (await listAgents(ctx, { all: true, limit: 500 })).agents.filter((a) => a.node_id.startsWith(ref));
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1)
      throw new CliError(
        // Full ids: the short ids of agents a prefix cannot tell apart may well be equal too.
        `${ref} matches ${count(matches.length, "agent")}: ${matches.map((a) => (a.name ? `${a.name} (${a.node_id})` : a.node_id)).join(", ")}; give more of the id`,
        "ambiguous_agent",
      );
    throw err;
  }
}

/** An agent's name for its node id; a node id it does not know (a gone or unnamed agent) unchanged. */
export type AgentNames = (nodeId: string) => string;

/**
 * Names for a few node ids, for human output only (`secrets show`'s restriction): one lookup
 * each, so only for a handful. With --json, or when a lookup fails, ids stay ids.
 */
export async function agentNames(ctx: Context, nodeIds: readonly string[]): Promise<AgentNames> {
  if (ctx.json || !nodeIds.length) return (id) => id;
  const found = await Promise.all(
    nodeIds.map(async (id) => {
      try {
        const a = unwrap(await ctx.api.GET("/api/v1/agents/{node_id}", { params: { path: { node_id: id } } }));
        return [id, a.name ?? id] as const;
      } catch (err) {
        if (err instanceof ProblemError) return [id, id] as const;
        throw err;
      }
    }),
  );
  const byId = new Map(found);
  return (id) => byId.get(id) ?? id;
}

/** The node id of the agent a reference names (see resolveAgent). */
export async function resolveNodeId(ctx: Context, ref: string): Promise<string> {
  return (await resolveAgent(ctx, ref)).node_id;
}

/**
 * The node id for a filter or a restriction (`--agent`, `secrets set --node`). These may name an
 * agent that is gone (its history stays in the audit log and in operations) or not yet joined, and
 * the server matches names and node ids itself: only a short id needs the lookup. So a reference
 * the lookup cannot answer for (not found, not visible to this operator, agents service down) is
 * passed on as given, and the server's answer to the query itself is what the command reports.
 */
export async function nodeIdOrRef(ctx: Context, ref: string): Promise<string>;
export async function nodeIdOrRef(ctx: Context, ref: string | undefined): Promise<string | undefined>;
export async function nodeIdOrRef(ctx: Context, ref: string | undefined): Promise<string | undefined> {
  if (ref === undefined) return undefined;
  try {
    return await resolveNodeId(ctx, ref);
  } catch (err) {
    if (err instanceof ProblemError) return ref;
    throw err;
  }
}
