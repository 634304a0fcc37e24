/** orchctl agents list | show | approve | reject | rm | tag | untag | attrs | metrics */
import type { Command } from "commander";
import { action, type Context } from "../context.js";
import { CliError, ProblemError } from "../errors.js";
import type { CliIO } from "../output.js";

export interface AgentJson {
  node_id: string;
  name: string | null;
  status: "pending" | "approved" | "rejected";
  tags: Record<string, string>;
  attributes: Record<string, string>;
  connected: boolean;
  first_seen: string | null;
  last_seen: string | null;
  address: string | null;
  version: string | null;
  public_key?: string;
}

export interface AgentPage {
  agents: AgentJson[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface MetricsSampleJson {
  taken_at: string;
  cpu_percent: number;
  load1: number;
  load5: number;
  load15: number;
  memory_total: number;
  memory_used: number;
  disk_total: number;
  disk_used: number;
  net_rx_bytes: number;
  net_tx_bytes: number;
  uptime_seconds: number;
}

const MAX_PAGES = 10_000;
const STATUSES = ["pending", "approved", "rejected"];
export const shortId = (nodeId: string) => nodeId.slice(0, 12);
const agentPath = (ref: string) => `/agents/${encodeURIComponent(ref)}`;

// ---- formatting (pure; unit-tested) ------------------------------------------------------------

/** "just now", "42s ago", "5m ago", "3h ago", "2d ago"; "-" when unknown. */
export function ago(iso: string | null, now: number): string {
  if (!iso) return "-";
  const s = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(s)) return "-";
  if (s < 2) return "just now";
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** Tags as `k=v,k2=v2` in key order; "-" when none. */
export function tagList(tags: Record<string, string>): string {
  const keys = Object.keys(tags).sort();
  return keys.length ? keys.map((k) => `${k}=${tags[k]}`).join(",") : "-";
}

export function agentRows(agents: AgentJson[], now: number): unknown[][] {
  return agents.map((a) => [
    a.name ?? "-",
    shortId(a.node_id),
    a.status,
    a.connected ? "yes" : "no",
    tagList(a.tags),
    ago(a.last_seen, now),
  ]);
}
export const AGENT_COLUMNS = ["NAME", "ID", "STATUS", "ONLINE", "TAGS", "LAST SEEN"];

/** 1536 → "1.5 KiB". */
export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** 93784 → "1d2h3m". */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return `${d}d${h}h${m}m`;
  if (h) return `${h}h${m}m`;
  return m ? `${m}m${s % 60}s` : `${s % 60}s`;
}

export const METRIC_COLUMNS = ["TIME", "CPU%", "LOAD1", "LOAD5", "LOAD15", "MEMORY", "DISK", "RX", "TX", "UPTIME"];
export function metricRows(samples: MetricsSampleJson[]): unknown[][] {
  return samples.map((s) => [
    s.taken_at,
    s.cpu_percent.toFixed(1),
    s.load1.toFixed(2),
    s.load5.toFixed(2),
    s.load15.toFixed(2),
    `${bytes(s.memory_used)}/${bytes(s.memory_total)}`,
    `${bytes(s.disk_used)}/${bytes(s.disk_total)}`,
    bytes(s.net_rx_bytes),
    bytes(s.net_tx_bytes),
    duration(s.uptime_seconds),
  ]);
}

/** `k=v` → [k, v] (split at the first '='); the server validates key and value. */
export function parseTagArg(arg: string): [string, string] {
  const i = arg.indexOf("=");
  if (i <= 0) throw new CliError(`tag ${JSON.stringify(arg)} is not key=value`, "invalid_argument");
  return [arg.slice(0, i), arg.slice(i + 1)];
}

/** RFC 3339 as is, or a duration back from now (`30s`, `15m`, `2h`, `7d`) as RFC 3339. */
export function parseTime(flag: string, v: string | undefined, now: number): string | undefined {
  if (v === undefined) return undefined;
  const d = /^(\d+)([smhd])$/.exec(v);
  if (d)
    return new Date(
      now - Number(d[1]) * { s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[d[2] as "s" | "m" | "h" | "d"],
    ).toISOString();
  if (/^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(Date.parse(v))) return v;
  throw new CliError(
    `${flag} must be an RFC 3339 time or a duration like 15m, 2h, 7d; got ${JSON.stringify(v)}`,
    "invalid_argument",
  );
}

export function parseLimit(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new CliError(`--limit must be a positive integer, got ${JSON.stringify(v)}`, "invalid_argument");
  return n;
}

// ---- API ---------------------------------------------------------------------------------------

/** One page, or every page (following next_cursor) with `all`. */
export async function listAgents(
  ctx: Context,
  opts: { status?: string; limit?: number; cursor?: string; all?: boolean },
): Promise<AgentPage> {
  const fetchPage = (cursor: string | undefined) =>
    ctx.api<AgentPage>("GET", "/agents", undefined, {
      auth: true,
      query: { status: opts.status, limit: opts.limit, cursor },
    });
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
export async function resolveAgent(ctx: Context, ref: string): Promise<AgentJson> {
  try {
    return await ctx.api<AgentJson>("GET", agentPath(ref), undefined, { auth: true });
  } catch (err) {
    if (!(err instanceof ProblemError) || err.status !== 404 || !/^[0-9a-f]{4,31}$/.test(ref)) throw err;
    const matches = (await listAgents(ctx, { all: true, limit: 500 })).agents.filter((a) => a.node_id.startsWith(ref));
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1)
      throw new CliError(
        `${ref} matches ${matches.length} agents: ${matches.map((a) => shortId(a.node_id)).join(", ")}; give more of the id`,
        "ambiguous_agent",
      );
    throw err;
  }
}

function showAgent(ctx: Context, a: AgentJson): void {
  ctx.out.fields([
    ["name", a.name],
    ["node_id", a.node_id],
    ["status", a.status],
    ["connected", a.connected ? "yes" : "no"],
    ["address", a.address],
    ["version", a.version],
    ["first_seen", a.first_seen],
    ["last_seen", a.last_seen],
    ["public_key", a.public_key],
    ["tags", tagList(a.tags)],
  ]);
  const attrs = Object.keys(a.attributes).sort();
  if (attrs.length) {
    ctx.out.line("");
    ctx.out.table(
      ["ATTRIBUTE", "VALUE"],
      attrs.map((k) => [k, a.attributes[k]]),
    );
  }
}

export function register(program: Command, io: CliIO): void {
  const agents = program.command("agents").description("list, approve, reject, tag and inspect agents");

  agents
    .command("list")
    .alias("ls")
    .description("list agents")
    .option("--status <status>", `only agents with this status (${STATUSES.join(", ")})`)
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue from a previous page's next_cursor")
    .option("--all", "fetch every page")
    .action(
      action(io, async (ctx, opts: { status?: string; limit?: string; cursor?: string; all?: boolean }) => {
        if (opts.status && !STATUSES.includes(opts.status))
          throw new CliError(`--status must be one of ${STATUSES.join(", ")}`, "invalid_argument");
        const page = await listAgents(ctx, {
          status: opts.status,
          limit: parseLimit(opts.limit),
          cursor: opts.cursor,
          all: opts.all,
        });
        ctx.out.result(page, () => {
          ctx.out.table(AGENT_COLUMNS, agentRows(page.agents, Date.now()));
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more agents: orchctl agents list --cursor ${page.next_cursor} (or --all)`);
        });
      }),
    );

  agents
    .command("show")
    .description("show one agent with its tags and attributes")
    .argument("<agent>", "node id, short id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const a = await resolveAgent(ctx, ref);
        ctx.out.result(a, () => showAgent(ctx, a));
      }),
    );

  agents
    .command("approve")
    .description("approve a pending agent and give it its immutable name")
    .argument("<agent>", "node id or short id")
    .requiredOption("--name <name>", "DNS-label name (a-z, 0-9, '-'), immutable once set")
    .action(
      action(io, async (ctx, ref: string, opts: { name: string }) => {
        const { node_id } = await resolveAgent(ctx, ref);
        const a = await ctx.api<AgentJson>(
          "POST",
          agentPath(node_id),
          { status: "approved", name: opts.name },
          { auth: true },
        );
        ctx.out.result(a, () => ctx.out.line(`Approved agent ${a.name} (${a.node_id})`));
      }),
    );

  agents
    .command("reject")
    .description("reject an agent: its link is closed and it is refused from then on")
    .argument("<agent>", "node id, short id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const { node_id } = await resolveAgent(ctx, ref);
        const a = await ctx.api<AgentJson>("POST", agentPath(node_id), { status: "rejected" }, { auth: true });
        ctx.out.result(a, () => ctx.out.line(`Rejected agent ${a.name ?? shortId(a.node_id)} (${a.node_id})`));
      }),
    );

  agents
    .command("rm")
    .alias("remove")
    .description("remove a rejected agent's record")
    .argument("<agent>", "node id, short id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const a = await resolveAgent(ctx, ref);
        await ctx.api("DELETE", agentPath(a.node_id), undefined, { auth: true });
        ctx.out.result({ removed: true, agent: a }, () =>
          ctx.out.line(`Removed agent ${a.name ?? shortId(a.node_id)} (${a.node_id})`),
        );
      }),
    );

  agents
    .command("tag")
    .description("set tags on an agent (each key=value is set; other tags are kept)")
    .argument("<agent>", "node id, short id or name")
    .argument("<key=value...>", "tags to set")
    .action(
      action(io, async (ctx, ref: string, pairs: string[]) => {
        const tags = pairs.map(parseTagArg);
        const { node_id } = await resolveAgent(ctx, ref);
        let a: AgentJson | undefined;
        for (const [key, value] of tags)
          a = await ctx.api<AgentJson>(
            "PUT",
            `${agentPath(node_id)}/tags/${encodeURIComponent(key)}`,
            { value },
            { auth: true },
          );
        ctx.out.result(a, () => ctx.out.line(`Tags of ${a!.name ?? shortId(a!.node_id)}: ${tagList(a!.tags)}`));
      }),
    );

  agents
    .command("untag")
    .description("remove tags from an agent")
    .argument("<agent>", "node id, short id or name")
    .argument("<key...>", "tag keys to remove")
    .action(
      action(io, async (ctx, ref: string, keys: string[]) => {
        let a = await resolveAgent(ctx, ref);
        for (const key of keys)
          a = await ctx.api<AgentJson>("DELETE", `${agentPath(a.node_id)}/tags/${encodeURIComponent(key)}`, undefined, {
            auth: true,
          });
        ctx.out.result(a, () => ctx.out.line(`Tags of ${a.name ?? shortId(a.node_id)}: ${tagList(a.tags)}`));
      }),
    );

  agents
    .command("attrs")
    .description("show the attributes an agent reported")
    .argument("<agent>", "node id, short id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const { node_id } = await resolveAgent(ctx, ref);
        const r = await ctx.api<{ node_id: string; attributes: Record<string, string> }>(
          "GET",
          `${agentPath(node_id)}/attributes`,
          undefined,
          { auth: true },
        );
        ctx.out.result(r, () =>
          ctx.out.table(
            ["ATTRIBUTE", "VALUE"],
            Object.keys(r.attributes)
              .sort()
              .map((k) => [k, r.attributes[k]]),
          ),
        );
      }),
    );

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
            limit: parseLimit(opts.limit),
          };
          const { node_id } = await resolveAgent(ctx, ref);
          if (opts.latest) {
            const s = await ctx.api<MetricsSampleJson & { node_id: string }>(
              "GET",
              `${agentPath(node_id)}/metrics/latest`,
              undefined,
              { auth: true },
            );
            ctx.out.result(s, () => ctx.out.table(METRIC_COLUMNS, metricRows([s])));
            return;
          }
          const r = await ctx.api<{ node_id: string; samples: MetricsSampleJson[] }>(
            "GET",
            `${agentPath(node_id)}/metrics`,
            undefined,
            { auth: true, query },
          );
          ctx.out.result(r, () => {
            ctx.out.table(METRIC_COLUMNS, metricRows(r.samples));
            if (!r.samples.length) ctx.out.note("no samples in this range");
          });
        },
      ),
    );
}
