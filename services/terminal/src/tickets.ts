import { createHash, randomBytes } from "node:crypto";
import type { Queryable } from "@orch/kit";
import { ticketsDb } from "./db.js";

export const ticketHash = (ticket: string) => createHash("sha256").update(ticket).digest("hex");

/** A new single-use attach ticket bound to the session and the operator; only its hash is stored. */
export async function issueTicket(db: Queryable, t: { sessionId: string; operatorId: string; operatorName: string; expiresAt: number }) {
  const ticket = randomBytes(32).toString("base64url");
  await ticketsDb.add(db, ticketHash(ticket), { session_id: t.sessionId, operator_id: t.operatorId, operator_name: t.operatorName, expires_at: t.expiresAt });
  return { sessionId: t.sessionId, ticket, expiresAt: t.expiresAt };
}
