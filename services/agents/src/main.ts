#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { countBuffersInHeapLimit } from "@orch/kit/bulk-gc";
import { paceBulkTransfers } from "@orch/kit/bulk-pacer";
import { agentsConfigSchema } from "./config.js";
import { createAgentsService } from "./service.js";

// Process-wide, so set here: every session's output crosses this process (link → NATS).
countBuffersInHeapLimit();
paceBulkTransfers();

await runMain({
  name: "agents",
  schema: "agents",
  configSchema: agentsConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  start: createAgentsService,
});
