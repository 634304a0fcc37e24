import type { NotifyService } from "@orch/contracts";
import { keysetPage, notFound, pageCursor, pageLimit, type Handlers, type Queryable } from "@orch/kit";
import { windowsDb, type WindowRow } from "../db/windows.js";
import { toWindow } from "../convert.js";
import { checkReason, checkSpan, checkTime } from "../validate.js";
import { requireAdmin } from "./access.js";
import type { NotifyRuntime } from "../deps.js";

type WindowHandlers = Pick<
  Handlers<typeof NotifyService>,
  "createWindow" | "listWindows" | "getWindow" | "updateWindow" | "deleteWindow" | "getMaintenanceStatus"
>;

async function find(db: Queryable, id: string, forUpdate = false): Promise<WindowRow> {
  const w = await windowsDb.byId(db, id, forUpdate);
  if (!w) throw notFound("window_not_found", `no maintenance window '${id}'`);
  return w;
}

// A window has no name: its reason names it (in summaries too), its id stays in the target.
const ref = (w: WindowRow) => ({ id: w.id, name: w.reason.slice(0, 80), type: "maintenance_window" });
const span = (w: WindowRow) => ({
  starts_at: new Date(w.starts_at).toISOString(),
  ends_at: new Date(w.ends_at).toISOString(),
});

export function windowHandlers(rt: NotifyRuntime): WindowHandlers {
  const { pool, events, clock, ids } = rt.deps;
  return {
    async createWindow(req, ctx) {
      requireAdmin(ctx);
      checkTime("starts_at", req.startsAt);
      checkTime("ends_at", req.endsAt);
      checkReason(req.reason);
      const now = clock.now();
      const w: WindowRow = {
        id: ids.next(),
        starts_at: req.startsAt,
        ends_at: req.endsAt,
        reason: req.reason,
        created_by: ctx.actor.id,
        created_at: now,
        updated_at: now,
      };
      checkSpan(w);
      await events.tx(async (db, emit) => {
        await windowsDb.insert(db, w);
        await emit({
          type: "maintenance.window.created",
          summary: `maintenance window ${span(w).starts_at} – ${span(w).ends_at} created by ${ctx.actor.name}: ${w.reason}`,
          actor: ctx.actor,
          target: ref(w),
          metadata: span(w),
        });
      });
      return toWindow(w);
    },

    async listWindows(req) {
      const limit = pageLimit(req.limit);
      const rows = await windowsDb.page(pool, limit + 1, pageCursor(req.cursor, "ulid"));
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      return { windows: page.map(toWindow), nextCursor };
    },

    async getWindow(req) {
      return toWindow(await find(pool, req.id));
    },

    async updateWindow(req, ctx) {
      requireAdmin(ctx);
      if (req.startsAt !== undefined) checkTime("starts_at", req.startsAt);
      if (req.endsAt !== undefined) checkTime("ends_at", req.endsAt);
      if (req.reason !== undefined) checkReason(req.reason);
      const w = await events.tx(async (db, emit) => {
        const old = await find(db, req.id, true);
        const w: WindowRow = {
          ...old,
          starts_at: req.startsAt ?? old.starts_at,
          ends_at: req.endsAt ?? old.ends_at,
          reason: req.reason ?? old.reason,
          updated_at: clock.now(),
        };
        checkSpan(w);
        await windowsDb.update(db, w);
        const endedEarly = w.ends_at < old.ends_at && w.ends_at <= clock.now();
        await emit({
          type: "maintenance.window.updated",
          summary: `maintenance window '${ref(w).name}' ${endedEarly ? "ended early" : "updated"} by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: ref(w),
          metadata: { ...span(w), previous: span(old), ended_early: endedEarly },
        });
        return w;
      });
      return toWindow(w);
    },

    async deleteWindow(req, ctx) {
      requireAdmin(ctx);
      await events.tx(async (db, emit) => {
        const w = await find(db, req.id, true);
        await windowsDb.remove(db, w.id);
        await emit({
          type: "maintenance.window.deleted",
          summary: `maintenance window '${ref(w).name}' deleted by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: ref(w),
          metadata: span(w),
        });
      });
      return {};
    },

    async getMaintenanceStatus() {
      const w = await windowsDb.activeAt(pool, clock.now());
      return w ? { active: true, window: toWindow(w) } : { active: false };
    },
  };
}
