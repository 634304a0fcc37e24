import { AgentStateService, STATE_FEATURE_TRIGGERS, STATE_FEATURES_ATTRIBUTE } from "@orch/contracts";
import type { Feature } from "../runtime.js";
import { createExecute } from "./execute.js";
import { defaultProviders } from "./providers/index.js";
import { loadSealedPaths, sealedPathsFile } from "./sealed-paths.js";

/** Serves AgentStateService.Execute: plan and apply of rendered resources on this machine. */
export const stateFeature: Feature = async (rt) => {
  const sealed = await loadSealedPaths({
    file: sealedPathsFile(rt.dataDir),
    onSaveError: (err) => rt.log.warn({ err: err.message }, "sealed paths (files written from a secret) not persisted"),
  });
  const execute = createExecute({
    providers: defaultProviders({ cronDir: rt.options.cronDir }),
    log: rt.log,
    publish: (s, d) => rt.publish(s, d),
    sealed,
  });
  // The state service sends onchanges/triggered_by only to an agent that says it understands them.
  rt.setAttribute(STATE_FEATURES_ATTRIBUTE, [STATE_FEATURE_TRIGGERS].join(","));
  rt.serve(AgentStateService, { execute });
};
