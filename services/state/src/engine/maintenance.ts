import { SYSTEM_ACTOR } from "@orch/kit";
import type { Clients, StateDeps } from "../deps.js";

/** Whether a maintenance window is active; when notify does not answer, drift checks proceed. */
export async function maintenanceActive(deps: StateDeps, clients: Clients): Promise<boolean> {
  try {
    return (await clients.notify.getMaintenanceStatus({}, { actor: SYSTEM_ACTOR })).active;
  } catch (err) {
    deps.log.debug({ err: (err as Error).message }, "maintenance status unavailable; scheduled drift proceeds");
    return false;
  }
}
