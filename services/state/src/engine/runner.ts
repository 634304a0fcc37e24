import type { ExecuteResponse } from "@orch/contracts";
import { groupCommit, OrchError, type Actor } from "@orch/kit";
import {
  operationsDb,
  type Finish,
  type NewOperation,
  type OperationKind,
  type OperationRow,
} from "../db/operations.js";
import { masker, TemplateError } from "../module/template.js";
import type { AgentInfo, Clients, StateDeps } from "../deps.js";
import { untilStored } from "./db-retry.js";
import { finishOperation, type FinishContext } from "./finish.js";
import { createEndWriter } from "./finish-batch.js";
import { renderResources, secretBearing, secretNames, type ModuleSource, type RenderedResource } from "./render.js";
import { storeResults } from "./results.js";

/** Everything one operation needs to run. */
export interface OperationInput {
  agent: AgentInfo;
  kind: OperationKind;
  sources: ModuleSource[];
  actor: Actor;
  runId?: string;
  assignment?: string;
  /** Called after the operation starts running and after it ends (a fan-out publishes its progress). */
  onChange?: () => void;
  /**
   * Enforcement: apply only these resources (`<module>/<id>`); `requires` edges to the others are
   * dropped (they were in sync). Such an apply leaves the snapshot alone (engine/finish.ts).
   */
  only?: ReadonlySet<string>;
  /** Enforcement: the drift record the apply corrects. */
  remediates?: string;
}

export interface Runner {
  /** The row of a new pending operation (not yet inserted). */
  newOperation(input: OperationInput): NewOperation;
  /** Inserts and runs one operation in the background. */
  start(input: OperationInput): Promise<{ op: OperationRow; done: Promise<OperationRow | undefined> }>;
  /** Runs an inserted pending operation to its end. Never throws; resolves with the final row. */
  execute(op: NewOperation, input: OperationInput): Promise<OperationRow | undefined>;
  /** Waits up to `ms` for an operation this replica runs; then returns its current row. */
  waitFor(id: string, ms: number): Promise<OperationRow | undefined>;
  /** Resolves when every operation this replica runs has ended. */
  drain(): Promise<void>;
}

/**
 * Reasons meaning "no agents replica holds this agent's link" rather than a failure of the agent.
 * `agent_disconnected` is not one: the link dropped after the agent got the operation, which it may
 * have applied in part, so the operation fails with that reason instead of claiming it never ran.
 */
const UNREACHABLE_REASONS = new Set(["service_unavailable", "agent_not_connected", "agent_unreachable"]);

/** The resources named in `only` (all when absent), without `requires` edges to the ones left out. */
export function subset(resources: RenderedResource[], only?: ReadonlySet<string>): RenderedResource[] {
  if (!only) return resources;
  return resources
    .filter((r) => only.has(`${r.module}/${r.id}`))
    .map((r) => ({ ...r, requires: r.requires.filter((dep) => only.has(dep)) }));
}

/** The sources with only the resources named in `only` (all when absent). */
function narrow(sources: ModuleSource[], only?: ReadonlySet<string>): ModuleSource[] {
  if (!only) return sources;
  return sources.map((s) => ({
    ...s,
    parsed: { ...s.parsed, resources: s.parsed.resources.filter((r) => only.has(`${s.name}/${r.id}`)) },
  }));
}

/**
 * What the modules of a fan-out say about secrets, worked out once per sources list (every
 * operation of a fan-out shares it) rather than by walking every resource's spec per operation.
 */
const secretInfo = new WeakMap<readonly ModuleSource[], { names: string[]; bearing: Set<string> }>();
function secretsOf(sources: readonly ModuleSource[]) {
  let info = secretInfo.get(sources);
  if (!info) {
    info = { names: secretNames(sources), bearing: secretBearing(sources) };
    secretInfo.set(sources, info);
  }
  return info;
}

export function createRunner(deps: StateDeps, clients: Clients): Runner {
  const { pool, clock, ids, log, config } = deps;
  const timeoutMs = config.state.operation_timeout_seconds * 1000;
  const inflight = new Map<string, Promise<OperationRow | undefined>>();

  const current = (id: string) => operationsDb.get(pool, id);
  const ends = createEndWriter(deps);
  // A fan-out starts many operations at once: their pending → running goes in few statements.
  const markRunning = groupCommit<{ id: string; now: number; deadline: number }, boolean>({
    max: 1000,
    batch: async (items) => {
      const started = await operationsDb.markRunningMany(pool, items);
      return items.map((i) => started.has(i.id));
    },
    one: (i) => operationsDb.markRunning(pool, i.id, i.now, i.deadline),
    log,
    what: "operation starts",
  });

  async function run(op: NewOperation, input: OperationInput): Promise<OperationRow | undefined> {
    const { agent, sources, kind } = input;
    const only = input.only;
    // An enforcement apply renders, and resolves the secrets of, its resources only.
    const used = narrow(sources, only);
    // The operation's end is work already done (the agent may have answered): it waits out a
    // database that is away instead of leaving the operation running until its deadline.
    const finish = (f: Finish, ctx: FinishContext) => untilStored(log, "operation end", () => ends.end({ op, f, ctx }));
    const end = (status: OperationRow["status"], error_code: string, error: string) =>
      finish({ status, finished_at: clock.now(), error_code, error }, { agent, sources, only });

    // Secrets first: a refused secret fails the operation before anything reaches the agent.
    const secrets = new Map<string, string>();
    const { names, bearing } = secretsOf(used);
    for (const name of names) {
      try {
        const r = await clients.secrets.resolve(
          { name, nodeId: agent.nodeId, operationId: op.id },
          { actor: input.actor },
        );
        secrets.set(name, r.value);
      } catch (err) {
        const e = OrchError.from(err);
        return end("failed", e.reason, `secret '${name}': ${e.message}`);
      }
    }
    const mask = masker(secrets.values());
    let resources: RenderedResource[];
    try {
      resources = subset(renderResources(used, agent, secrets), only);
    } catch (err) {
      if (err instanceof TemplateError) return end("failed", "template_error", mask(err.message));
      throw err;
    }

    const startedAt = clock.now();
    const deadline = startedAt + timeoutMs;
    if (!(await markRunning({ id: op.id, now: startedAt, deadline }))) return current(op.id);
    input.onChange?.();
    let response: ExecuteResponse;
    try {
      response = await clients
        .agentState(agent.nodeId)
        .execute(
          { operationId: op.id, mode: kind === "apply" ? "apply" : "plan", resources, mask: [...secrets.values()] },
          { actor: input.actor, timeoutMs: Math.max(1, deadline - clock.now()) },
        );
    } catch (err) {
      const e = OrchError.from(err);
      if (e.reason === "agent_disconnected")
        return end(
          "failed",
          "agent_disconnected",
          `agent ${agent.name || agent.nodeId} disconnected while the operation ran; it may have applied part of it: plan again once it is back`,
        );
      if (e.code === "UNAVAILABLE" || UNREACHABLE_REASONS.has(e.reason))
        return end("unreachable", "agent_unreachable", `agent ${agent.name || agent.nodeId} is not connected`);
      if (e.code === "DEADLINE_EXCEEDED")
        return end(
          "timed_out",
          "operation_timed_out",
          `the agent did not finish within ${config.state.operation_timeout_seconds} s`,
        );
      return end("failed", e.reason, mask(e.message));
    }
    const exec = storeResults(response.results, mask, bearing);
    const failed = exec.summary.failed > 0 || exec.summary.skipped > 0;
    return finish(
      {
        status: failed ? "failed" : "succeeded",
        finished_at: clock.now(),
        summary: exec.summary,
        results: exec.results,
        output: exec.output,
      },
      { agent, sources, exec, only },
    );
  }

  const runner: Runner = {
    newOperation(input) {
      const now = clock.now();
      return {
        id: ids.next(),
        node_id: input.agent.nodeId,
        node_name: input.agent.name,
        kind: input.kind,
        modules: input.sources.map((s) => s.name),
        actor_id: input.actor.id,
        actor_name: input.actor.name,
        created_at: now,
        deadline: now + timeoutMs,
        run_id: input.runId ?? null,
        assignment: input.assignment ?? "",
        remediates: input.remediates ?? null,
      };
    },

    async start(input) {
      const op = runner.newOperation(input);
      await operationsDb.insertMany(pool, [op]);
      const done = runner.execute(op, input);
      return { op: (await current(op.id))!, done };
    },

    execute(op, input) {
      const p = (async () => {
        try {
          return (await run(op, input)) ?? (await current(op.id));
        } catch (err) {
          log.error({ err, operation: op.id }, "operation failed unexpectedly");
          return (
            (await finishOperation(deps, op, {
              status: "failed",
              finished_at: clock.now(),
              error_code: "internal",
              error: "internal error",
            }).catch(() => undefined)) ?? current(op.id).catch(() => undefined)
          );
        } finally {
          inflight.delete(op.id);
          input.onChange?.();
        }
      })();
      inflight.set(op.id, p);
      return p;
    },

    async waitFor(id, ms) {
      const p = inflight.get(id);
      if (p && ms > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
        clearTimeout(timer);
      }
      return current(id);
    },

    async drain() {
      while (inflight.size) await Promise.allSettled([...inflight.values()]);
    },
  };
  return runner;
}
