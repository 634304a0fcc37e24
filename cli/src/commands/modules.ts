/** orchctl modules push <file.yaml> | list | show <name> | rm <name> */
import { readFile } from "node:fs/promises";
import { basename, extname } from "node:path";
import type { Command } from "commander";
import { action, type Context } from "../context.js";
import { CliError } from "../errors.js";
import type { CliIO } from "../output.js";

export interface ModuleInfo {
  name: string;
  uploaded_at: number;
  uploaded_by: string;
  description: string;
  resource_count: number;
  sha256: string;
  content?: string;
}

interface ModulePage {
  modules: ModuleInfo[];
  has_more: boolean;
  next_cursor: string | null;
}

/** The module's own `name:` (top level), else the file name without its extension. */
export function moduleNameOf(content: string, file: string): string {
  const m = /^name:[ \t]*["']?([^"'\s#]+)["']?[ \t]*(?:#.*)?$/m.exec(content);
  return m?.[1] ?? basename(file, extname(file));
}

const when = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString();

export function parseLimit(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new CliError(`--limit must be a positive integer, got ${JSON.stringify(v)}`, "invalid_argument");
  return n;
}

/** One page, or with `all` every page following next_cursor. */
export async function pages<T, P extends { has_more: boolean; next_cursor: string | null }>(
  ctx: Context,
  path: string,
  key: keyof P,
  q: { limit?: number; cursor?: string; all?: boolean; query?: Record<string, string | undefined> },
): Promise<P> {
  const fetch = (cursor: string | undefined) =>
    ctx.api<P>("GET", path, undefined, { auth: true, query: { ...q.query, limit: q.limit, cursor } });
  let page = await fetch(q.cursor);
  if (!q.all) return page;
  const items = [...(page[key] as T[])];
  const seen = new Set<string>();
  while (page.has_more && page.next_cursor) {
    if (seen.has(page.next_cursor))
      throw new CliError("the server's pagination does not advance (repeated cursor)", "bad_response");
    seen.add(page.next_cursor);
    page = await fetch(page.next_cursor);
    items.push(...(page[key] as T[]));
  }
  return { ...page, [key]: items, has_more: false, next_cursor: null };
}

export function register(program: Command, io: CliIO): void {
  const mods = program.command("modules").description("state modules (YAML)");

  mods
    .command("push")
    .description("upload a module file (creates it, or replaces the module of the same name)")
    .argument("<file>", "module YAML file")
    .option("--name <name>", "module name (default: the file's `name:`)")
    .action(
      action(io, async (ctx, file: string, opts: { name?: string }) => {
        let content: string;
        try {
          content = await readFile(file, "utf8");
        } catch (err) {
          throw new CliError(
            `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
            "file_unreadable",
          );
        }
        const name = opts.name ?? moduleNameOf(content, file);
        const m = await ctx.api<ModuleInfo>("POST", "/modules", { name, content }, { auth: true });
        ctx.out.result(m, () =>
          ctx.out.line(
            `Uploaded module ${m.name} (${m.resource_count} resource${m.resource_count === 1 ? "" : "s"}, sha256 ${m.sha256.slice(0, 12)})`,
          ),
        );
      }),
    );

  mods
    .command("list")
    .description("list modules")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue after a previous page's next_cursor")
    .option("--all", "fetch every page")
    .action(
      action(io, async (ctx, opts: { limit?: string; cursor?: string; all?: boolean }) => {
        const page = await pages<ModuleInfo, ModulePage>(ctx, "/modules", "modules", {
          limit: parseLimit(opts.limit),
          cursor: opts.cursor,
          all: opts.all,
        });
        ctx.out.result(page, () => {
          ctx.out.table(
            ["NAME", "RESOURCES", "UPLOADED", "BY", "DESCRIPTION"],
            page.modules.map((m) => [m.name, m.resource_count, when(m.uploaded_at), m.uploaded_by, m.description]),
          );
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more modules: orchctl modules list --cursor ${page.next_cursor} (or --all)`);
        });
      }),
    );

  mods
    .command("show")
    .description("show a module and its YAML")
    .argument("<name>", "module name")
    .action(
      action(io, async (ctx, name: string) => {
        const m = await ctx.api<ModuleInfo>("GET", `/modules/${encodeURIComponent(name)}`, undefined, { auth: true });
        ctx.out.result(m, () => {
          ctx.out.fields([
            ["name", m.name],
            ["description", m.description],
            ["resources", m.resource_count],
            ["uploaded_at", when(m.uploaded_at)],
            ["uploaded_by", m.uploaded_by],
            ["sha256", m.sha256],
          ]);
          ctx.out.line("");
          ctx.out.line((m.content ?? "").replace(/\n$/, ""));
        });
      }),
    );

  mods
    .command("rm")
    .alias("remove")
    .description("delete a module (refused while an assignment uses it)")
    .argument("<name>", "module name")
    .action(
      action(io, async (ctx, name: string) => {
        await ctx.api("DELETE", `/modules/${encodeURIComponent(name)}`, undefined, { auth: true });
        ctx.out.result({ removed: true, name }, () => ctx.out.line(`Deleted module ${name}`));
      }),
    );
}
