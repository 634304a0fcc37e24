import { AgentCommandService } from "@orch/contracts";
import type { Feature } from "../runtime.js";
import { createCommandHandlers } from "./handlers.js";

/** Serves AgentCommandService: fleet command runs (`POST /api/v1/runs`) on this machine. */
export const commandsFeature: Feature = (rt) => {
  rt.serve(AgentCommandService, createCommandHandlers({ log: rt.log, publish: (s, d) => rt.publish(s, d) }));
};
