/**
 * orchctl requests list | show | approve | deny | cancel (change requests; docs/approvals.md)
 *
 * An action an approval policy covers becomes a change request that waits for approvers. Every
 * operator may list and read requests; `--to-approve` narrows the list to the pending ones the
 * caller may still decide. For an `assignment.apply` request, `show` prints the frozen targets and
 * the plan run whose per-agent diffs approvers read (`orchctl ops show <operation-id>`).
 */
import type { Command } from "commander";
import { unwrap, type ResponseBody } from "@orch/client";
import { action, type Context } from "../context.js";
import { CliError, ProblemError } from "../errors.js";
import { commandRunRequestLines } from "../format/command-run-request.js";
import { catalogWriteRequestLines } from "../format/catalog-write-request.js";
import { listCommand } from "../list-command.js";
import type { CliIO } from "../output.js";

export type ChangeRequest = ResponseBody<"/api/v1/change-requests/{id}", "get">;

const byId = (id: string) => ({ params: { path: { id } } });

const STATUSES = ["pending", "approved", "denied", "cancelled", "expired", "executed", "failed"] as const;
type Status = (typeof STATUSES)[number];

export const REQUEST_COLUMNS = [
  "ID",
  "ACTION",
  "TARGET",
  "STATUS",
  "REQUESTER",
  "APPROVALS",
  "CREATED",
  "EXPIRES",
] as const;

const approvalsGiven = (r: ChangeRequest) => r.decisions.filter((d) => d.decision === "approve").length;

export const targetOf = (r: Pick<ChangeRequest, "target_type" | "target_name">) =>
  r.target_type ? `${r.target_type}/${r.target_name}` : r.target_name;

export function requestRows(rs: ChangeRequest[]): string[][] {
  return rs.map((r) => [
    r.id,
    r.action,
    targetOf(r),
    r.status,
    r.requester.name,
    `${approvalsGiven(r)}/${r.approvals_required}`,
    r.created_at,
    r.expires_at,
  ]);
}

export function requestFields(r: ChangeRequest): [string, unknown][] {
  const f: [string, unknown][] = [
    ["id", r.id],
    ["action", r.action],
    ["target", targetOf(r)],
    ["summary", r.summary || "-"],
    ["status", r.status],
    ["policy", r.policy],
    ["requester", r.requester.name],
    ["reason", r.reason || "-"],
    ["approvals", `${approvalsGiven(r)}/${r.approvals_required}`],
    ["created", r.created_at],
    ["expires", r.expires_at],
    ["decided", r.decided_at],
    ["executed", r.executed_at],
    ["result", r.result],
    ["content hash", r.content_hash],
  ];
  if (r.error) f.push(["error", r.error]);
  return f;
}

export function decisionLines(r: ChangeRequest): string[] {
  if (!r.decisions.length) return ["  (none yet)"];
  return r.decisions.map(
    (d) =>
      `  ${d.at}  ${d.decision === "approve" ? "approved" : "denied"} by ${d.operator_name}${d.comment ? `: ${d.comment}` : ""}`,
  );
}

interface ApplyContent {
  assignment?: string;
  selector?: string;
  modules?: { name: string; sha256: string }[];
  batch?: string;
  max_failures?: number | null;
  targets?: { node_id: string; name: string }[];
  plan_run_id?: string;
}

/** What an assignment.apply request would do, plus how to read the plan run's per-agent diffs. */
async function applyContentLines(ctx: Context, r: ChangeRequest): Promise<string[]> {
  const c = r.content as ApplyContent;
  const assignment = c.assignment ?? r.target_name;
  const lines = ["frozen apply:"];
  lines.push(`  assignment: ${assignment}${c.selector ? ` (${c.selector})` : ""}`);
  if (c.modules?.length)
    lines.push(`  modules:    ${c.modules.map((m) => `${m.name}@${m.sha256.slice(0, 12)}`).join(", ")}`);
  lines.push(`  rollout:    batch ${c.batch || "all"}, max failures ${c.max_failures ?? "none"}`);
  const targets = c.targets ?? [];
  lines.push(`  targets (${targets.length}):`);
  for (const t of targets) lines.push(`    ${t.name}  ${t.node_id}`);
  if (!c.plan_run_id) return lines;
  lines.push(`plan run: ${c.plan_run_id}`);
  try {
    const run = unwrap(
      await ctx.api.GET("/api/v1/assignments/{name}/runs/{run_id}", {
        params: { path: { name: assignment, run_id: c.plan_run_id } },
      }),
    );
    lines.push(`  ${run.status}, ${run.failures} failure(s)`);
    for (const o of run.operations)
      lines.push(`    ${o.name}  ${o.status}${o.operation_id ? `  orchctl ops show ${o.operation_id}` : ""}`);
    lines.push("per-agent diff: orchctl ops show <operation-id> (above)");
  } catch (err) {
    if (!(err instanceof ProblemError)) throw err;
    lines.push(`  (cannot read the plan run: ${err.message})`);
  }
  lines.push(`runs of the assignment: orchctl assignments runs ${assignment}`);
  return lines;
}

/** What an agent.apply request would do, and where its plan's per-resource diff is. */
function agentApplyLines(r: ChangeRequest): string[] {
  const c = r.content as {
    node_id?: string;
    name?: string;
    modules?: ApplyContent["modules"];
    plan_operation_id?: string;
  };
  const lines = [
    "frozen apply:",
    `  agent:      ${c.name || c.node_id || r.target_name}  ${c.node_id ?? ""}`.trimEnd(),
  ];
  if (c.modules?.length)
    lines.push(`  modules:    ${c.modules.map((m) => `${m.name}@${m.sha256.slice(0, 12)}`).join(", ")}`);
  if (c.plan_operation_id) lines.push(`plan: orchctl ops show ${c.plan_operation_id}`);
  return lines;
}

type Sub = (parent: Command, io: CliIO) => void;

interface ListOpts {
  status?: string;
  mine?: boolean;
  toApprove?: boolean;
}

const list: Sub = (req, io) =>
  listCommand(req, io, {
    key: "requests",
    command: "requests list",
    description: "list change requests, newest first",
    alias: "ls",
    options: (l) =>
      l
        .option("--status <status>", `only requests in this status (${STATUSES.join(", ")})`)
        .option("--mine", "only the requests I submitted")
        .option("--to-approve", "only pending requests I may still decide"),
    filter: (raw) => {
      const o = raw as ListOpts;
      if (o.status !== undefined && !(STATUSES as readonly string[]).includes(o.status))
        throw new CliError(`--status must be one of ${STATUSES.join(", ")}`, "invalid_argument");
      return {
        status: o.status as Status | undefined,
        mine: o.mine ? true : undefined,
        to_approve: o.toApprove ? true : undefined,
      };
    },
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/change-requests", { params: { query } })),
    columns: REQUEST_COLUMNS,
    rows: requestRows,
    notes: (page) => (page.requests.length ? [] : ["no change requests"]),
  });

const show: Sub = (req, io) =>
  req
    .command("show")
    .alias("get")
    .description("show a change request: its fields, decisions and what it would do")
    .argument("<id>", "change request id")
    .action(
      action(io, async (ctx, id: string) => {
        const r = unwrap(await ctx.api.GET("/api/v1/change-requests/{id}", byId(id)));
        if (ctx.json) return ctx.out.result(r, () => {});
        const extra =
          r.action === "assignment.apply"
            ? await applyContentLines(ctx, r)
            : r.action === "agent.apply"
              ? agentApplyLines(r)
              : r.action === "command.run"
                ? commandRunRequestLines(r.content)
                : r.action === "catalog.write"
                  ? catalogWriteRequestLines(r.content)
                  : [
                      "content:",
                      ...JSON.stringify(r.content, null, 2)
                        .split("\n")
                        .map((l) => `  ${l}`),
                    ];
        ctx.out.result(r, () => {
          ctx.out.fields(requestFields(r));
          ctx.out.line("decisions:");
          for (const l of decisionLines(r)) ctx.out.line(l);
          for (const l of extra) ctx.out.line(l);
          if (r.status === "pending")
            ctx.out.note(`decide: orchctl requests approve ${r.id} | orchctl requests deny ${r.id} [--comment TEXT]`);
        });
      }),
    );

const DECIDED: Record<string, string> = { approve: "Approved", deny: "Denied", cancel: "Cancelled" };

const decide =
  (verb: "approve" | "deny" | "cancel", description: string): Sub =>
  (req, io) =>
    req
      .command(verb)
      .description(description)
      .argument("<id>", "change request id")
      .option("--comment <text>", "recorded with the decision and in its audit event")
      .action(
        action(io, async (ctx, id: string, opts: { comment?: string }) => {
          const body = opts.comment !== undefined ? { comment: opts.comment } : {};
          const r = unwrap(await ctx.api.POST(`/api/v1/change-requests/{id}/${verb}`, { ...byId(id), body }));
          ctx.out.result(r, () => {
            const given = approvalsGiven(r);
            const tail =
              r.status === "pending"
                ? ` (${given}/${r.approvals_required} approvals; more needed)`
                : r.status === "executed"
                  ? `: executed${r.result ? ` (${r.result})` : ""}`
                  : r.status === "failed"
                    ? `: execution failed${r.error ? `: ${r.error}` : ""}`
                    : `: ${r.status}`;
            ctx.out.line(`${DECIDED[verb]} change request ${r.id} (${r.action} ${targetOf(r)})${tail}`);
          });
          if (!ctx.json && r.status === "failed")
            throw new CliError(`change request ${r.id} failed: ${r.error ?? "unknown error"}`, "change_request_failed");
        }),
      );

/** A stale plan (approval refused with plan_changed) planned again; the approvers are asked again. */
const replan: Sub = (req, io) =>
  req
    .command("replan")
    .description("plan a pending change request again as it would run now (its requester or an admin)")
    .argument("<id>", "change request id")
    .option("--comment <text>", "recorded in the change_request.replanned audit event")
    .action(
      action(io, async (ctx, id: string, opts: { comment?: string }) => {
        const body = opts.comment !== undefined ? { comment: opts.comment } : {};
        const r = unwrap(await ctx.api.POST("/api/v1/change-requests/{id}/replan", { ...byId(id), body }));
        ctx.out.result(r, () => {
          ctx.out.line(`Re-planned change request ${r.id} (${r.action} ${targetOf(r)}): ${r.summary}`);
          ctx.out.note(`it needs ${r.approvals_required} approval(s) again: orchctl requests show ${r.id}`);
        });
      }),
    );

export function register(program: Command, io: CliIO): void {
  const req = program
    .command("requests")
    .description("change requests: actions held for approval by an approval policy");
  for (const sub of [
    list,
    show,
    decide("approve", "approve a pending change request (the last approval executes it)"),
    decide("deny", "deny a pending change request (one deny ends it)"),
    decide("cancel", "cancel a pending change request (its requester or an admin)"),
    replan,
  ])
    sub(req, io);
}
