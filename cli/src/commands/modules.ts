/** orchctl modules push <file.yaml | dir | archive> | list | show <name> | rm <name> */
import { readFile, stat } from "node:fs/promises";
import { basename, extname } from "node:path";
import type { Command } from "commander";
import { unwrap } from "@orch/client";
import { action } from "../context.js";
import { CliError } from "../errors.js";
import {
  MODULE_COLUMNS,
  moduleContent,
  moduleFields,
  moduleFileLines,
  moduleRows,
  uploadedLine,
} from "../format/modules.js";
import type { CliIO } from "../output.js";
import { listCommand } from "../list-command.js";
import { isArchiveFile, pushBundle } from "./module-bundle.js";
import { catalogApproval, printedHeld, withApprovalOptions, type ApprovalOpts } from "./catalog-held.js";

/** The module's own `name:` (top level), else the file name without its extension. */
export function moduleNameOf(content: string, file: string): string {
  const m = /^name:[ \t]*["']?([^"'\s#]+)["']?[ \t]*(?:#.*)?$/m.exec(content);
  return m?.[1] ?? basename(file, extname(file));
}

type Sub = (parent: Command, io: CliIO) => void;

const isDirectory = (path: string) =>
  stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );

const push: Sub = (mods, io) =>
  withApprovalOptions(
    mods
      .command("push")
      .description(
        "upload a module: a YAML file, or a bundle (a directory with module.yaml and files/, or its .tar.gz/.zip); creates it, or replaces the module of the same name",
      )
      .argument("<file>", "module YAML file, bundle directory, or bundle archive")
      .option("--name <name>", "module name (default: the module's `name:`; for an archive, its file name)"),
  ).action(
    action(io, async (ctx, file: string, opts: { name?: string } & ApprovalOpts) => {
      const approval = catalogApproval(opts);
      if (isArchiveFile(file) || (await isDirectory(file))) {
        const m = await pushBundle(ctx, file, opts.name, moduleNameOf, approval);
        if (printedHeld(ctx, `module ${m.name}`, m)) return;
        const n = m.files.length;
        ctx.out.result(m, () => ctx.out.line(`${uploadedLine(m)} with ${n} file${n === 1 ? "" : "s"}`));
        return;
      }
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
      const m = unwrap(await ctx.api.POST("/api/v1/modules", { body: { name, content, ...approval } }));
      if (printedHeld(ctx, `module ${name}`, m)) return;
      ctx.out.result(m, () => ctx.out.line(uploadedLine(m)));
    }),
  );

const list: Sub = (mods, io) =>
  listCommand(mods, io, {
    key: "modules",
    command: "modules list",
    description: "list modules",
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/modules", { params: { query } })),
    columns: MODULE_COLUMNS,
    rows: moduleRows,
  });

const show: Sub = (mods, io) =>
  mods
    .command("show")
    .description("show a module and its YAML")
    .argument("<name>", "module name")
    .action(
      action(io, async (ctx, name: string) => {
        const m = unwrap(await ctx.api.GET("/api/v1/modules/{name}", { params: { path: { name } } }));
        ctx.out.result(m, () => {
          ctx.out.fields(moduleFields(m));
          ctx.out.line("");
          ctx.out.line(moduleContent(m));
          const files = moduleFileLines(m);
          if (files.length) {
            ctx.out.line("");
            for (const l of files) ctx.out.line(l);
          }
        });
      }),
    );

const remove: Sub = (mods, io) =>
  withApprovalOptions(
    mods
      .command("rm")
      .alias("remove")
      .description("delete a module (refused while an assignment uses it)")
      .argument("<name>", "module name"),
  ).action(
    action(io, async (ctx, name: string, opts: ApprovalOpts) => {
      const query = catalogApproval(opts);
      const r = unwrap(await ctx.api.DELETE("/api/v1/modules/{name}", { params: { path: { name }, query } }));
      if (printedHeld(ctx, `module ${name}`, r)) return;
      ctx.out.result({ removed: true, name }, () => ctx.out.line(`Deleted module ${name}`));
    }),
  );

export function register(program: Command, io: CliIO): void {
  const mods = program.command("modules").description("state modules (YAML)");
  for (const sub of [push, list, show, remove]) sub(mods, io);
}
