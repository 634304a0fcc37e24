/**
 * orchctl approval-policies list | get (every operator) | put | delete (admin; docs/approvals.md)
 *
 * `put <name>` takes the policy from a YAML or JSON file (-f, the API's field names) and/or flags;
 * with flags alone it changes the stored policy (or creates one). Flags override the file.
 */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { parse as parseYaml } from "yaml";
import { unwrap, type RequestBody, type ResponseBody } from "@orch/client";
import { APPROVAL_ACTIONS } from "@orch/contracts";
import { action, type Context } from "../context.js";
import { CliError, ProblemError } from "../errors.js";
import { listCommand } from "../list-command.js";
import type { CliIO } from "../output.js";

export type ApprovalPolicy = ResponseBody<"/api/v1/approval-policies/{name}", "get">;
type PutBody = RequestBody<"/api/v1/approval-policies/{name}", "put">;

const path = (name: string) => ({ params: { path: { name } } });
const collect = (v: string, prev: string[] | undefined) => [...(prev ?? []), v];

export const POLICY_COLUMNS = ["NAME", "ACTIONS", "SELECTOR", "APPROVALS", "APPROVERS", "EXPIRES AFTER"] as const;

export function policyRows(ps: ApprovalPolicy[]): string[][] {
  return ps.map((p) => [
    p.name,
    p.actions.join(","),
    p.selector,
    String(p.approvals_required),
    p.approvers.join(","),
    `${p.expires_after_seconds}s`,
  ]);
}

export function policyFields(p: ApprovalPolicy): [string, unknown][] {
  return [
    ["name", p.name],
    ["description", p.description || "-"],
    ["actions", p.actions.join(", ")],
    ["selector", p.selector],
    ["approvals required", p.approvals_required],
    ["approvers", p.approvers.join(", ")],
    ["requester may approve", p.requester_may_approve ? "yes" : "no"],
    ["expires after", `${p.expires_after_seconds}s`],
    ...(p.actions.includes("access.request")
      ? [["longest access", `${p.max_access_seconds}s`] as [string, unknown]]
      : []),
    ["created", p.created_at],
    ["updated", p.updated_at],
    ...(p.source
      ? [["managed by", `git source ${p.source} (commit ${(p.commit ?? "").slice(0, 7)})`] as [string, unknown]]
      : []),
  ];
}

interface PutOptions {
  file?: string;
  description?: string;
  action?: string[];
  selector?: string;
  approvals?: string;
  approver?: string[];
  requesterMayApprove?: boolean;
  expiresAfter?: string;
  maxAccess?: string;
}

/** The policy body a file holds (YAML or JSON, the API's field names). */
async function fromFile(file: string): Promise<Partial<PutBody>> {
  let doc: unknown;
  try {
    doc = parseYaml(await readFile(file, "utf8"));
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`, "invalid_argument");
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc))
    throw new CliError(`${file} must hold a mapping (the policy's fields)`, "invalid_argument");
  const body = doc as Record<string, unknown>;
  delete body.name;
  for (const k of ["created_at", "updated_at", "created_by", "source", "commit"]) delete body[k];
  return body as Partial<PutBody>;
}

/** The stored policy as a body for PUT (what flags alone change), or {} when there is none. */
async function fromServer(ctx: Context, name: string): Promise<Partial<PutBody>> {
  try {
    // Everything but the server's own fields goes back, so fields this CLI does not know survive.
    const {
      name: _name,
      created_at,
      updated_at,
      created_by,
      source,
      commit,
      ...rest
    } = unwrap(await ctx.api.GET("/api/v1/approval-policies/{name}", path(name)));
    return rest;
  } catch (err) {
    if (err instanceof ProblemError && err.code === "approval_policy_not_found") return {};
    throw err;
  }
}

function wholeNumber(flag: string, v: string | undefined, unit = ""): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(unit ? v.replace(new RegExp(`${unit}$`), "") : v);
  if (!Number.isInteger(n) || n < 0)
    throw new CliError(`${flag} expects a whole number${unit ? " of seconds" : ""}, not ${v}`, "invalid_argument");
  return n;
}

export async function policyBody(ctx: Context, name: string, opts: PutOptions): Promise<PutBody> {
  const base = opts.file ? await fromFile(opts.file) : await fromServer(ctx, name);
  const flags: Partial<PutBody> = {
    description: opts.description,
    actions: opts.action,
    selector: opts.selector,
    approvals_required: wholeNumber("--approvals", opts.approvals),
    approvers: opts.approver,
    requester_may_approve: opts.requesterMayApprove,
    expires_after_seconds: wholeNumber("--expires-after", opts.expiresAfter, "s"),
    max_access_seconds: wholeNumber("--max-access", opts.maxAccess, "s"),
  };
  const body = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(flags)) if (v !== undefined) body[k] = v;
  const missing = [
    !Array.isArray(body.actions) && "--action",
    typeof body.approvals_required !== "number" && "--approvals",
    !Array.isArray(body.approvers) && "--approver",
  ].filter(Boolean);
  if (missing.length)
    throw new CliError(
      `a new policy needs ${missing.join(", ")} (or -f <file> with actions, approvals_required, approvers)`,
      "invalid_argument",
    );
  return body as PutBody;
}

const HINTS: Record<string, string> = {
  actions: `actions: ${APPROVAL_ACTIONS.join(", ")} (--action, repeat)`,
  approvals_required: "approvals: 1..10 (--approvals)",
  approvers: "approvers: operator:<name>, role:admin, role:operator or group:<sso group> (--approver, repeat)",
  expires_after_seconds: "expiry: 60..2592000 seconds (--expires-after)",
  max_access_seconds: "longest access: 60..604800 seconds (--max-access)",
  selector: "selector: the assignment grammar, e.g. env=prod or * (--selector)",
};

/** A refused policy, with the field the server named and what that field accepts. */
function explainRefusal(err: unknown): unknown {
  if (!(err instanceof ProblemError)) return err;
  const { code, problem } = err;
  if (code !== "invalid_approval_policy" && code !== "unknown_approver") return err;
  const field = typeof problem.field === "string" ? problem.field : code === "unknown_approver" ? "approvers" : "";
  const hint = HINTS[field.replace(/\[.*$/, "").split(".")[0] ?? ""];
  const where = field && !err.message.includes(field) ? ` (field ${field})` : "";
  return new ProblemError(problem, `${err.message}${where}${hint ? `\n  ${hint}` : ""}`);
}

type Sub = (parent: Command, io: CliIO) => void;

const list: Sub = (pol, io) =>
  listCommand(pol, io, {
    key: "policies",
    command: "approval-policies list",
    description: "list approval policies",
    alias: "ls",
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/approval-policies", { params: { query } })),
    columns: POLICY_COLUMNS,
    rows: policyRows,
    notes: (page) => (page.policies.length ? [] : ["no approval policies: add one with orchctl approval-policies put"]),
  });

const get: Sub = (pol, io) =>
  pol
    .command("get")
    .alias("show")
    .description("show an approval policy")
    .argument("<name>", "policy name")
    .action(
      action(io, async (ctx, name: string) => {
        const p = unwrap(await ctx.api.GET("/api/v1/approval-policies/{name}", path(name)));
        ctx.out.result(p, () => ctx.out.fields(policyFields(p)));
      }),
    );

const put: Sub = (pol, io) =>
  pol
    .command("put")
    .description("create or replace an approval policy (from -f file.yaml and/or flags)")
    .argument("<name>", "policy name")
    .option("-f, --file <file>", "YAML or JSON with the policy's fields (actions, selector, approvals_required, ...)")
    .option("--description <text>", "free text")
    .option("--action <action>", `action to hold for approval (repeat): ${APPROVAL_ACTIONS.join(", ")}`, collect)
    .option("--selector <selector>", "agent selector the policy covers (default *: every agent)")
    .option("--approvals <n>", "approvals required, 1..10")
    .option("--approver <who>", "operator:<name>, role:admin, role:operator or group:<sso group> (repeat)", collect)
    .option("--requester-may-approve", "let the requester approve their own request")
    .option("--no-requester-may-approve", "the requester may not approve (the default)")
    .option("--expires-after <seconds>", "seconds a request stays pending, 60..2592000 (default 86400)")
    .option(
      "--max-access <seconds>",
      "access.request: the longest access a request may ask for, 60..604800 (default 28800)",
    )
    .action(
      action(io, async (ctx, name: string, opts: PutOptions) => {
        const body = await policyBody(ctx, name, opts);
        let p: ApprovalPolicy;
        try {
          p = unwrap(await ctx.api.PUT("/api/v1/approval-policies/{name}", { ...path(name), body }));
        } catch (err) {
          throw explainRefusal(err);
        }
        ctx.out.result(p, () => {
          ctx.out.line(`Saved approval policy ${p.name}`);
          ctx.out.fields(policyFields(p));
        });
      }),
    );

const remove: Sub = (pol, io) =>
  pol
    .command("delete")
    .alias("rm")
    .description("remove an approval policy (pending requests keep the rules they were submitted under)")
    .argument("<name>", "policy name")
    .action(
      action(io, async (ctx, name: string) => {
        unwrap(await ctx.api.DELETE("/api/v1/approval-policies/{name}", path(name)));
        ctx.out.result({ deleted: true, name }, () => ctx.out.line(`Deleted approval policy ${name}`));
      }),
    );

export function register(program: Command, io: CliIO): void {
  const pol = program
    .command("approval-policies")
    .description(
      "approval policies: actions that need a second person (read: any operator; write: admin; see orchctl requests)",
    );
  for (const sub of [list, get, put, remove]) sub(pol, io);
}
