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

export interface ListSpec<K extends string, P extends Page & { [k in K]: unknown[] }, F extends object = object> {
  /** The page's item key, also the noun of the hint (`more <key>: orchctl <command> --cursor …`). */
  key: K;
  /** The command that lists, as typed: `orchctl <command> --cursor …`. */
  command: string;
  description: string;
  /** A short name (`ls`) where the command has always had one. */
  alias?: string;
  /** The --cursor help where a command words it its own way. */
  cursorHelp?: string;
  /** This list's own options (filters), before the paging flags. */
  options?(list: Command): Command;
  /** The query those options make; checked before anything else, it may throw a usage error. */
  filter?(opts: Record<string, unknown>): F;
  fetch(ctx: Context, query: F & { limit: number | undefined; cursor: string | undefined }): Promise<P>;
  columns: readonly string[];
  rows(items: P[K]): readonly (readonly unknown[])[];
  /** Notes printed after the next-page hint. */
  notes?(page: P): string[];
}

export function listCommand<K extends string, P extends Page & { [k in K]: unknown[] }, F extends object = object>(
  parent: Command,
  io: CliIO,
  spec: ListSpec<K, P, F>,
): Command {
  const list = parent.command("list");
  if (spec.alias) list.alias(spec.alias);
  list.description(spec.description);
  return (spec.options?.(list) ?? list)
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", spec.cursorHelp ?? "continue after a previous page's next_cursor")
    .option("--all", "fetch every page")
    .action(
      action(io, async (ctx, opts: { limit?: string; cursor?: string; all?: boolean }) => {
        const filter = spec.filter?.(opts) ?? ({} as F);
        const limit = parseLimit(opts.limit);
        const page = await pages((cursor) => spec.fetch(ctx, { ...filter, limit, cursor }), spec.key, opts);
        ctx.out.result(page, () => {
          ctx.out.table(spec.columns, spec.rows(page[spec.key]));
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more ${spec.key}: orchctl ${spec.command} --cursor ${page.next_cursor} (or --all)`);
          for (const note of spec.notes?.(page) ?? []) ctx.out.note(note);
        });
      }),
    );
}
