/** orchctl tags: every distinct tag key with its values, across all agents. */
import type { Command } from "commander";
import { action } from "../context.js";
import type { CliIO } from "../output.js";

export function register(program: Command, io: CliIO): void {
  program
    .command("tags")
    .description("list every distinct tag key with its values")
    .action(
      action(io, async (ctx) => {
        const r = await ctx.api<{ tags: Record<string, string[]> }>("GET", "/tags", undefined, { auth: true });
        ctx.out.result(r, () =>
          ctx.out.table(
            ["KEY", "VALUES"],
            Object.keys(r.tags)
              .sort()
              .map((k) => [k, r.tags[k]!.join(",")]),
          ),
        );
      }),
    );
}
