import { Readable } from "node:stream";
import { z } from "zod";
import { AgentsService, TerminalService, type TerminalSession, type Ticket } from "@orch/contracts";
import { OrchError, notFound, precondition, rpcClient } from "@orch/kit";
import type { FastifyRequest } from "fastify";
import type { GatewayContext } from "../app.js";
import { tokenHash, type Principal } from "../auth-cache.js";
import { requestToken } from "../console/session.js";
import { problem, sendProblem } from "../problem.js";
import { publicBaseUrl } from "../public-url.js";
import { route } from "../route.js";
import { Ulid, qInt } from "../schemas.js";
import { AgentRef } from "./agents-schemas.js";
import { installTerminalSockets } from "../ws/terminal-sockets.js";

const Status = z.enum(["opening", "open", "closed", "failed"]);
const SessionOut = z.object({
  session_id: z.string(),
  node_id: z.string(),
  node_name: z.string(),
  operator_id: z.string(),
  operator_name: z.string(),
  status: Status,
  shell: z.string(),
  cols: z.number().int(),
  rows: z.number().int(),
  opened_at: z.number().int().describe("Unix seconds"),
  closed_at: z.number().int().nullable().describe("Unix seconds; null while the session is live"),
  exit_code: z.number().int().nullable(),
  close_reason: z.string().nullable(),
});
const SessionDetail = SessionOut.extend({
  transcript_path: z.string().nullable().describe("the asciicast v2 file on the terminal service's storage"),
  sha256: z.string().nullable().describe("SHA-256 of the finished transcript (null while live)"),
});
const OpenOut = z.object({
  session_id: z.string(),
  ws_url: z.string().describe("WebSocket URL with a single-use ticket, valid for terminal.ticket_ttl_seconds (30 s)"),
});
const SessionParams = z.object({ session_id: Ulid });

const secs = (ms: number) => Math.floor(ms / 1000);

/**
 * GET /terminal without limit/cursor answers the whole list (its contract, an "array of terminal
 * sessions" has no paging), read from the service a page at a time. The cap keeps one request
 * from holding an unbounded response in memory; past it the usual X-Next-Cursor continues.
 */
export const LIST_ALL_MAX = 10_000;
const LIST_ALL_PAGE = 500;

export async function listAll(
  page: (cursor: string) => Promise<{ sessions: TerminalSession[]; nextCursor: string }>,
  max = LIST_ALL_MAX,
): Promise<{ sessions: TerminalSession[]; nextCursor: string }> {
  const sessions: TerminalSession[] = [];
  let cursor = "";
  for (;;) {
    const r = await page(cursor);
    sessions.push(...r.sessions);
    if (!r.nextCursor) return { sessions, nextCursor: "" };
    if (sessions.length >= max) {
      // Cut at the cap exactly, and continue after the last session returned.
      const kept = sessions.slice(0, max);
      return { sessions: kept, nextCursor: kept.length < sessions.length ? kept.at(-1)!.sessionId : r.nextCursor };
    }
    cursor = r.nextCursor;
  }
}

export function sessionJson(s: TerminalSession): z.infer<typeof SessionOut> {
  return {
    session_id: s.sessionId,
    node_id: s.nodeId,
    node_name: s.nodeName,
    operator_id: s.operatorId,
    operator_name: s.operatorName,
    status: Status.catch("failed").parse(s.status),
    shell: s.shell,
    cols: s.cols,
    rows: s.rows,
    opened_at: secs(s.openedAt),
    closed_at: s.closedAt ? secs(s.closedAt) : null,
    exit_code: s.exitCode ?? null,
    close_reason: s.closeReason || null,
  };
}

const detailJson = (s: TerminalSession) => ({
  ...sessionJson(s),
  transcript_path: s.transcriptPath || null,
  sha256: s.sha256 || null,
});

/** From http.public_url or the listener address, never the Host header (public-url.ts). */
function wsUrl(ctx: GatewayContext, req: FastifyRequest, t: Ticket): string {
  const base = publicBaseUrl(ctx.config.http, req);
  return `${base.replace(/^http/, "ws")}/api/v1/terminal/session/${t.sessionId}/attach?ticket=${encodeURIComponent(t.ticket)}`;
}

/**
 * The token this request was authenticated with, for the terminal service to store with the
 * ticket: a WebSocket attached later with the ticket alone (as a browser does) then still ends on
 * that token's logout and at its expiry (ws/terminal-sockets.ts).
 */
function ticketCredential(ctx: GatewayContext, principal: Principal | undefined, req: FastifyRequest) {
  const token = requestToken(req, ctx.config.http)?.token;
  if (!principal || !token) return undefined;
  return { tokenHash: tokenHash(token), tokenExpiresAt: principal.expiresAt };
}

/**
 * /terminal: sessions, transcripts and the WebSocket attach (ws/). The open waits for the agent,
 * so it gets a longer bus timeout than ordinary calls (the terminal service answers 504 itself
 * after terminal.open_timeout_seconds, at most 25 s).
 */
export function terminalRoutes(ctx: GatewayContext) {
  const terminal = rpcClient(ctx.nc, "terminal", TerminalService, { timeoutMs: ctx.timeoutMs });
  const agents = rpcClient(ctx.nc, "agents", AgentsService, { timeoutMs: ctx.timeoutMs });
  const slowMs = Math.max(ctx.timeoutMs, 30_000);
  installTerminalSockets(ctx, terminal);

  return [
    route({
      method: "POST",
      path: "/api/v1/terminal/{node_id}",
      auth: "operator",
      summary: "Open a terminal session on an agent",
      description:
        "Spawns the shell on the agent, starts recording, and answers with the WebSocket URL to attach (binary frames = bytes, text frames = resize).",
      tags: ["terminal"],
      params: z.object({ node_id: AgentRef.describe("node id or approved name") }),
      query: z.object({
        cols: qInt(1, 1000).optional().describe("width in columns (default 80)"),
        rows: qInt(1, 1000).optional().describe("height in rows (default 24)"),
        shell: z
          .string()
          .max(4096)
          .regex(/^\/[^\x00-\x1f\x7f]*$/, "must be an absolute path")
          .optional()
          .describe("shell binary; must be in the agent's allow-list (default: the agent's first)"),
      }),
      responses: { 201: OpenOut },
      errors: {
        400: ["invalid_request", "shell_not_allowed"],
        404: ["agent_not_found"],
        409: ["agent_not_connected", "terminal_disabled", "agent_not_approved", "shell_not_found"],
        504: ["agent_timeout"],
      },
      async handler({ params, query, principal, call, raw }) {
        let nodeId: string;
        let nodeName: string;
        try {
          const a = await agents.getAgent({ id: params.node_id }, call);
          nodeId = a.nodeId;
          nodeName = a.name;
          if (a.status !== "approved")
            throw precondition("agent_not_approved", `agent ${a.name || a.nodeId} is ${a.status}, not approved`);
        } catch (err) {
          if (err instanceof OrchError && err.code === "NOT_FOUND")
            throw notFound("agent_not_found", `no agent '${params.node_id}'`);
          throw err;
        }
        const credential = ticketCredential(ctx, principal, raw);
        const size = { cols: query.cols ?? 0, rows: query.rows ?? 0 };
        const open = { nodeId, nodeName, ...size, shell: query.shell ?? "", credential };
        const r = await terminal.openSession(open, { ...call, timeoutMs: slowMs });
        return { session_id: r.session!.sessionId, ws_url: wsUrl(ctx, raw, r.ticket!) };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/terminal",
      auth: "operator",
      summary: "List terminal sessions (operators see their own, admins all)",
      description: `An array, newest first: every session matching the filter, up to ${LIST_ALL_MAX} (the newest). Paging is opt-in: with \`limit\` or \`cursor\` one page is returned (default 50). Whenever more sessions exist than the response holds (a page, or the ${LIST_ALL_MAX} cap) it carries \`X-Next-Cursor\`; pass it back as \`cursor\`.`,
      tags: ["terminal"],
      query: z.object({ status: Status.optional(), limit: qInt(1, 500).optional(), cursor: Ulid.optional() }),
      responses: { 200: z.array(SessionOut) },
      async handler({ query, call }, reply) {
        const status = query.status ?? "";
        if (query.limit !== undefined || query.cursor !== undefined) {
          const r = await terminal.listSessions({ status, limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
          if (r.nextCursor) reply.header("x-next-cursor", r.nextCursor);
          return r.sessions.map(sessionJson);
        }
        const all = await listAll((cursor) => terminal.listSessions({ status, limit: LIST_ALL_PAGE, cursor }, call));
        if (all.nextCursor) {
          ctx.log.warn(
            { returned: all.sessions.length },
            "terminal session list cut at its cap; X-Next-Cursor continues",
          );
          reply.header("x-next-cursor", all.nextCursor);
        }
        return all.sessions.map(sessionJson);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/terminal/session/{session_id}",
      auth: "operator",
      summary: "One terminal session, with its transcript path",
      tags: ["terminal"],
      params: SessionParams,
      responses: { 200: SessionDetail },
      errors: { 404: ["session_not_found"] },
      async handler({ params, call }) {
        return detailJson(await terminal.getSession({ sessionId: params.session_id }, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/terminal/session/{session_id}",
      auth: "operator",
      summary: "Close a terminal session (ends the shell, finalises the transcript)",
      tags: ["terminal"],
      params: SessionParams,
      responses: { 204: null },
      errors: { 404: ["session_not_found"] },
      async handler({ params, call }) {
        await terminal.closeSession({ sessionId: params.session_id }, { ...call, timeoutMs: slowMs });
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/terminal/session/{session_id}/ticket",
      auth: "operator",
      summary: "Issue a new attach URL for a live session (re-attach)",
      tags: ["terminal"],
      params: SessionParams,
      responses: { 201: OpenOut },
      errors: { 404: ["session_not_found"], 409: ["session_not_open"] },
      async handler({ params, principal, call, raw }) {
        const credential = ticketCredential(ctx, principal, raw);
        const t = await terminal.issueTicket({ sessionId: params.session_id, credential }, call);
        return { session_id: t.sessionId, ws_url: wsUrl(ctx, raw, t) };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/terminal/session/{session_id}/transcript",
      auth: "operator",
      summary: "Download the transcript (asciicast v2, application/x-asciicast)",
      description:
        "`X-Transcript-SHA256` carries the SHA-256 stored when the session ended; compare it with the download to detect tampering.",
      tags: ["terminal"],
      params: SessionParams,
      responses: { 200: z.string().describe("asciicast v2: a JSON header line, then one JSON event per line") },
      errors: { 404: ["session_not_found", "transcript_not_found"] },
      async handler({ params, call }, reply) {
        const sessionId = params.session_id;
        const first = await terminal.readTranscript({ sessionId, offset: 0, limit: 0 }, call);
        async function* chunks() {
          let chunk = first;
          let offset = 0;
          for (;;) {
            if (chunk.data.length) yield Buffer.from(chunk.data);
            offset += chunk.data.length;
            if (chunk.eof || chunk.data.length === 0) return;
            chunk = await terminal.readTranscript({ sessionId, offset, limit: 0 }, call);
          }
        }
        reply
          .code(200)
          .header("content-type", "application/x-asciicast")
          .header("content-disposition", `attachment; filename="${sessionId}.cast"`);
        if (first.sha256) reply.header("x-transcript-sha256", first.sha256);
        return reply.send(Readable.from(chunks()));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/terminal/session/{session_id}/attach",
      auth: "public",
      summary: "WebSocket attach (ws_url): upgrade with the single-use ticket",
      description:
        'Authorised by the `ticket` query parameter (single use, 30 s, bound to the operator who got it; never the bearer token). The attach ends with the token that obtained the ticket (its logout, its expiry) or the operator\'s removal: close code 4401. The Origin must be the gateway\'s own host or in http.allowed_origins. Binary frames carry terminal bytes both ways; text frames carry `{"type":"resize","cols":N,"rows":N}`. The server closes with reason `exit:<code>` when the shell exits. Refusals are HTTP problem+json on the upgrade: 401 invalid_ticket / ticket_expired / ticket_required, 403 origin_not_allowed / ticket_operator_mismatch, 409 session_not_open.',
      tags: ["terminal"],
      params: SessionParams,
      query: z.object({ ticket: z.string().max(200).optional() }),
      responses: { 101: null },
      errors: {
        401: ["ticket_required", "invalid_ticket", "ticket_expired"],
        403: ["origin_not_allowed", "ticket_operator_mismatch"],
        409: ["session_not_open"],
        426: ["upgrade_required"],
      },
      async handler(_req, reply) {
        // Only reached without an Upgrade header: upgrades are taken by the server's upgrade listener (ws/).
        reply.header("upgrade", "websocket");
        return sendProblem(
          reply,
          problem("upgrade_required", "this endpoint is a WebSocket; connect with Upgrade: websocket"),
        );
      },
    }),
  ];
}
