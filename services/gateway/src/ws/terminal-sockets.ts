import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { ULID_CHARS, type TerminalService } from "@orch/contracts";
import { OrchError, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { problem, problemFromError } from "../problem.js";
import { bearerToken } from "../auth-cache.js";
import { isScopeEnd, type Credential, type EndReason } from "../live-sessions.js";
import { bridgeSocket, type Bridge } from "./bridge.js";
import { originAllowed } from "./origin.js";
import { rejectUpgrade } from "./reject.js";

/** Close code when the attach's credential ended (logout, removal, expiry); the reason says which. */
export const REVOKED_CLOSE_CODE = 4401;
/**
 * Close code when the credential holds but the operator may no longer reach the agent (reason
 * `scope_changed` or `agent_out_of_scope`, docs/access.md): signing in again does not help.
 */
export const OUT_OF_SCOPE_CLOSE_CODE = 4403;

const closeCode = (reason: EndReason) => (isScopeEnd(reason) ? OUT_OF_SCOPE_CLOSE_CODE : REVOKED_CLOSE_CODE);

/** How long a client whose credential ended before its bridge existed gets to answer the close frame. */
const REVOKE_GRACE_MS = 1_000;

/** Closes an attach never bridged (its credential ended first), cutting off a client that does not answer. */
function closeUnbridged(ws: WebSocket, reason: EndReason) {
  ws.close(closeCode(reason), reason);
  setTimeout(() => ws.terminate(), REVOKE_GRACE_MS).unref();
}

export const ATTACH_PATH = new RegExp(`^/api/v1/terminal/session/([${ULID_CHARS}]{26})/attach$`);

/**
 * The terminal WebSocket endpoint (`ws_url`). Every check runs before the upgrade and a refusal
 * is a plain HTTP problem+json: the Origin, then the single-use ticket (redeemed by the terminal
 * service, which also binds it to the operator when the client authenticates the upgrade too). The
 * attach then lives as long as the token: the bearer's, or else the one the ticket was obtained with,
 * and as long as the operator may reach the session's agent.
 */
export function installTerminalSockets(ctx: GatewayContext, terminal: Client<typeof TerminalService>): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 512 * 1024, perMessageDeflate: false });
  const bridges = new Set<Bridge>();
  const log = ctx.log;
  const live = ctx.live;

  async function admit(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? "/", "http://gateway");
    const m = ATTACH_PATH.exec(url.pathname);
    if (!m) return rejectUpgrade(socket, problem("route_not_found", `no WebSocket endpoint at ${url.pathname}`));
    const sessionId = m[1]!;
    if (!originAllowed(req.headers.origin, req.headers.host, ctx.config.http)) {
      return rejectUpgrade(
        socket,
        problem("origin_not_allowed", "this Origin may not open terminal sessions (http.allowed_origins)"),
      );
    }
    const ticket = url.searchParams.get("ticket");
    if (!ticket)
      return rejectUpgrade(
        socket,
        problem(
          "ticket_required",
          "the attach URL carries a ticket; use the ws_url returned when the session was opened",
        ),
      );
    const bearer = bearerToken(req.headers.authorization);
    const requestId = ctx.ids.next();
    let cred: Credential;
    let nodeId: string;
    try {
      const p = bearer ? await ctx.tokens.resolve(bearer) : undefined;
      const r = await terminal.redeemTicket({ sessionId, ticket, operatorId: p?.id ?? "" }, { requestId });
      // Without a bearer the ticket is the only credential: the attach is bound to the token that
      // obtained it (its hash and expiry, stored with the ticket), or to its operator when unknown.
      const { tokenHash = "", tokenExpiresAt = 0 } = r.credential ?? {};
      cred = p
        ? { operatorId: p.id, token: bearer!, expiresAt: p.expiresAt, scope: p.scope }
        : { operatorId: r.operatorId, token: "", tokenHash, expiresAt: tokenExpiresAt || Infinity };
      nodeId = r.session?.nodeId ?? "";
    } catch (err) {
      return rejectUpgrade(socket, problemFromError(OrchError.from(err), requestId));
    }
    if (socket.destroyed) return;
    // Bound before the upgrade, so a revocation arriving while the bridge is set up is not missed.
    let bridge: Bridge | undefined;
    let ended: EndReason | undefined;
    const release = live.bind(
      cred,
      {
        kind: "terminal",
        end(reason) {
          ended = reason;
          bridge?.revoke(closeCode(reason), reason);
        },
      },
      nodeId ? [nodeId] : [],
    );
    socket.once("close", release);
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (ended) return closeUnbridged(ws, ended);
      void bridgeSocket({ ws, nc: ctx.nc, sessionId, log }).then(
        (b) => {
          bridge = b;
          bridges.add(b);
          void b.closed.then(() => {
            bridges.delete(b);
            release();
          });
          if (ended) b.revoke(closeCode(ended), ended);
        },
        (err) => {
          release();
          log.warn({ err: (err as Error).message, session: sessionId }, "terminal bridge failed");
          ws.close(1011, "bridge_failed");
        },
      );
    });
  }

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => {});
    admit(req, socket, head).catch((err) => {
      log.error({ err }, "terminal upgrade failed");
      rejectUpgrade(socket, problem("internal", "internal error"));
    });
  };

  ctx.app.addHook("onReady", async () => {
    ctx.app.server.on("upgrade", onUpgrade);
  });
  // Before the HTTP server closes: it would otherwise wait for these long-lived sockets.
  ctx.app.addHook("preClose", async () => {
    ctx.app.server.off("upgrade", onUpgrade);
    for (const b of bridges) b.close(1001, "gateway shutting down");
    await Promise.race([Promise.all([...bridges].map((b) => b.closed)), new Promise((r) => setTimeout(r, 1000))]);
    for (const b of bridges) b.terminate();
    wss.close();
  });
}
