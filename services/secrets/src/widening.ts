import { forbidden, type CallContext } from "@orch/kit";
import type { SecretMeta } from "./db/secrets.js";
import { atMostAsPermissive, type Restriction } from "./restriction.js";

/** The part of an update that decides who may receive the secret; undefined = not changed. */
export interface ReachChange {
  restriction: Restriction | null | undefined;
  /** Unix ms; null = never expires. */
  expiresAt: number | null | undefined;
}

/**
 * Who may receive a secret is the real control over it (an operator who can run commands on an
 * agent can read what that agent holds), so only admins may let more agents receive one:
 * - a restriction that admits an agent the current one does not (including clearing it);
 * - an expiry moved later or removed: the secret keeps resolving after it was meant to stop.
 * Operators may narrow either, and may change the value or description freely: a new value
 * reaches the same agents. The system actor (internal jobs) is trusted like an admin.
 */
export function requireAdminToWiden(ctx: CallContext, row: SecretMeta, change: ReachChange): void {
  if (ctx.actor.type === "system" || ctx.actor.role === "admin") return;
  if (change.restriction !== undefined && !atMostAsPermissive(change.restriction, row.restriction)) {
    throw forbidden(
      "restriction_widening_requires_admin",
      "only an admin may widen or remove a secret's restriction; operators may only narrow it",
    );
  }
  const prevExpiry = row.expires_at === null ? null : Number(row.expires_at);
  if (change.expiresAt !== undefined && extendsExpiry(change.expiresAt, prevExpiry)) {
    throw forbidden(
      "expiry_extension_requires_admin",
      "only an admin may move a secret's expiry later or remove it; operators may only bring it forward",
    );
  }
}

const extendsExpiry = (next: number | null, prev: number | null) => prev !== null && (next === null || next > prev);
