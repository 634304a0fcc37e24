import type { FastifyRequest } from "fastify";
import type { GatewayConfig } from "./config.js";

/**
 * The base URL clients reach this gateway at, for absolute URLs in responses (the terminal
 * ws_url). Never built from the Host header or X-Forwarded-*: a client could then make the
 * response point elsewhere, e.g. hand a ticket-bearing URL to a host of its choosing. Either
 * http.public_url (required behind a proxy or TLS terminator) or the local address of the
 * connection the request arrived on, which the client cannot choose.
 */
export function publicBaseUrl(http: GatewayConfig["http"], req: FastifyRequest): string {
  if (http.public_url) return http.public_url.replace(/\/+$/, "");
  const socket = req.raw.socket;
  const scheme = "encrypted" in socket && socket.encrypted ? "https" : "http";
  let host = socket.localAddress ?? "127.0.0.1";
  if (host.startsWith("::ffff:") && host.includes(".")) host = host.slice("::ffff:".length);
  if (host.includes(":")) host = `[${host.replace(/%.*$/, "")}]`;
  return `${scheme}://${host}:${socket.localPort ?? http.port}`;
}
