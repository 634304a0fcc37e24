import { Readable } from "node:stream";
import { z } from "zod";
import {
  AgentsService,
  APPROVAL_REASON_MAX,
  PTY_DIM_MAX,
  TERMINAL_DEFAULT_COLS,
  TERMINAL_DEFAULT_ROWS,
  TerminalService,
  type TerminalSession,
  type Ticket,
} from "@orch/contracts";
import { OrchError, notFound, precondition, rpcClient, type Client } from "@orch/kit";
import type { FastifyRequest } from "fastify";
import type { GatewayContext } from "../context.js";
import { tokenHash, type Principal } from "../auth-cache.js";
import { requestToken } from "../console/session.js";
import { problem, sendProblem } from "../problem.js";
import { publicBaseUrl } from "../public-url.js";
import { route } from "../route.js";
import { Ulid, qBool, qInt } from "../schemas.js";
import { installTerminalSockets } from "../ws/terminal-sockets.js";
import { AgentRef } from "./agents-schemas.js";
import {
  HeldOut,
  OpenOut,
  OpenedOut,
  SessionDetail,
  SessionOut,
  Status,
  detailJson,
  openedJson,
  sessionJson,
} from "./terminal-json.js";
import { SessionParams, terminalDim } from "./terminal-schemas.js";

type TerminalClient = Client<typeof TerminalService>;
type AgentsClient = Client<typeof AgentsService>;

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
    ...openAndListRoutes(ctx, terminal, agents, slowMs),
    ...sessionRoutes(ctx, terminal, slowMs),
    ...transcriptAndAttachRoutes(terminal),
  ];
}

function openAndListRoutes(ctx: GatewayContext, terminal: TerminalClient, agents: AgentsClient, slowMs: number) {
  return [
    route({
      method: "POST",
      path: "/api/v1/terminal/{node_id}",
      auth: "operator",
      summary: "Open a terminal session on an agent",
      description: `When an approval policy covers \`terminal.open\` on the agent, nothing is opened: the answer is 202 with the change request that waits (docs/approvals.md); once approved, the requester opens with \`change_request_id\` (one session). An admin may pass \`break_glass=true\` with a \`reason\` instead. Otherwise it spawns the shell on the agent, starts recording, and answers 201 with the WebSocket URL to attach (binary frames = bytes, text frames = resize). \`cols\` and \`rows\` take any positive int32; the PTY is at most ${PTY_DIM_MAX}×${PTY_DIM_MAX}, so a larger value is clamped to ${PTY_DIM_MAX} rather than refused: the answer's \`cols\`/\`rows\` are the size the PTY got and \`clamped\` is true. 0, a negative, a fraction or a value past int32 is 400 invalid_request. The session belongs to the calling operator: other operators (but admins) do not see it.`,
      tags: ["terminal"],
      params: z.object({ node_id: AgentRef.describe("node id or approved name") }),
      query: z.object({
        cols: terminalDim
          .optional()
          .describe(`width in columns (default ${TERMINAL_DEFAULT_COLS}; clamped to ${PTY_DIM_MAX})`),
        rows: terminalDim
          .optional()
          .describe(`height in rows (default ${TERMINAL_DEFAULT_ROWS}; clamped to ${PTY_DIM_MAX})`),
        shell: z
          .string()
          .max(4096)
          .regex(/^\/[^\x00-\x1f\x7f]*$/, "must be an absolute path")
          .optional()
          .describe("shell binary; must be in the agent's allow-list (default: the agent's first)"),
        reason: z
          .string()
          .max(APPROVAL_REASON_MAX)
          .optional()
          .describe("why: the change request's reason, or the break-glass reason"),
        break_glass: qBool.optional().describe("admins: open what an approval policy holds now (needs `reason`)"),
        change_request_id: Ulid.optional().describe(
          "open with the one-time pass of your executed terminal.open change request (the policies are not asked again)",
        ),
      }),
      responses: { 201: OpenedOut, 202: HeldOut },
      errors: {
        400: ["invalid_request", "shell_not_allowed", "break_glass_reason_required"],
        403: ["break_glass_forbidden", "terminal_pass_invalid"],
        404: ["agent_not_found"],
        409: [
          "agent_not_connected",
          "terminal_disabled",
          "agent_not_approved",
          "shell_not_found",
          "terminal_pass_used",
        ],
        504: ["agent_timeout"],
      },
      async handler({ params, query, principal, call, raw }, reply) {
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
        const approval = {
          reason: query.reason ?? "",
          breakGlass: query.break_glass ?? false,
          changeRequestId: query.change_request_id ?? "",
        };
        const open = { nodeId, nodeName, ...size, shell: query.shell ?? "", credential, ...approval };
        const r = await terminal.openSession(open, { ...call, timeoutMs: slowMs });
        // An approval policy holds the open: nothing was opened, a change request waits.
        if (r.changeRequestId)
          return reply.code(202).send({ status: "held", change_request_id: r.changeRequestId, summary: r.summary });
        return openedJson(r.session!, wsUrl(ctx, raw, r.ticket!), query);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/terminal",
      auth: "operator",
      summary: "List terminal sessions (operators see their own, admins all)",
      description: `A bare JSON array (no envelope, unlike the other lists), newest first: every session matching the filter, up to ${LIST_ALL_MAX} (the newest). Paging is opt-in: with \`limit\` or \`cursor\` one page is returned (default 50). Whenever more sessions exist than the response holds (a page, or the ${LIST_ALL_MAX} cap) it carries \`X-Next-Cursor\`; pass it back as \`cursor\`. An operator who is not an admin sees only the sessions they opened.`,
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
  ];
}

/** One session: read, close, and a new attach ticket. */
function sessionRoutes(ctx: GatewayContext, terminal: TerminalClient, slowMs: number) {
  return [
    route({
      method: "GET",
      path: "/api/v1/terminal/session/{session_id}",
      auth: "operator",
      summary: "One terminal session, with its transcript path",
      description:
        "An operator who is not an admin reaches only the sessions they opened: another's answers 404 session_not_found (here and on close, ticket and transcript).",
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
  ];
}

function transcriptAndAttachRoutes(terminal: TerminalClient) {
  return [
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
        'Authorised by the `ticket` query parameter (single use, 30 s, bound to the operator who got it; never the bearer token). The attach ends with the token that obtained the ticket (its logout, its expiry) or the operator\'s removal: close code 4401; and when the operator may no longer reach the agent (its scope changed, or the agent was retagged out of it): close code 4403, reason `scope_changed` or `agent_out_of_scope`. The Origin must be the gateway\'s own host or in http.allowed_origins. Binary frames carry terminal bytes both ways; text frames carry `{"type":"resize","cols":N,"rows":N}`. The server closes with reason `exit:<code>` when the shell exits. Refusals are HTTP problem+json on the upgrade: 401 invalid_ticket / ticket_expired / ticket_required, 403 origin_not_allowed / ticket_operator_mismatch, 409 session_not_open.',
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
