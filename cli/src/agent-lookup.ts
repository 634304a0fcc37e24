/** Finding agents for commands that take one: `agents …` and `agents upgrade` both name agents the same way. */
import { unwrap, type Agent, type AgentPage } from "@orch/client";
import type { Context } from "./context.js";
import { CliError, ProblemError } from "./errors.js";
import { shortId } from "./format/agents.js";
import { count } from "./format/units.js";
import { pages } from "./pages.js";

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
        `${ref} matches ${count(matches.length, "agent")}: ${matches.map((a) => shortId(a.node_id)).join(", ")}; give more of the id`,
        "ambiguous_agent",
      );
    throw err;
  }
}
