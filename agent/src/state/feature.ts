import {
  AgentStateService,
  STATE_FEATURE_ARCHIVE,
  STATE_FEATURE_BLOBS,
  STATE_FEATURE_TRIGGERS,
  STATE_FEATURES_ATTRIBUTE,
} from "@orch/contracts";
import { BlobCache } from "../blobs/cache.js";
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
    // Its own instance over the directory blobsFeature fills: reading a complete blob needs no shared state.
    providers: defaultProviders({
      cronDir: rt.options.cronDir,
      blobs: new BlobCache(rt.dataDir),
      dataDir: rt.dataDir,
    }),
    log: rt.log,
    publish: (s, d) => rt.publish(s, d),
    sealed,
  });
  // The state service sends onchanges/triggered_by, file sources and archives only to an agent that
  // says it understands them.
  rt.setAttribute(
    STATE_FEATURES_ATTRIBUTE,
    [STATE_FEATURE_TRIGGERS, STATE_FEATURE_BLOBS, STATE_FEATURE_ARCHIVE].join(","),
  );
  rt.serve(AgentStateService, { execute });
};
