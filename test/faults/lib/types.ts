// The contract between the fault suite's shared harness (stack.ts, load.ts, invariants.ts) and its
// scenarios (one test file per fault family). Scenarios only use what is declared here.
import type { SystemHandle } from "@orch/kit/testing";

/** An orch-agent process the stack started (locally or inside a network namespace). */
export interface FaultAgent {
  nodeId: string;
  name: string;
  /** Namespace host index when the agent runs in its own network namespace. */
  host?: number;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts the stack's agents; the default runs them locally (agentPool). */
export type AgentSpawner = (ctx: {
  /** The agent link as 127.0.0.1:<port>. */
  linkPort: number;
  count: number;
}) => Promise<{
  agents: Array<{ nodeId: string; host?: number; kill(signal?: NodeJS.Signals): Promise<void> }>;
  stop(): Promise<void>;
}>;

export interface FaultStackOptions {
  /** Names the scratch directory and the figures line. */
  name: string;
  /** A single server or a cluster: `url` may list several servers, comma-separated. */
  nats: { url: string };
  /** A database on the shared server or on a private instance. */
  db: { url: string };
  /** Agents to start and approve (default 4); tagged fault=on. */
  agents?: number;
  spawnAgents?: AgentSpawner;
  /** Extra service environment (e.g. NATS replicas, shorter timeouts). */
  env?: Record<string, string>;
}

export interface FaultStack {
  system: SystemHandle;
  /** An admin bearer token. */
  token: string;
  agents: FaultAgent[];
  /** The services started, in start order (gateway last). */
  services: string[];
  /** Restarts a killed service with its original environment and waits until /status says it is ok. */
  restartService(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** One HTTP request the load made, with its outcome. */
export interface LoadRequest {
  kind: LoadKind;
  method: string;
  path: string;
  status: number; // 0: no response (connection refused/reset, client timeout)
  code?: string;
  retryAfter?: string;
  at: number; // Date.now() when it was sent
  ms: number;
}

export type LoadKind = "write" | "read" | "apply" | "terminal" | "audit";

/** A change the API acknowledged (200/201/202): it must still be there, with exactly one audit event. */
export interface AckedWrite {
  kind: string; // e.g. "secret.created", "agent.tags.updated"
  /** GET path that must show it afterwards, and how to recognise it in the response. */
  checkPath: string;
  /** The audit event type and the resource id the event must carry. */
  auditType: string;
  resourceId: string;
}

export interface LoadReport {
  requests: LoadRequest[];
  acked: AckedWrite[];
  /** Applies (runs/operations) started: each must end in a final state. */
  operations: string[];
  /** Terminal: echo round trips done and failed while the fault ran. */
  terminal: { echoes: number; failures: number; reopened: number };
  /** The marks in the order they were made (each "fault" then its "healed"). */
  marks?: Array<{ label: "fault" | "healed"; at: number }>;
}

export interface MixedLoad {
  /** Marks "the fault starts now" / "the fault is over" for the error and recovery figures. */
  mark(label: "fault" | "healed"): void;
  stop(): Promise<LoadReport>;
}

export interface Figures {
  scenario: string;
  requests: number;
  faults: number;
  acked: number;
  lost: number;
  duplicates: number;
  stuck: number;
  /** Responses during the fault that were not 503/504 with Retry-After (nor 2xx/expected 4xx). */
  nonRetryable: number;
  recoverySeconds: number;
}
