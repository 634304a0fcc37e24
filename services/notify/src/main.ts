#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { notifyConfigSchema } from "./config.js";
import { createNotifyService } from "./service.js";

await runMain({
  name: "notify",
  schema: "notify",
  configSchema: notifyConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  start: (deps) => createNotifyService(deps),
});
