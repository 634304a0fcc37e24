/** orchctl tags: every distinct tag key with its values, across all agents. */
import type { Command } from "commander";
import { unwrap } from "@orch/client";
import { action } from "../context.js";
import { TAG_COLUMNS, tagIndexRows } from "../format/status.js";
import type { CliIO } from "../output.js";

export function register(program: Command, io: CliIO): void {
  program
    .command("tags")
    .description("list every distinct tag key with its values")
    .action(
      action(io, async (ctx) => {
        const r = unwrap(await ctx.api.GET("/api/v1/tags"));
        ctx.out.result(r, () => ctx.out.table(TAG_COLUMNS, tagIndexRows(r.tags)));
      }),
    );
}
