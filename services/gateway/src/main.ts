#!/usr/bin/env node
import { runMain } from "@orch/kit";
import { countBuffersInHeapLimit } from "@orch/kit/bulk-gc";
import { paceBulkTransfers } from "@orch/kit/bulk-pacer";
import { buildGateway } from "./app.js";
import { gatewayConfigSchema } from "./config.js";

// Process-wide, so set here: every session's output crosses this process (NATS → WebSocket).
countBuffersInHeapLimit();
paceBulkTransfers();

await runMain({
  name: "gateway",
  schema: null,
  configSchema: gatewayConfigSchema,
  async start(deps) {
    const { app, tokens } = await buildGateway(deps);
    await app.listen({ port: deps.config.http.port, host: deps.config.http.host });
    deps.log.info({ url: `http://${deps.config.http.host}:${deps.config.http.port}` }, "gateway listening");
    return {
      async stop() {
        await app.close();
        tokens.stop();
      },
    };
  },
});
