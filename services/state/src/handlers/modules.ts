import type { StateService } from "@orch/contracts";
import { keysetPage, notFound, pageCursor, pageLimit, type Handlers } from "@orch/kit";
import { gateCatalogWrite } from "../approvals/catalog-write.js";
import { dropModule, prepareModule, writeModule } from "../catalog/module-write.js";
import { moduleMsg } from "../convert.js";
import { modulesDb } from "../db/catalog.js";
import type { Engine } from "../engine/index.js";

type ModuleHandlers = Pick<
  Handlers<typeof StateService>,
  "uploadModule" | "listModules" | "getModule" | "deleteModule"
>;

export function moduleHandlers(engine: Engine): ModuleHandlers {
  const { pool } = engine.deps;
  return {
    async uploadModule(req, ctx) {
      const prepared = await prepareModule(engine, req, ctx.actor);
      const held = await gateCatalogWrite(engine, { kind: "module", op: "upload", prepared }, ctx.actor, req);
      if (held) return { name: prepared.row.name, held };
      return moduleMsg(await writeModule(engine, prepared, ctx.actor), false);
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
      const held = await gateCatalogWrite(engine, { kind: "module", op: "delete", name: req.name }, ctx.actor, req);
      if (held) return held;
      await dropModule(engine, req.name, ctx.actor);
      return {};
    },
  };
}
