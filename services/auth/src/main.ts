#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { authConfigSchema } from "./config.js";
import { createAuthService } from "./service.js";
import { stateExecutors, stateReplanners } from "./approvals/state-executor.js";

await runMain({
  name: "auth",
  schema: "auth",
  configSchema: authConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  // The last approval a change request needs executes it through the service that owns the action.
  start: (deps) => createAuthService(deps, { executors: stateExecutors(deps), replanners: stateReplanners(deps) }),
});
