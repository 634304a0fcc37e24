#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { secretsConfigSchema } from "./config.js";
import { createSecretsService } from "./service.js";

await runMain({
  name: "secrets",
  schema: "secrets",
  configSchema: secretsConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  start: createSecretsService,
});
