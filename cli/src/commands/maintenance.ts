/** orchctl maintenance add | list | show | end | rm */
import type { Command } from "commander";
import { unwrap, type MaintenanceWindow } from "@orch/client";
import { action, type Context } from "../context.js";
import { operatorNames } from "../operator-names.js";
import { CliError } from "../errors.js";
import { WINDOW_COLUMNS, windowFields, windowRows, windowVerbLine } from "../format/maintenance.js";
import { isoSeconds } from "../format/time.js";
import type { CliIO } from "../output.js";

const byId = (id: string) => ({ params: { path: { id } } });
const nowSec = () => Math.floor(Date.now() / 1000);

/** "now", Unix seconds, or an ISO 8601 / RFC 3339 time → Unix seconds. */
export function parseTime(flag: string, v: string): number {
  if (v === "now") return nowSec();
  if (/^\d+$/.test(v)) return Number(v);
  const t = Date.parse(v);
  if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}/.test(v))
    throw new CliError(
      `${flag} must be "now", Unix seconds or an ISO 8601 time, got ${JSON.stringify(v)}`,
      "invalid_argument",
    );
  return Math.floor(t / 1000);
}

/** "90m", "2h", "1h30m", "1d" → seconds. */
export function parseDuration(v: string, flag = "--duration"): number {
  const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(v);
  const secs = m
    ? Number(m[1] ?? 0) * 86400 + Number(m[2] ?? 0) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0)
    : 0;
  if (!m || secs <= 0)
    throw new CliError(`${flag} must look like 30m, 2h, 1h30m or 1d, got ${JSON.stringify(v)}`, "invalid_argument");
  return secs;
}

async function showWindow(ctx: Context, w: MaintenanceWindow, verb?: string) {
  const names = await operatorNames(ctx);
  ctx.out.result(w, () => {
    if (verb) ctx.out.line(windowVerbLine(verb, w));
    ctx.out.fields(windowFields(w, names));
  });
}

type Sub = (parent: Command, io: CliIO) => void;

const add: Sub = (m, io) =>
  m
    .command("add")
    .description("add a window (admin)")
    .requiredOption("--reason <text>", "why")
    .option("--start <time>", '"now", Unix seconds or ISO 8601', "now")
    .option("--end <time>", '"now", Unix seconds or ISO 8601')
    .option("--duration <d>", "length instead of --end, e.g. 2h or 1h30m")
    .action(
      action(io, async (ctx, opts: { reason: string; start: string; end?: string; duration?: string }) => {
        if (!opts.end === !opts.duration)
          throw new CliError("give exactly one of --end or --duration", "invalid_argument");
        const starts_at = parseTime("--start", opts.start);
        const ends_at = opts.end ? parseTime("--end", opts.end) : starts_at + parseDuration(opts.duration!);
        await showWindow(
          ctx,
          unwrap(
            await ctx.api.POST("/api/v1/maintenance-windows", { body: { starts_at, ends_at, reason: opts.reason } }),
          ),
          "Added",
        );
      }),
    );

const list: Sub = (m, io) =>
  m
    .command("list")
    .description("list windows")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue from a previous page's next_cursor")
    .action(
      action(io, async (ctx, opts: { limit?: string; cursor?: string }) => {
        const page = unwrap(
          await ctx.api.GET("/api/v1/maintenance-windows", {
            params: {
              query: { limit: opts.limit === undefined ? undefined : Number(opts.limit), cursor: opts.cursor },
            },
          }),
        );
        ctx.out.result(page, () => {
          ctx.out.table(WINDOW_COLUMNS, windowRows(page.windows));
          if (page.has_more && page.next_cursor) ctx.out.note(`more: --cursor ${page.next_cursor}`);
        });
      }),
    );

const show: Sub = (m, io) =>
  m
    .command("show")
    .description("show one window")
    .argument("<id>")
    .action(
      action(io, async (ctx, id: string) =>
        showWindow(ctx, unwrap(await ctx.api.GET("/api/v1/maintenance-windows/{id}", byId(id)))),
      ),
    );

const end: Sub = (m, io) =>
  m
    .command("end")
    .description("end a window now (admin)")
    .argument("<id>")
    .action(
      action(io, async (ctx, id: string) => {
        const w = unwrap(await ctx.api.GET("/api/v1/maintenance-windows/{id}", byId(id)));
        const now = nowSec();
        if (w.starts_at > now)
          throw new CliError(
            `window ${w.id} has not started yet; remove it with orchctl maintenance rm ${w.id}`,
            "window_not_started",
          );
        if (w.ends_at <= now)
          throw new CliError(`window ${w.id} already ended at ${isoSeconds(w.ends_at)}`, "window_ended");
        // Times are whole seconds and a window must last one: one that started this second ends at the next.
        const ends_at = Math.max(now, w.starts_at + 1);
        await showWindow(
          ctx,
          unwrap(await ctx.api.PUT("/api/v1/maintenance-windows/{id}", { ...byId(w.id), body: { ends_at } })),
          "Ended",
        );
      }),
    );

const remove: Sub = (m, io) =>
  m
    .command("rm")
    .alias("remove")
    .description("delete a window (admin)")
    .argument("<id>")
    .action(
      action(io, async (ctx, id: string) => {
        unwrap(await ctx.api.DELETE("/api/v1/maintenance-windows/{id}", byId(id)));
        ctx.out.result({ removed: true, id }, () => ctx.out.line(`Removed maintenance window ${id}`));
      }),
    );

export function register(program: Command, io: CliIO): void {
  const m = program
    .command("maintenance")
    .description("maintenance windows: channel deliveries and scheduled drift checks pause while one is active");
  for (const sub of [add, list, show, end, remove]) sub(m, io);
}
