/** orchctl audit [list] | prune | retention [set] — query, tail and prune the audit log */
import { backoff } from "@orch/kit/backoff";
import type { Command } from "commander";
import { unwrap, type AuditEvent, type AuditPage, type AuditRetention, type QueryParams } from "@orch/client";
import { nodeIdOrRef } from "../agent-lookup.js";
import { action, type Context } from "../context.js";
import { CliError, ProblemError } from "../errors.js";
import {
  AUDIT_COLUMNS,
  auditRow,
  auditStreamHeader,
  auditStreamLine,
  prunedLine,
  retentionFields,
} from "../format/audit.js";
import { apiUrl, type Query } from "../http.js";
import type { CliIO } from "../output.js";
import { pages } from "../pages.js";
import { openSse } from "../sse.js";

interface FilterOptions {
  agent?: string;
  operator?: string;
  eventType?: string;
  category?: string;
  after?: string;
  before?: string;
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** RFC 3339 is passed through; `30m`, `12h`, `7d`, `2w` mean that long before `now`. */
export function timeArg(flag: string, v: string | undefined, now = Date.now()): string | undefined {
  if (v === undefined) return undefined;
  const rel = /^(\d+)([smhdw])$/.exec(v);
  if (rel) return new Date(now - Number(rel[1]) * UNITS[rel[2]!]!).toISOString();
  if (/^\d{4}-\d{2}-\d{2}T/i.test(v)) return v;
  throw new CliError(
    `${flag} must be an RFC 3339 time (2025-01-31T12:00:00Z) or a duration ago (30m, 12h, 7d), got ${JSON.stringify(v)}`,
    "invalid_argument",
  );
}

function parseLimit(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 500)
    throw new CliError(`--limit must be an integer from 1 to 500, got ${JSON.stringify(v)}`, "invalid_argument");
  return n;
}

export function filterQuery(o: FilterOptions): Query {
  return {
    agent: o.agent,
    operator: o.operator,
    event_type: o.eventType,
    category: o.category,
    after: timeArg("--after", o.after),
    before: timeArg("--before", o.before),
  };
}

/** One page, or every page (following next_cursor) with `all`. */
export async function listAudit(
  ctx: Context,
  query: Query,
  opts: { limit?: number; cursor?: string; all?: boolean },
): Promise<AuditPage> {
  const fetchPage = async (cursor: string | undefined) =>
    unwrap(
      await ctx.api.GET("/api/v1/audit", {
        params: { query: { ...query, limit: opts.limit, cursor } as QueryParams<"/api/v1/audit", "get"> },
      }),
    );
  return pages(fetchPage, "events", opts);
}

/**
 * Tails GET /audit/stream until interrupted, reconnecting with Last-Event-ID (so nothing is
 * missed) after a dropped connection or 45 s of silence (the server sends a comment every 15 s).
 */
// A dropped stream comes back quickly; a server that stays away is asked at most every 10 s.
const reconnectPolicy = backoff({ initialMs: 500, maxMs: 10_000 });

async function follow(
  ctx: Context,
  query: Query,
  cursor: string | undefined,
  print: (e: AuditEvent) => void,
): Promise<void> {
  const server = await ctx.orch.server();
  const token = await ctx.orch.token(server);
  let lastId = cursor;
  let failures = 0;
  let stop = false;
  let current: { destroy(): void } | undefined;
  const onSignal = () => {
    stop = true;
    current?.destroy();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    while (!stop) {
      try {
        const stream = openSse({
          url: new URL(apiUrl(server, "/audit/stream", query)),
          token,
          lastEventId: lastId,
          timeoutMs: ctx.timeoutMs,
          idleMs: 45_000,
          onOpen: () => {
            failures = 0;
          },
          onFrame: ({ id, data }) => {
            if (id) lastId = id;
            print(JSON.parse(data) as AuditEvent);
          },
        });
        current = stream;
        // An error while stopping is the stream being destroyed: it ends the loop below.
        await stream.done;
      } catch (err) {
        // Refusals (bad filter, expired session) will not heal by retrying.
        if (err instanceof ProblemError && err.status >= 400 && err.status < 500) throw err;
        if (!stop) ctx.out.note(`stream interrupted (${(err as Error).message}); reconnecting`);
      }
      if (stop) break;
      await new Promise((r) => setTimeout(r, reconnectPolicy(failures++)));
    }
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
  }
}

function addFilters(cmd: Command): Command {
  return cmd
    .option(
      "--agent <agent>",
      "events about this agent: as actor, target, or the agent of a terminal session or secret use (name, node id or short id)",
    )
    .option("--operator <id-or-name>", "events done by this operator")
    .option("--event-type <type>", "exact event type, e.g. agent.approved")
    .option("--category <prefix>", "event type prefix at a dot boundary, e.g. agent")
    .option("--after <time>", "from this time on (RFC 3339, or 30m/12h/7d ago)")
    .option("--before <time>", "before this time (RFC 3339, or 30m/12h/7d ago)");
}

type Sub = (parent: Command, io: CliIO) => void;

const list: Sub = (audit, io) =>
  addFilters(
    audit.command("list", { isDefault: true }).description("list audit events, newest first (the default subcommand)"),
  )
    .option("--limit <n>", "page size (1-500, default 50)")
    .option("--cursor <id>", "continue after this event id (a previous page's next_cursor)")
    .option("--all", "fetch every page")
    .option("-f, --follow", "stream events as they are recorded (starts now, or after --cursor); Ctrl-C stops")
    .action(
      action(
        io,
        async (ctx, opts: FilterOptions & { limit?: string; cursor?: string; all?: boolean; follow?: boolean }) => {
          const query = filterQuery({ ...opts, agent: await nodeIdOrRef(ctx, opts.agent) });
          if (opts.follow) {
            if (opts.all || opts.limit)
              throw new CliError("--follow cannot be combined with --all or --limit", "invalid_argument");
            // One JSON document per line with --json (NDJSON); a row per event otherwise.
            if (!ctx.json) io.stdout.write(auditStreamHeader());
            await follow(ctx, query, opts.cursor, (e) =>
              io.stdout.write(ctx.json ? `${JSON.stringify(e)}\n` : auditStreamLine(e)),
            );
            return;
          }
          const page = await listAudit(ctx, query, {
            limit: parseLimit(opts.limit),
            cursor: opts.cursor,
            all: opts.all,
          });
          ctx.out.result(page, () => {
            ctx.out.table(AUDIT_COLUMNS, page.events.map(auditRow));
            if (page.has_more && page.next_cursor)
              ctx.out.note(`more events: add --cursor ${page.next_cursor} (or --all)`);
          });
        },
      ),
    );

const prune: Sub = (audit, io) =>
  audit
    .command("prune")
    .description("delete events recorded before a time (admin); an audit.pruned event records it")
    .requiredOption("--before <time>", "cutoff (RFC 3339, or 30d etc. ago); earlier events are deleted")
    .action(
      action(io, async (ctx, opts: { before: string }) => {
        const before = timeArg("--before", opts.before)!;
        const r = unwrap(await ctx.api.DELETE("/api/v1/audit", { params: { query: { before } } }));
        ctx.out.result(r, () => ctx.out.line(prunedLine(r.deleted, before)));
      }),
    );

const showRetention = (ctx: Context, r: AuditRetention) => ctx.out.result(r, () => ctx.out.fields(retentionFields(r)));

const retentionGet: Sub = (retention, io) =>
  retention
    .command("get", { isDefault: true })
    .description("show the retention in force")
    .action(action(io, async (ctx) => showRetention(ctx, unwrap(await ctx.api.GET("/api/v1/audit/retention")))));

const retentionSet: Sub = (retention, io) =>
  retention
    .command("set")
    .description(
      "set the retention override in days (admin); `off` turns pruning off; `default` removes the override (the configuration file's value applies)",
    )
    .argument("<days>", "whole days ≥ 1, `off`, or `default`")
    .action(
      action(io, async (ctx, days: string) => {
        if (days === "default") {
          showRetention(ctx, unwrap(await ctx.api.DELETE("/api/v1/audit/retention")));
          return;
        }
        let value: number | null;
        if (days === "off" || days === "none" || days === "null") value = null;
        else {
          value = Number(days);
          if (!/^\d+$/.test(days) || value < 1)
            throw new CliError(
              `days must be a whole number ≥ 1, \`off\` or \`default\`, got ${JSON.stringify(days)}`,
              "invalid_argument",
            );
        }
        showRetention(ctx, unwrap(await ctx.api.PUT("/api/v1/audit/retention", { body: { retention_days: value } })));
      }),
    );

export function register(program: Command, io: CliIO): void {
  const audit = program.command("audit").description("query, tail and prune the audit log");
  list(audit, io);
  prune(audit, io);
  const retention = audit.command("retention").description("show or change how long audit events are kept");
  retentionGet(retention, io);
  retentionSet(retention, io);
}
