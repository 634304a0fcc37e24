/** orchctl notifications [--unread] | read <id> | read-all */
import type { Command } from "commander";
import { unwrap } from "@orch/client";
import { action } from "../context.js";
import { CliError } from "../errors.js";
import { NOTIFICATION_COLUMNS, notificationRows, unreadNote } from "../format/notifications.js";
import type { CliIO } from "../output.js";
import { count } from "../format/units.js";

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
        const page = unwrap(
          await ctx.api.GET("/api/v1/notifications", {
            params: {
              query: {
                unread: opts.unread ? true : undefined,
                limit: opts.limit === undefined ? undefined : Number(opts.limit),
                cursor: opts.cursor,
              },
            },
          }),
        );
        ctx.out.result(page, () => {
          ctx.out.table(NOTIFICATION_COLUMNS, notificationRows(page.notifications));
          ctx.out.note(unreadNote(page));
        });
      }),
    );

  n.command("read")
    .description("mark one notification read")
    .argument("<id>", "notification id")
    .action(
      action(io, async (ctx, id: string) => {
        const r = unwrap(await ctx.api.POST("/api/v1/notifications/{id}/read", { params: { path: { id } } }));
        ctx.out.result(r, () => ctx.out.line(`Marked ${r.notification.id} read; ${r.unread_count} unread`));
      }),
    );

  n.command("read-all")
    .description("mark all your notifications read")
    .action(
      action(io, async (ctx) => {
        const r = unwrap(await ctx.api.POST("/api/v1/notifications/read-all"));
        ctx.out.result(r, () => ctx.out.line(`Marked ${count(r.marked, "notification")} read`));
      }),
    );
}
