/**
 * `orchctl <noun> list` for the catalog's keyset-paged lists: the same flags (--limit, --cursor,
 * --all), the same table-or-JSON output and the same hint for the next page everywhere.
 */
import type { Command } from "commander";
import { parseLimit } from "./args.js";
import { action, type Context } from "./context.js";
import type { CliIO } from "./output.js";
import { pages } from "./pages.js";

interface Page {
  has_more: boolean;
  next_cursor: string | null;
}

export interface ListSpec<K extends string, P extends Page & { [k in K]: unknown[] }> {
  /** The page's item key, also the noun of the hint (`more <key>: orchctl <command> --cursor …`). */
  key: K;
  /** The command that lists, as typed: `orchctl <command> --cursor …`. */
  command: string;
  description: string;
  fetch(ctx: Context, query: { limit: string | undefined; cursor: string | undefined }): Promise<P>;
  columns: readonly string[];
  rows(items: P[K]): readonly (readonly unknown[])[];
}

export function listCommand<K extends string, P extends Page & { [k in K]: unknown[] }>(
  parent: Command,
  io: CliIO,
  spec: ListSpec<K, P>,
): Command {
  return parent
    .command("list")
    .description(spec.description)
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue after a previous page's next_cursor")
    .option("--all", "fetch every page")
    .action(
      action(io, async (ctx, opts: { limit?: string; cursor?: string; all?: boolean }) => {
        const limit = parseLimit(opts.limit)?.toString();
        const page = await pages((cursor) => spec.fetch(ctx, { limit, cursor }), spec.key, opts);
        ctx.out.result(page, () => {
          ctx.out.table(spec.columns, spec.rows(page[spec.key]));
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more ${spec.key}: orchctl ${spec.command} --cursor ${page.next_cursor} (or --all)`);
        });
      }),
    );
}
