/** orchctl agents list | summary | show | approve | reject | rm | tag | untag | attrs | metrics | upgrade | upgrades */
import type { Command } from "commander";
import { unwrap, type Agent, type AgentPage, type ResponseBody } from "@orch/client";
import { parseLimit, parseTagArg, parseTime } from "../args.js";
import { action, type Context } from "../context.js";
import { CliError, ProblemError } from "../errors.js";
import {
  AGENT_COLUMNS,
  ATTRIBUTE_COLUMNS,
  METRIC_COLUMNS,
  agentFields,
  agentLabel,
  agentRows,
  attributeRows,
  metricRows,
  shortId,
  summaryFields,
  tagList,
} from "../format/agents.js";
import type { CliIO } from "../output.js";
import { registerUpgrades } from "./agent-upgrades.js";
import { count } from "../format/units.js";

const MAX_PAGES = 10_000;
const STATUSES = ["pending", "approved", "rejected"] as const;
type AgentStatus = (typeof STATUSES)[number];
export type AgentSummary = ResponseBody<"/api/v1/agents/summary", "get">;
const SELECTOR_HELP =
  "only agents this selector matches, e.g. 'env=prod,role in (web,db)' (AND-ed with your scope; see docs/modules.md#selectors)";
const node = (node_id: string) => ({ params: { path: { node_id } } });

// ---- API ---------------------------------------------------------------------------------------

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
        params: { query: { status: opts.status, selector: opts.selector, limit: opts.limit?.toString(), cursor } },
      }),
    );
  let page = await fetchPage(opts.cursor);
  if (!opts.all) return page;
  const agents = [...page.agents];
  const seen = new Set<string>();
  for (let i = 0; page.has_more && page.next_cursor; i++) {
    if (seen.has(page.next_cursor) || i >= MAX_PAGES)
      throw new CliError("the server's pagination does not advance (repeated cursor)", "bad_response");
    seen.add(page.next_cursor);
    page = await fetchPage(page.next_cursor);
    agents.push(...page.agents);
  }
  return { agents, has_more: false, next_cursor: null };
}

/**
 * The agent a reference names: node id, name, or (what `agents list` prints) a unique node-id
 * prefix of at least 4 hex characters.
 */
export async function resolveAgent(ctx: Context, ref: string): Promise<Agent> {
  try {
    return unwrap(await ctx.api.GET("/api/v1/agents/{node_id}", node(ref)));
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

type Sub = (agents: Command, io: CliIO) => void;

const list: Sub = (agents, io) =>
  agents
    .command("list")
    .alias("ls")
    .description("list agents")
    .option("--status <status>", `only agents with this status (${STATUSES.join(", ")})`)
    .option("--selector <expr>", SELECTOR_HELP)
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue from a previous page's next_cursor")
    .option("--all", "fetch every page")
    .action(
      action(
        io,
        async (ctx, opts: { status?: string; selector?: string; limit?: string; cursor?: string; all?: boolean }) => {
          if (opts.status && !STATUSES.includes(opts.status as AgentStatus))
            throw new CliError(`--status must be one of ${STATUSES.join(", ")}`, "invalid_argument");
          const page = await listAgents(ctx, {
            status: opts.status as AgentStatus | undefined,
            selector: opts.selector,
            limit: parseLimit(opts.limit),
            cursor: opts.cursor,
            all: opts.all,
          });
          ctx.out.result(page, () => {
            ctx.out.table(AGENT_COLUMNS, agentRows(page.agents, Date.now()));
            if (page.has_more && page.next_cursor)
              ctx.out.note(`more agents: orchctl agents list --cursor ${page.next_cursor} (or --all)`);
            if (page.agents.some((a) => a.outdated))
              ctx.out.note("* outdated: a newer orch-agent is published (orchctl agents upgrade)");
          });
        },
      ),
    );

const summary: Sub = (agents, io) =>
  agents
    .command("summary")
    .description("count agents by status and connection (connected/disconnected split the approved ones)")
    .option("--selector <expr>", SELECTOR_HELP)
    .action(
      action(io, async (ctx, opts: { selector?: string }) => {
        const s: AgentSummary = unwrap(
          await ctx.api.GET("/api/v1/agents/summary", { params: { query: { selector: opts.selector } } }),
        );
        ctx.out.result(s, () => ctx.out.fields(summaryFields(s)));
      }),
    );

const show: Sub = (agents, io) =>
  agents
    .command("show")
    .description("show one agent with its tags and attributes")
    .argument("<agent>", "node id, short id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const a = await resolveAgent(ctx, ref);
        ctx.out.result(a, () => {
          ctx.out.fields(agentFields(a));
          if (Object.keys(a.attributes).length) {
            ctx.out.line("");
            ctx.out.table(ATTRIBUTE_COLUMNS, attributeRows(a.attributes));
          }
        });
      }),
    );

const approve: Sub = (agents, io) =>
  agents
    .command("approve")
    .description("approve a pending agent and give it its immutable name")
    .argument("<agent>", "node id or short id")
    .requiredOption("--name <name>", "DNS-label name (a-z, 0-9, '-'), immutable once set")
    .action(
      action(io, async (ctx, ref: string, opts: { name: string }) => {
        const { node_id } = await resolveAgent(ctx, ref);
        const a = unwrap(
          await ctx.api.POST("/api/v1/agents/{node_id}", {
            ...node(node_id),
            body: { status: "approved", name: opts.name },
          }),
        );
        ctx.out.result(a, () => ctx.out.line(`Approved agent ${a.name} (${a.node_id})`));
      }),
    );

const reject: Sub = (agents, io) =>
  agents
    .command("reject")
    .description("reject an agent: its link is closed and it is refused from then on")
    .argument("<agent>", "node id, short id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const { node_id } = await resolveAgent(ctx, ref);
        const a = unwrap(
          await ctx.api.POST("/api/v1/agents/{node_id}", { ...node(node_id), body: { status: "rejected" } }),
        );
        ctx.out.result(a, () => ctx.out.line(`Rejected agent ${agentLabel(a)} (${a.node_id})`));
      }),
    );

const remove: Sub = (agents, io) =>
  agents
    .command("rm")
    .alias("remove")
    .description("remove a rejected agent's record")
    .argument("<agent>", "node id, short id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const a = await resolveAgent(ctx, ref);
        unwrap(await ctx.api.DELETE("/api/v1/agents/{node_id}", node(a.node_id)));
        ctx.out.result({ removed: true, agent: a }, () =>
          ctx.out.line(`Removed agent ${agentLabel(a)} (${a.node_id})`),
        );
      }),
    );

const tag: Sub = (agents, io) =>
  agents
    .command("tag")
    .description("set tags on an agent (each key=value is set; other tags are kept)")
    .argument("<agent>", "node id, short id or name")
    .argument("<key=value...>", "tags to set")
    .action(
      action(io, async (ctx, ref: string, pairs: string[]) => {
        const tags = pairs.map(parseTagArg);
        const { node_id } = await resolveAgent(ctx, ref);
        let a: Agent | undefined;
        for (const [key, value] of tags)
          a = unwrap(
            await ctx.api.PUT("/api/v1/agents/{node_id}/tags/{key}", {
              params: { path: { node_id, key } },
              body: { value },
            }),
          );
        ctx.out.result(a, () => ctx.out.line(`Tags of ${agentLabel(a!)}: ${tagList(a!.tags)}`));
      }),
    );

const untag: Sub = (agents, io) =>
  agents
    .command("untag")
    .description("remove tags from an agent")
    .argument("<agent>", "node id, short id or name")
    .argument("<key...>", "tag keys to remove")
    .action(
      action(io, async (ctx, ref: string, keys: string[]) => {
        let a = await resolveAgent(ctx, ref);
        for (const key of keys)
          a = unwrap(
            await ctx.api.DELETE("/api/v1/agents/{node_id}/tags/{key}", {
              params: { path: { node_id: a.node_id, key } },
            }),
          );
        ctx.out.result(a, () => ctx.out.line(`Tags of ${agentLabel(a)}: ${tagList(a.tags)}`));
      }),
    );

const attrs: Sub = (agents, io) =>
  agents
    .command("attrs")
    .description("show the attributes an agent reported")
    .argument("<agent>", "node id, short id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const { node_id } = await resolveAgent(ctx, ref);
        const r = unwrap(await ctx.api.GET("/api/v1/agents/{node_id}/attributes", node(node_id)));
        ctx.out.result(r, () => ctx.out.table(ATTRIBUTE_COLUMNS, attributeRows(r.attributes)));
      }),
    );

const metrics: Sub = (agents, io) =>
  agents
    .command("metrics")
    .description("show an agent's metrics history (newest first) or its latest sample")
    .argument("<agent>", "node id, short id or name")
    .option("--since <time>", "RFC 3339 time or a duration back from now (15m, 2h, 7d)")
    .option("--until <time>", "RFC 3339 time or a duration back from now (exclusive)")
    .option("--limit <n>", "at most this many samples (1-1000, default 100)")
    .option("--latest", "only the newest sample")
    .action(
      action(
        io,
        async (ctx, ref: string, opts: { since?: string; until?: string; limit?: string; latest?: boolean }) => {
          const now = Date.now();
          const query = {
            since: parseTime("--since", opts.since, now),
            until: parseTime("--until", opts.until, now),
            limit: parseLimit(opts.limit)?.toString(),
          };
          const { node_id } = await resolveAgent(ctx, ref);
          if (opts.latest) {
            const s = unwrap(await ctx.api.GET("/api/v1/agents/{node_id}/metrics/latest", node(node_id)));
            ctx.out.result(s, () => ctx.out.table(METRIC_COLUMNS, metricRows([s])));
            return;
          }
          const r = unwrap(
            await ctx.api.GET("/api/v1/agents/{node_id}/metrics", { params: { path: { node_id }, query } }),
          );
          ctx.out.result(r, () => {
            ctx.out.table(METRIC_COLUMNS, metricRows(r.samples));
            if (!r.samples.length) ctx.out.note("no samples in this range");
          });
        },
      ),
    );

export function register(program: Command, io: CliIO): void {
  const agents = program.command("agents").description("list, approve, reject, tag and inspect agents");
  for (const sub of [list, summary, show, approve, reject, remove, tag, untag, attrs, metrics]) sub(agents, io);
  registerUpgrades(agents, io);
}
