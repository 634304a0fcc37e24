/** orchctl agents list | summary | show | approve | reject | rm | tag | untag | attrs | metrics | upgrade | upgrades */
import type { Command } from "commander";
import { unwrap, type Agent, type AgentPage, type ResponseBody } from "@orch/client";
import { parseLimit, parseTagArg, parseTime } from "../args.js";
import { action } from "../context.js";
import { CliError } from "../errors.js";
import {
  AGENT_COLUMNS,
  ATTRIBUTE_COLUMNS,
  METRIC_COLUMNS,
  agentFields,
  agentLabel,
  agentRows,
  attributeRows,
  metricRows,
  summaryFields,
  tagList,
} from "../format/agents.js";
import { listCommand } from "../list-command.js";
import type { CliIO } from "../output.js";
import { registerUpgrades } from "./agent-upgrades.js";
import { AGENT_ARG, resolveAgent, STATUSES, type AgentStatus } from "../agent-lookup.js";

export type AgentSummary = ResponseBody<"/api/v1/agents/summary", "get">;
const SELECTOR_HELP =
  "only agents this selector matches, e.g. 'env=prod,role in (web,db)' (AND-ed with your scope; see docs/modules.md#selectors)";
const node = (node_id: string) => ({ params: { path: { node_id } } });

// ---- API ---------------------------------------------------------------------------------------

type Sub = (agents: Command, io: CliIO) => void;

const list: Sub = (agents, io) =>
  listCommand<"agents", AgentPage, { status?: AgentStatus; selector?: string }>(agents, io, {
    key: "agents",
    command: "agents list",
    description: "list agents",
    alias: "ls",
    cursorHelp: "continue from a previous page's next_cursor",
    options: (list) =>
      list
        .option("--status <status>", `only agents with this status (${STATUSES.join(", ")})`)
        .option("--selector <expr>", SELECTOR_HELP),
    filter(opts: { status?: string; selector?: string }) {
      if (opts.status && !STATUSES.includes(opts.status as AgentStatus))
        throw new CliError(`--status must be one of ${STATUSES.join(", ")}`, "invalid_argument");
      return { status: opts.status as AgentStatus | undefined, selector: opts.selector };
    },
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/agents", { params: { query } })),
    columns: AGENT_COLUMNS,
    rows: (items) => agentRows(items, Date.now()),
    notes: (page) =>
      page.agents.some((a) => a.outdated)
        ? ["* outdated: a newer orch-agent is published (orchctl agents upgrade)"]
        : [],
  });

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
    .argument("<agent>", AGENT_ARG)
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
    .argument("<agent>", "node id or short id (a pending agent has no name yet)")
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
    .argument("<agent>", AGENT_ARG)
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
    .argument("<agent>", AGENT_ARG)
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
    .argument("<agent>", AGENT_ARG)
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
    .argument("<agent>", AGENT_ARG)
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
    .argument("<agent>", AGENT_ARG)
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
    .argument("<agent>", AGENT_ARG)
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
            limit: parseLimit(opts.limit),
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
