import type { SecretsService } from "@orch/contracts";
import {
  invalid,
  isUniqueViolation,
  precondition,
  type CallContext,
  type Emit,
  type Handlers,
  type PoolClient,
} from "@orch/kit";
import { sealedOf } from "../convert.js";
import { pendingDb, type PendingWrite } from "../db/pending.js";
import { secretsDb } from "../db/secrets.js";
import type { HandlerContext } from "../deps.js";
import { requireAdminToWiden } from "../widening.js";
import { frozenWrite } from "../write-content.js";
import { createWrite, deleteWrite, updateWrite, type WriteApproval } from "../writes.js";

type H = Pick<Handlers<typeof SecretsService>, "executeChangeRequest">;

/** The approved content is no longer what would be written: the approval is refused, nothing changes. */
const planChanged = (why: string) =>
  precondition("plan_changed", `the change request's content changed since it was submitted: ${why}`);

const failed = (why: string) => invalid("invalid_request", why, { field: "id" });

/**
 * Carries out an approved secret write, once, as the requester as they are now (the auth service
 * calls it on the last approval). The secret must still be at the version the write was planned
 * against and the held write must hash as approved; otherwise plan_changed. A retried call (the
 * caller's commit lost) finds the held write executed and answers the same result.
 */
export function changeRequestHandlers(hc: HandlerContext): H {
  return {
    async executeChangeRequest(req, ctx) {
      if (req.action !== "secret.write")
        throw invalid("invalid_request", `the secrets service does not execute '${req.action}'`, { field: "action" });
      const pendingId = req.content?.pending_id;
      if (typeof pendingId !== "string" || !pendingId) throw failed("the change request names no held secret write");
      const approval: WriteApproval = { changeRequestId: req.id, approvers: [...req.approvers] };
      const result = await hc.deps.events.tx(async (db, emit) => {
        const p = await pendingDb.forUpdate(db, pendingId);
        if (!p || (p.change_request_id !== null && p.change_request_id !== req.id))
          throw failed(`no held secret write for change request ${req.id}`);
        if (p.executed_at !== null) return p.result ?? "";
        if (p.requester_id !== ctx.actor.id) throw failed("the held write belongs to another requester");
        const out = await applyHeld(hc, db, emit, { p, contentHash: req.contentHash, ctx, approval });
        await pendingDb.markExecuted(db, p.id, req.id, hc.deps.clock.now(), out);
        return out;
      });
      return { result };
    },
  };
}

/** Checks the held write against the secret as it is now and writes it; answers the new version ("deleted"). */
async function applyHeld(
  hc: HandlerContext,
  db: PoolClient,
  emit: Emit,
  x: { p: PendingWrite; contentHash: string; ctx: CallContext; approval: WriteApproval },
): Promise<string> {
  const { p, ctx, approval } = x;
  const actor = ctx.actor;
  const row = await secretsDb.forUpdate(db, p.name);
  const current = row?.version ?? null;
  if (current !== p.base_version) {
    throw planChanged(
      p.op === "create" ? `secret '${p.name}' was created since` : `secret '${p.name}' was changed or deleted since`,
    );
  }
  const sealed = p.key_id === null ? undefined : sealedOf(p as Parameters<typeof sealedOf>[0]);
  const frozen = frozenWrite({
    op: p.op,
    name: p.name,
    valueChanged: sealed !== undefined,
    changes: p.changes,
    baseVersion: p.base_version,
    pendingId: p.id,
  });
  if (frozen.hash !== x.contentHash) throw planChanged("the held write differs from the approved content");
  const now = hc.deps.clock.now();
  if (p.op === "delete") {
    await deleteWrite(db, emit, { name: p.name, actor, approval });
    return "deleted";
  }
  if (p.op === "update") {
    const ch = p.changes;
    // The requester as they are now: an admin demoted since may no longer widen who receives it.
    requireAdminToWiden(ctx, row!, {
      restriction: ch.restriction,
      expiresAt: ch.expires_at,
    });
    return (await updateWrite(db, emit, { row: row!, changes: ch, sealed, actor, now, approval })).version;
  }
  const ch = p.changes;
  const meta = {
    name: p.name,
    description: ch.description ?? null,
    expires_at: ch.expires_at ?? null,
    restriction: ch.restriction ?? null,
    created_at: now,
    created_by: actor.id,
    updated_at: now,
    updated_by: actor.id,
  };
  if (!sealed) throw failed("the held create has no value");
  try {
    return await createWrite(db, emit, { meta, sealed, actor, approval });
  } catch (err) {
    if (isUniqueViolation(err)) throw planChanged(`secret '${p.name}' was created since`);
    throw err;
  }
}
