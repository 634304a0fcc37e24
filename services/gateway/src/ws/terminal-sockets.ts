import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type { TerminalService } from "@orch/contracts";
import { OrchError, type Client } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { problem, problemFromError } from "../problem.js";
import { bridgeSocket, type Bridge } from "./bridge.js";
import { originAllowed } from "./origin.js";
import { rejectUpgrade } from "./reject.js";

export const ATTACH_PATH = /^\/api\/v1\/terminal\/session\/([0-9A-HJKMNP-TV-Z]{26})\/attach$/;

/**
 * The terminal WebSocket endpoint (`ws_url`). Every check runs before the upgrade and a refusal
 * is a plain HTTP problem+json: the Origin, then the single-use ticket (redeemed by the terminal
 * service, which also binds it to the operator when the client authenticates the upgrade too).
 */
export function installTerminalSockets(ctx: GatewayContext, terminal: Client<typeof TerminalService>): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 512 * 1024, perMessageDeflate: false });
  const bridges = new Set<Bridge>();
  const log = ctx.log;

  async function admit(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? "/", "http://gateway");
    const m = ATTACH_PATH.exec(url.pathname);
    if (!m) return rejectUpgrade(socket, problem(404, "route_not_found", `no WebSocket endpoint at ${url.pathname}`));
    const sessionId = m[1]!;
    if (!originAllowed(req.headers.origin, req.headers.host, ctx.config.http)) {
      return rejectUpgrade(socket, problem(403, "origin_not_allowed", "this Origin may not open terminal sessions (http.allowed_origins)"));
    }
    const ticket = url.searchParams.get("ticket");
    if (!ticket) return rejectUpgrade(socket, problem(401, "ticket_required", "the attach URL carries a ticket; use the ws_url returned when the session was opened"));
    let operatorId = "";
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
    const requestId = ctx.ids.next();
    try {
      if (bearer) operatorId = (await ctx.tokens.resolve(bearer)).id;
      await terminal.redeemTicket({ sessionId, ticket, operatorId }, { requestId });
    } catch (err) {
      return rejectUpgrade(socket, problemFromError(OrchError.from(err), requestId));
    }
    if (socket.destroyed) return;
    wss.handleUpgrade(req, socket, head, (ws) => {
      void bridgeSocket({ ws, nc: ctx.nc, sessionId, log }).then(
        (b) => {
          bridges.add(b);
          void b.closed.then(() => bridges.delete(b));
        },
        (err) => {
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
      rejectUpgrade(socket, problem(500, "internal", "internal error"));
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
