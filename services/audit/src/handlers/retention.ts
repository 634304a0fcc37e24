import type { AuditService } from "@orch/contracts";
import { forbidden, invalid, type CallContext, type Handlers } from "@orch/kit";
import { retentionDb, type RetentionOverride } from "../db/retention.js";
import type { Stored } from "../feed.js";
import { AUDIT_TARGET, recordOwnEvent, type Pruner } from "../prune.js";
import type { AuditDeps } from "../deps.js";

type RetentionHandlers = Pick<Handlers<typeof AuditService>, "prune" | "getRetention" | "setRetention">;

const MAX_DAYS = 2_147_483_647;
const MAX_TIME = 8.64e15;

// The gateway enforces roles; the service checks again so a bus caller cannot skip it.
function requireAdmin(ctx: CallContext) {
  if (ctx.actor.type !== "system" && ctx.actor.role !== "admin") throw forbidden();
}

/** The retention in force: the API override if set (its null = off), else `audit.retention_days` (null = off). */
export function effectiveRetention(
  deps: AuditDeps,
  o: RetentionOverride | undefined,
): { days: number | null; source: "override" | "config" } {
  return o
    ? { days: o.retention_days, source: "override" }
    : { days: deps.config.audit.retention_days, source: "config" };
}

export function retentionHandlers(
  deps: AuditDeps,
  io: { prune: Pruner; onStored(events: Stored[]): void },
): RetentionHandlers {
  const { pool, clock } = deps;
  const view = (o: RetentionOverride | undefined) => {
    const e = effectiveRetention(deps, o);
    const def = deps.config.audit.retention_days;
    return {
      source: e.source,
      ...(e.days !== null ? { retentionDays: e.days } : {}),
      ...(def !== null ? { defaultRetentionDays: def } : {}),
    };
  };

  return {
    async prune(req, ctx) {
      requireAdmin(ctx);
      if (!Number.isFinite(req.before) || req.before <= 0 || req.before > MAX_TIME)
        throw invalid("invalid_timestamp", "before must be a time after 1970", { parameter: "before" });
      return { deleted: await io.prune(req.before, ctx.actor, "manual") };
    },

    async getRetention() {
      return view(await retentionDb.get(pool));
    },

    async setRetention(req, ctx) {
      requireAdmin(ctx);
      // SetRetentionRequest: use_config_default removes the override (DELETE); otherwise unset =
      // an override of "off" (PUT null), N ≥ 1 = an override of N days.
      const raw = req.retentionDays;
      const clear = req.useConfigDefault;
      if (clear && raw !== undefined)
        throw invalid("invalid_retention", "retention_days must be unset when returning to the configured default", {
          field: "retention_days",
        });
      if (raw !== undefined && (!Number.isInteger(raw) || raw < 1 || raw > MAX_DAYS)) {
        throw invalid(
          "invalid_retention",
          `retention_days must be an integer from 1 to ${MAX_DAYS}, or null to turn pruning off`,
          { field: "retention_days" },
        );
      }
      const days = raw ?? null;
      const { after, stored } = await deps.events.tx(async (db, emit) => {
        await retentionDb.lock(db);
        const before = await retentionDb.get(db);
        const unchanged = clear ? !before : before !== undefined && before.retention_days === days;
        if (unchanged) return { after: before, stored: [] };
        const after: RetentionOverride | undefined = clear
          ? undefined
          : { retention_days: days, updated_at: clock.now(), updated_by: ctx.actor.id };
        if (!after) await retentionDb.clear(db);
        else await retentionDb.set(db, after.retention_days, after.updated_at, after.updated_by);
        const was = effectiveRetention(deps, before);
        const now = effectiveRetention(deps, after);
        const inForce = now.days === null ? "off" : `${now.days} days`;
        const what = clear
          ? `cleared the audit retention override (now ${inForce} from the configuration file)`
          : days === null
            ? "turned audit pruning off"
            : `set audit retention to ${days} days`;
        const stored = await recordOwnEvent(db, emit, {
          type: "audit.retention.updated",
          summary: `${ctx.actor.name} ${what}`,
          actor: ctx.actor,
          target: AUDIT_TARGET,
          // override null with source "override" = pruning turned off; with source "config" = no override.
          metadata: {
            previous_override: before?.retention_days ?? null,
            override: after?.retention_days ?? null,
            previous_source: was.source,
            previous_retention_days: was.days,
            retention_days: now.days,
            source: now.source,
          },
        });
        return { after, stored };
      });
      io.onStored(stored);
      return view(after);
    },
  };
}
