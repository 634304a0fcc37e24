/** The 202 a catalog write answers when an approval policy holds it (catalog.write, docs/approvals.md). */
import type { Command } from "commander";
import type { Context } from "../context.js";
import { approvalBody } from "./apply.js";

export interface HeldWrite {
  status: "held";
  change_request_id: string;
  summary: string;
}

export const isHeld = (body: unknown): body is HeldWrite =>
  typeof body === "object" &&
  body !== null &&
  (body as { status?: unknown }).status === "held" &&
  typeof (body as { change_request_id?: unknown }).change_request_id === "string";

/** `--reason` and `--break-glass` on a catalog write command. */
export const withApprovalOptions = (cmd: Command): Command =>
  cmd
    .option("--reason <text>", "why (kept with the change request when an approval policy holds the change)")
    .option("--break-glass", "admins: change it without the approval a policy asks for (needs --reason; audited)");

export interface ApprovalOpts {
  reason?: string;
  breakGlass?: boolean;
}

/** The approval fields of a body or query (DELETE, bundle uploads), checked before anything is sent. */
export const catalogApproval = (opts: ApprovalOpts) => approvalBody(opts);

/** Prints a held write (`--json`: the API's body) and tells the caller it was held. */
export function printedHeld(ctx: Context, what: string, body: unknown): body is HeldWrite {
  if (!isHeld(body)) return false;
  const id = body.change_request_id;
  ctx.out.result(body, () =>
    ctx.out.line(`${what} change held for approval: change request ${id} — orchctl requests show ${id}`),
  );
  return true;
}
