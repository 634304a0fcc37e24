import type { Violation } from "./violation.js";

/** node_id: the first 16 bytes of SHA-256 of the agent's Ed25519 public key, lowercase hex. */
export const NODE_ID_RE = /^[0-9a-f]{32}$/;

/** Crockford base32 as ULIDs use it (no I, L, O, U), as a character-class body. */
export const ULID_CHARS = "0-9A-HJKMNP-TV-Z";
export const ULID_RE = new RegExp(`^[${ULID_CHARS}]{26}$`);
/**
 * A ULID whose time fits 48 bits: a first character above 7 would encode a later time than a
 * ULID can hold, so such a string was never generated (and does not sort by time).
 */
export const ULID_48BIT_RE = new RegExp(`^[0-7][${ULID_CHARS}]{25}$`);

export function checkNodeId(id: string): Violation | null {
  return NODE_ID_RE.test(id) ? null : { reason: "invalid_node_id", message: "must be a node id (32 hex characters)" };
}

export function checkUlid(id: string): Violation | null {
  return ULID_RE.test(id) ? null : { reason: "invalid_request", message: "must be a ULID" };
}
