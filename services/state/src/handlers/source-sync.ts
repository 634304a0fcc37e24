import { SOURCE_SYNC_WAIT_S, type StateService } from "@orch/contracts";
import type { Clock, Handlers } from "@orch/kit";
import { sourceMsg } from "../convert.js";
import type { Engine } from "../engine/index.js";
import type { SourceSync } from "../sources/sync.js";
import type { SyncTrigger } from "../sources/sync-records.js";
import { planRef, planWaitMs } from "../validate.js";
import { viewSource } from "./source-view.js";

type H = Handlers<typeof StateService>;

/**
 * A sync that starts after the request: one already under way (a scheduled retry, another
 * replica) may have fetched before the commit the operator is waiting for, so answering with its
 * outcome would show a stale failure. Queued behind it, try again until ours runs or time is up.
 */
async function syncAfter(sync: SourceSync, clock: Clock, name: string, trigger: SyncTrigger, until: number) {
  for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
    const r = await sync.sync(name, trigger);
    if (!r.queued || clock.now() + delay >= until) return r;
    await new Promise((res) => setTimeout(res, delay));
  }
}

export const syncSource =
  ({ deps }: Engine, sync: SourceSync): H["syncSource"] =>
  async (req, ctx) => {
    // A slow fetch outlasts the caller's patience: answer with the row as it stands and let the sync finish.
    const until = deps.clock.now() + SOURCE_SYNC_WAIT_S * 1000;
    const running = syncAfter(sync, deps.clock, req.name, { kind: "manual", actor: ctx.actor }, until);
    running.catch(() => {}); // a failure after the wait is logged by sync; before it, it is rethrown below
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([running, new Promise((r) => (timer = setTimeout(r, SOURCE_SYNC_WAIT_S * 1000)))]);
    } finally {
      clearTimeout(timer);
    }
    return sourceMsg(await viewSource(deps.pool, req.name));
  };

export const planSource =
  ({ deps }: Engine, sync: SourceSync): H["planSource"] =>
  async (req, ctx) => {
    const row = await viewSource(deps.pool, req.name);
    const ref = planRef(req.ref, row.branch);
    return sync.plan(req.name, ref, planWaitMs(req.waitSeconds), ctx.actor);
  };
