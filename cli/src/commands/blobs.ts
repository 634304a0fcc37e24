/** orchctl blobs put <file> | list | show <digest> | rm <digest> */
import type { Command } from "commander";
import { unwrap } from "@orch/client";
import { action } from "../context.js";
import { ProblemError } from "../errors.js";
import { BLOB_COLUMNS, blobFields, blobPutLines, blobRows } from "../format/blobs.js";
import { listCommand } from "../list-command.js";
import type { CliIO } from "../output.js";
import { digestOfFile, putBlobFile } from "./blob-upload.js";

type Sub = (parent: Command, io: CliIO) => void;

const put: Sub = (blobs, io) =>
  blobs
    .command("put")
    .description("upload a file as a blob (streamed; skipped when the server has it already)")
    .argument("<file>", "the file")
    .action(
      action(io, async (ctx, file: string) => {
        const { digest, size } = await digestOfFile(file);
        // Asked first, so a stored blob is not sent again (the server would read and drop it).
        const known = await ctx.api
          .GET("/api/v1/blobs/{digest}", { params: { path: { digest } } })
          .catch((err: unknown) => {
            if (err instanceof ProblemError && err.code === "blob_not_found") return undefined;
            throw err;
          });
        const r = known?.data ? { blob: known.data, created: false } : await putBlobFile(ctx, file, digest, size);
        ctx.out.result({ ...r.blob, created: r.created }, () => {
          for (const line of blobPutLines(r.blob, r.created)) ctx.out.line(line);
        });
      }),
    );

const list: Sub = (blobs, io) =>
  listCommand(blobs, io, {
    key: "blobs",
    command: "blobs list",
    description: "list stored blobs",
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/blobs", { params: { query } })),
    columns: BLOB_COLUMNS,
    rows: blobRows,
  });

const show: Sub = (blobs, io) =>
  blobs
    .command("show")
    .description("show a stored blob's size and who uploaded it")
    .argument("<digest>", "sha256:<64 hex digits>")
    .action(
      action(io, async (ctx, digest: string) => {
        const b = unwrap(await ctx.api.GET("/api/v1/blobs/{digest}", { params: { path: { digest } } }));
        ctx.out.result(b, () => ctx.out.fields(blobFields(b)));
      }),
    );

const remove: Sub = (blobs, io) =>
  blobs
    .command("rm")
    .alias("remove")
    .description("delete a blob (admin; refused while a module, or a version of one still kept, names it)")
    .argument("<digest>", "sha256:<64 hex digits>")
    .action(
      action(io, async (ctx, digest: string) => {
        unwrap(await ctx.api.DELETE("/api/v1/blobs/{digest}", { params: { path: { digest } } }));
        ctx.out.result({ removed: true, digest }, () => ctx.out.line(`Deleted blob ${digest}`));
      }),
    );

export function register(program: Command, io: CliIO): void {
  const blobs = program.command("blobs").description("content-addressed files that modules name as `source:`");
  for (const sub of [put, list, show, remove]) sub(blobs, io);
}
