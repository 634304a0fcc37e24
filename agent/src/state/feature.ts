import { AgentStateService } from "@orch/contracts";
import type { Feature } from "../runtime.js";
import { createExecute } from "./execute.js";
import { defaultProviders } from "./providers/index.js";

/** Serves AgentStateService.Execute: plan and apply of rendered resources on this machine. */
export const stateFeature: Feature = (rt) => {
  const execute = createExecute({
    providers: defaultProviders({ cronDir: rt.options.cronDir }),
    log: rt.log,
    publish: (s, d) => rt.publish(s, d),
  });
  rt.serve(AgentStateService, { execute });
};
