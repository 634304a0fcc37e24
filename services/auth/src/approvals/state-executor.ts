// The executors of the actions the state service carries out: it freezes the action's content again,
// compares the approved hash (plan_changed) and starts it once, as the requester.
import type { JsonObject } from "@bufbuild/protobuf";
import { StateService } from "@orch/contracts";
import { rpcClient, type Actor, type Queryable } from "@orch/kit";
import { operatorsDb } from "../db/operators.js";
import type { AuthDeps } from "../deps.js";
import type { ChangeExecutor, ChangeExecutors, ChangeReplanners } from "./context.js";
import type { RequestRow } from "./requests-db.js";

/** The requester as they are now: an operator removed, deactivated or narrowed since reaches no more than that. */
async function requesterNow(db: Queryable, r: RequestRow): Promise<Actor> {
  const op = await operatorsDb.byId(db, r.requester_id);
  if (!op?.active) throw new Error(`requester ${r.requester_name} is no longer an active operator`);
  return {
    id: op.id,
    name: op.name,
    type: "operator",
    role: op.role,
    ...(op.agent_selector ? { scope: op.agent_selector } : {}),
  };
}

const stateClient = (deps: AuthDeps) =>
  rpcClient(deps.nc, "state", StateService, { timeoutMs: deps.config.nats.request_timeout_ms });

export function stateExecutors(deps: AuthDeps): ChangeExecutors {
  const state = stateClient(deps);
  const viaState: ChangeExecutor = async (r, approvers) => {
    const actor = await requesterNow(deps.pool, r);
    const res = await state.executeChangeRequest(
      {
        id: r.id,
        action: r.action,
        targetName: r.target_name,
        contentHash: r.content_hash,
        approvers: approvers.map((a) => a.name),
        content: r.content as JsonObject,
      },
      { actor },
    );
    return { result: res.result };
  };
  return { "assignment.apply": viaState, "agent.apply": viaState };
}

/** The applies' re-planners: the state service freezes the apply again and starts a fresh plan. */
export function stateReplanners(deps: AuthDeps): ChangeReplanners {
  const state = stateClient(deps);
  const viaState = async (r: RequestRow) => {
    const res = await state.replanChangeRequest(
      {
        id: r.id,
        action: r.action,
        targetName: r.target_name,
        contentHash: r.content_hash,
        approvers: [],
        content: r.content as JsonObject,
      },
      { actor: await requesterNow(deps.pool, r) },
    );
    return {
      content: (res.content ?? {}) as Record<string, unknown>,
      contentHash: res.contentHash,
      summary: res.summary,
    };
  };
  return { "assignment.apply": viaState, "agent.apply": viaState };
}
