import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SourcePlanSchema } from "@orch/contracts";
import { notFound, withJobLock, type Actor } from "@orch/kit";
import { sourcesDb } from "../db/sources.js";
import type { Engine } from "../engine/index.js";
import { sourceActor } from "./actor.js";
import { planSource } from "./plan.js";
import type { SourceBox } from "./seal.js";
import { attemptSync } from "./sync-attempt.js";
import type { SyncTrigger } from "./sync-records.js";

export interface SourceSync {
  /**
   * Syncs now under the source's advisory lock; when another replica or call holds it, makes the
   * source due and returns {queued: true}. Fetch and validation failures are recorded on the row
   * (never thrown); throws source_not_found.
   */
  sync(name: string, trigger: SyncTrigger): Promise<{ queued: boolean }>;
  /** Every due source (next_sync_at <= now), one after the other; returns how many ran. */
  syncDue(): Promise<number>;
  plan(name: string, ref: string, waitMs: number, actor: Actor): Promise<MessageInitShape<typeof SourcePlanSchema>>;
  /**
   * Resolves when the syncs under way in this process have ended (scheduled, manual, or started
   * by a webhook without waiting): a stop that cut one off would leave its claim keeping the
   * source from syncing until the claim's lease ran out.
   */
  drain(): Promise<void>;
}

/**
 * The syncs of git sources: one at a time per source across replicas (its advisory lock), the
 * others queued by making the source due. Each attempt is run by sync-attempt.ts.
 */
export function createSourceSync(engine: Engine, box: SourceBox | undefined): SourceSync {
  const { pool, clock, log } = engine.deps;

  const inflight = new Set<Promise<unknown>>();

  function sync(name: string, trigger: SyncTrigger): Promise<{ queued: boolean }> {
    const p = syncLocked(name, trigger);
    inflight.add(p);
    void p.finally(() => inflight.delete(p)).catch(() => {});
    return p;
  }

  async function syncLocked(name: string, trigger: SyncTrigger): Promise<{ queued: boolean }> {
    if (!(await sourcesDb.get(pool, name))) throw notFound("source_not_found", `no git source '${name}'`);
    const ran = await withJobLock(pool, `source:${name}`, async () => {
      try {
        await attemptSync({ engine, box }, name, trigger);
      } catch (err) {
        log.error({ err, source: name, trigger: trigger.kind }, "source sync failed unexpectedly");
        throw err;
      }
    });
    if (ran) return { queued: false };
    // Another sync of this source is under way (here or on another replica): it, or the next tick, picks this up.
    await sourcesDb.makeDue(pool, name, clock.now());
    return { queued: true };
  }

  return {
    sync,
    async syncDue() {
      let ran = 0;
      for (const name of await sourcesDb.due(pool, clock.now())) {
        try {
          if (!(await sync(name, { kind: "schedule", actor: sourceActor(name) })).queued) ran++;
        } catch {
          // Logged by sync; the other due sources still run.
        }
      }
      return ran;
    },
    plan: (name, ref, waitMs, actor) => planSource(engine, box, name, ref, waitMs, actor),
    async drain() {
      await Promise.allSettled([...inflight]);
    },
  };
}
