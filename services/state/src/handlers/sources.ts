import { count, type StateService } from "@orch/contracts";
import { keysetPage, pageCursor, pageLimit, type Handlers } from "@orch/kit";
import { sourceMsg } from "../convert.js";
import { sourcesDb } from "../db/sources.js";
import type { Engine } from "../engine/index.js";
import { sourceRef } from "../sources/actor.js";
import type { SourceBox } from "../sources/seal.js";
import type { SourceSync } from "../sources/sync.js";
import { createSource } from "./source-create.js";
import { planSource, syncSource } from "./source-sync.js";
import { missingSource, viewSource } from "./source-view.js";
import { sourceWebhook } from "./source-webhook.js";
import { releasePolicies } from "../sources/policies-sync.js";

type H = Handlers<typeof StateService>;
type SourceHandlers = Pick<
  H,
  "createSource" | "listSources" | "getSource" | "deleteSource" | "syncSource" | "planSource" | "sourceWebhook"
>;

const listSources =
  ({ deps }: Engine): H["listSources"] =>
  async (req) => {
    const limit = pageLimit(req.limit);
    const rows = await sourcesDb.page(deps.pool, limit + 1, pageCursor(req.cursor, "name"));
    const { page, nextCursor } = keysetPage(rows, limit, (r) => r.name);
    return { sources: page.map(sourceMsg), nextCursor };
  };

const getSource =
  ({ deps }: Engine): H["getSource"] =>
  async (req) =>
    sourceMsg(await viewSource(deps.pool, req.name));

const deleteSource =
  (engine: Engine): H["deleteSource"] =>
  async (req, ctx) => {
    const { deps } = engine;
    await deps.events.tx(async (db, emit) => {
      // Locked first: a sync applying right now finishes before, or finds the source gone.
      if (!(await sourcesDb.getForUpdate(db, req.name))) throw missingSource(req.name);
      const before = (await sourcesDb.get(db, req.name))!;
      const row = (await sourcesDb.remove(db, req.name))!;
      await emit({
        type: "source.deleted",
        summary: `git source ${row.name} deleted by ${ctx.actor.name}; its ${count(before.module_count, "module")} and ${count(before.assignment_count, "assignment")} stay, no longer managed`,
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
      // Under the source's lock, so no sync hands its policies over again; last, so only a failed
      // commit (not a refusal above) could leave them released with the source still there.
      await releasePolicies(engine, row.name);
    });
    return {};
  };

/** The git source RPCs: create, sync and plan, and the forge webhook each have a file of their own. */
export function sourceHandlers(engine: Engine, sync: SourceSync, box: SourceBox | undefined): SourceHandlers {
  return {
    createSource: createSource(engine, box),
    listSources: listSources(engine),
    getSource: getSource(engine),
    deleteSource: deleteSource(engine),
    syncSource: syncSource(engine, sync),
    planSource: planSource(engine, sync),
    sourceWebhook: sourceWebhook(engine, sync, box),
  };
}
