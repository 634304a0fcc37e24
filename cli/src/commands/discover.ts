/** orchctl discover: ask the agents service to announce itself to agents listening for discovery. */
import type { Command } from "commander";
import { action } from "../context.js";
import type { CliIO } from "../output.js";

export function register(program: Command, io: CliIO): void {
  program
    .command("discover")
    .description("send a UDP discovery datagram: broadcast, or unicast to --target")
    .option("--target <host:port>", "unicast to one agent's discovery port instead of broadcasting")
    .action(
      action(io, async (ctx, opts: { target?: string }) => {
        const r = await ctx.api<{ sent_to: string[]; announced: string }>(
          "POST",
          "/discover",
          { target: opts.target ?? null },
          { auth: true },
        );
        ctx.out.result(r, () =>
          ctx.out.line(`Announced ${r.announced} to ${r.sent_to.length ? r.sent_to.join(", ") : "nobody"}`),
        );
      }),
    );
}
