import { sourceActorId } from "@orch/contracts";
import type { Actor, Ref } from "@orch/kit";

/** Who a source's syncs act as, in events and in the runs apply_on_sync starts. */
export const sourceActor = (name: string): Actor => ({
  id: sourceActorId(name),
  name: `source ${name}`,
  type: "system",
  role: "",
});

/** A source as the target of its events. */
export const sourceRef = (name: string): Ref => ({ id: name, name, type: "source" });
