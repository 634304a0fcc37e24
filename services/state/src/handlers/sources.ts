import {
  checkRef,
  SOURCE_PLAN_WAIT_DEFAULT_S,
  SOURCE_PLAN_WAIT_MAX_S,
  SOURCE_SYNC_WAIT_S,
  type StateService,
} from "@orch/contracts";
import {
  conflict,
  invalid,
  keysetPage,
  notFound,
  pageCursor,
  pageLimit,
  type Actor,
  type Handlers,
  type Ref,
} from "@orch/kit";
import { sourceMsg } from "../convert.js";
import { sourcesDb, type SourceView } from "../db/sources.js";
import type { Engine } from "../engine/index.js";
import { requireBox, type SourceBox } from "../sources/seal.js";
import type { SourceSync, SyncTrigger } from "../sources/sync.js";
import { verifyWebhook, type WebhookNotice } from "../sources/webhook.js";
import { checkCreateSource } from "./source-input.js";

type SourceHandlers = Pick<
  Handlers<typeof StateService>,
  "createSource" | "listSources" | "getSource" | "deleteSource" | "syncSource" | "planSource" | "sourceWebhook"
>;

/** The webhook's answer once the push is accepted: the sync runs after the response. */
export const WEBHOOK_QUEUED = "sync started; GET the source for its outcome";

const sourceRef = (name: string): Ref => ({ id: name, name, type: "source" });
const missing = (name: string) => notFound("source_not_found", `no git source '${name}'`);

/** Why a verified notification does not sync the source ("" when it does). */
function ignoredBecause(n: WebhookNotice, branch: string): string {
  if (!n.push) return `not a push (${n.event})`;
  if (n.push.branch === null) return `not a branch push (${n.push.ref})`;
  if (n.push.branch !== branch) return `push to branch '${n.push.branch}'; the source follows '${branch}'`;
  if (n.push.deleted) return `branch '${branch}' was deleted`;
  return "";
}

export function sourceHandlers(engine: Engine, sync: SourceSync, box: SourceBox | undefined): SourceHandlers {
  const { pool, events, clock, config, log } = engine.deps;

  /**
   * A sync that starts after the request: one already under way (a scheduled retry, another
   * replica) may have fetched before the commit the operator is waiting for, so answering with its
   * outcome would show a stale failure. Queued behind it, try again until ours runs or time is up.
   */
  const syncAfter = async (name: string, trigger: SyncTrigger, until: number) => {
    for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
      const r = await sync.sync(name, trigger);
      if (!r.queued || clock.now() + delay >= until) return r;
      await new Promise((res) => setTimeout(res, delay));
    }
  };

  const view = async (name: string): Promise<SourceView> => {
    const row = await sourcesDb.get(pool, name);
    if (!row) throw missing(name);
    return row;
  };

  return {
    async createSource(req, ctx) {
      const input = checkCreateSource(req, config.state);
      const sealer = requireBox(box);
      const now = clock.now();
      try {
        await events.tx(async (db, emit) => {
          await sourcesDb.insert(db, {
            name: input.name,
            url: input.url,
            branch: input.branch,
            path: input.path,
            interval_s: input.interval_s,
            auth_kind: input.auth_kind,
            auth_sealed: input.auth ? sealer.sealAuth(input.name, input.auth) : null,
            webhook_sealed: sealer.sealWebhook(input.name, input.webhook_secret),
            status: "pending",
            commit: "",
            synced_at: 0,
            attempted_at: 0,
            attempted_commit: "",
            // Due at once: the next tick of the scheduler makes the first sync.
            next_sync_at: now,
            failures: 0,
            error: "",
            errors: [],
            created_at: now,
            created_by: ctx.actor.id,
          });
          await emit({
            type: "source.created",
            summary: `git source ${input.name} (${input.url} ${input.branch}) created by ${ctx.actor.name}`,
            actor: ctx.actor,
            target: sourceRef(input.name),
            metadata: {
              url: input.url,
              branch: input.branch,
              path: input.path,
              interval_s: input.interval_s,
              auth: input.auth_kind,
              webhook_secret: input.generated_secret ? "generated" : "given",
            },
          });
        });
      } catch (err) {
        if ((err as { code?: string }).code === "23505")
          throw conflict("source_exists", `a git source named '${input.name}' already exists`, { field: "name" });
        throw err;
      }
      return { source: sourceMsg(await view(input.name)), webhookSecret: input.webhook_secret };
    },

    async listSources(req) {
      const limit = pageLimit(req.limit);
      const rows = await sourcesDb.page(pool, limit + 1, pageCursor(req.cursor, "name"));
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.name);
      return { sources: page.map(sourceMsg), nextCursor };
    },

    async getSource(req) {
      return sourceMsg(await view(req.name));
    },

    async deleteSource(req, ctx) {
      await events.tx(async (db, emit) => {
        // Locked first: a sync applying right now finishes before, or finds the source gone.
        if (!(await sourcesDb.getForUpdate(db, req.name))) throw missing(req.name);
        const before = (await sourcesDb.get(db, req.name))!;
        const row = (await sourcesDb.remove(db, req.name))!;
        await emit({
          type: "source.deleted",
          summary: `git source ${row.name} deleted by ${ctx.actor.name}; its ${before.module_count} modules and ${before.assignment_count} assignments stay, no longer managed`,
          actor: ctx.actor,
          target: sourceRef(row.name),
          metadata: {
            url: row.url,
            branch: row.branch,
            commit: row.commit,
            released_modules: before.module_count,
            released_assignments: before.assignment_count,
          },
        });
      });
      return {};
    },

    async syncSource(req, ctx) {
      // A slow fetch outlasts the caller's patience: answer with the row as it stands and let the sync finish.
      const until = clock.now() + SOURCE_SYNC_WAIT_S * 1000;
      const running = syncAfter(req.name, { kind: "manual", actor: ctx.actor }, until);
      running.catch(() => {}); // a failure after the wait is logged by sync; before it, it is rethrown below
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([running, new Promise((r) => (timer = setTimeout(r, SOURCE_SYNC_WAIT_S * 1000)))]);
      } finally {
        clearTimeout(timer);
      }
      return sourceMsg(await view(req.name));
    },

    async planSource(req, ctx) {
      const row = await view(req.name);
      const ref = req.ref === "" ? row.branch : req.ref;
      const bad = checkRef(ref);
      if (bad) throw invalid(bad.reason, `ref ${bad.message}`, { field: "ref" });
      const wait = req.waitSeconds ?? SOURCE_PLAN_WAIT_DEFAULT_S;
      if (!Number.isInteger(wait) || wait < 0 || wait > SOURCE_PLAN_WAIT_MAX_S)
        throw invalid("invalid_request", `wait_seconds must be an integer from 0 to ${SOURCE_PLAN_WAIT_MAX_S}`, {
          field: "wait_seconds",
        });
      return sync.plan(req.name, ref, wait * 1000, ctx.actor);
    },

    async sourceWebhook(req) {
      const row = await view(req.name);
      const secret = requireBox(box).openWebhook(row.name, row.webhook_sealed);
      const notice = verifyWebhook(req.headers, req.body, secret);
      const base = { forge: notice.forge, event: notice.event, commit: notice.push?.after ?? "" };
      const reason = ignoredBecause(notice, row.branch);
      if (reason) return { ...base, synced: false, reason };
      // The caller is the forge, not an operator: events name it as such.
      const actor: Actor = { id: `webhook:${notice.forge}`, name: `${notice.forge} webhook`, type: "system", role: "" };
      // A forge gives up after about 10 s and a fetch may take longer: answer now. Not made due
      // first: the scheduler would start a second sync of the same push beside this one (the
      // loser queues a third). A sync already running queues this one itself (sync.sync).
      void sync
        .sync(row.name, { kind: "webhook", actor })
        .catch((err: unknown) => log.error({ err, source: row.name }, "webhook-triggered sync failed"));
      return { ...base, synced: true, reason: WEBHOOK_QUEUED };
    },
  };
}
