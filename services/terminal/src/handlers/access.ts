import type { TerminalService } from "@orch/contracts";
import { OrchError, forbidden, precondition, unauthenticated, type Handlers } from "@orch/kit";
import { isLive, sessionsDb, ticketsDb } from "../db.js";
import type { Recordings, TerminalDeps } from "../recordings.js";
import { issueTicket, ticketHash } from "../tickets.js";
import { toSession, visible } from "../view.js";
import { requireOperator } from "./open.js";

type AccessHandlers = Pick<Handlers<typeof TerminalService>, "issueTicket" | "redeemTicket">;

// One answer for unknown, used and foreign tickets, so a caller learns nothing about them.
const badTicket = () => unauthenticated("invalid_ticket", "the ticket is unknown or already used");

export function accessHandlers(deps: TerminalDeps, recordings: Recordings): AccessHandlers {
  const { pool, clock } = deps;
  const ttlMs = deps.config.terminal.ticket_ttl_seconds * 1000;
  return {
    async issueTicket(req, ctx) {
      requireOperator(ctx);
      const row = visible(await sessionsDb.get(pool, req.sessionId), ctx.actor, req.sessionId);
      if (!isLive(row.status)) throw precondition("session_not_open", `terminal session '${row.id}' is ${row.status}`);
      return issueTicket(pool, { sessionId: row.id, operatorId: ctx.actor.id, operatorName: ctx.actor.name, expiresAt: clock.now() + ttlMs });
    },

    async redeemTicket(req) {
      // Consumed before any check: a presented ticket is spent, whatever the outcome.
      const t = req.ticket ? await ticketsDb.take(pool, ticketHash(req.ticket)) : undefined;
      if (!t || t.session_id !== req.sessionId) throw badTicket();
      if (t.expires_at < clock.now()) throw unauthenticated("ticket_expired", "the ticket has expired; request a new one");
      if (req.operatorId && req.operatorId !== t.operator_id) throw forbidden("ticket_operator_mismatch", "this ticket was issued to another operator");
      const row = await sessionsDb.get(pool, t.session_id);
      if (!row) throw badTicket();
      if (!isLive(row.status)) throw new OrchError("FAILED_PRECONDITION", "session_not_open", `terminal session '${row.id}' is ${row.status}`);
      return { session: toSession(row, recordings.transcriptPath(row.transcript_file)), operatorId: t.operator_id, operatorName: t.operator_name };
    },
  };
}
