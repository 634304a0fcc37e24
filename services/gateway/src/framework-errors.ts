import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyReply, FastifyRequest } from "fastify";
import { problem, sendProblem, type Problem } from "./problem.js";
import type { RouteSpec } from "./route.js";
import { applySecurityHeaders, securityHeaderLines } from "./security-headers.js";

/**
 * Errors fastify raises before a route is matched (fastify's `frameworkErrors` option): the
 * request hooks have not run, so the security headers are set here.
 */
export function frameworkErrorHandler(err: Error & { code?: string }, _req: FastifyRequest, reply: FastifyReply): void {
  applySecurityHeaders(reply.raw);
  switch (err.code) {
    case "FST_ERR_MAX_PARAM_LENGTH":
      sendProblem(reply, problem("uri_too_long", "a path segment of the URL is too long"));
      return;
    case "FST_ERR_BAD_URL":
      sendProblem(reply, problem("invalid_url", "the URL path is not validly percent-encoded"));
      return;
    default:
      sendProblem(reply, problem("invalid_request", "the request could not be routed"));
  }
}

const CLIENT_ERRORS: Record<string, Problem> = {
  ERR_HTTP_REQUEST_TIMEOUT: problem("request_timeout", "the request was not received in time"),
  HPE_HEADER_OVERFLOW: problem("headers_too_large", "the request line or headers are too large"),
};

/** How long a refused connection keeps reading what the client still sends, and how much of it. */
export const LINGER_MS = 5_000;
export const LINGER_BYTES = 8 * 1024 * 1024;

const lingering = new WeakSet<Socket>();

/**
 * Requests the HTTP parser refuses never reach fastify; Node (and fastify's default) would answer
 * with bare text or JSON. Same shape as every other error instead, then the connection closes (the
 * parser's state is unknown). Closing at once would reset it while the client is still sending
 * (a long URL, then its body): the kernel answers unread data with a RST, and the client sees
 * ECONNRESET instead of the answer. So, like nginx's lingering close, the answer goes out with a
 * FIN and what still arrives is read and dropped, for a bounded time and size.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed || lingering.has(socket)) return;
  if (!socket.writable) {
    socket.destroy(err);
    return;
  }
  const p = CLIENT_ERRORS[err.code ?? ""] ?? problem("malformed_request", "the request is not valid HTTP");
  const body = JSON.stringify(p);
  const head = [
    `HTTP/1.1 ${p.status} ${STATUS_CODES[p.status] ?? "Error"}`,
    "content-type: application/problem+json",
    `content-length: ${Buffer.byteLength(body)}`,
    "connection: close",
    ...securityHeaderLines(),
  ].join("\r\n");
  lingering.add(socket);
  socket.end(`${head}\r\n\r\n${body}`);
  lingerThenClose(socket);
}

/** Drops what the client still sends until it closes its side, LINGER_MS pass or LINGER_BYTES arrive. */
function lingerThenClose(socket: Socket): void {
  let dropped = 0;
  const close = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(close, LINGER_MS);
  timer.unref();
  // The HTTP parser may still be attached and consuming: data it refuses comes back as clientError
  // (ignored above); data that reaches JS is counted here.
  socket.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_BYTES) close();
  });
  socket.once("end", close);
  socket.once("close", () => clearTimeout(timer));
  socket.resume();
}

/**
 * Which methods the route table serves on a concrete path, for 405 instead of 404 when the path
 * exists. Path parameters match one segment, as in the router.
 */
export function allowedMethods(routes: readonly RouteSpec[]): (path: string) => string[] {
  const table = routes.map((r) => ({
    method: r.method,
    re: new RegExp(`^${r.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[a-zA-Z0-9_]+\}/g, "[^/]+")}/?$`),
  }));
  return (path) => {
    const methods = new Set<string>();
    for (const r of table) if (r.re.test(path)) methods.add(r.method);
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods];
  };
}
