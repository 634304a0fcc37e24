#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { authConfigSchema } from "./config.js";
import { createAuthService } from "./service.js";
import { serviceExecutors, stateReplanners } from "./approvals/service-executors.js";

await runMain({
  name: "auth",
  schema: "auth",
  configSchema: authConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  // The last approval a change request needs executes it through the service that owns the action.
  start: (deps) => createAuthService(deps, { executors: serviceExecutors(deps), replanners: stateReplanners(deps) }),
});
