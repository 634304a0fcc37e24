import { operationsDb, type OperationRow } from "../db/operations.js";
import type { Clients, StateDeps } from "../deps.js";
import { finishOperation } from "./finish.js";
import { createEndWriter } from "./finish-batch.js";
import type { ModuleCache } from "./modules.js";
import type { Runner } from "./operation.js";
import { runOperation, type OperationContext } from "./operation-run.js";
import { createOperationWrites } from "./operation-writes.js";
import { createChunkReads } from "../blobs/chunk-reads.js";

/** Runs operations on this replica (operation-run.ts does each one) and keeps track of those in flight. */
export function createRunner(deps: StateDeps, clients: Clients, cache: ModuleCache): Runner {
  const { pool, clock, ids, log, config } = deps;
  const timeoutMs = config.state.operation_timeout_seconds * 1000;
  const inflight = new Map<string, Promise<OperationRow | undefined>>();
  const current = (id: string) => operationsDb.get(pool, id);
  const context: OperationContext = {
    deps,
    clients,
    cache,
    ends: createEndWriter(deps),
    writes: createOperationWrites(deps),
    chunks: createChunkReads(),
  };

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
        change_request_id: input.changeRequestId ?? null,
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
          return (await runOperation(context, op, input)) ?? (await current(op.id));
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
