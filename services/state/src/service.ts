import { StateService } from "@orch/contracts";
import { schedulePeriodic, serveRpc, type Service } from "@orch/kit";
import { createClients } from "./clients.js";
import { createCommandDriver } from "./commands/driver.js";
import type { StateDeps } from "./deps.js";
import { driftPass } from "./engine/drift.js";
import { createFanOut } from "./engine/fanout.js";
import type { Engine } from "./engine/index.js";
import { createLimiter } from "./engine/limit.js";
import { registerStateMetrics } from "./engine/metrics.js";
import { createModuleCache } from "./engine/modules.js";
import { createProgressPublisher } from "./engine/progress.js";
import { createRunner } from "./engine/runner.js";
import { SWEEP_JOB, sweep, sweepStale } from "./engine/sweep.js";
import { blobHandlers } from "./blobs/handlers.js";
import { BLOB_GC_INTERVAL_MS, collectBlobs, sweepUploads } from "./blobs/sweep.js";
import { assignmentHandlers } from "./handlers/assignments.js";
import { commandHandlers } from "./handlers/commands.js";
import { driftHandlers } from "./handlers/drift.js";
import { moduleHandlers } from "./handlers/modules.js";
import { operationHandlers } from "./handlers/operations.js";
import { sourceHandlers } from "./handlers/sources.js";
import { createSourceBox } from "./sources/seal.js";
import { createSourceSync } from "./sources/sync.js";
import { valueHandlers } from "./values/handlers.js";

/** How long stop() waits for running operations before leaving them to the sweeper. */
const STOP_GRACE_MS = 10_000;

export async function createStateService(deps: StateDeps): Promise<Service & { engine: Engine }> {
  const { config, log } = deps;
  registerStateMetrics(deps.metrics);
  const clients = createClients(deps.nc, config.nats.request_timeout_ms);
  const cache = createModuleCache();
  const runner = createRunner(deps, clients, cache);
  const progress = createProgressPublisher(deps);
  const fanout = createFanOut(deps, runner, createLimiter(config.state.fanout_concurrency), progress);
  const commands = createCommandDriver(deps, clients, createLimiter(config.state.command_concurrency));
  const engine: Engine = { deps, clients, runner, fanout, cache, commands };
  const box = createSourceBox(config.state.source_keys);
  const sync = createSourceSync(engine, box);

  // Operations a previous process left behind end now if their deadline passed.
  await sweep(deps, progress);

  const rpc = serveRpc({
    nc: deps.nc,
    idempotency: deps.idempotency,
    name: "state",
    service: StateService,
    log,
    handlers: {
      ...moduleHandlers(engine),
      ...assignmentHandlers(engine),
      ...operationHandlers(engine),
      ...driftHandlers(engine),
      ...commandHandlers(engine, commands),
      ...sourceHandlers(engine, sync, box),
      ...valueHandlers(engine),
      ...blobHandlers(engine),
    },
  });
  // Once per interval across all replicas, under the same lock as the sweep at start.
  const sweeper = schedulePeriodic(deps, SWEEP_JOB, config.state.sweep_interval_seconds * 1000, async () => {
    await sweepStale(deps, progress);
  });
  // Due sources (new, scheduled, queued behind another replica's sync) one after the other, by
  // whichever replica ticks first; each sync also holds its source's own lock.
  const sources = schedulePeriodic(deps, "state.sources", config.state.sources_tick_ms, async () => {
    await sync.syncDue();
  });
  const uploads = schedulePeriodic(deps, "state.blob-uploads", 60_000, () => sweepUploads(deps));
  // Blobs no module names any more, once past their grace period (one replica per interval).
  const blobGc = schedulePeriodic(deps, "state.blob-gc", BLOB_GC_INTERVAL_MS, async () => {
    await collectBlobs(deps);
  });
  const stops = [() => sweeper.stop(), () => sources.stop(), () => uploads.stop(), () => blobGc.stop()];
  if (config.state.drift_interval_seconds > 0) {
    // Once per interval across all replicas, whichever replica's timer comes first.
    const drift = schedulePeriodic(deps, "state.drift", config.state.drift_interval_seconds * 1000, async () => {
      const n = await driftPass(deps, clients, runner, engine.cache);
      if (n > 0) log.info({ checked: n }, "scheduled drift checks done");
    });
    stops.push(() => drift.stop());
  }
  return {
    engine,
    async stop() {
      for (const s of stops) s();
      await rpc.stop();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([runner.drain(), fanout.drain(), commands.drain(), sync.drain()]),
        new Promise((r) => (timer = setTimeout(r, STOP_GRACE_MS))),
      ]);
      clearTimeout(timer);
    },
  };
}
