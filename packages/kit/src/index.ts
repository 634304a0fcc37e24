// What services, the agent, the CLI and tests import from the kit; test helpers are `@orch/kit/testing`.
// Helpers used only inside the kit (relay, health server, NATS connect, codec) stay unexported.

// Running a service: config, logging, main, clock and ids.
export { baseConfigSchema, configEnvName, loadConfig, settingName, type BaseConfig } from "./config.js";
export { maskValues, type Logger } from "./logger.js";
export { retryStartup, runMain, type MainOptions, type Service, type ServiceDeps } from "./service.js";
export { systemClock, ulidGenerator, type Clock, type IdGenerator } from "./ids.js";

// The bus: typed RPC over NATS, actors and their scopes.
export type { NatsConnection } from "./nats.js";
export {
  encodeError,
  H,
  pingService,
  rpcClient,
  serveRpc,
  SYSTEM_ACTOR,
  type Actor,
  type CallContext,
  type CallOptions,
  type Client,
  type Handlers,
  type RpcServer,
} from "./rpc.js";
export { inScope, isScoped } from "./scope.js";
export { askApproval, type ApprovalAsk, type ApprovalGateDeps, type ApprovalVerdict } from "./approval-gate.js";

// Postgres: pools, transactions, migrations, job locks.
export { createPool, migrate, withJobLock, withTx, type Pool, type PoolClient, type Queryable } from "./db.js";
export { isUniqueViolation } from "./unique-violation.js";

// Audit events: emitted in the state change's transaction, relayed to the AUDIT stream.
export {
  AUDIT_STREAM,
  auditSubject,
  buildEvent,
  createEvents,
  ensureAuditStream,
  type Emit,
  type EventInput,
  type Events,
  type Ref,
} from "./outbox.js";

// Handler input: pagination, string checks, idempotent writes.
export { keysetPage, MAX_PAGE_LIMIT, pageCursor, pageLimit } from "./pagination.js";
export { rejectInvalidStrings } from "./input.js";
export { createIdempotencyStore, type IdempotencyStore } from "./idempotency.js";

// Background work: periodic jobs, retries with backoff, durable JetStream consumers.
export { schedulePeriodic, type Periodic } from "./periodic.js";
export { groupCommit, type GroupCommitOptions } from "./group-commit.js";
export { createStepper, type Stepper, type Transition } from "./stepper.js";
export {
  abortableSleep,
  backoff,
  retry,
  type Backoff,
  type BackoffOptions,
  type Jitter,
  type RetryOptions,
} from "./backoff.js";
export {
  createDurableConsumer,
  PoisonMessage,
  type DurableConsumer,
  type DurableConsumerOptions,
  type DurableConsumerSpec,
} from "./consumer.js";

// Outbound addresses (SSRF policy) and key rings.
export { classifyAddress, isCidr, parseNetwork, type AddressReason, type Network } from "./addresses.js";
export {
  KeyringError,
  packSealed,
  parseKeyring,
  unpackSealed,
  type Keyring,
  type KeyringFailure,
  type Sealed,
} from "./keyring.js";

// orch-agent releases: the catalogue on disk, manifest signatures (also "@orch/kit/releases" for the agent).
export {
  cachedReleaseCatalog,
  loadReleasePublicKey,
  loadReleaseSigningKey,
  RELEASE_CATALOG_TTL_MS,
  RELEASE_SIGNATURE_FILE,
  readReleaseCatalog,
  releasePublicKeyPem,
  signManifest,
  signReleaseDir,
  verifyManifest,
  type CachedReleaseCatalog,
  type ReleaseCatalog,
  type ReleaseEntry,
} from "./releases.js";

// Errors: every symbol of the error-code catalogue.
export {
  Codes,
  conflict,
  errorFromBinary,
  errorToBinary,
  forbidden,
  httpStatusOf,
  invalid,
  isCode,
  notFound,
  OrchError,
  precondition,
  unauthenticated,
  unavailable,
  type Code,
  type ErrorDetails,
} from "./errors.js";

// Tracing (OpenTelemetry): off unless OTEL_EXPORTER_OTLP_* asks; W3C traceparent across NATS and the agent link.
export {
  activeLink,
  extractTrace,
  injectTrace,
  SpanKind,
  SpanStatusCode,
  startTracing,
  tracer,
  tracingEnabled,
  tracingRequested,
  withSpan,
  type Context as TraceContext,
  type Link as TraceLink,
  type Span,
  type SpanOptions,
  type Tracing,
} from "./tracing.js";
export { addRpcObserver, type RpcCallInfo, type RpcObserver } from "./rpc-observers.js";
export { rpcSpanName, SERVER_FAULT_CODES, tracingRpcObserver } from "./tracing-rpc.js";

// Metrics (Prometheus): the catalogue of orch_* names and labels; runMain registers RPC and outbox metrics.
export {
  bounded,
  DURATION_BUCKETS,
  METRICS,
  metric,
  type MetricName,
  type MetricOf,
  type MetricSpec,
} from "./metrics/names.js";
export { registerConsumerMetrics } from "./metrics/jetstream.js";
export { createMetricsRegistry } from "./health.js";
export type { Registry as MetricsRegistry } from "prom-client";
export { chunked } from "./rechunk.js";
