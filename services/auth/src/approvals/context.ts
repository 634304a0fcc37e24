// What the approval handlers and the expiry job share: the dependencies and the executors.
import type { Actor, Emit, Queryable } from "@orch/kit";
import type { AuthDeps } from "../deps.js";
import type { RequestRow } from "./requests-db.js";

/** An approver as recorded on the request and passed to an executor. */
export interface ApproverRef {
  id: string;
  name: string;
}

/**
 * Executes an approved change request, as its requester, once. Throwing an OrchError with reason
 * `plan_changed` refuses the approval (the request stays pending); any other error marks the
 * request `failed`. Runs inside the transaction holding the request's row lock.
 */
export type ChangeExecutor = (
  request: RequestRow,
  approvers: ApproverRef[],
  tx: ExecutorTx,
) => Promise<{ result: string }>;

/** The deciding transaction, for executors whose change lives in the auth schema (access grants). */
export interface ExecutorTx {
  db: Queryable;
  emit: Emit;
  /** Runs once the transaction committed (a broadcast must never announce a rolled-back change). */
  afterCommit(fn: () => void): void;
}

/** Action → executor. An action without one stays `approved` for its service to execute. */
export type ChangeExecutors = Readonly<Record<string, ChangeExecutor>>;

/**
 * Freezes a pending request's action again as it would run now, as its requester, with a fresh
 * plan: the new content, its hash and summary. Runs outside any transaction (it starts a plan).
 */
export type ChangeReplanner = (
  request: RequestRow,
) => Promise<{ content: Record<string, unknown>; contentHash: string; summary: string }>;

/** Action → replanner: the actions whose content is a plan that can go stale (applies). */
export type ChangeReplanners = Readonly<Record<string, ChangeReplanner>>;

export interface ApprovalsContext {
  deps: AuthDeps;
  executors: ChangeExecutors;
  replanners: ChangeReplanners;
}

export const requesterActor = (r: RequestRow): Actor => ({
  id: r.requester_id,
  name: r.requester_name,
  type: "operator",
  role: "",
});
