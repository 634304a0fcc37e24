import { TERMINAL_DEFAULT_COLS, TERMINAL_DEFAULT_ROWS, checkAgentRef, type TerminalService } from "@orch/contracts";
import { forbidden, invalid, notFound, precondition, type CallContext, type Handlers } from "@orch/kit";
import { agentError, agentTerminal } from "../agent.js";
import { sessionsDb } from "../db/sessions.js";
import type { TerminalDeps } from "../deps.js";
import type { Recordings } from "../recordings.js";
import { issueTicket, tokenBinding } from "../tickets.js";
import { toSession } from "../convert.js";
import { checkShell, dimension } from "../validate.js";
import type { TerminalApprovals } from "../approvals/gate.js";
import { passesDb } from "../db/passes.js";
import { spendPass } from "./passes.js";
import { requireOperator } from "./require-operator.js";
import { scopeCheck } from "./scope.js";

type OpenHandlers = Pick<Handlers<typeof TerminalService>, "openSession">;

export function openHandlers(deps: TerminalDeps, recordings: Recordings, approvals: TerminalApprovals): OpenHandlers {
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
      // An open with an approved request's pass was approved already; any other asks the policies.
      const passId = req.changeRequestId;
      if (!passId) {
        const ask = { nodeId, nodeName, shell: req.shell, reason: req.reason, breakGlass: req.breakGlass };
        const verdict = await approvals.check(ctx.actor, ask, agent);
        if (verdict.kind === "held") return { changeRequestId: verdict.changeRequestId, summary: verdict.summary };
      }

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
      if (passId) {
        const use = { changeRequestId: passId, actor: ctx.actor, nodeId, shell: req.shell, sessionId: id };
        row.shell = await spendPass(deps, use, (db, shell) => sessionsDb.insert(db, { ...row, shell }));
      } else await sessionsDb.insert(pool, row);
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
          shell: row.shell,
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
        // No PTY: the pass was not really used, so the requester may try again.
        if (passId) await passesDb.release(pool, passId, id);
        throw agentError(err);
      }

      const out = await events.tx(async (db, emit) => {
        const opened = (await sessionsDb.markOpen(db, id, shell)) ?? (await sessionsDb.get(db, id))!;
        await emit({
          type: "terminal.session.opened",
          summary: `${ctx.actor.name} opened a terminal on ${nodeName || nodeId}`,
          actor: ctx.actor,
          target: { id, name: nodeName || nodeId, type: "terminal_session" },
          metadata: {
            node_id: nodeId,
            node_name: nodeName,
            shell,
            cols,
            rows,
            ...(passId ? { change_request_id: passId } : {}),
          },
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
