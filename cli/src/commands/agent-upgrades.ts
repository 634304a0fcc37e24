/** orchctl agents upgrade | upgrades (admin): install a published orch-agent version on agents. */
import type { Command } from "commander";
import { unwrap, type ResponseBody } from "@orch/client";
import { parseLimit } from "../args.js";
import { action } from "../context.js";
import { CliError } from "../errors.js";
import { UPGRADE_COLUMNS, upgradeRows } from "../format/agent-upgrades.js";
import type { CliIO } from "../output.js";
import { nodeIdOrRef, resolveAgent } from "../agent-lookup.js";
import { count } from "../format/units.js";

type Started = ResponseBody<"/api/v1/agent-upgrades", "post">;

export function registerUpgrades(agents: Command, io: CliIO): void {
  agents
    .command("upgrade")
    .description("upgrade an agent (or every agent a selector matches) to a published orch-agent version")
    .argument("[agent]", "node id, short id or name (or use --selector)")
    .option("--selector <expr>", "every approved agent this selector matches ('*' = all)")
    // Not --version: commander gives the program's own -V/--version precedence after subcommands too.
    .option("--to <version>", "a version published on the server (default: the newest)")
    .action(
      action(io, async (ctx, ref: string | undefined, opts: { selector?: string; to?: string }) => {
        if (!ref === !opts.selector) throw new CliError("give an agent or --selector (not both)", "invalid_argument");
        const body = opts.to ? { version: opts.to } : {};
        let r: Started;
        if (ref) {
          const { node_id } = await resolveAgent(ctx, ref);
          r = unwrap(await ctx.api.POST("/api/v1/agents/{node_id}/upgrade", { params: { path: { node_id } }, body }));
        } else {
          r = unwrap(await ctx.api.POST("/api/v1/agent-upgrades", { body: { selector: opts.selector!, ...body } }));
        }
        ctx.out.result(r, () => {
          ctx.out.line(`Upgrading ${count(r.upgrades.length, "agent")} to orch-agent ${r.version}`);
          if (r.skipped) ctx.out.line(`${r.skipped} already on ${r.version}: skipped`);
          if (r.upgrades.length) ctx.out.table(UPGRADE_COLUMNS, upgradeRows(r.upgrades, Date.now()));
          if (r.upgrades.some((u) => u.status === "requested"))
            ctx.out.note("follow with: orchctl agents upgrades (requested ends succeeded, or failed at its deadline)");
        });
      }),
    );

  agents
    .command("upgrades")
    .description("list agent upgrades, newest first")
    .option("--agent <agent>", "only this agent's (name, node id or short id)")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue after a previous page's next_cursor")
    .action(
      action(io, async (ctx, opts: { agent?: string; limit?: string; cursor?: string }) => {
        const query = {
          node_id: await nodeIdOrRef(ctx, opts.agent),
          limit: parseLimit(opts.limit),
          cursor: opts.cursor,
        };
        const page = unwrap(await ctx.api.GET("/api/v1/agent-upgrades", { params: { query } }));
        ctx.out.result(page, () => {
          ctx.out.table(UPGRADE_COLUMNS, upgradeRows(page.upgrades, Date.now()));
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more upgrades: orchctl agents upgrades --cursor ${page.next_cursor}`);
        });
      }),
    );
}
