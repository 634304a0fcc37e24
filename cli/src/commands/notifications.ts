/** orchctl notifications [--unread] | read <id> | read-all */
import type { Command } from "commander";
import { action } from "../context.js";
import { CliError } from "../errors.js";
import type { CliIO } from "../output.js";

interface Notification {
  id: string;
  event_id: string;
  event_type: string;
  severity: string;
  summary: string;
  timestamp_ms: number;
  read: boolean;
}

export function register(program: Command, io: CliIO): void {
  const n = program
    .command("notifications")
    .description("your notifications (events of severity warning and above); read <id> | read-all")
    .option("--unread", "only unread ones")
    .option("--limit <n>", "how many (1-200, default 50)")
    .option("--cursor <cursor>", "continue from a previous page's next_cursor")
    .action(
      action(io, async (ctx, opts: { unread?: boolean; limit?: string; cursor?: string }) => {
        if (opts.limit !== undefined && !/^\d+$/.test(opts.limit))
          throw new CliError(
            `--limit must be a positive integer, got ${JSON.stringify(opts.limit)}`,
            "invalid_argument",
          );
        const page = await ctx.api<{
          notifications: Notification[];
          unread_count: number;
          has_more: boolean;
          next_cursor: string | null;
        }>("GET", "/notifications", undefined, {
          auth: true,
          query: { unread: opts.unread ? "true" : undefined, limit: opts.limit, cursor: opts.cursor },
        });
        ctx.out.result(page, () => {
          ctx.out.table(
            ["", "ID", "TIME", "SEVERITY", "TYPE", "SUMMARY"],
            page.notifications.map((x) => [
              x.read ? " " : "*",
              x.id,
              new Date(x.timestamp_ms).toISOString(),
              x.severity,
              x.event_type,
              x.summary,
            ]),
          );
          ctx.out.note(
            `${page.unread_count} unread${page.has_more && page.next_cursor ? `; more: --cursor ${page.next_cursor}` : ""}`,
          );
        });
      }),
    );

  n.command("read")
    .description("mark one notification read")
    .argument("<id>", "notification id")
    .action(
      action(io, async (ctx, id: string) => {
        const r = await ctx.api<{ notification: Notification; unread_count: number }>(
          "POST",
          `/notifications/${encodeURIComponent(id)}/read`,
          undefined,
          { auth: true },
        );
        ctx.out.result(r, () => ctx.out.line(`Marked ${r.notification.id} read; ${r.unread_count} unread`));
      }),
    );

  n.command("read-all")
    .description("mark all your notifications read")
    .action(
      action(io, async (ctx) => {
        const r = await ctx.api<{ marked: number; unread_count: number }>(
          "POST",
          "/notifications/read-all",
          undefined,
          { auth: true },
        );
        ctx.out.result(r, () => ctx.out.line(`Marked ${r.marked} notification(s) read`));
      }),
    );
}
