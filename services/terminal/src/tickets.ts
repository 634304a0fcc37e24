import { createHash, randomBytes } from "node:crypto";
import type { TicketCredential } from "@orch/contracts";
import { invalid, type Queryable } from "@orch/kit";
import { ticketsDb } from "./db/tickets.js";

export const ticketHash = (ticket: string) => createHash("sha256").update(ticket).digest("hex");

/** The token a ticket was obtained with, as stored: "" / 0 when the caller did not say. */
export interface TokenBinding {
  tokenHash: string;
  tokenExpiresAt: number;
}

const TOKEN_HASH_RE = /^[0-9a-f]{64}$/;

/**
 * Validates the credential the gateway passes along. Optional (a caller on the bus that has no
 * bearer token leaves it out, and the attach is then bound to the operator only), but when given it
 * must be a SHA-256 and a real expiry: a malformed one would silently bind the attach to nothing.
 */
export function tokenBinding(c: TicketCredential | undefined): TokenBinding {
  if (!c || (!c.tokenHash && !c.tokenExpiresAt)) return { tokenHash: "", tokenExpiresAt: 0 };
  if (!TOKEN_HASH_RE.test(c.tokenHash)) {
    throw invalid("invalid_request", "credential.token_hash must be a hex SHA-256", { field: "credential.token_hash" });
  }
  const exp = c.tokenExpiresAt;
  if (!Number.isFinite(exp) || exp <= 0 || exp > Number.MAX_SAFE_INTEGER) {
    const field = "credential.token_expires_at";
    throw invalid("invalid_request", `${field} must be a time in Unix ms`, { field });
  }
  // Rounded down: the attach never outlives the token, even by a fraction of a millisecond.
  return { tokenHash: c.tokenHash, tokenExpiresAt: Math.floor(exp) };
}

/**
 * A new single-use attach ticket bound to the session, the operator and the token it was obtained
 * with; only its hash is stored.
 */
export async function issueTicket(
  db: Queryable,
  t: { sessionId: string; operatorId: string; operatorName: string; expiresAt: number; token: TokenBinding },
) {
  const ticket = randomBytes(32).toString("base64url");
  await ticketsDb.add(db, ticketHash(ticket), {
    session_id: t.sessionId,
    operator_id: t.operatorId,
    operator_name: t.operatorName,
    expires_at: t.expiresAt,
    token_hash: t.token.tokenHash,
    token_expires_at: t.token.tokenExpiresAt,
  });
  return { sessionId: t.sessionId, ticket, expiresAt: t.expiresAt };
}
