/** orchctl maintenance add | list | show | end | rm */
import type { Command } from "commander";
import { action, type Context } from "../context.js";
import { CliError } from "../errors.js";
import type { CliIO } from "../output.js";

interface MaintenanceWindow {
  id: string;
  starts_at: number;
  ends_at: number;
  reason: string;
  created_by: string;
  active: boolean;
}

const nowSec = () => Math.floor(Date.now() / 1000);
const iso = (s: number) => new Date(s * 1000).toISOString();

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
export function parseDuration(v: string): number {
  const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(v);
  const secs = m
    ? Number(m[1] ?? 0) * 86400 + Number(m[2] ?? 0) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0)
    : 0;
  if (!m || secs <= 0)
    throw new CliError(`--duration must look like 30m, 2h, 1h30m or 1d, got ${JSON.stringify(v)}`, "invalid_argument");
  return secs;
}

function show(ctx: Context, w: MaintenanceWindow, verb?: string) {
  ctx.out.result(w, () => {
    if (verb) ctx.out.line(`${verb} maintenance window ${w.id}`);
    ctx.out.fields([
      ["id", w.id],
      ["starts_at", iso(w.starts_at)],
      ["ends_at", iso(w.ends_at)],
      ["active", w.active ? "yes" : "no"],
      ["reason", w.reason],
      ["created_by", w.created_by],
    ]);
  });
}

export function register(program: Command, io: CliIO): void {
  const m = program
    .command("maintenance")
    .description("maintenance windows: channel deliveries and scheduled drift checks pause while one is active");

  m.command("add")
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
        show(
          ctx,
          await ctx.api<MaintenanceWindow>(
            "POST",
            "/maintenance-windows",
            { starts_at, ends_at, reason: opts.reason },
            { auth: true },
          ),
          "Added",
        );
      }),
    );

  m.command("list")
    .description("list windows")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue from a previous page's next_cursor")
    .action(
      action(io, async (ctx, opts: { limit?: string; cursor?: string }) => {
        const page = await ctx.api<{ windows: MaintenanceWindow[]; has_more: boolean; next_cursor: string | null }>(
          "GET",
          "/maintenance-windows",
          undefined,
          { auth: true, query: { limit: opts.limit, cursor: opts.cursor } },
        );
        ctx.out.result(page, () => {
          ctx.out.table(
            ["ID", "START", "END", "ACTIVE", "REASON"],
            page.windows.map((w) => [w.id, iso(w.starts_at), iso(w.ends_at), w.active ? "yes" : "no", w.reason]),
          );
          if (page.has_more && page.next_cursor) ctx.out.note(`more: --cursor ${page.next_cursor}`);
        });
      }),
    );

  m.command("show")
    .description("show one window")
    .argument("<id>")
    .action(
      action(io, async (ctx, id: string) =>
        show(
          ctx,
          await ctx.api<MaintenanceWindow>("GET", `/maintenance-windows/${encodeURIComponent(id)}`, undefined, {
            auth: true,
          }),
        ),
      ),
    );

  m.command("end")
    .description("end a window now (admin)")
    .argument("<id>")
    .action(
      action(io, async (ctx, id: string) => {
        const w = await ctx.api<MaintenanceWindow>("GET", `/maintenance-windows/${encodeURIComponent(id)}`, undefined, {
          auth: true,
        });
        const now = nowSec();
        if (w.starts_at > now)
          throw new CliError(
            `window ${w.id} has not started yet; remove it with orchctl maintenance rm ${w.id}`,
            "window_not_started",
          );
        if (w.ends_at <= now) throw new CliError(`window ${w.id} already ended at ${iso(w.ends_at)}`, "window_ended");
        // Times are whole seconds and a window must last one: one that started this second ends at the next.
        const ends_at = Math.max(now, w.starts_at + 1);
        show(
          ctx,
          await ctx.api<MaintenanceWindow>(
            "PUT",
            `/maintenance-windows/${encodeURIComponent(w.id)}`,
            { ends_at },
            { auth: true },
          ),
          "Ended",
        );
      }),
    );

  m.command("rm")
    .alias("remove")
    .description("delete a window (admin)")
    .argument("<id>")
    .action(
      action(io, async (ctx, id: string) => {
        await ctx.api("DELETE", `/maintenance-windows/${encodeURIComponent(id)}`, undefined, { auth: true });
        ctx.out.result({ removed: true, id }, () => ctx.out.line(`Removed maintenance window ${id}`));
      }),
    );
}
