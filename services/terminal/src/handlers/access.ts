import type { TerminalService } from "@orch/contracts";
import { OrchError, forbidden, notFound, precondition, unauthenticated, type Handlers } from "@orch/kit";
import { isLive, sessionsDb } from "../db/sessions.js";
import { ticketsDb } from "../db/tickets.js";
import type { TerminalDeps } from "../deps.js";
import type { Recordings } from "../recordings.js";
import { issueTicket, ticketHash, tokenBinding } from "../tickets.js";
import { toSession } from "../convert.js";
import { requireOperator } from "./require-operator.js";
import { scopeCheck } from "./scope.js";
import { visible } from "./visibility.js";

type AccessHandlers = Pick<Handlers<typeof TerminalService>, "issueTicket" | "redeemTicket">;

// One answer for unknown, used and foreign tickets, so a caller learns nothing about them.
const badTicket = () => unauthenticated("invalid_ticket", "the ticket is unknown or already used");

export function accessHandlers(deps: TerminalDeps, recordings: Recordings): AccessHandlers {
  const { pool, clock } = deps;
  const ttlMs = deps.config.terminal.ticket_ttl_seconds * 1000;
  const scope = scopeCheck(deps.nc);
  return {
    async issueTicket(req, ctx) {
      requireOperator(ctx);
      const token = tokenBinding(req.credential);
      const row = visible(await sessionsDb.get(pool, req.sessionId), ctx.actor, req.sessionId);
      if (!isLive(row.status)) throw precondition("session_not_open", `terminal session '${row.id}' is ${row.status}`);
      // Re-attaching to one's own session needs the agent still in scope (the scope may have narrowed).
      const missing = () => notFound("session_not_found", `no terminal session '${row.id}'`);
      await scope.reachable(ctx.actor, row.node_id, missing);
      const expiresAt = clock.now() + ttlMs;
      const operator = { operatorId: ctx.actor.id, operatorName: ctx.actor.name };
      return issueTicket(pool, { sessionId: row.id, ...operator, expiresAt, token });
    },

    async redeemTicket(req) {
      // The ticket is spent whatever the outcome, so a refusal is returned out of the transaction
      // (which commits the DELETE) and thrown after it.
      const out = await deps.events.tx(async (db, emit) => {
        const t = req.ticket ? await ticketsDb.take(db, ticketHash(req.ticket)) : undefined;
        if (!t || t.session_id !== req.sessionId) return badTicket();
        if (t.expires_at < clock.now())
          return unauthenticated("ticket_expired", "the ticket has expired; request a new one");
        if (req.operatorId && req.operatorId !== t.operator_id)
          return forbidden("ticket_operator_mismatch", "this ticket was issued to another operator");
        const row = await sessionsDb.get(db, t.session_id);
        if (!row) return badTicket();
        if (!isLive(row.status))
          return new OrchError(
            "FAILED_PRECONDITION",
            "session_not_open",
            `terminal session '${row.id}' is ${row.status}`,
          );
        const joining = t.operator_id !== row.operator_id;
        await emit({
          type: "terminal.session.attached",
          summary: `${t.operator_name} attached to ${joining ? `${row.operator_name}'s ` : "a "}terminal session on ${row.node_name || row.node_id}`,
          actor: { id: t.operator_id, name: t.operator_name, type: "operator" },
          target: { id: row.id, name: row.node_name || row.node_id, type: "terminal_session" },
          metadata: { node_id: row.node_id, node_name: row.node_name, opened_by: row.operator_name, joining },
        });
        const session = toSession(
          row,
          recordings.transcriptPath(row.transcript_file),
          deps.config.terminal.idle_timeout_seconds,
        );
        const credential = { tokenHash: t.token_hash, tokenExpiresAt: t.token_expires_at };
        return { session, operatorId: t.operator_id, operatorName: t.operator_name, credential };
      });
      if (out instanceof OrchError) throw out;
      return out;
    },
  };
}
