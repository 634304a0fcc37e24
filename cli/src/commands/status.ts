/** orchctl status */
import type { Command } from "commander";
import { unwrap } from "@orch/client";
import { action } from "../context.js";
import { SERVICE_COLUMNS, serviceRows, statusFields } from "../format/status.js";
import type { CliIO } from "../output.js";

export function register(program: Command, io: CliIO): void {
  program
    .command("status")
    .description("show the orchestrator's health and the state of its services")
    .action(
      action(io, async (ctx) => {
        const st = unwrap(await ctx.orch.client("optional").GET("/api/v1/status"));
        const server = await ctx.orch.server();
        ctx.out.result(st, () => {
          ctx.out.fields(statusFields(st, server));
          ctx.out.line("");
          ctx.out.table(SERVICE_COLUMNS, serviceRows(st.services));
        });
      }),
    );
}
