/** orchctl operators list | add | get | scope | remove */
import { Option, type Command } from "commander";
import type { Operator as BaseOperator } from "../config.js";
import { action, type Context } from "../context.js";
import { CliError } from "../errors.js";
import { resolvePublicKeyHex } from "../keys/files.js";
import type { CliIO } from "../output.js";

/** An operator as the API returns it; `agent_selector` limits the agents it reaches (docs/access.md). */
export type Operator = BaseOperator & { agent_selector?: string | null };

export interface OperatorPage {
  operators: Operator[];
  has_more: boolean;
  next_cursor: string | null;
}

const MAX_PAGES = 10_000;

function parseLimit(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new CliError(`--limit must be a positive integer, got ${JSON.stringify(v)}`, "invalid_argument");
  return n;
}

/** One page, or every page (following next_cursor) with `all`. */
export async function listOperators(
  ctx: Context,
  opts: { limit?: number; cursor?: string; all?: boolean },
): Promise<OperatorPage> {
  const fetchPage = (cursor: string | undefined) =>
    ctx.api<OperatorPage>("GET", "/operators", undefined, { auth: true, query: { limit: opts.limit, cursor } });
  let page = await fetchPage(opts.cursor);
  if (!opts.all) return page;
  const operators = [...page.operators];
  const seen = new Set<string>();
  for (let i = 0; page.has_more && page.next_cursor; i++) {
    if (seen.has(page.next_cursor) || i >= MAX_PAGES)
      throw new CliError("the server's pagination does not advance (repeated cursor)", "bad_response");
    seen.add(page.next_cursor);
    page = await fetchPage(page.next_cursor);
    operators.push(...page.operators);
  }
  return { operators, has_more: false, next_cursor: null };
}

function operatorRows(ops: Operator[]): unknown[][] {
  const scope = (o: Operator) => o.agent_selector ?? "(all agents)";
  return ops.map((o) => [o.name, o.id, o.role, o.active ? "yes" : "no", scope(o), o.created_at]);
}

export function register(program: Command, io: CliIO): void {
  const ops = program.command("operators").description("manage operators (admin)");

  ops
    .command("list")
    .description("list operators")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue from a previous page's next_cursor")
    .option("--all", "fetch every page")
    .action(
      action(io, async (ctx, opts: { limit?: string; cursor?: string; all?: boolean }) => {
        const page = await listOperators(ctx, { limit: parseLimit(opts.limit), cursor: opts.cursor, all: opts.all });
        ctx.out.result(page, () => {
          ctx.out.table(["NAME", "ID", "ROLE", "ACTIVE", "SCOPE", "CREATED"], operatorRows(page.operators));
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more operators: orchctl operators list --cursor ${page.next_cursor} (or --all)`);
        });
      }),
    );

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
        const body = { name, public_key, role: opts.role, ...scope };
        const op = await ctx.api<Operator>("POST", "/operators", body, { auth: true });
        const shown = op.agent_selector ? `, scope '${op.agent_selector}'` : "";
        ctx.out.result(op, () => ctx.out.line(`Added operator ${op.name} (${op.role}${shown}), id ${op.id}`));
      }),
    );

  ops
    .command("get")
    .description("show one operator")
    .argument("<id-or-name>", "operator id or name")
    .action(
      action(io, async (ctx, ref: string) => {
        const op = await ctx.api<Operator>("GET", `/operators/${encodeURIComponent(ref)}`, undefined, { auth: true });
        ctx.out.result(op, () =>
          ctx.out.fields([
            ["name", op.name],
            ["id", op.id],
            ["role", op.role],
            ["active", op.active],
            ["public_key", op.public_key],
            ["agent_selector", op.agent_selector ?? "(all agents)"],
            ["created_at", op.created_at],
            ["created_by", op.created_by],
          ]),
        );
      }),
    );

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
        const body = { agent_selector: opts.clear ? null : selector };
        const op = await ctx.api<Operator>("PATCH", `/operators/${encodeURIComponent(ref)}`, body, { auth: true });
        const line = op.agent_selector
          ? `Operator ${op.name} now reaches agents matching '${op.agent_selector}'`
          : `Operator ${op.name} now reaches every agent`;
        ctx.out.result(op, () => ctx.out.line(line));
      }),
    );

  ops
    .command("remove")
    .alias("rm")
    .description("remove an operator")
    .argument("<id-or-name>", "operator id (or name, looked up first)")
    .action(
      action(io, async (ctx, ref: string) => {
        // Resolve names to ids so `remove alice` works and we can say whom we removed.
        const op = await ctx.api<Operator>("GET", `/operators/${encodeURIComponent(ref)}`, undefined, { auth: true });
        await ctx.api("DELETE", `/operators/${encodeURIComponent(op.id)}`, undefined, { auth: true });
        ctx.out.result({ removed: true, operator: op }, () => ctx.out.line(`Removed operator ${op.name} (${op.id})`));
      }),
    );
}
