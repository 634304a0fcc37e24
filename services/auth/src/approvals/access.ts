// Just-in-time access (docs/approvals.md): a request for temporary access is a change request of
// action `access.request`; its approval grants it (the executor below, in the deciding transaction),
// and the grant ends by itself at expiry or when revoked. Granting and ending both broadcast a scope
// change, so gateways drop the cached principal and re-check the holder's live connections.
import { createHash } from "node:crypto";
import type { ApprovalService, RequestAccessRequest } from "@orch/contracts";
import { ACCESS_ROLES, APPROVAL_REASON_MAX, parseSelector, SelectorError } from "@orch/contracts";
import {
  forbidden,
  invalid,
  keysetPage,
  notFound,
  pageCursor,
  pageLimit,
  precondition,
  type Actor,
  type Emit,
  type Handlers,
  type Queryable,
} from "@orch/kit";
import { publishRevocation } from "../sso/access.js";
import type { ApprovalsContext, ChangeExecutor } from "./context.js";
import { matchingPolicy } from "./evaluate.js";
import { grantsDb, type GrantRow } from "./grants-db.js";
import { createRequest } from "./handlers-requests.js";
import { toChangeRequest } from "./convert.js";

export const ACCESS_ACTION = "access.request";
const MAX_REASON = APPROVAL_REASON_MAX;

type AccessHandlers = Pick<
  Handlers<typeof ApprovalService>,
  "requestAccess" | "listAccessGrants" | "revokeAccessGrant"
>;

/** What a request asks for, checked: the frozen content of its change request. */
interface AccessAsk {
  agent_selector: string;
  role: string;
  duration_seconds: number;
}

const bad = (field: string, message: string) => invalid("invalid_access_request", message, { field });

function checkSelector(text: string): string {
  const folded = text.replace(/\s+/g, " ").trim();
  if (!folded) return "";
  if (folded.includes("||")) throw bad("agent_selector", "agent_selector may not contain '||'");
  try {
    return parseSelector(folded).source;
  } catch (err) {
    if (err instanceof SelectorError) throw bad("agent_selector", `agent_selector: ${err.message}`);
    throw err;
  }
}

function checkAsk(req: RequestAccessRequest, actor: Actor): AccessAsk {
  const role = req.role.trim();
  if (role && !(ACCESS_ROLES as readonly string[]).includes(role))
    throw bad("role", `role may only be ${ACCESS_ROLES.join(", ")} (or empty)`);
  const agent_selector = checkSelector(req.agentSelector);
  if (!role && !agent_selector) throw bad("agent_selector", "ask for an agent_selector, the admin role, or both");
  if (actor.role === "admin") throw bad("role", "an admin already reaches every agent with every right");
  if (!req.reason.trim()) throw bad("reason", "a reason is required");
  if (req.reason.length > MAX_REASON) throw bad("reason", `reason is longer than ${MAX_REASON} characters`);
  if (!Number.isInteger(req.durationSeconds) || req.durationSeconds < 1)
    throw bad("duration_seconds", "duration_seconds must be a positive whole number of seconds");
  return { agent_selector, role, duration_seconds: req.durationSeconds };
}

const hashOf = (ask: AccessAsk) =>
  createHash("sha256")
    .update(JSON.stringify([ask.agent_selector, ask.role, ask.duration_seconds]))
    .digest("hex");

const askText = (ask: AccessAsk) =>
  [ask.role ? `the ${ask.role} role` : "", ask.agent_selector ? `agents ${ask.agent_selector}` : ""]
    .filter(Boolean)
    .join(" and ");

function requestAccess(c: ApprovalsContext): AccessHandlers["requestAccess"] {
  return async (req, ctx) => {
    if (ctx.actor.type !== "operator") throw forbidden();
    const ask = checkAsk(req, ctx.actor);
    const p = await matchingPolicy(c.deps.pool, ACCESS_ACTION, []);
    if (!p)
      throw precondition(
        "access_requests_disabled",
        "no approval policy covers access.request: an admin adds one (selector *) naming who grants access",
      );
    if (ask.duration_seconds > p.max_access_seconds)
      throw invalid(
        "access_duration_too_long",
        `duration_seconds may be at most ${p.max_access_seconds} under policy ${p.name}`,
        { field: "duration_seconds", max_access_seconds: p.max_access_seconds },
      );
    const input = {
      action: ACCESS_ACTION,
      targetType: "operator",
      targetName: ctx.actor.name,
      summary: `${ctx.actor.name} asks for ${askText(ask)} for ${ask.duration_seconds}s`,
      reason: req.reason.trim(),
      content: { ...ask },
      contentHash: hashOf(ask),
    };
    const row = await createRequest(c, input, p, ctx.actor, async (_db, emit, r) => {
      await emit({
        type: "access.requested",
        summary: input.summary,
        actor: ctx.actor,
        target: { id: ctx.actor.id, name: ctx.actor.name, type: "operator" },
        metadata: { request_id: r.id, ...ask, reason: input.reason, policy: p.name },
      });
    });
    return toChangeRequest(row, []);
  };
}

/** The executor of `access.request`: the grant, in the deciding transaction; the broadcast after it. */
export function accessExecutor(c: ApprovalsContext): ChangeExecutor {
  return async (r, approvers, tx) => {
    const ask = r.content as unknown as AccessAsk;
    if (hashOf(ask) !== r.content_hash) throw new Error("the request's content does not match its hash");
    const now = c.deps.clock.now();
    const grant: GrantRow = {
      id: c.deps.ids.next(),
      operator_id: r.requester_id,
      operator_name: r.requester_name,
      request_id: r.id,
      agent_selector: ask.agent_selector,
      role: ask.role === "admin" ? "admin" : "",
      reason: r.reason,
      granted_at: now,
      expires_at: now + ask.duration_seconds * 1000,
      ended_at: null,
      end_reason: "",
      ended_by: "",
    };
    await grantsDb.insert(tx.db, grant);
    await tx.emit({
      type: "access.granted",
      summary: `${r.requester_name} granted ${askText(ask)} until ${new Date(grant.expires_at).toISOString()}`,
      actor: { id: approvers.at(-1)?.id ?? "system", name: approvers.at(-1)?.name ?? "system", type: "operator" },
      target: { id: r.requester_id, name: r.requester_name, type: "operator" },
      metadata: { grant_id: grant.id, request_id: r.id, ...ask, expires_at: grant.expires_at, approvers },
    });
    tx.afterCommit(() => publishRevocation(c.deps.nc, r.requester_id, true));
    return { result: grant.id };
  };
}

/** Ends a grant (the caller holds its row lock) with its event; the caller broadcasts after the commit. */
export async function endGrant(
  db: Queryable,
  emit: Emit,
  g: GrantRow,
  how: { at: number; reason: "expired" | "revoked"; by: Actor | undefined; comment?: string },
): Promise<void> {
  await grantsDb.end(db, g.id, how.at, how.reason, how.by?.name ?? "");
  await emit({
    type: how.reason === "expired" ? "access.expired" : "access.revoked",
    summary:
      how.reason === "expired"
        ? `access grant ${g.id} of ${g.operator_name} expired`
        : `access grant ${g.id} of ${g.operator_name} revoked by ${how.by?.name}`,
    actor: how.by ?? { id: "system", name: "system", type: "system" },
    target: { id: g.operator_id, name: g.operator_name, type: "operator" },
    metadata: {
      grant_id: g.id,
      request_id: g.request_id,
      agent_selector: g.agent_selector,
      role: g.role,
      expires_at: g.expires_at,
      ...(how.comment ? { comment: how.comment } : {}),
    },
  });
}

function revoke(c: ApprovalsContext): AccessHandlers["revokeAccessGrant"] {
  return async (req, ctx) => {
    if (req.comment.length > 2000) throw invalid("invalid_request", "comment is longer than 2000 characters");
    const g = await c.deps.events.tx(async (db, emit) => {
      const g = await grantsDb.byId(db, req.id, true);
      if (!g) throw notFound("access_grant_not_found", `no access grant '${req.id}'`);
      if (ctx.actor.role !== "admin" && ctx.actor.type !== "system" && ctx.actor.id !== g.operator_id)
        throw forbidden("not_change_requester", "only an admin or the grant's holder may revoke it");
      if (g.ended_at !== null || g.expires_at <= c.deps.clock.now())
        throw precondition("access_grant_ended", `access grant ${g.id} already ended`);
      await endGrant(db, emit, g, { at: c.deps.clock.now(), reason: "revoked", by: ctx.actor, comment: req.comment });
      return g;
    });
    publishRevocation(c.deps.nc, g.operator_id, true);
    return grantMsg((await grantsDb.byId(c.deps.pool, g.id))!, c.deps.clock.now());
  };
}

export function grantMsg(g: GrantRow, now: number) {
  return {
    id: g.id,
    operatorId: g.operator_id,
    operatorName: g.operator_name,
    requestId: g.request_id,
    agentSelector: g.agent_selector,
    role: g.role,
    reason: g.reason,
    grantedAt: Number(g.granted_at),
    expiresAt: Number(g.expires_at),
    endedAt: Number(g.ended_at ?? 0),
    endReason: g.end_reason,
    endedBy: g.ended_by,
    active: g.ended_at === null && Number(g.expires_at) > now,
  };
}

function list(c: ApprovalsContext): AccessHandlers["listAccessGrants"] {
  return async (req, ctx) => {
    const limit = pageLimit(req.limit);
    const admin = ctx.actor.role === "admin" || ctx.actor.type === "system";
    const now = c.deps.clock.now();
    const rows = await grantsDb.page(
      c.deps.pool,
      { operatorId: admin ? req.operatorId : ctx.actor.id, active: req.active, now },
      limit + 1,
      pageCursor(req.cursor, "ulid"),
    );
    const { page, nextCursor } = keysetPage(rows, limit, (g) => g.id);
    return { grants: page.map((g) => grantMsg(g, now)), nextCursor };
  };
}

export function accessHandlers(c: ApprovalsContext): AccessHandlers {
  return { requestAccess: requestAccess(c), listAccessGrants: list(c), revokeAccessGrant: revoke(c) };
}
