/** orchctl passkeys list | rm */
import type { Command } from "commander";
import { unwrap, type Operator } from "@orch/client";
import { action, type Context } from "../context.js";
import { NO_PASSKEYS_HINT, PASSKEY_COLUMNS, ownerLabel, passkeyRows, type PasskeyView } from "../format/passkeys.js";
import type { CliIO } from "../output.js";

const OPERATOR_HELP = "another operator's passkeys, by id or name (admins only)";

/** The operator --operator names; the passkey routes take its id, GET /operators/{id} also accepts a name. */
async function operatorOf(ctx: Context, ref: string): Promise<Operator> {
  return unwrap(await ctx.api.GET("/api/v1/operators/{operator_id}", { params: { path: { operator_id: ref } } }));
}

async function listPasskeys(ctx: Context, operator: Operator | undefined): Promise<PasskeyView[]> {
  const r = operator
    ? await ctx.api.GET("/api/v1/operators/{operator_id}/passkeys", {
        params: { path: { operator_id: operator.id } },
      })
    : await ctx.api.GET("/api/v1/auth/passkeys");
  return unwrap(r).passkeys;
}

type Sub = (parent: Command, io: CliIO) => void;

const list: Sub = (passkeys, io) =>
  passkeys
    .command("list")
    .alias("ls")
    .description("list your passkeys (or an operator's with --operator)")
    .option("--operator <id-or-name>", OPERATOR_HELP)
    .action(
      action(io, async (ctx, opts: { operator?: string }) => {
        const operator = opts.operator ? await operatorOf(ctx, opts.operator) : undefined;
        const keys = await listPasskeys(ctx, operator);
        ctx.out.result({ passkeys: keys }, () => {
          if (!keys.length) {
            ctx.out.note(operator ? `${operator.name} has no passkeys` : NO_PASSKEYS_HINT);
            return;
          }
          ctx.out.table(PASSKEY_COLUMNS, passkeyRows(keys, Date.now()));
        });
      }),
    );

const remove: Sub = (passkeys, io) =>
  passkeys
    .command("rm")
    .alias("remove")
    .description("remove a passkey; the console sessions it opened end at once")
    .argument("<passkey_id>", "the ID column of `orchctl passkeys list`")
    .option("--operator <id-or-name>", OPERATOR_HELP)
    .action(
      action(io, async (ctx, passkey_id: string, opts: { operator?: string }) => {
        const operator = opts.operator ? await operatorOf(ctx, opts.operator) : undefined;
        if (operator)
          unwrap(
            await ctx.api.DELETE("/api/v1/operators/{operator_id}/passkeys/{passkey_id}", {
              params: { path: { operator_id: operator.id, passkey_id } },
            }),
          );
        else unwrap(await ctx.api.DELETE("/api/v1/auth/passkeys/{passkey_id}", { params: { path: { passkey_id } } }));
        const result = { removed: true, passkey_id, ...(operator ? { operator_id: operator.id } : {}) };
        ctx.out.result(result, () => ctx.out.line(`Removed ${ownerLabel(operator)} passkey ${passkey_id}`));
      }),
    );

export function register(program: Command, io: CliIO): void {
  const passkeys = program
    .command("passkeys")
    .description("list and remove console passkeys (registering one needs a browser: use the web console)")
    .addHelpText(
      "after",
      "\nRegistering a passkey needs a browser and an authenticator, so the CLI only lists and removes them.\nRegister one in the web console: `orchctl console`, then the Account page.",
    );
  for (const sub of [list, remove]) sub(passkeys, io);
}
