/**
 * orchctl join-tokens create | list | revoke (admin)
 *
 * `create` prints the token once (the server keeps only its hash) and the one-line install that
 * uses it; nothing else ever shows it again. It also asks the server whether that line can install
 * anything yet (GET /api/v1/agent-packages) and says so when not.
 */
import type { Command } from "commander";
import { unwrap } from "@orch/client";
import { parseTagArg } from "../args.js";
import { action } from "../context.js";
import { CliError } from "../errors.js";
import { JOIN_TOKEN_COLUMNS, installLine, installNote, joinTokenFields, joinTokenRows } from "../format/join-tokens.js";
import { listCommand } from "../list-command.js";
import type { CliIO } from "../output.js";

const UNIT_S = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;

/** `90`, `90s`, `15m`, `1h`, `7d` → seconds; the server checks the range. */
export function parseTtl(v: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(v.trim());
  if (!m)
    throw new CliError(
      `--ttl must be seconds or a duration like 15m, 1h, 7d; got ${JSON.stringify(v)}`,
      "invalid_argument",
    );
  return Number(m[1]) * UNIT_S[(m[2] || "s") as keyof typeof UNIT_S];
}

function nonNegativeInt(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0)
    throw new CliError(`${flag} must be a whole number (0 = unlimited), got ${JSON.stringify(v)}`, "invalid_argument");
  return n;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

interface CreateFlags {
  ttl: string;
  maxUses?: string;
  tag?: string[];
  namePrefix?: string;
  description?: string;
}

export function register(program: Command, io: CliIO): void {
  const jt = program.command("join-tokens").description("join tokens that approve new agents on first contact (admin)");

  jt.command("create")
    .description("create a join token; prints it once with the install line")
    .requiredOption("--ttl <duration>", "lifetime: seconds or 15m, 1h, 7d")
    .option("--max-uses <n>", "agents it may approve (default 0 = unlimited until it expires)")
    .option("--tag <key=value>", "tag given to joined agents (repeatable)", collect)
    .option("--name-prefix <prefix>", "joined agents are named <prefix>-<hostname>")
    .option("--description <text>", "a label for the token")
    .action(
      action(io, async (ctx, opts: CreateFlags) => {
        const tags = Object.fromEntries((opts.tag ?? []).map(parseTagArg));
        const maxUses = nonNegativeInt("--max-uses", opts.maxUses);
        const r = unwrap(
          await ctx.api.POST("/api/v1/join-tokens", {
            body: {
              ttl_s: parseTtl(opts.ttl),
              ...(maxUses !== undefined ? { max_uses: maxUses } : {}),
              ...(opts.tag?.length ? { tags } : {}),
              ...(opts.namePrefix !== undefined ? { name_prefix: opts.namePrefix } : {}),
              ...(opts.description !== undefined ? { description: opts.description } : {}),
            },
          }),
        );
        const install = installLine(await ctx.orch.server(), r.token);
        // Asked after the token exists: it is worth having even before a package is (orch-agent
        // --join-token), and a failed check must not lose a token shown only now.
        const packages = await ctx.api.GET("/api/v1/agent-packages").then(
          (res) => ({ value: unwrap(res), error: undefined }),
          (err: unknown) => ({ value: null, error: err instanceof Error ? err.message : String(err) }),
        );
        const note = installNote(packages.value, packages.error);
        ctx.out.result({ ...r, install, agent_packages: packages.value }, () => {
          ctx.out.line(`Created join token ${r.join_token.id}, expires ${r.join_token.expires_at}`);
          ctx.out.fields(joinTokenFields(r.join_token));
          ctx.out.line("");
          ctx.out.line(`token (shown once, store it now): ${r.token}`);
          ctx.out.line("");
          ctx.out.line("install an agent with it:");
          ctx.out.line(`  ${install}`);
          if (note) ctx.out.note(note);
        });
      }),
    );

  listCommand(jt, io, {
    key: "join_tokens",
    command: "join-tokens list",
    description: "list join tokens, newest first (never the token itself)",
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/join-tokens", { params: { query } })),
    columns: JOIN_TOKEN_COLUMNS,
    rows: joinTokenRows,
  });

  jt.command("revoke")
    .description("revoke a join token (agents that joined with it stay approved)")
    .argument("<id>", "token id (the part between ojt_ and the dot)")
    .action(
      action(io, async (ctx, id: string) => {
        const t = unwrap(await ctx.api.DELETE("/api/v1/join-tokens/{id}", { params: { path: { id } } }));
        ctx.out.result(t, () => {
          ctx.out.line(`Revoked join token ${t.id}`);
          ctx.out.fields(joinTokenFields(t));
        });
      }),
    );
}
