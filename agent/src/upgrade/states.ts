/**
 * An upgrade's life in the agent. One at a time:
 *   idle → downloading → verifying → unpacking → smoke_testing → switching → restarting
 * and from every step before `switching` back to idle with a refusal (nothing changed: a staged
 * release directory is removed, `current` untouched). `restarting` ends the process; the new
 * release starts `on_probation` (watchdog.ts) and either links up (→ idle, marker removed) or
 * misses the deadline (→ rolled back to the old release, marker removed, exit 1).
 */
export type UpgradeState =
  | "idle"
  | "downloading"
  | "verifying"
  | "unpacking"
  | "smoke_testing"
  | "switching"
  | "restarting";

/** Stable refusal reasons (AgentUpgradeReply.reason; docs/agent-install.md § Upgrades). */
export type RefusalReason =
  | "upgrade_unsupported"
  | "download_failed"
  | "signature_invalid"
  | "checksum_mismatch"
  | "package_invalid"
  | "already_current"
  | "upgrade_in_progress";

export class UpgradeRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
  }
}
