#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { terminalConfigSchema } from "./config.js";
import { createTerminalService } from "./service.js";

await runMain({
  name: "terminal",
  schema: "terminal",
  configSchema: terminalConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  start: createTerminalService,
});
