import type { NotifyService } from "@orch/contracts";
import { keysetPage, invalid, notFound, pageCursor, pageLimit, type Handlers, type Queryable } from "@orch/kit";
import { windowsDb, type WindowRow } from "../db/windows.js";
import { requireAdmin, toWindow } from "../convert.js";
import type { NotifyRuntime } from "../service.js";

type WindowHandlers = Pick<
  Handlers<typeof NotifyService>,
  "createWindow" | "listWindows" | "getWindow" | "updateWindow" | "deleteWindow" | "getMaintenanceStatus"
>;

// Year 9999: beyond it ISO strings and most clients break.
const MAX_MS = 253_402_300_799_000;

function checkTime(field: string, v: number) {
  if (!Number.isInteger(v) || v < 0 || v > MAX_MS)
    throw invalid("invalid_request", `${field} must be a Unix time between 0 and year 9999`, { field });
}
function checkSpan(w: { starts_at: number; ends_at: number }) {
  if (!(w.starts_at < w.ends_at))
    throw invalid("invalid_window", "starts_at must be before ends_at", { field: "ends_at" });
}
function checkReason(reason: string) {
  if (reason.trim() === "" || reason.length > 1000)
    throw invalid("invalid_request", "reason must be 1-1000 characters", { field: "reason" });
}

async function find(db: Queryable, id: string, forUpdate = false): Promise<WindowRow> {
  const w = await windowsDb.byId(db, id, forUpdate);
  if (!w) throw notFound("window_not_found", `no maintenance window '${id}'`);
  return w;
}

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
          summary: `maintenance window ${w.id} ${endedEarly ? "ended early" : "updated"} by ${ctx.actor.name}`,
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
          summary: `maintenance window ${w.id} deleted by ${ctx.actor.name}`,
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
