#!/usr/bin/env node
import { fileURLToPath } from "node:url";
import { runMain } from "@orch/kit";
import { countBuffersInHeapLimit } from "@orch/kit/bulk-gc";
import { terminalConfigSchema } from "./config.js";
import { createTerminalService } from "./service.js";

// Process-wide, so set here: every byte of every session's output passes through the recorder.
countBuffersInHeapLimit();

await runMain({
  name: "terminal",
  schema: "terminal",
  configSchema: terminalConfigSchema,
  migrations: fileURLToPath(new URL("../migrations", import.meta.url)),
  start: createTerminalService,
});
