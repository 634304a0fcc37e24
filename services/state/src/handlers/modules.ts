import { count, type StateService } from "@orch/contracts";
import { keysetPage, notFound, pageCursor, pageLimit, precondition, type Handlers } from "@orch/kit";
import { checkModuleContent, validName } from "../validate.js";
import { assignmentsDb, modulesDb, type ModuleRow } from "../db/catalog.js";
import { moduleMsg } from "../convert.js";
import { refuseBrokenAssignments } from "../engine/assignment-parameters.js";
import type { Engine } from "../engine/index.js";
import { parseModule } from "../module/parse.js";
import { refuseManaged } from "./managed.js";
import { refuseUnknownBlobs } from "../blobs/referenced.js";
import { asRef, bundleFiles } from "../module/bundle-manifest.js";
import { inlineTemplateFiles } from "../module/template-files.js";
import { moduleSha256 } from "../module/version-hash.js";

/** The upload found no module to lock, then replaced one created meanwhile (perhaps by a sync): retried once. */
class CreatedMeanwhile extends Error {}

type ModuleHandlers = Pick<
  Handlers<typeof StateService>,
  "uploadModule" | "listModules" | "getModule" | "deleteModule"
>;

export function moduleHandlers({ deps, cache }: Engine): ModuleHandlers {
  const { pool, events, clock } = deps;
  return {
    async uploadModule(req, ctx) {
      const name = validName(req.name, "name", "module");
      checkModuleContent(req.content);
      const files = bundleFiles(req.files);
      const parsed = parseModule(req.content, name, files);
      const blobs = { blobs: [...parsed.blobs, ...(files ?? []).map(asRef)] };
      await refuseUnknownBlobs(pool, blobs);
      await inlineTemplateFiles(pool, parsed);
      const row: ModuleRow = {
        name,
        content: req.content,
        sha256: moduleSha256(req.content, files),
        description: parsed.description,
        resource_count: parsed.resources.length,
        uploaded_at: clock.now(),
        uploaded_by: ctx.actor.id,
        uploaded_by_name: ctx.actor.name,
        source: null,
        source_commit: "",
        removed_from_source: false,
        files,
      };
      const upload = () =>
        events.tx(async (db, emit) => {
          // Locked: a sync cannot take the module over between this check and the write.
          const existing = await modulesDb.lockForDelete(db, name);
          if (existing) refuseManaged("module", existing);
          if (existing) await refuseBrokenAssignments(db, cache, name, parsed);
          // Again under lock: a blob deleted since the check above is refused, not named.
          await refuseUnknownBlobs(db, blobs, { lock: true });
          const replaced = await modulesDb.upsert(db, row);
          if (replaced && !existing) throw new CreatedMeanwhile();
          await emit({
            type: "module.uploaded",
            summary: `module ${name} ${replaced ? "replaced" : "uploaded"} by ${ctx.actor.name} (${count(row.resource_count, "resource")})`,
            actor: ctx.actor,
            target: { id: name, name, type: "module" },
            metadata: {
              sha256: row.sha256,
              resources: row.resource_count,
              replaced,
              bytes: Buffer.byteLength(req.content),
              ...(files ? { files: files.length } : {}),
            },
          });
        });
      try {
        await upload();
      } catch (err) {
        if (!(err instanceof CreatedMeanwhile)) throw err;
        // Rolled back; this time the row exists and is locked and checked.
        await upload();
      }
      return moduleMsg(row, false);
    },

    async listModules(req) {
      const limit = pageLimit(req.limit);
      const rows = await modulesDb.page(pool, limit + 1, pageCursor(req.cursor, "name"));
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.name);
      return { modules: page.map((m) => moduleMsg(m, false)), nextCursor };
    },

    async getModule(req) {
      const row = await modulesDb.get(pool, req.name);
      if (!row) throw notFound("module_not_found", `no module '${req.name}'`);
      return moduleMsg(row, true);
    },

    async deleteModule(req, ctx) {
      await events.tx(async (db, emit) => {
        // Locking the module first orders this against a concurrent assignment create (FOR SHARE there).
        const row = await modulesDb.lockForDelete(db, req.name);
        if (!row) throw notFound("module_not_found", `no module '${req.name}'`);
        refuseManaged("module", row);
        const users = await assignmentsDb.usingModule(db, req.name);
        if (users.length)
          throw precondition(
            "module_in_use",
            `module '${req.name}' is used by assignment${users.length > 1 ? "s" : ""} ${users.join(", ")}`,
            { assignments: users },
          );
        await modulesDb.remove(db, req.name);
        await emit({
          type: "module.deleted",
          summary: `module ${req.name} deleted by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: { id: req.name, name: req.name, type: "module" },
          metadata: { sha256: row.sha256 },
        });
      });
      return {};
    },
  };
}
