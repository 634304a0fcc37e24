import type { DescMessage, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import type { ErrorReason } from "@orch/contracts";
import type { LinkTrust } from "./link/trust.js";

/**
 * What a feature of orch-agent (control, state providers, terminal) gets from the daemon.
 * The link implementation (agent/src/link) provides it; features never touch gRPC directly.
 */
export interface AgentRuntime {
  /** This agent's node id (derived from its public key). */
  readonly nodeId: string;
  readonly dataDir: string;
  readonly options: AgentOptions;
  readonly log: AgentLogger;
  /**
   * Serves a per-agent proto service: the server relays NATS requests on
   * `orch.agent.<node_id>.<Method>` to these handlers. Register before the link starts.
   */
  serve<S extends GenService<GenServiceMethods>>(service: S, handlers: AgentHandlers<S>): void;
  /** Publishes on the bus through the link (only subjects the server allows, e.g. `orch.term.<id>.out`). */
  publish(subject: string, data: Uint8Array): void;
  /** Receives bus messages for a subject through the link (allowed subjects only). Returns an unsubscribe. */
  subscribe(subject: string, onMessage: (data: Uint8Array) => void): () => void;
  /** Called with the latest attributes when a feature's contribution changes (e.g. terminal_enabled). */
  setAttribute(key: string, value: string): void;
  /** Calls `listener` each time a link comes up (the server's first Welcome on a connection). */
  onLinkUp(listener: () => void): void;
  /** Stops the agent cleanly (link closed, loops ended), then ends the process with `code`. */
  exit(code: number): void;
}

export interface AgentOptions {
  server: string | undefined;
  discover: boolean;
  discoveryPort: number;
  terminalEnabled: boolean;
  /** Shells an operator may request; the first is the default. */
  shells: string[];
  metricsIntervalSeconds: number;
  /** How the server is authenticated (agent/src/link/trust.ts). */
  trust: LinkTrust;
  /** Cap on the blob cache's bytes, 0 = none (default 4 GiB: agent/src/blobs/evict.ts). */
  blobCacheMaxBytes?: number | undefined;
  /** Directory of `cron` resources' files (default /etc/cron.d). */
  cronDir?: string | undefined;
  /** Join token presented in every Hello until the agent is approved (a secret: never logged). */
  joinToken?: string | undefined;
  /** Base URL of the server's /install routes, where upgrades download releases from. */
  packagesUrl?: string | undefined;
  /** PEM file of the release public key that signs manifests (written by the install script). */
  releaseKeyFile?: string | undefined;
}

export interface AgentLogger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

export interface AgentCallContext {
  /** Absolute deadline, Unix ms. */
  deadline: number;
}

type Methods<S> = S extends GenService<infer M> ? M : never;
type In<M> = M extends { input: infer I extends DescMessage } ? I : never;
type Out<M> = M extends { output: infer O extends DescMessage } ? O : never;

/** Same shape as the kit's NATS handlers; throw an AgentError to answer with a code. */
export type AgentHandlers<S extends GenService<GenServiceMethods>> = {
  [K in keyof Methods<S>]: (
    req: MessageShape<In<Methods<S>[K]>>,
    ctx: AgentCallContext,
  ) => Promise<MessageInitShape<Out<Methods<S>[K]>>>;
};

/** An error an agent-side handler returns to the caller with a status code and stable reason. */
export class AgentError extends Error {
  constructor(
    readonly code:
      | "INVALID_ARGUMENT"
      | "NOT_FOUND"
      | "FAILED_PRECONDITION"
      | "UNAVAILABLE"
      | "DEADLINE_EXCEEDED"
      | "INTERNAL"
      | "PERMISSION_DENIED"
      | "ALREADY_EXISTS"
      | "RESOURCE_EXHAUSTED",
    readonly reason: ErrorReason,
    message: string,
  ) {
    super(message);
  }
}

/** A feature registers its services on the runtime; agent/src/features.ts lists them all. */
export type Feature = (rt: AgentRuntime) => void | Promise<void>;
