/** orchctl operators list | add | get | scope | remove */
import { Option, type Command } from "commander";
import { unwrap, type OperatorPage, type RequestBody } from "@orch/client";
import { action } from "../context.js";
import { operatorNames } from "../operator-names.js";
import { CliError } from "../errors.js";
import { OPERATOR_COLUMNS, addedLine, operatorFields, operatorRows, scopeLine } from "../format/operators.js";
import { resolvePublicKeyHex } from "../keys/files.js";
import { listCommand } from "../list-command.js";
import type { CliIO } from "../output.js";

const byId = (operator_id: string) => ({ params: { path: { operator_id } } });

type Sub = (parent: Command, io: CliIO) => void;

const list: Sub = (ops, io) =>
  listCommand<"operators", OperatorPage>(ops, io, {
    key: "operators",
    command: "operators list",
    description: "list operators",
    cursorHelp: "continue from a previous page's next_cursor",
    fetch: async (ctx, query): Promise<OperatorPage> =>
      unwrap(await ctx.api.GET("/api/v1/operators", { params: { query } })),
    columns: OPERATOR_COLUMNS,
    rows: operatorRows,
  });

const add: Sub = (ops, io) =>
  ops
    .command("add")
    .description("add an operator")
    .argument("<name>", "operator name")
    .requiredOption(
      "--public-key <key>",
      "Ed25519 public key: 64 hex chars, an `ssh-ed25519 AAAA...` line, or a .pub file",
    )
    .addOption(new Option("--role <role>", "role").choices(["operator", "admin"]).default("operator"))
    .option("--agent-selector <selector>", "limit the agents this operator reaches, e.g. 'role=web' (operators only)")
    .action(
      action(io, async (ctx, name: string, opts: { publicKey: string; role: string; agentSelector?: string }) => {
        const public_key = await resolvePublicKeyHex(opts.publicKey);
        const scope = opts.agentSelector !== undefined ? { agent_selector: opts.agentSelector } : {};
        const body = { name, public_key, role: opts.role, ...scope } as RequestBody<"/api/v1/operators", "post">;
        const op = unwrap(await ctx.api.POST("/api/v1/operators", { body }));
        ctx.out.result(op, () => ctx.out.line(addedLine(op)));
      }),
    );

const get: Sub = (ops, io) =>
  ops
    .command("get")
    .description("show one operator")
    .argument("<id-or-name>", "operator id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const op = unwrap(await ctx.api.GET("/api/v1/operators/{operator_id}", byId(ref)));
        const names = await operatorNames(ctx);
        ctx.out.result(op, () => ctx.out.fields(operatorFields(op, names)));
      }),
    );

const scope: Sub = (ops, io) =>
  ops
    .command("scope")
    .description("limit the agents an operator reaches to an agent selector, or --clear the limit")
    .argument("<id-or-name>", "operator id or name")
    .argument("[selector]", "agent selector (assignment grammar), e.g. 'role=web,env in (prod,stage)'")
    .option("--clear", "remove the limit: the operator reaches every agent")
    .action(
      action(io, async (ctx, ref: string, selector: string | undefined, opts: { clear?: boolean }) => {
        if (Boolean(opts.clear) === (selector !== undefined)) {
          throw new CliError("give either a selector or --clear", "invalid_argument");
        }
        const body = { agent_selector: opts.clear ? null : (selector ?? null) };
        const op = unwrap(await ctx.api.PATCH("/api/v1/operators/{operator_id}", { ...byId(ref), body }));
        ctx.out.result(op, () => ctx.out.line(scopeLine(op)));
      }),
    );

const remove: Sub = (ops, io) =>
  ops
    .command("remove")
    .alias("rm")
    .description("remove an operator")
    .argument("<id-or-name>", "operator id (or name, looked up first)")
    .action(
      action(io, async (ctx, ref: string) => {
        // Resolve names to ids so `remove alice` works and we can say whom we removed.
        const op = unwrap(await ctx.api.GET("/api/v1/operators/{operator_id}", byId(ref)));
        unwrap(await ctx.api.DELETE("/api/v1/operators/{operator_id}", byId(op.id)));
        ctx.out.result({ removed: true, operator: op }, () => ctx.out.line(`Removed operator ${op.name} (${op.id})`));
      }),
    );

export function register(program: Command, io: CliIO): void {
  const ops = program.command("operators").description("manage operators (admin)");
  for (const sub of [list, add, get, scope, remove]) sub(ops, io);
}
