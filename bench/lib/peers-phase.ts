/** What each tool reports for one phase of the peers job, and how a tool is driven. */

export const PHASES = ["first apply", "second apply", "dry run", "drift detection"] as const;
export type Phase = (typeof PHASES)[number];

export interface PhaseResult {
  wallS: number;
  cpuS: number;
  /** Resources changed (or that would change / have drifted), per host name. */
  changed: Record<string, number>;
  /** Set when the tool failed: the bench is broken, not slow. */
  error?: string;
}

export interface PeerTool {
  name: string;
  /** Per host, its managed root. */
  roots: Map<string, string>;
  apply(): Promise<PhaseResult>;
  dryRun(): Promise<PhaseResult>;
  /** The check a tool offers for "did a host drift", over every host. */
  drift(): Promise<PhaseResult>;
  /** What the figures include and leave out, printed under the table. */
  note: string;
  stop(): Promise<void>;
}

/** Changed resources each phase must report per host (the drift edit is on the first host only). */
export function expectedChanges(phase: Phase, host: string, firstHost: string, resources: number): number {
  if (phase === "first apply") return resources;
  if (phase === "drift detection") return host === firstHost ? 1 : 0;
  return 0;
}
