/**
 * The metric catalogue: every orch_* metric a process exposes, its type, help and labels. Names
 * live here only; services, the agent, the docs generator and the monitoring checks import them.
 * Label values are bounded (closed sets, templates, names) — never ids — so series stay few.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export type MetricType = "counter" | "gauge" | "histogram";

export interface MetricSpec {
  type: MetricType;
  help: string;
  labels: readonly string[];
  /** The process(es) that expose it (documentation). */
  where: string;
}

export const METRICS = {
  orch_http_requests_total: {
    type: "counter",
    help: "HTTP requests answered by the gateway",
    labels: ["route", "method", "status_class"],
    where: "gateway",
  },
  orch_http_request_duration_seconds: {
    type: "histogram",
    help: "Time from the gateway receiving an HTTP request to its response",
    labels: ["route", "method", "status_class"],
    where: "gateway",
  },
  orch_rpc_server_duration_seconds: {
    type: "histogram",
    help: "Time to handle one bus RPC request",
    labels: ["rpc_service", "rpc_method", "code"],
    where: "every service",
  },
  orch_rpc_client_duration_seconds: {
    type: "histogram",
    help: "Time from sending a bus RPC request to its reply or failure",
    labels: ["rpc_service", "rpc_method", "code"],
    where: "every process that calls",
  },
  orch_outbox_backlog: {
    type: "gauge",
    help: "Outbox rows not yet relayed to the AUDIT stream",
    labels: [],
    where: "services with a database",
  },
  orch_outbox_relay_lag_seconds: {
    type: "gauge",
    help: "Age of the oldest outbox row not yet relayed (0 when none)",
    labels: [],
    where: "services with a database",
  },
  orch_consumer_pending: {
    type: "gauge",
    help: "Messages of a durable JetStream consumer not yet delivered or not yet acknowledged",
    labels: ["stream", "consumer"],
    where: "audit, notify",
  },
  orch_consumer_redelivered: {
    type: "gauge",
    help: "Messages of a durable JetStream consumer delivered more than once and not yet acknowledged",
    labels: ["stream", "consumer"],
    where: "audit, notify",
  },
  orch_agents_links: {
    type: "gauge",
    help: "Agent links held by this replica",
    labels: [],
    where: "agents",
  },
  orch_agents_pending: {
    type: "gauge",
    help: "Agents awaiting approval",
    labels: [],
    where: "agents",
  },
  orch_operations_total: {
    type: "counter",
    help: "State operations finished, by kind and result",
    labels: ["kind", "result"],
    where: "state",
  },
  orch_drift_detected_total: {
    type: "counter",
    help: "Drift checks that found drift",
    labels: [],
    where: "state",
  },
  orch_blob_bytes_sent_total: {
    type: "counter",
    help: "Bytes of blobs sent to agents' caches before applies (0 for a blob an agent had)",
    labels: [],
    where: "state",
  },
  orch_deliveries_total: {
    type: "counter",
    help: "Notification delivery attempts, by channel type and result",
    labels: ["channel_type", "result"],
    where: "notify",
  },
  orch_sso_logins_total: {
    type: "counter",
    help: "Single sign-on attempts (code and device flows) by provider and outcome (ok or the problem code)",
    labels: ["provider", "outcome"],
    where: "auth",
  },
  orch_sso_refreshes_total: {
    type: "counter",
    help: "Refreshes of signed-in SSO operators against their provider, by outcome",
    labels: ["provider", "outcome"],
    where: "auth",
  },
  orch_terminal_sessions_open: {
    type: "gauge",
    help: "Terminal sessions open on this replica",
    labels: [],
    where: "terminal",
  },
  orch_agent_link_connected: {
    type: "gauge",
    help: "1 while the agent's link to the agents service is up",
    labels: [],
    where: "orch-agent (--metrics-listen)",
  },
  orch_agent_resources_total: {
    type: "counter",
    help: "Resources the agent applied or checked, by result",
    labels: ["result"],
    where: "orch-agent (--metrics-listen)",
  },
} as const satisfies Record<string, MetricSpec>;

export type MetricName = keyof typeof METRICS;
type LabelOf<N extends MetricName> = (typeof METRICS)[N]["labels"][number];
type TypeOf<N extends MetricName> = (typeof METRICS)[N]["type"];
export type MetricOf<N extends MetricName> =
  TypeOf<N> extends "counter"
    ? Counter<LabelOf<N>>
    : TypeOf<N> extends "gauge"
      ? Gauge<LabelOf<N>>
      : Histogram<LabelOf<N>>;

/** Seconds; from 5 ms (a cached lookup) to 30 s (the longest RPC timeout). */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The catalogue's metric on `registry`, created on first use. Idempotent (a service started twice
 * in one test process gets the same metric); `collect` is attached only by the call that creates it.
 */
export function metric<N extends MetricName>(
  registry: Registry,
  name: N,
  opts: { collect?: (this: MetricOf<N>) => void | Promise<void> } = {},
): MetricOf<N> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as unknown as MetricOf<N>;
  const spec: MetricSpec = METRICS[name];
  const config = {
    name,
    help: spec.help,
    labelNames: [...spec.labels],
    registers: [registry],
    ...(opts.collect ? { collect: opts.collect } : {}),
  };
  switch (spec.type) {
    case "counter":
      return new Counter(config as never) as unknown as MetricOf<N>;
    case "gauge":
      return new Gauge(config as never) as unknown as MetricOf<N>;
    default:
      return new Histogram({ ...config, buckets: DURATION_BUCKETS } as never) as unknown as MetricOf<N>;
  }
}

/** A label value from a closed set; anything else is "other" (an unexpected value must not mint series). */
export function bounded<T extends string>(value: string, allowed: readonly T[]): T | "other" {
  return (allowed as readonly string[]).includes(value) ? (value as T) : "other";
}
