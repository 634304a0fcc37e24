/** A resource spec as decoded from the request's Struct: plain JSON values. */
export type Spec = Record<string, unknown>;

/**
 * The agent's verified blob cache as providers read it (agent/src/blobs/cache.ts): the file of a
 * complete blob whose bytes hashed to its digest when it arrived, or undefined when it is not held.
 */
export interface BlobFiles {
  path(digest: string): Promise<string | undefined>;
  /** Drops a cached blob found changed after it was verified, so the server sends it again. */
  discard(digest: string): Promise<void>;
}

/** What every provider call gets besides the spec. */
export interface ProviderContext {
  /** Absolute Unix ms after which no command may still be running (the operation's deadline). */
  deadline: number;
  /**
   * The resource was rendered with a secret: a file it creates defaults to mode 0600 (readable by
   * its owner, the agent's user: root) instead of 0644, unless the module gives a mode.
   */
  secret?: boolean;
  /**
   * The file holds content rendered from a secret (this resource's, or one an earlier operation
   * wrote: agent/src/state/sealed-paths.ts): its content is described by size only, never diffed.
   */
  sealed?: boolean;
  /**
   * Resources (`<module>/<id>`) that changed in this operation and trigger this one (triggered_by):
   * a service restarts or reloads once after enforcing its state (check: says it would).
   */
  refresh?: readonly string[];
}

export interface CheckResult {
  /** Whether apply would change something. */
  changed: boolean;
  /** Unified diff for files, a short description otherwise ("" when nothing would change). */
  diff: string;
  observed: Record<string, unknown>;
  /** Optional note (e.g. why an exec would be skipped). */
  message?: string;
}

export interface ApplyResult {
  changed: boolean;
  diff: string;
  message: string;
  stdout: string;
  stderr: string;
  observed: Record<string, unknown>;
  /** An enforcement that ran but did not succeed (exec exit code ≠ 0, timeout). */
  failed?: boolean;
}

/**
 * A resource type. `check` must never change the machine (plan is trusted to be exact);
 * `apply` must be idempotent: once the machine matches, it reports changed=false.
 */
export interface Provider {
  check(spec: Spec, ctx: ProviderContext): Promise<CheckResult>;
  apply(spec: Spec, ctx: ProviderContext): Promise<ApplyResult>;
}

/** The spec is malformed (missing/invalid field): the resource fails with this message. */
export class SpecError extends Error {
  override name = "SpecError";
}

/** The machine lacks what the type needs (no package manager, no systemd). */
export class UnsupportedError extends Error {
  override name = "UnsupportedError";
}
