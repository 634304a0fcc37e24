import { TERMINAL_DEFAULT_COLS, TERMINAL_DEFAULT_ROWS, checkAgentRef, type TerminalService } from "@orch/contracts";
import { forbidden, invalid, notFound, precondition, type CallContext, type Handlers } from "@orch/kit";
import { agentError, agentTerminal } from "../agent.js";
import { sessionsDb } from "../db/sessions.js";
import type { TerminalDeps } from "../deps.js";
import type { Recordings } from "../recordings.js";
import { issueTicket, tokenBinding } from "../tickets.js";
import { toSession } from "../convert.js";
import { checkShell, dimension } from "../validate.js";
import { scopeCheck } from "./scope.js";

type OpenHandlers = Pick<Handlers<typeof TerminalService>, "openSession">;

export function requireOperator(ctx: CallContext) {
  if (ctx.actor.type !== "operator") throw forbidden("operator_required", "terminal sessions belong to an operator");
}

export function openHandlers(deps: TerminalDeps, recordings: Recordings): OpenHandlers {
  const { pool, nc, clock, ids, events } = deps;
  const cfg = deps.config.terminal;
  const scope = scopeCheck(nc);
  return {
    async openSession(req, ctx) {
      requireOperator(ctx);
      const badRef = checkAgentRef(req.nodeId);
      if (badRef) throw invalid(badRef.reason, `node_id ${badRef.message}`, { field: "node_id" });
      const cols = dimension(req.cols, "cols", TERMINAL_DEFAULT_COLS);
      const rows = dimension(req.rows, "rows", TERMINAL_DEFAULT_ROWS);
      checkShell(req.shell);
      const token = tokenBinding(req.credential);
      // A scoped operator reaches only agents its selector matches; the registry's answer wins over
      // whatever id and name the caller sent.
      const missing = () => notFound("agent_not_found", `no agent '${req.nodeId}'`, { field: "node_id" });
      const agent = await scope.reachable(ctx.actor, req.nodeId, missing);
      if (agent && agent.status !== "approved") {
        throw precondition(
          "agent_not_approved",
          `agent ${agent.name || agent.nodeId} is ${agent.status}, not approved`,
        );
      }
      const nodeId = agent ? agent.nodeId : req.nodeId;
      const nodeName = agent ? agent.name : req.nodeName;

      const id = ids.next();
      const now = clock.now();
      const row = {
        id,
        node_id: nodeId,
        node_name: nodeName,
        operator_id: ctx.actor.id,
        operator_name: ctx.actor.name,
        shell: req.shell,
        cols,
        rows,
        opened_at: now,
        transcript_file: `${id}.cast`,
        owner: recordings.replicaId,
        lease_expires_at: now + cfg.lease_seconds * 1000,
      };
      await sessionsDb.insert(pool, row);
      // Recording starts before the PTY exists, so not one byte of it goes unrecorded.
      await recordings.begin({
        ...row,
        status: "opening",
        closed_at: null,
        exit_code: null,
        close_reason: null,
        closed_by_id: null,
        closed_by_name: null,
        sha256: null,
      });

      let shell: string;
      try {
        const r = await agentTerminal(nc, nodeId, cfg.open_timeout_seconds * 1000).openTerminal({
          sessionId: id,
          shell: req.shell,
          cols,
          rows,
          heartbeatIntervalMs: cfg.heartbeat_seconds * 1000,
          orphanTimeoutMs: cfg.orphan_timeout_seconds * 1000,
          attachTimeoutMs: cfg.ticket_ttl_seconds * 1000,
          detachGraceMs: cfg.detach_grace_seconds * 1000,
        });
        shell = r.shell;
      } catch (err) {
        await recordings.abort(id);
        throw agentError(err);
      }

      const out = await events.tx(async (db, emit) => {
        const opened = (await sessionsDb.markOpen(db, id, shell)) ?? (await sessionsDb.get(db, id))!;
        await emit({
          type: "terminal.session.opened",
          summary: `${ctx.actor.name} opened a terminal on ${nodeName || nodeId}`,
          actor: ctx.actor,
          target: { id, name: nodeName || nodeId, type: "terminal_session" },
          metadata: { node_id: nodeId, node_name: nodeName, shell, cols, rows },
        });
        const expiresAt = clock.now() + cfg.ticket_ttl_seconds * 1000;
        const operator = { operatorId: ctx.actor.id, operatorName: ctx.actor.name };
        const ticket = await issueTicket(db, { sessionId: id, ...operator, expiresAt, token });
        return { opened, ticket };
      });
      return {
        session: toSession(out.opened, recordings.transcriptPath(out.opened.transcript_file), cfg.idle_timeout_seconds),
        ticket: out.ticket,
      };
    },
  };
}
