/** orchctl discover: ask the agents service to announce itself to agents listening for discovery. */
import type { Command } from "commander";
import { unwrap } from "@orch/client";
import { action } from "../context.js";
import { announcedLine } from "../format/status.js";
import type { CliIO } from "../output.js";

export function register(program: Command, io: CliIO): void {
  program
    .command("discover")
    .description("send a UDP discovery datagram: broadcast, or unicast to --target")
    .option("--target <host:port>", "unicast to one agent's discovery port instead of broadcasting")
    .action(
      action(io, async (ctx, opts: { target?: string }) => {
        const r = unwrap(await ctx.api.POST("/api/v1/discover", { body: { target: opts.target ?? null } }));
        ctx.out.result(r, () => ctx.out.line(announcedLine(r)));
      }),
    );
}
