// Approval policies from git (docs/approvals.md#policies-from-git): the state service, which syncs
// sources, hands over a tree's approval-policies/ and this makes them the source's policies, all or
// nothing. The shape and approver rules are the API's (policy-input.ts, approvers.ts), so a file is
// refused exactly when the same PUT would be.
import type { ApprovalService, PutApprovalPolicyRequest, SourcePolicyError } from "@orch/contracts";
import {
  forbidden,
  OrchError,
  precondition,
  type Actor,
  type CallContext,
  type Emit,
  type Handlers,
  type Queryable,
} from "@orch/kit";
import { checkApprovers } from "./approvers.js";
import type { ApprovalsContext } from "./context.js";
import { policiesDb, type PolicyRow } from "./policies-db.js";
import { checkPolicyInput, type PolicyInput } from "./policy-input.js";

type SourceHandlers = Pick<Handlers<typeof ApprovalService>, "syncSourcePolicies">;
type PolicyError = Omit<SourcePolicyError, "$typeName">;

/** Refuses an API write to a policy a source manages: the next sync would undo it. */
export function refuseManagedPolicy(p: Pick<PolicyRow, "name" | "source" | "source_commit"> | undefined): void {
  if (!p?.source) return;
  throw precondition(
    "managed_by_source",
    `approval policy '${p.name}' is managed by git source '${p.source}' (commit ${p.source_commit.slice(0, 7)}): change it in the repository`,
    { source: p.source, commit: p.source_commit },
  );
}

const errorOf = (name: string, err: OrchError): PolicyError => ({
  name,
  field: typeof err.details.field === "string" ? err.details.field : "",
  code: err.reason,
  message: err.message,
});

/** Every policy checked as the API checks a PUT; the valid ones and the refusals. */
async function checkAll(
  db: Queryable,
  policies: readonly PutApprovalPolicyRequest[],
): Promise<{ valid: PolicyInput[]; errors: PolicyError[] }> {
  const valid: PolicyInput[] = [];
  const errors: PolicyError[] = [];
  for (const p of policies) {
    try {
      const input = checkPolicyInput(p);
      await checkApprovers(db, input.approvers);
      valid.push(input);
    } catch (err) {
      if (!(err instanceof OrchError)) throw err;
      errors.push(errorOf(p.name, err));
    }
  }
  return { valid, errors };
}

const same = (row: PolicyRow, p: PolicyInput) =>
  row.description === p.description &&
  row.selector === p.selector &&
  row.approvals_required === p.approvalsRequired &&
  row.requester_may_approve === p.requesterMayApprove &&
  row.expires_after_seconds === p.expiresAfterSeconds &&
  row.max_access_seconds === p.maxAccessSeconds &&
  row.actions.join("\n") === p.actions.join("\n") &&
  row.approvers.join("\n") === p.approvers.join("\n");

const policyRef = (name: string) => ({ id: name, name, type: "approval_policy" });

interface SyncAt {
  source: string;
  commit: string;
  actor: Actor;
  now: number;
}

async function upsertOne(db: Queryable, emit: Emit, at: SyncAt, p: PolicyInput, cur: PolicyRow | undefined) {
  const stored = await policiesDb.upsert(db, {
    name: p.name,
    description: p.description,
    actions: p.actions,
    selector: p.selector,
    approvals_required: p.approvalsRequired,
    approvers: p.approvers,
    requester_may_approve: p.requesterMayApprove,
    expires_after_seconds: p.expiresAfterSeconds,
    max_access_seconds: p.maxAccessSeconds,
    created_at: cur?.created_at ?? at.now,
    updated_at: Math.max(at.now, (cur?.updated_at ?? 0) + 1),
    created_by: cur?.created_by ?? at.actor.id,
    source: at.source,
    source_commit: at.commit,
  });
  await emit({
    type: cur ? "approval_policy.updated" : "approval_policy.created",
    summary: `approval policy ${p.name} ${cur ? "changed" : "added"} by git source ${at.source} (commit ${at.commit.slice(0, 7)})`,
    actor: at.actor,
    target: policyRef(p.name),
    metadata: {
      actions: stored.actions,
      selector: stored.selector,
      approvals_required: stored.approvals_required,
      approvers: stored.approvers,
      source: at.source,
      commit: at.commit,
    },
  });
}

/**
 * One transaction: a name the API or another source owns is refused (managed_by_source) and
 * nothing changes; otherwise changed policies are written, unchanged ones only take the commit, and
 * the source's policies missing from the tree are removed.
 */
async function replaceSourcePolicies(
  db: Queryable,
  emit: Emit,
  at: SyncAt,
  tree: { names: string[]; valid: PolicyInput[]; refused: PolicyError[] },
) {
  const { valid } = tree;
  const mine = new Map((await policiesDb.bySource(db, at.source)).map((p) => [p.name, p]));
  // Every refusal of the tree at once, the rules' and the owners', so one push can fix them all.
  const errors: PolicyError[] = [...tree.refused];
  const current = new Map<string, PolicyRow | undefined>();
  for (const name of tree.names) {
    const cur = mine.get(name) ?? (await policiesDb.byName(db, name, true));
    if (cur && cur.source !== at.source) {
      const owner = cur.source ? `git source '${cur.source}'` : "the API";
      errors.push({
        name,
        field: "name",
        code: "managed_by_source",
        message: `approval policy '${name}' is managed by ${owner}`,
      });
    }
    current.set(name, cur);
  }
  if (errors.length) return { created: 0, updated: 0, removed: 0, errors };
  let created = 0;
  let updated = 0;
  for (const p of valid) {
    const cur = current.get(p.name);
    if (cur && same(cur, p)) {
      if (cur.source_commit !== at.commit) await policiesDb.upsert(db, { ...cur, source_commit: at.commit });
      continue;
    }
    await upsertOne(db, emit, at, p, cur);
    if (cur) updated++;
    else created++;
  }
  const gone = [...mine.values()].filter((p) => !current.has(p.name));
  for (const p of gone) {
    await policiesDb.remove(db, p.name);
    await emit({
      type: "approval_policy.deleted",
      summary: `approval policy ${p.name} removed by git source ${at.source} (commit ${at.commit.slice(0, 7)})`,
      actor: at.actor,
      target: policyRef(p.name),
      metadata: { actions: p.actions, selector: p.selector, source: at.source, commit: at.commit },
    });
  }
  return { created, updated, removed: gone.length, errors: [] };
}

// Only the state service reaches this subject (bus permissions); it calls as the source's system actor.
function requireSourceActor(ctx: CallContext, source: string) {
  if (ctx.actor.type !== "system" || ctx.actor.id !== `source:${source}`) throw forbidden();
}

export function sourcePolicyHandlers(c: ApprovalsContext): SourceHandlers {
  const { pool, events, clock } = c.deps;
  return {
    async syncSourcePolicies(req, ctx) {
      requireSourceActor(ctx, req.source);
      const at: SyncAt = { source: req.source, commit: req.commit, actor: ctx.actor, now: clock.now() };
      if (req.release) {
        const released = await events.tx(async (db, emit) => {
          const names = await policiesDb.release(db, req.source);
          for (const name of names)
            await emit({
              type: "approval_policy.updated",
              summary: `approval policy ${name} released by deleted git source ${req.source}: managed through the API from now on`,
              actor: ctx.actor,
              target: policyRef(name),
              metadata: { source: "", released_from: req.source },
            });
          return names.length;
        });
        return { created: 0, updated: released, removed: 0, errors: [] };
      }
      const { valid, errors } = await checkAll(pool, req.policies);
      const names = req.policies.map((p) => p.name);
      return events.tx((db, emit) => replaceSourcePolicies(db, emit, at, { names, valid, refused: errors }));
    },
  };
}
