#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { auditConfigSchema } from "./config.js";
import { createAuditService } from "./service.js";

await runMain({
  name: "audit",
  schema: "audit",
  configSchema: auditConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  start: createAuditService,
});
