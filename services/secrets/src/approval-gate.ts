import type { JsonObject } from "@bufbuild/protobuf";
import { askApproval, type Actor, type ApprovalVerdict } from "@orch/kit";
import { secretRef } from "./convert.js";
import { pendingDb, type MetaChanges, type WriteOp } from "./db/pending.js";
import type { HandlerContext } from "./deps.js";
import type { Sealed } from "./keyring.js";
import { frozenWrite, writeSummary } from "./write-content.js";

const ACTION = "secret.write";
/** The longest a change request may live (expires_after_seconds ≤ 2592000): older held writes are dead. */
export const PENDING_LIFETIME_MS = 30 * 24 * 3600 * 1000;

export interface GateInput {
  actor: Actor;
  reason: string;
  breakGlass: boolean;
  name: string;
  op: WriteOp;
}

/**
 * Approval at the point of execution: secret.write touches no agent, so only a policy with selector
 * `*` covers it. `run`: no policy holds it, or an admin broke glass (recorded, critical); `hold`: it
 * must become a change request, with the checked reason.
 */
export function needsApproval(hc: HandlerContext, g: GateInput): Promise<ApprovalVerdict> {
  return askApproval(
    { approvals: hc.approvals, events: hc.deps.events },
    {
      action: ACTION,
      agents: [],
      actor: g.actor,
      reason: g.reason,
      breakGlass: g.breakGlass,
      target: secretRef(g.name),
      doing: `wrote secret ${g.name} (${g.op})`,
      metadata: { op: g.op },
    },
  );
}

export interface HoldInput {
  op: WriteOp;
  name: string;
  /** The new value sealed as `secrets` stores it (active key, the name as additional data). */
  sealed: Sealed | null;
  changes: MetaChanges;
  baseVersion: string | null;
  actor: Actor;
  reason: string;
}

/**
 * Holds a write: its sealed value waits in pending_writes and the change request carries only what
 * changes (never the value). A failed submit removes the pending row again.
 */
export async function holdWrite(
  hc: HandlerContext,
  h: HoldInput,
): Promise<{ changeRequestId: string; summary: string }> {
  const { pool, ids, clock } = hc.deps;
  const now = clock.now();
  const pendingId = ids.next();
  // Rows past any request's lifetime can never execute: dropped here, as the service has no periodic job.
  await pendingDb.purgeBefore(pool, now - PENDING_LIFETIME_MS);
  await pendingDb.insert(pool, {
    id: pendingId,
    op: h.op,
    name: h.name,
    sealed: h.sealed,
    changes: h.changes,
    base_version: h.baseVersion,
    requester_id: h.actor.id,
    createdAt: now,
  });
  const valueChanged = h.sealed !== null;
  const frozen = frozenWrite({ ...h, valueChanged, pendingId });
  const summary = writeSummary(h.op, h.name, valueChanged, h.changes);
  try {
    const cr = await hc.approvals.submitChangeRequest(
      {
        action: ACTION,
        targetType: "secret",
        targetName: h.name,
        summary,
        reason: h.reason,
        content: frozen.content as unknown as JsonObject,
        contentHash: frozen.hash,
        agents: [],
      },
      { actor: h.actor },
    );
    await pendingDb.bindRequest(pool, pendingId, cr.id);
    return { changeRequestId: cr.id, summary };
  } catch (err) {
    await pendingDb.remove(pool, pendingId);
    throw err;
  }
}
