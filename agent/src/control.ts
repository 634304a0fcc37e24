import { AgentControlService } from "@orch/contracts";
import type { Feature } from "./runtime.js";

/** Ping: proves the route operator → NATS → agents replica → link → this process works. */
export const controlFeature: Feature = (rt) => {
  rt.serve(AgentControlService, {
    async ping(req) {
      return { payload: req.payload, nodeId: rt.nodeId, agentTime: Date.now() };
    },
  });
};
