#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { authConfigSchema } from "./config.js";
import { createAuthService } from "./service.js";

await runMain({
  name: "auth",
  schema: "auth",
  configSchema: authConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  start: createAuthService,
});
