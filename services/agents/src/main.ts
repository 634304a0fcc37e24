#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { agentsConfigSchema } from "./config.js";
import { createAgentsService } from "./service.js";

await runMain({
  name: "agents",
  schema: "agents",
  configSchema: agentsConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  start: createAgentsService,
});
