// The executors of the actions other services carry out: the service that holds an action freezes
// its content again, compares the approved hash (plan_changed) and carries it out once, as the
// requester. Which service executes which action is decided here, in one table.
import type { JsonObject } from "@bufbuild/protobuf";
import {
  REPLANNABLE_ACTIONS,
  SecretsService,
  StateService,
  TerminalService,
  type ApprovalAction,
} from "@orch/contracts";
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

const executing = { state: StateService, terminal: TerminalService, secrets: SecretsService } as const;
type Executing = keyof typeof executing;

/** Action → the service executing it (every action but access.request, which auth executes itself). */
export const EXECUTED_BY: Readonly<Partial<Record<ApprovalAction, Executing>>> = {
  "assignment.apply": "state",
  "agent.apply": "state",
  "command.run": "state",
  "catalog.write": "state",
  "terminal.open": "terminal",
  "secret.write": "secrets",
};

const requestOf = (r: RequestRow, approvers: string[]) => ({
  id: r.id,
  action: r.action,
  targetName: r.target_name,
  contentHash: r.content_hash,
  approvers,
  content: r.content as JsonObject,
});

export function serviceExecutors(deps: AuthDeps): ChangeExecutors {
  const timeoutMs = deps.config.nats.request_timeout_ms;
  const clients = {
    state: rpcClient(deps.nc, "state", StateService, { timeoutMs }),
    terminal: rpcClient(deps.nc, "terminal", TerminalService, { timeoutMs }),
    secrets: rpcClient(deps.nc, "secrets", SecretsService, { timeoutMs }),
  };
  const via =
    (service: Executing): ChangeExecutor =>
    async (r, approvers) => {
      const actor = await requesterNow(deps.pool, r);
      const req = requestOf(
        r,
        approvers.map((a) => a.name),
      );
      const res = await clients[service].executeChangeRequest(req, { actor });
      return { result: res.result };
    };
  return Object.fromEntries(Object.entries(EXECUTED_BY).map(([action, service]) => [action, via(service)]));
}

/** The re-planners (REPLANNABLE_ACTIONS): the state service freezes the action again and plans it afresh. */
export function stateReplanners(deps: AuthDeps): ChangeReplanners {
  const state = rpcClient(deps.nc, "state", StateService, { timeoutMs: deps.config.nats.request_timeout_ms });
  const viaState = async (r: RequestRow) => {
    const res = await state.replanChangeRequest(requestOf(r, []), { actor: await requesterNow(deps.pool, r) });
    return {
      content: (res.content ?? {}) as Record<string, unknown>,
      contentHash: res.contentHash,
      summary: res.summary,
    };
  };
  return Object.fromEntries(REPLANNABLE_ACTIONS.map((action) => [action, viaState]));
}
