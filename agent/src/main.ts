#!/usr/bin/env node
import { startTracing } from "@orch/kit/tracing";
import { createAgent } from "./daemon.js";
import { features } from "./features.js";
import { loadOrCreateIdentity } from "./identity.js";
import { describeTrust } from "./link/trust.js";
import { createAgentLogger } from "./log.js";
import { USAGE, UsageError, parseOptions } from "./options.js";
import { startMetricsServer } from "./prometheus.js";
import { AGENT_VERSION } from "./version.js";

let parsed: ReturnType<typeof parseOptions>;
try {
  parsed = parseOptions(process.argv.slice(2), process.env);
} catch (err) {
  if (!(err instanceof UsageError)) throw err;
  process.stderr.write(`orch-agent: ${err.message}\n\n${USAGE}`);
  process.exit(2);
}
if (parsed === "help") {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (parsed === "version") {
  // The runtime matters as much as the agent's own version: the package ships its own Node.js.
  process.stdout.write(`orch-agent ${AGENT_VERSION} (node ${process.version})\n`);
  process.exit(0);
}
const options = parsed;
const log = createAgentLogger(options.logLevel);
// Plaintext is allowed only when asked for, and then never quietly.
if (options.trust.kind === "insecure") log.warn({ trust: "insecure" }, `agent link: ${describeTrust(options.trust)}`);
else log.info({ trust: options.trust.kind }, `agent link: ${describeTrust(options.trust)}`);
const identity = loadOrCreateIdentity(options.dataDir, log);
// Off unless the standard OTEL_EXPORTER_OTLP_* variables ask for it (as in every service).
const tracing = startTracing("orch-agent");
// Off unless --metrics-listen asks; a configured endpoint that cannot listen is a startup failure.
const metricsServer = options.metricsListen
  ? await startMetricsServer(options.metricsListen, log).catch((err: Error) => {
      log.error({ err: err.message, metrics_listen: options.metricsListen }, "cannot serve metrics");
      process.exit(1);
    })
  : undefined;
const agent = createAgent({ options, identity, log, features });

let stopping = false;
const shutdown = (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, "shutting down");
  setTimeout(() => process.exit(1), 5000).unref();
  void agent
    .stop()
    .then(() => tracing.shutdown())
    .then(() => metricsServer?.close())
    .then(() => process.exit(0));
};
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));

try {
  await agent.start();
} catch (err) {
  log.error({ err: (err as Error).message }, "orch-agent cannot start");
  process.exit(1);
}
