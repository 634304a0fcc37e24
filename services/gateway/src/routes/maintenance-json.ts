import { z } from "zod";
import { int64 } from "../schemas.js";
import type { MaintenanceWindow } from "@orch/contracts";
import type { Clock } from "@orch/kit";

export const WindowOut = z.object({
  id: z.string(),
  starts_at: int64().describe("Unix seconds, UTC"),
  ends_at: int64().describe("Unix seconds, UTC (exclusive)"),
  reason: z.string(),
  created_by: z.string(),
  active: z.boolean().describe("starts_at <= now < ends_at"),
});

/** The converter for windows read now: `active` depends on the clock. */
export const windowJsonFor =
  (clock: Clock) =>
  (w: MaintenanceWindow): z.infer<typeof WindowOut> => {
    const now = clock.now();
    return {
      id: w.id,
      starts_at: Math.floor(w.startsAt / 1000),
      ends_at: Math.floor(w.endsAt / 1000),
      reason: w.reason,
      created_by: w.createdBy,
      active: w.startsAt <= now && now < w.endsAt,
    };
  };
