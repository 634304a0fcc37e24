/**
 * orchctl access request | grants | revoke (just-in-time access; docs/approvals.md)
 *
 * `request` asks for temporary access — agents besides your scope (`--selector`, or `--agents` for
 * named ones) and/or the admin role — for a while (`--for 1h`) with a reason; it becomes a change
 * request the policy's approvers decide (`orchctl requests …`). The grant ends by itself.
 */
import type { Command } from "commander";
import { unwrap, type ResponseBody } from "@orch/client";
import { action } from "../context.js";
import { CliError } from "../errors.js";
import { listCommand } from "../list-command.js";
import type { CliIO } from "../output.js";
import { parseDuration } from "./maintenance.js";

type GrantsPage = ResponseBody<"/api/v1/access-grants", "get">;
type Grant = GrantsPage["grants"][number];

interface RequestOpts {
  selector?: string;
  agents?: string;
  role?: string;
  for?: string;
  reason?: string;
}

/** The selector asked for: --selector as given, --agents as `name in (…)`, not both. */
export function askedSelector(o: RequestOpts): string | undefined {
  if (o.selector !== undefined && o.agents !== undefined)
    throw new CliError("give --selector or --agents, not both", "invalid_argument");
  if (o.agents === undefined) return o.selector;
  const names = o.agents
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!names.length) throw new CliError("--agents names at least one agent (a,b,c)", "invalid_argument");
  return `name in (${names.join(",")})`;
}

const request = (access: Command, io: CliIO) =>
  access
    .command("request")
    .description("ask for temporary access; approvers grant it, and it ends by itself")
    .option("--selector <selector>", "agents to reach besides your scope, e.g. role=db")
    .option("--agents <names>", "named agents to reach (a terminal on db-1,db-2): name in (…)")
    .option("--role <role>", "admin: the admin role for the duration")
    .requiredOption("--for <duration>", "how long: 30m, 2h, 1h30m (up to the policy's longest access)")
    .requiredOption("--reason <text>", "why (the approvers read it)")
    .action(
      action(io, async (ctx, opts: RequestOpts) => {
        const selector = askedSelector(opts);
        if (selector === undefined && opts.role === undefined)
          throw new CliError("ask for --selector/--agents, --role admin, or both", "invalid_argument");
        if (opts.role !== undefined && opts.role !== "admin")
          throw new CliError("--role may only be admin", "invalid_argument");
        const body = {
          ...(selector !== undefined ? { agent_selector: selector } : {}),
          ...(opts.role ? { role: "admin" as const } : {}),
          reason: opts.reason ?? "",
          duration_seconds: parseDuration(opts.for ?? "", "--for"),
        };
        const r = unwrap(await ctx.api.POST("/api/v1/access-requests", { body }));
        ctx.out.result(r, () => {
          ctx.out.line(`Access requested: change request ${r.id} (policy ${r.policy}) waits for approval.`);
          ctx.out.note(`follow it: orchctl requests show ${r.id}; once granted: orchctl access grants --active`);
        });
      }),
    );

export const GRANT_COLUMNS = ["ID", "OPERATOR", "SELECTOR", "ROLE", "EXPIRES", "STATUS"] as const;

export function grantRows(gs: readonly Grant[]): string[][] {
  return gs.map((g) => [
    g.id,
    g.operator_name,
    g.agent_selector ?? "-",
    g.role ?? "-",
    g.expires_at,
    g.active ? "active" : (g.end_reason ?? "ended"),
  ]);
}

const grants = (access: Command, io: CliIO) =>
  listCommand<"grants", GrantsPage, { active?: boolean; operator_id?: string }>(access, io, {
    key: "grants",
    command: "access grants",
    description: "list access grants, newest first (yours; an admin sees everyone's)",
    options: (l) =>
      l.option("--active", "only grants in force").option("--operator <id>", "admins: only this operator's"),
    filter: (raw) => {
      const o = raw as { active?: boolean; operator?: string };
      return { ...(o.active ? { active: true } : {}), ...(o.operator ? { operator_id: o.operator } : {}) };
    },
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/access-grants", { params: { query } })),
    columns: GRANT_COLUMNS,
    rows: grantRows,
    notes: (page) => (page.grants.length ? [] : ["no access grants"]),
  }).name("grants");

const revoke = (access: Command, io: CliIO) =>
  access
    .command("revoke")
    .description("end an access grant now (an admin, or its holder)")
    .argument("<id>", "grant id")
    .option("--comment <text>", "why, kept in the audit event")
    .action(
      action(io, async (ctx, id: string, opts: { comment?: string }) => {
        const body = opts.comment !== undefined ? { comment: opts.comment } : {};
        const g = unwrap(await ctx.api.POST("/api/v1/access-grants/{id}/revoke", { params: { path: { id } }, body }));
        ctx.out.result(g, () => ctx.out.line(`Revoked access grant ${g.id} of ${g.operator_name}.`));
      }),
    );

export function register(program: Command, io: CliIO): void {
  const access = program.command("access").description("just-in-time access: ask for it, list and end grants");
  request(access, io);
  grants(access, io);
  revoke(access, io);
}
