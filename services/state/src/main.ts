#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { stateConfigSchema } from "./config.js";
import { createStateService } from "./service.js";

await runMain({
  name: "state",
  schema: "state",
  configSchema: stateConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  start: createStateService,
});
