import { notFound, type Actor } from "@orch/kit";
import type { SessionRow } from "../db/sessions.js";

/** Admins (and trusted bus callers) see every session; an operator sees only the sessions it opened. */
export const seesAll = (actor: Actor) => actor.type === "system" || actor.role === "admin";

/**
 * The session if the actor may see it. Someone else's session is reported exactly like a missing
 * one, so ids cannot be probed.
 */
export function visible(row: SessionRow | undefined, actor: Actor, id: string): SessionRow {
  if (!row || (!seesAll(actor) && row.operator_id !== actor.id))
    throw notFound("session_not_found", `no terminal session '${id}'`);
  return row;
}
