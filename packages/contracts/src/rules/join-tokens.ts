import { RESERVED_AGENT_NAMES } from "./agents.js";
import { NODE_ID_RE } from "./ids.js";
import type { Violation } from "./violation.js";

/**
 * Join tokens (`/api/v1/join-tokens`, `orch-agent --join-token`): the token's shape, the limits a
 * creation request is held to, and the reasons an agent stays pending. Shared by the gateway's
 * schemas, the CLI, the agents service and the agent, so all four read a token the same way.
 */

/** `ojt_<id>.<secret>`: the id finds the row, only SHA-256(secret) is stored. */
export const JOIN_TOKEN_RE = /^ojt_([0-9a-z]{26})\.([A-Za-z0-9_-]{43})$/;
export const JOIN_TOKEN_PREFIX = "ojt_";
/** Token ids are ULIDs, lower-cased. */
export const JOIN_TOKEN_ID_RE = /^[0-9a-z]{26}$/;

export const JOIN_TOKEN_TTL_MIN_S = 60;
/** A year: a token is a standing approval, so it must end. */
export const JOIN_TOKEN_TTL_MAX_S = 365 * 86_400;
export const JOIN_TOKEN_MAX_USES_MAX = 1_000_000;
/** `<prefix>-<hostname>` must still fit a DNS label with room for a `-N` suffix. */
export const JOIN_TOKEN_NAME_PREFIX_RE = /^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$/;
export const JOIN_TOKEN_NAME_PREFIX_RULE =
  "a DNS label of at most 32 characters (a-z, 0-9 and '-', starting and ending with a letter or digit)";
export const JOIN_TOKEN_DESCRIPTION_MAX = 200;

/** Why an agent that presented a token stays pending (agents.pending_reason). */
export const JOIN_PENDING_REASONS = [
  "join_token_invalid",
  "join_token_expired",
  "join_token_exhausted",
  "join_token_revoked",
] as const;
export type JoinPendingReason = (typeof JOIN_PENDING_REASONS)[number];

export function parseJoinToken(token: string): { id: string; secret: string } | null {
  const m = JOIN_TOKEN_RE.exec(token);
  return m ? { id: m[1]!, secret: m[2]! } : null;
}

export function checkJoinTokenTtl(ttl: number): Violation | null {
  return Number.isInteger(ttl) && ttl >= JOIN_TOKEN_TTL_MIN_S && ttl <= JOIN_TOKEN_TTL_MAX_S
    ? null
    : {
        reason: "invalid_ttl",
        message: `must be whole seconds between ${JOIN_TOKEN_TTL_MIN_S} and ${JOIN_TOKEN_TTL_MAX_S}`,
      };
}

export function checkJoinTokenMaxUses(n: number): Violation | null {
  return Number.isInteger(n) && n >= 0 && n <= JOIN_TOKEN_MAX_USES_MAX
    ? null
    : { reason: "invalid_max_uses", message: `must be 0 (unlimited) or a count up to ${JOIN_TOKEN_MAX_USES_MAX}` };
}

export function checkJoinTokenNamePrefix(prefix: string): Violation | null {
  return prefix === "" || JOIN_TOKEN_NAME_PREFIX_RE.test(prefix)
    ? null
    : { reason: "invalid_name_prefix", message: `must be ${JOIN_TOKEN_NAME_PREFIX_RULE}` };
}

/**
 * A hostname turned into a DNS label: lower-cased, the first label only, anything else squashed
 * to '-'. Empty input gives "agent".
 */
export function hostLabel(hostname: string): string {
  const first = hostname.toLowerCase().split(".")[0] ?? "";
  const label = first
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
  return label || "agent";
}

/** `<prefix>-<host>` (or `<host>`), then `-2`, `-3`… for attempt > 1, always a valid agent name. */
export function joinedAgentName(prefix: string, hostname: string, attempt = 1): string {
  const plain = prefix ? `${prefix}-${hostLabel(hostname)}` : hostLabel(hostname);
  // A name shaped like a node id, or one a route owns, would be refused at approval: qualify it.
  const base = NODE_ID_RE.test(plain) || RESERVED_AGENT_NAMES.has(plain) ? `agent-${plain}` : plain;
  const suffix = attempt > 1 ? `-${attempt}` : "";
  return `${base.slice(0, 63 - suffix.length).replace(/-+$/, "")}${suffix}`;
}
