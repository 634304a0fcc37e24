/** orchctl status */
import type { Command } from "commander";
import { action } from "../context.js";
import type { CliIO } from "../output.js";

export interface StatusResponse {
  status: string;
  protocol_version?: string | number;
  api_version?: string | number;
  services?: Record<string, string>;
}

export function register(program: Command, io: CliIO): void {
  program
    .command("status")
    .description("show the orchestrator's health and the state of its services")
    .action(
      action(io, async (ctx) => {
        const st = await ctx.api<StatusResponse>("GET", "/status", undefined, { auth: "optional" });
        const server = await ctx.orch.server();
        ctx.out.result(st, () => {
          ctx.out.fields([
            ["server", server],
            ["status", st.status],
            ["api_version", st.api_version],
            ["protocol_version", st.protocol_version],
          ]);
          ctx.out.line("");
          ctx.out.table(
            ["SERVICE", "STATUS"],
            Object.entries(st.services ?? {})
              .sort(([a], [b]) => a.localeCompare(b))
              .map(([name, state]) => [name, state]),
          );
        });
      }),
    );
}
