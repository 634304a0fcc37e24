import type { TerminalService } from "@orch/contracts";
import { keysetPage, invalid, pageCursor, pageLimit, type Handlers } from "@orch/kit";
import { agentTerminal } from "../agent.js";
import { encodeControl, termSubject } from "../control.js";
import { toSession } from "../convert.js";
import { STATUSES, isLive, sessionsDb, type SessionRow } from "../db/sessions.js";
import type { TerminalDeps } from "../deps.js";
import type { Recordings } from "../recordings.js";
import { seesAll, visible } from "./visibility.js";

type SessionHandlers = Pick<Handlers<typeof TerminalService>, "listSessions" | "getSession" | "closeSession">;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function sessionHandlers(deps: TerminalDeps, recordings: Recordings): SessionHandlers {
  const { pool, nc } = deps;
  const view = (r: SessionRow) =>
    toSession(r, recordings.transcriptPath(r.transcript_file), deps.config.terminal.idle_timeout_seconds);

  return {
    async listSessions(req, ctx) {
      if (req.status && !(STATUSES as readonly string[]).includes(req.status))
        throw invalid("invalid_request", `status must be one of ${STATUSES.join(", ")}`, { field: "status" });
      const limit = pageLimit(req.limit);
      const rows = await sessionsDb.page(pool, {
        status: req.status,
        operatorId: seesAll(ctx.actor) ? null : ctx.actor.id,
        before: pageCursor(req.cursor, "ulid"),
        limit: limit + 1,
      });
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      return { sessions: page.map(view), nextCursor };
    },

    async getSession(req, ctx) {
      return view(visible(await sessionsDb.get(pool, req.sessionId), ctx.actor, req.sessionId));
    },

    async closeSession(req, ctx) {
      const row = visible(await sessionsDb.get(pool, req.sessionId), ctx.actor, req.sessionId);
      if (!isLive(row.status)) return view(row);
      await sessionsDb.requestClose(pool, row.id, ctx.actor);
      // The recording replica (whichever it is) hears this and finalises once the shell is gone;
      // the agent hears it too and ends the PTY.
      nc.publish(termSubject(row.id, "ctl"), encodeControl({ type: "close", reason: "closed_by_operator" }));
      await agentTerminal(nc, row.node_id, 3000)
        .closeTerminal({ sessionId: row.id, reason: "closed_by_operator" })
        .catch(() => undefined);
      for (let i = 0; i < 80; i++) {
        const now = await sessionsDb.get(pool, row.id);
        if (!now || !isLive(now.status)) return view(now ?? row);
        // Nobody records it (the lease lapsed): settle it here rather than wait for the sweep.
        if (now.lease_expires_at < deps.clock.now()) await recordings.sweep();
        await sleep(100);
      }
      return view((await sessionsDb.get(pool, row.id)) ?? row);
    },
  };
}
